//! Each rank's calls per group ("lanes"), and how two calls compare.

use crate::fr::groups::Groups;
use crate::fr::model::{fmt_shapes, numel, Dump, Record, RecordKind, State};
use crate::proto::vocab::OpKind;
use std::collections::BTreeMap;

/// One rank's call in one group: one record, or a coalesced block of records sharing a
/// `collective_seq_id` (its last record closes the block and carries its state).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// Index of the dump.
    pub dump: u32,
    /// Records `first..=last` of that dump.
    pub first: u32,
    pub last: u32,
    pub seq: u64,
    pub time_ns: u64,
    /// The rank left the call (completed, or retired by the watchdog).
    pub left: bool,
    /// The call completed on the device (state `completed`): every member took part. gloo and
    /// hook recorders never say so; their calls are only retired, failed or not.
    pub completed: bool,
    /// The first record's hash of op, sizes and dtypes.
    pub sig: u64,
    /// The call site, numbered across all dumps (equal numbers, equal sites); 0 without one.
    pub site: u32,
}

/// The calls of one rank in one group, by increasing seq; point-to-point calls apart.
#[derive(Clone, Debug, Default)]
pub struct Lane {
    pub calls: Vec<Call>,
    pub p2p: Vec<Call>,
    /// `pg_status` of the rank for this group: last enqueued and completed seq.
    pub enqueued: Option<i64>,
    pub completed: Option<i64>,
}

/// Lanes of every (dump, group); `lanes[d][g]`.
pub fn build(dumps: &[Dump], groups: &Groups) -> Vec<Vec<Lane>> {
    let ng = groups.list.len();
    let mut out = Vec::with_capacity(dumps.len());
    let mut sites: BTreeMap<&str, u32> = BTreeMap::new();
    let mut site_of: Vec<u32> = Vec::new();
    for (di, d) in dumps.iter().enumerate() {
        // each dump numbers its own strings: its call sites get the numbers of all dumps
        site_of.clear();
        site_of.resize(d.strings.len(), u32::MAX);
        let mut lanes: Vec<Lane> = vec![Lane::default(); ng];
        let of = &groups.of_dump_group[di];
        let mut prev_p2p: Vec<bool> = vec![false; ng];
        let mut pg_of_group: Vec<Option<i64>> = vec![None; ng];
        for (i, r) in d.records.iter().enumerate() {
            let g = of[r.group as usize] as usize;
            if pg_of_group[g].is_none() {
                pg_of_group[g] = r.pg_id;
            }
            let lane = &mut lanes[g];
            let call = Call {
                dump: di as u32,
                first: i as u32,
                last: i as u32,
                seq: r.seq.get().unwrap_or(0),
                time_ns: r.time_ns,
                left: r.left(),
                completed: r.state == State::Completed,
                sig: r.sig,
                site: match r.site {
                    0 => 0,
                    local => {
                        let slot = &mut site_of[local as usize];
                        if *slot == u32::MAX {
                            let next = sites.len() as u32 + 1;
                            *slot = *sites.entry(d.str(local)).or_insert(next);
                        }
                        *slot
                    }
                },
            };
            if r.is_p2p || r.kind.is_p2p() {
                lane.p2p.push(call);
                prev_p2p[g] = true;
                continue;
            }
            // the record that closes a batch of sends and receives is not flagged p2p
            if r.kind == RecordKind::Coalesced && prev_p2p[g] {
                // its state is the batch's: the batch's own records stay `scheduled`
                let batch = d.records[lane.p2p.last().map_or(0, |p| p.first as usize)].p2p_seq;
                for p in lane.p2p.iter_mut().rev() {
                    if d.records[p.first as usize].p2p_seq != batch {
                        break;
                    }
                    p.left |= call.left;
                }
                continue;
            }
            prev_p2p[g] = false;
            if r.seq.get().is_none() {
                continue;
            }
            match lane.calls.last_mut() {
                Some(c) if c.seq == call.seq => {
                    // one coalesced block: the closing record's state is the block's
                    c.last = call.last;
                    if r.kind == RecordKind::Coalesced {
                        c.left = call.left;
                        c.completed = call.completed;
                    } else {
                        c.left &= call.left;
                        c.completed &= call.completed;
                    }
                }
                Some(c) if c.seq > call.seq => {
                    // seq ids going back: a new recording epoch (the recorder was reset); the
                    // older records cannot be matched with the newer ones
                    lane.calls.clear();
                    lane.calls.push(call);
                }
                _ => lane.calls.push(call),
            }
        }
        for (g, pg) in pg_of_group.iter().enumerate() {
            if let Some(st) = pg.and_then(|p| d.status(p)) {
                lanes[g].enqueued = st.enqueued.filter(|&x| x >= 0);
                lanes[g].completed = st.completed.filter(|&x| x >= 0);
            }
        }
        // a call pg_status reports completed was left, whatever its record says
        for lane in &mut lanes {
            if let Some(done) = lane.completed {
                for c in lane.calls.iter_mut().rev() {
                    if c.seq as i64 > done {
                        continue;
                    }
                    if c.left {
                        break;
                    }
                    c.left = true;
                }
            }
        }
        out.push(lanes);
    }
    out
}

/// The records of a call that describe its tensors (without a block's closing record).
pub fn parts<'d>(dumps: &'d [Dump], c: &Call) -> impl Iterator<Item = &'d Record> {
    let d = &dumps[c.dump as usize];
    let recs = &d.records[c.first as usize..=c.last as usize];
    let n = recs.len();
    recs.iter()
        .enumerate()
        .filter(move |(i, r)| !(n > 1 && *i == n - 1 && r.kind == RecordKind::Coalesced))
        .map(|(_, r)| r)
}

/// The first record of a call.
pub fn head<'d>(dumps: &'d [Dump], c: &Call) -> &'d Record {
    &dumps[c.dump as usize].records[c.first as usize]
}

/// The call site of a call (`file:line`), if its dump has stack frames.
pub fn site<'d>(dumps: &'d [Dump], c: &Call) -> Option<&'d str> {
    let r = head(dumps, c);
    (r.site != 0).then(|| dumps[c.dump as usize].str(r.site))
}

/// The op name of a call (`all_reduce`).
pub fn op_name<'d>(dumps: &'d [Dump], c: &Call) -> &'d str {
    let r = head(dumps, c);
    dumps[c.dump as usize].str(r.op)
}

/// How call `b` differs from call `a`, or None when they agree: op, sizes (as the op's
/// rules compare them) and dtypes.
pub fn differs(dumps: &[Dump], a: &Call, b: &Call) -> Option<String> {
    let (da, db) = (&dumps[a.dump as usize], &dumps[b.dump as usize]);
    // the common case, one record each called alike, without reading the records
    if a.first == a.last && b.first == b.last && a.sig == b.sig {
        return None;
    }
    let (na, nb) = (parts(dumps, a).count(), parts(dumps, b).count());
    if na != nb {
        return Some(format!("{nb} calls in one block instead of {na}"));
    }
    for (ra, rb) in parts(dumps, a).zip(parts(dumps, b)) {
        if ra.sig == rb.sig {
            continue;
        }
        let (oa, ob) = (da.str(ra.op), db.str(rb.op));
        if oa != ob {
            return Some(format!("{ob} instead of {oa}"));
        }
        // uneven all_to_all splits are legal: per-peer sizes are not recorded
        let sizes = !ra.kind.is(OpKind::AllToAll);
        let (ia, ib) = (da.shapes(ra.input), db.shapes(rb.input));
        let (xa, xb) = (da.shapes(ra.output), db.shapes(rb.output));
        if sizes && !ra.kind.is(OpKind::Scatter) && ia != ib {
            return Some(format!(
                "input sizes {} instead of {}",
                fmt_shapes(ib),
                fmt_shapes(ia)
            ));
        }
        if sizes && !ra.kind.is(OpKind::Gather) && xa != xb && numel(xa) != numel(xb) {
            return Some(format!(
                "output sizes {} instead of {}",
                fmt_shapes(xb),
                fmt_shapes(xa)
            ));
        }
        let (ta, tb) = (da.str(ra.in_dtypes), db.str(rb.in_dtypes));
        if ta != tb && !ta.is_empty() && !tb.is_empty() {
            return Some(format!("dtype {tb} instead of {ta}"));
        }
        let (ta, tb) = (da.str(ra.out_dtypes), db.str(rb.out_dtypes));
        if ta != tb && !ta.is_empty() && !tb.is_empty() {
            return Some(format!("output dtype {tb} instead of {ta}"));
        }
    }
    None
}

/// The sizes of a call for sentences: `[[4]] Float`.
pub fn describe(dumps: &[Dump], c: &Call) -> String {
    let d = &dumps[c.dump as usize];
    let parts: Vec<String> = parts(dumps, c)
        .map(|r| {
            let t = d.str(r.in_dtypes);
            let s = fmt_shapes(d.shapes(r.input));
            if t.is_empty() {
                s
            } else {
                format!("{s} {t}")
            }
        })
        .collect();
    parts.join(" + ")
}

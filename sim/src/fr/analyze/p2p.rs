//! Point-to-point calls, matched by (group, peer pair, order): the k-th send from A to B in a
//! group pairs with the k-th receive of B from A. `p2p_seq_id` counts per group, not per pair,
//! so it cannot pair them; profiling names carry group ranks (`nccl:send 0->1`).

use super::lanes::{self, Lane};
use super::Stuck;
use crate::fr::groups::Groups;
use crate::fr::model::{numel, Dump, RecordKind};
use crate::proto::vocab::OpKind;
use crate::proto::Rank;
use crate::scenario::RootCause;
use std::collections::BTreeMap;

/// Point-to-point calls that have not completed and lack their counterpart (or whose
/// counterpart moves another size).
pub fn stuck(
    dumps: &[Dump],
    groups: &Groups,
    lanes: &[Vec<Lane>],
    dump_of: &[Option<u32>],
) -> Vec<Stuck> {
    let mut out = Vec::new();
    for g in &groups.list {
        // (sender, receiver) -> (sends, receives), global ranks
        let mut pairs: BTreeMap<(u32, u32), (Vec<lanes::Call>, Vec<lanes::Call>)> = BTreeMap::new();
        for &m in &g.members {
            let Some(d) = dump_of.get(m as usize).copied().flatten() else {
                continue;
            };
            let dump = &dumps[d as usize];
            for c in &lanes[d as usize][g.id as usize].p2p {
                let rec = &dump.records[c.first as usize];
                let Some(peer) = rec.peer.and_then(|p| p.peer) else {
                    continue;
                };
                let Some(&other) = g.members.get(peer as usize) else {
                    continue;
                };
                match rec.kind {
                    RecordKind::Op(OpKind::Send) => pairs.entry((m, other)).or_default().0.push(*c),
                    RecordKind::Op(OpKind::Recv) => pairs.entry((other, m)).or_default().1.push(*c),
                    _ => {}
                }
            }
        }
        // how many of the group's messages move each size, to judge a send and a recv that
        // disagree: the end whose size the others do not move is wrong
        let size = |c: &lanes::Call| {
            let d = &dumps[c.dump as usize];
            let r = &d.records[c.first as usize];
            let t =
                crate::fr::model::dtype_bytes(d.str(r.in_dtypes).split(',').next().unwrap_or(""));
            numel(d.shapes(r.input)).saturating_mul(t)
        };
        let mut sizes: BTreeMap<u64, usize> = BTreeMap::new();
        for (s, r) in pairs.values() {
            for c in s.iter().chain(r) {
                *sizes.entry(size(c)).or_default() += 1;
            }
        }
        for ((from, to), (sends, recvs)) in pairs {
            let n = sends.len().max(recvs.len());
            for k in 0..n {
                let (s, r) = (sends.get(k), recvs.get(k));
                let mismatch = match (s, r) {
                    (Some(a), Some(b)) if size(a) != size(b) => {
                        let (na, nb) = (sizes[&size(a)], sizes[&size(b)]);
                        let d = &dumps[b.dump as usize];
                        let what = format!(
                            "rank {to}'s {} (message {} from rank {from} in {}) takes {} B where rank \
                             {from} sends {} B",
                            d.profiling_name(&d.records[b.first as usize]),
                            k + 1,
                            g.label(),
                            size(b),
                            size(a)
                        );
                        Some(if na == nb {
                            (
                                RootCause::Undecided,
                                format!(
                                    "{what}: as many of the group's messages move either size, \
                                     so the dumps cannot tell which end is wrong"
                                ),
                            )
                        } else {
                            let (culprit, right) = if na > nb {
                                (to, size(a))
                            } else {
                                (from, size(b))
                            };
                            (
                                RootCause::Mismatch(Rank(culprit)),
                                format!(
                                    "{what}: rank {culprit} is wrong, the group's other messages \
                                     move {right} B"
                                ),
                            )
                        })
                    }
                    _ => None,
                };
                for (c, me, peer) in [(s, from, to), (r, to, from)] {
                    let Some(c) = c else { continue };
                    let lonely = if c.dump == s.map_or(u32::MAX, |x| x.dump) {
                        r.is_none()
                    } else {
                        s.is_none()
                    };
                    if (!c.left && lonely) || mismatch.is_some() {
                        out.push(Stuck {
                            rank: me,
                            group: g.id,
                            call: *c,
                            waiting_for: vec![peer],
                            failed: c.left,
                            p2p: true,
                            mismatch: mismatch.clone(),
                        });
                    }
                }
            }
        }
    }
    out
}

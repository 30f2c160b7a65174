//! Point-to-point calls, matched by (group, peer pair, order): the k-th send from A to B in a
//! group pairs with the k-th receive of B from A. `p2p_seq_id` counts per group, not per pair,
//! so it cannot pair them; profiling names carry group ranks (`nccl:send 0->1`).

use super::lanes::{self, Lane};
use super::Stuck;
use crate::fr::groups::Groups;
use crate::fr::model::{numel, Dump, OpKind};
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
                    OpKind::Send => pairs.entry((m, other)).or_default().0.push(*c),
                    OpKind::Recv => pairs.entry((other, m)).or_default().1.push(*c),
                    _ => {}
                }
            }
        }
        for ((from, to), (sends, recvs)) in pairs {
            let n = sends.len().max(recvs.len());
            for k in 0..n {
                let (s, r) = (sends.get(k), recvs.get(k));
                let size = |c: &lanes::Call| {
                    let d = &dumps[c.dump as usize];
                    numel(d.shapes(d.records[c.first as usize].input))
                };
                let mismatch = matches!((s, r), (Some(a), Some(b)) if size(a) != size(b));
                for (c, me, peer) in [(s, from, to), (r, to, from)] {
                    let Some(c) = c else { continue };
                    let lonely = if c.dump == s.map_or(u32::MAX, |x| x.dump) {
                        r.is_none()
                    } else {
                        s.is_none()
                    };
                    if (!c.left && lonely) || mismatch {
                        out.push(Stuck {
                            rank: me,
                            group: g.id,
                            call: *c,
                            waiting_for: vec![peer],
                            failed: c.left,
                            p2p: true,
                        });
                    }
                }
            }
        }
    }
    out
}

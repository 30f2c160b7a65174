//! Trace events of what a rank's protocol code reports: shared by every driver (the engine,
//! the TCP driver) so that a real run's trace reads exactly like a simulated one.

use super::{Event, RankList};
use crate::proto::elastic::MemberEvent;
use crate::proto::registry::RegistryEvent;
use crate::proto::{Buffer, GroupId, ProtoEvent, Rank, StepEvent};

/// World ranks as numbers, in the same allocation (collected in place).
fn ranks(v: Vec<Rank>) -> Vec<u32> {
    v.into_iter().map(|r| r.0).collect()
}

/// The trace event of a membership event of `rank`.
pub fn member_event(rank: u32, ev: MemberEvent) -> Event {
    match ev {
        MemberEvent::GenerationFormed {
            generation,
            proposal,
            group_rank,
        } => Event::GenerationFormed {
            rank,
            group: GroupId(0),
            generation,
            members: proposal.ranks().iter().map(|r| r.0).collect(),
            group_rank,
            resume_iteration: proposal.resume,
        },
        MemberEvent::RendezvousStart { target, reason } => Event::RendezvousStart {
            rank,
            target,
            reason,
        },
        MemberEvent::RendezvousWait {
            target,
            reachable,
            quorum,
            min_size,
            reason,
        } => Event::RendezvousWait {
            rank,
            target,
            reachable: ranks(reachable),
            quorum,
            min_size,
            reason,
        },
        MemberEvent::Suspect { peer, silent_ns } => Event::Suspect {
            rank,
            peer: peer.0,
            silent_ns,
        },
        MemberEvent::Joining { known, reason } => Event::Joining {
            rank,
            known,
            reason,
        },
        MemberEvent::StoreUpdate {
            version,
            generation,
            members,
            round,
            participants,
        } => Event::StoreUpdate {
            rank,
            version,
            generation,
            members: ranks(members),
            round,
            participants: ranks(participants),
        },
    }
}

/// The trace event of a registry event of `rank`.
pub fn registry_event(rank: u32, ev: RegistryEvent) -> Event {
    match ev {
        RegistryEvent::Join { scope, group } => Event::RegistryJoin { rank, scope, group },
        RegistryEvent::Leave { scope, group } => Event::RegistryLeave { rank, scope, group },
        RegistryEvent::View {
            scope,
            group,
            members,
        } => Event::RegistryView {
            rank,
            scope,
            group,
            members: ranks(members),
        },
        RegistryEvent::Notify {
            scope,
            group,
            joined,
            left,
        } => Event::RegistryNotify {
            rank,
            scope,
            group,
            joined: ranks(joined),
            left: ranks(left),
        },
        RegistryEvent::Monitor {
            scope,
            group,
            members,
        } => Event::RegistryMonitor {
            rank,
            scope,
            group,
            members: ranks(members),
        },
        RegistryEvent::Broadcast {
            scope,
            group,
            message,
            to,
        } => Event::RegistryBroadcast {
            rank,
            scope,
            group,
            message,
            to: ranks(to),
        },
        RegistryEvent::Deliver {
            scope,
            group,
            from,
            message,
            items,
        } => Event::RegistryDeliver {
            rank,
            scope,
            group,
            from: from.0,
            message,
            items,
        },
        RegistryEvent::Query {
            scope,
            group,
            members,
            local,
            expected,
        } => Event::RegistryQuery {
            rank,
            scope,
            group,
            members: ranks(members),
            local,
            expected: expected.map(ranks),
        },
        RegistryEvent::NodeDown { node, silent_ns } => Event::RegistryNodeDown {
            rank,
            node: node.0,
            silent_ns,
        },
        RegistryEvent::NodeUp { node } => Event::RegistryNodeUp { rank, node: node.0 },
    }
}

/// The trace event of a step of `rank`.
#[inline]
pub fn step_event(rank: u32, s: &StepEvent) -> Event {
    Event::Step {
        rank,
        group: s.group,
        generation: s.generation,
        seq: s.seq,
        step: s.step,
        steps: s.steps,
        waiting_for: rank_list(&s.waiting_for),
    }
}

/// World ranks as numbers, kept inline when they fit (as a step's almost always do).
#[inline(always)]
fn rank_list(v: &[Rank]) -> RankList {
    if v.len() > 4 {
        return v.iter().map(|r| r.0).collect();
    }
    // built as one value, not copied in a loop: a copy of a length only known at run time
    // leaves bytes that the whole list, read back at once, has to wait for
    let at = |i: usize| v.get(i).map_or(0, |r| r.0);
    RankList::from_buf_and_len([at(0), at(1), at(2), at(3)], v.len())
}

/// The hashes of completed calls' results ([`Buffer::hash`]), the last one remembered: the
/// members of a collective mostly end with the very same bits, which are compared in a
/// fraction of the time a hash takes.
#[derive(Debug, Default)]
pub struct ResultHashes {
    last: Option<(Buffer, u64)>,
}

impl ResultHashes {
    pub fn hash(&mut self, result: &Buffer) -> u64 {
        match &self.last {
            Some((b, h)) if b.same_bits(result) => *h,
            _ => {
                let h = result.hash();
                self.last = Some((result.clone(), h));
                h
            }
        }
    }
}

/// The trace event of anything `rank`'s process reports. `correct` is what the driver found
/// when it checked a completed collective's result against the reference.
pub fn proto_event(
    rank: u32,
    pe: ProtoEvent,
    correct: Option<bool>,
    hashes: &mut ResultHashes,
) -> Event {
    match pe {
        ProtoEvent::Abort {
            group,
            generation,
            seq,
            step,
            steps,
            waiting_for,
            reason,
        } => Event::Abort {
            rank,
            group,
            generation,
            seq,
            step,
            steps,
            waiting_for: ranks(waiting_for),
            reason: reason.to_string(),
        },
        ProtoEvent::Call {
            iteration,
            index,
            fp,
            members,
            peer,
        } => Event::Call {
            rank,
            iteration,
            index,
            group: fp.group,
            generation: fp.generation,
            seq: fp.seq,
            op: fp.op,
            algorithm: fp.algorithm,
            bytes: fp.bytes,
            dtype: fp.dtype,
            root: fp.root,
            reduce: fp.reduce,
            elements: fp.elements,
            members: members as u32,
            peer: peer.map(|p| p.0),
        },
        ProtoEvent::Complete {
            group,
            generation,
            seq,
            iteration,
            index,
            result,
        } => Event::Complete {
            rank,
            group,
            generation,
            seq,
            iteration,
            index,
            result: if result.is_empty() {
                String::new()
            } else {
                format!("{:016x}", hashes.hash(&result))
            },
            correct,
        },
        ProtoEvent::Iteration { iteration } => Event::Iteration { rank, iteration },
        ProtoEvent::Step(s) => step_event(rank, &s),
        ProtoEvent::Unexpected {
            group,
            generation,
            seq,
            op,
            algorithm,
            step,
            steps,
            from,
            elements,
            why,
        } => Event::Unexpected {
            rank,
            group,
            generation,
            seq,
            op,
            algorithm,
            step,
            steps,
            from: from.0,
            elements,
            why,
        },
        ProtoEvent::FlightRecord { entries } => Event::FlightRecord { rank, entries },
        ProtoEvent::WorkloadDone => Event::WorkloadDone { rank },
        ProtoEvent::NodeWait { on, waiting_for } => Event::NodeWait {
            rank,
            on,
            waiting_for: waiting_for.into_iter().map(|r| r.0).collect(),
        },
        ProtoEvent::RejoinRefused { reason } => Event::RejoinRefused { rank, reason },
        ProtoEvent::Membership(ev) => member_event(rank, ev),
        ProtoEvent::Registry(ev) => registry_event(rank, ev),
    }
}

#[cfg(test)]
mod tests {
    use super::ResultHashes;
    use crate::proto::Buffer;

    #[test]
    fn a_remembered_hash_is_only_reused_for_the_very_same_bits() {
        let mut hashes = ResultHashes::default();
        let zero = Buffer::F32(vec![1.0, 0.0]);
        let minus_zero = Buffer::F32(vec![1.0, -0.0]);
        let wider = Buffer::F64(vec![1.0, 0.0]);
        for b in [&zero, &zero, &minus_zero, &zero, &wider, &wider] {
            assert_eq!(hashes.hash(b), b.hash(), "{b:?}");
        }
        // equal as values, not as bits
        assert_ne!(zero.hash(), minus_zero.hash());
    }
}

//! Unit tests of the diagnosis on hand-made event sequences (states the engine's correct
//! protocols never reach, such as a deadlock, included).

use super::*;
use crate::proto::{Generation, GroupId, Rank, SeqNo};
use crate::scenario::{Algorithm, Dtype, OpKind, ReduceOp};
use crate::trace::{Event, FaultPhase};

pub(crate) fn call(rank: u32, seq: u64, bytes: u64) -> Event {
    Event::Call {
        rank,
        iteration: 0,
        index: 0,
        group: GroupId(0),
        generation: Generation(0),
        seq: SeqNo(seq),
        op: OpKind::Allreduce,
        algorithm: Algorithm::Ring,
        bytes,
        dtype: Dtype::F32,
        root: 0,
        reduce: ReduceOp::Sum,
        elements: 4,
        members: 3,
        peer: None,
    }
}

pub(crate) fn step(rank: u32, seq: u64, step: u32, waiting_for: Vec<u32>) -> Event {
    Event::Step {
        rank,
        group: GroupId(0),
        generation: Generation(0),
        seq: SeqNo(seq),
        step,
        steps: 4,
        waiting_for: waiting_for.into(),
    }
}

fn send(from: u32, to: u32, seq: u64, step: u32) -> Event {
    Event::Send {
        id: 0,
        from,
        to,
        bytes: 8,
        msg: "coll".into(),
        seq: Some(seq),
        step: Some(step),
        arrive_ns: 0,
    }
}

fn fold(events: &[Event]) -> Fold {
    let mut f = Fold::with_size(3);
    for r in 0..3 {
        f.apply(
            0,
            &Event::ProcessStart {
                rank: r,
                incarnation: 0,
            },
        );
    }
    for (i, e) in events.iter().enumerate() {
        f.apply(10 + i as u64, e);
    }
    f
}

#[test]
fn a_cycle_with_nothing_on_its_way_is_a_deadlock() {
    // 0 and 1 wait for each other and neither sent; 2 waits for 0
    let f = fold(&[
        call(0, 1, 64),
        step(0, 1, 0, vec![1]),
        call(1, 1, 64),
        step(1, 1, 0, vec![0]),
        call(2, 1, 64),
        step(2, 1, 0, vec![0]),
    ]);
    let d = diagnose(&f);
    // printed in canonical form, as every cause the diagnosis names
    assert_eq!(crate::cause::listed(&d.root_causes()), "deadlock:0,1");
    assert_eq!(d.blocked_ranks(), vec![0, 1, 2]);
    assert_eq!(d.causes[0].blocked, vec![0, 1, 2]);
    assert!(d.in_progress.is_empty());
}

#[test]
fn a_cycle_with_a_chunk_on_its_way_is_progress() {
    // the same cycle, but 1 already sent its chunk of step 0 to 0
    let f = fold(&[
        call(0, 1, 64),
        step(0, 1, 0, vec![1]),
        call(1, 1, 64),
        send(1, 0, 1, 0),
        step(1, 1, 0, vec![0]),
        call(2, 1, 64),
        step(2, 1, 0, vec![0]),
    ]);
    let d = diagnose(&f);
    assert!(d.causes.is_empty(), "{:?}", d.root_causes());
    assert!(d.blocked.is_empty());
    assert_eq!(d.in_progress, vec![0, 1, 2]);
    assert_eq!(
        d.waits.iter().map(|e| e.kind).collect::<Vec<_>>(),
        vec![EdgeKind::InFlight, EdgeKind::Waits, EdgeKind::Waits]
    );
}

#[test]
fn waiting_for_a_computing_peer_is_progress() {
    let f = fold(&[
        Event::Compute {
            rank: 1,
            iteration: 0,
            duration_ns: 100,
        },
        call(0, 1, 64),
        step(0, 1, 0, vec![1]),
    ]);
    let d = diagnose(&f);
    assert!(d.causes.is_empty());
    assert_eq!(d.in_progress, vec![0]);
}

#[test]
fn a_waiter_on_a_dead_rank_is_blocked_and_so_is_whoever_waits_for_it() {
    let f = fold(&[
        call(0, 1, 64),
        step(0, 1, 0, vec![1]),
        call(2, 1, 64),
        step(2, 1, 0, vec![0]),
        Event::ProcessDeath {
            rank: 1,
            incarnation: 0,
        },
    ]);
    let d = diagnose(&f);
    assert_eq!(d.root_causes(), [RootCause::Preempted(Rank(1))]);
    assert_eq!(d.blocked_ranks(), vec![0, 2]);
    assert_eq!(d.culprits(), vec![1]);
}

#[test]
fn a_mismatch_names_the_minority() {
    let f = fold(&[
        call(0, 1, 64),
        step(0, 1, 0, vec![2]),
        call(1, 1, 64),
        step(1, 1, 0, vec![0]),
        call(2, 1, 32),
        step(2, 1, 0, vec![1]),
    ]);
    let d = diagnose(&f);
    assert_eq!(d.root_causes(), [RootCause::Mismatch(Rank(2))]);
    assert_eq!(d.blocked_ranks(), vec![0, 1, 2]);
    assert!(
        d.causes[0].text.contains("bytes 32 instead of 64"),
        "{}",
        d.causes[0].text
    );
}

#[test]
fn partitions_cut_both_ways_or_one_way() {
    let mut f = fold(&[call(0, 1, 64), step(0, 1, 0, vec![2])]);
    f.apply(
        50,
        &Event::Fault {
            index: 0,
            fault: crate::fault::FaultKind::Partition,
            phase: FaultPhase::Begin,
            ranks: vec![0, 1, 2],
            sides: Some(vec![vec![2], vec![0, 1]]),
            oneway: true,
            detail: String::new(),
        },
    );
    let fv = &f.faults[0];
    assert!(fv.cuts(2, 0) && !fv.cuts(0, 2));
    let d = diagnose(&f);
    assert_eq!(crate::cause::listed(&d.root_causes()), "partitioned:0,1|2");
}

#[test]
fn rank_lists_compress_runs() {
    assert_eq!(fmt_ranks(&[4, 0, 1, 2]), "0,1,2,4");
    assert_eq!(fmt_ranks(&[0, 1, 2, 3, 4, 5, 7]), "0-5,7");
    assert_eq!(ranks_phrase(&[3]), "rank 3");
}

/// Rank `rank`'s call `index`: a send to or recv from `peer`, its `seq`-th in that direction.
fn p2p_call(rank: u32, index: u32, op: OpKind, peer: u32, seq: u64) -> Event {
    Event::Call {
        rank,
        iteration: 0,
        index,
        group: GroupId(0),
        generation: Generation(0),
        seq: SeqNo(seq),
        op,
        algorithm: op.default_algorithm(),
        bytes: 16,
        dtype: Dtype::F32,
        root: 0,
        reduce: ReduceOp::Sum,
        elements: 4,
        members: 3,
        peer: Some(peer),
    }
}

fn p2p_step(rank: u32, seq: u64, waiting_for: Vec<u32>) -> Event {
    Event::Step {
        rank,
        group: GroupId(0),
        generation: Generation(0),
        seq: SeqNo(seq),
        step: 0,
        steps: 1,
        waiting_for: waiting_for.into(),
    }
}

fn complete(rank: u32, index: u32, seq: u64) -> Event {
    Event::Complete {
        rank,
        group: GroupId(0),
        generation: Generation(0),
        seq: SeqNo(seq),
        iteration: 0,
        index,
        result: String::new(),
        correct: Some(true),
    }
}

#[test]
fn a_rank_with_sends_and_recvs_outstanding_waits_in_the_one_not_finished() {
    // rank 0 posts a send to 1, then a recv from 2 (both its first in their direction); rank 1
    // receives the send; the send ends, the recv goes on
    let mut events = vec![
        p2p_call(0, 1, OpKind::Send, 1, 1),
        p2p_step(0, 1, vec![]),
        p2p_call(0, 2, OpKind::Recv, 2, 1),
        p2p_step(0, 1, vec![2]),
    ];
    let f = fold(&events);
    // the recv waits for its peer, the eager send for nobody: the rank waits in the recv
    let v = &f.ranks[0];
    assert_eq!(v.call.as_ref().map(|c| c.op), Some(OpKind::Recv));
    assert_eq!(v.beside.len(), 1);
    events.extend([
        p2p_call(1, 1, OpKind::Recv, 0, 1),
        complete(1, 1, 1),
        complete(0, 1, 1),
    ]);
    let f = fold(&events);
    let v = &f.ranks[0];
    assert_eq!(v.state, RankState::Waiting);
    let c = v.call.as_ref().expect("the recv runs on");
    assert_eq!(
        (c.op, c.peer, c.waiting_for.as_slice()),
        (OpKind::Recv, Some(2), &[2][..])
    );
    assert!(v.beside.is_empty());
    let sent = Slot {
        group: GroupId(0),
        generation: Generation(0),
        seq: SeqNo(1),
        pair: Some((0, 1)),
    };
    let op = &f.ops[&sent];
    assert_eq!((op.ranks_completed, op.end_ns.is_some()), (2, true));
    assert!(v.call_at(sent).is_some_and(|c| c.completed));
    // the diagnosis holds the rank in its recv from 2 only
    let d = diagnose(&f);
    assert_eq!(d.waits.len(), 1, "{:?}", d.waits);
    assert_eq!((d.waits[0].from, d.waits[0].to), (0, 2));
    // the recv ends too: the rank is in no call
    events.extend([
        p2p_call(2, 1, OpKind::Send, 0, 1),
        complete(2, 1, 1),
        complete(0, 2, 1),
    ]);
    let f = fold(&events);
    assert_eq!(f.ranks[0].state, RankState::Running);
    assert!(f.ranks[0].call.is_none() && f.ranks[0].beside.is_empty());
    assert!(f.ops.values().all(|op| op.end_ns.is_some()));
}

#[test]
fn an_abort_fails_each_of_the_sends_and_recvs_a_rank_runs() {
    let abort = |seq: u64, waiting_for: Vec<u32>| Event::Abort {
        rank: 0,
        group: GroupId(0),
        generation: Generation(0),
        seq: SeqNo(seq),
        step: 0,
        steps: 1,
        waiting_for,
        reason: "watchdog".into(),
    };
    let f = fold(&[
        p2p_call(0, 1, OpKind::Recv, 1, 1),
        p2p_step(0, 1, vec![1]),
        p2p_call(0, 2, OpKind::Recv, 2, 1),
        p2p_step(0, 1, vec![2]),
        abort(1, vec![1]),
        abort(1, vec![2]),
    ]);
    let v = &f.ranks[0];
    assert_eq!(v.state, RankState::Blocked);
    assert!(v.running().all(|c| c.aborted.is_some()));
    // the rank goes on (its program caught the error): what failed is left behind
    let f = fold(&[
        p2p_call(0, 1, OpKind::Recv, 1, 1),
        p2p_step(0, 1, vec![1]),
        p2p_call(0, 2, OpKind::Recv, 2, 1),
        abort(1, vec![1]),
        abort(1, vec![2]),
        call(0, 1, 64),
    ]);
    let v = &f.ranks[0];
    assert_eq!(v.call.as_ref().map(|c| c.op), Some(OpKind::Allreduce));
    assert!(v.beside.is_empty());
}

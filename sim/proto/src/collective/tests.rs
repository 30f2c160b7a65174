use super::*;
use crate::event::{Outbox, Output};
use crate::msg::Msg;
use crate::types::{Generation, GroupId, Rank, SeqNo};
use crate::vocab::{Dtype, ReduceOp};
use std::collections::VecDeque;

/// Runs `op` with `algorithm` on `p` ranks of `elements` f32s each, delivering every chunk in
/// order, and checks at each delivery of a chunk for the receiver's current step that
/// [`Collective::landing`], when it names one, named the first element the chunk changed
/// (inputs are distinct, so every reduction or copy changes what it touches). Returns how many
/// deliveries had a landing.
fn landings_match(op: OpKind, algorithm: Algorithm, p: u32, elements: u32) -> usize {
    let members = Members::new((0..p).map(Rank).collect());
    let fp = Fingerprint {
        group: GroupId(0),
        generation: Generation(0),
        seq: SeqNo(1),
        op,
        algorithm,
        bytes: 1 << 20,
        dtype: Dtype::F32,
        root: 0,
        reduce: ReduceOp::Sum,
        elements,
    };
    let mut out = Outbox::new();
    let mut wire = VecDeque::new();
    let mut ranks: Vec<Collective> = (0..p)
        .map(|me| {
            let ctx = Ctx { me, p, root: 0 };
            let input = (0..elements)
                .map(|i| (1 + me * elements + i) as f32)
                .collect();
            let buf = prepare(op, algorithm, ctx, elements, Buffer::F32(input));
            let sched = schedule(op, algorithm, ctx).expect("supported");
            Collective::new(fp, members.clone(), ctx, sched, buf, 0)
        })
        .collect();
    let drain = |from: u32, out: &mut Outbox, wire: &mut VecDeque<_>| {
        for o in out.out.drain(..) {
            if let Output::Send {
                to,
                msg: Msg::Coll(m),
                ..
            } = o
            {
                wire.push_back((from, to.0, m));
            }
        }
        let _ = out.take_step();
    };
    for (me, c) in ranks.iter_mut().enumerate() {
        c.start(0, &mut out);
        drain(me as u32, &mut out, &mut wire);
    }
    let mut landed = 0;
    while let Some((from, to, m)) = wire.pop_front() {
        let c = &mut ranks[to as usize];
        let due = m.step == c.step;
        let landing = c.landing();
        let before = c.buf.clone();
        let Buffer::F32(b) = &before else {
            unreachable!()
        };
        let landing = landing.map(|a| (a as usize - c.buf.element_addr(0) as usize) / 4);
        let step = m.step;
        if c.on_chunk(0, from, m, &mut out) == Progress::Rejected {
            panic!("chunk of step {step} refused");
        }
        drain(to, &mut out, &mut wire);
        let Buffer::F32(after) = &ranks[to as usize].buf else {
            unreachable!()
        };
        let changed = b
            .iter()
            .zip(after)
            .position(|(x, y)| x.to_bits() != y.to_bits());
        if let (true, Some(at)) = (due, landing) {
            assert_eq!(
                Some(at),
                changed,
                "{op:?} {algorithm:?}: a chunk to {to} landed elsewhere"
            );
            landed += 1;
        }
    }
    landed
}

#[test]
fn the_landing_of_a_chunk_is_the_first_element_it_changes() {
    for (op, algorithm) in [
        (OpKind::Allreduce, Algorithm::Ring),
        (OpKind::Allgather, Algorithm::Ring),
        (OpKind::ReduceScatter, Algorithm::Ring),
        (OpKind::Allreduce, Algorithm::RecursiveDoubling),
    ] {
        for (p, elements) in [(2, 8), (5, 23), (8, 64)] {
            let landed = landings_match(op, algorithm, p, elements);
            assert!(
                landed > 0,
                "{op:?} {algorithm:?} on {p}: no chunk had a landing"
            );
        }
    }
}

/// What the unexpected-chunk events in `out` say: (step, from, why).
fn unexpected(out: &mut Outbox) -> Vec<(u32, Rank, Unexpected)> {
    let _ = out.take_step();
    out.out
        .drain(..)
        .filter_map(|o| match o {
            Output::Event(e) => match *e {
                ProtoEvent::Unexpected {
                    step, from, why, ..
                } => Some((step, from, why)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn a_chunk_the_schedule_does_not_expect_is_dropped_and_told_with_its_step_and_peer() {
    // rank 1 of a ring allreduce on 3 ranks (world ranks 10, 11, 12) of 6 values: 4 steps,
    // each receiving one block of 2 values from rank 10
    let (p, elements) = (3, 6);
    let members = Members::new(vec![Rank(10), Rank(11), Rank(12)]);
    let fp = Fingerprint {
        group: GroupId(0),
        generation: Generation(0),
        seq: SeqNo(1),
        op: OpKind::Allreduce,
        algorithm: Algorithm::Ring,
        bytes: 48,
        dtype: Dtype::F32,
        root: 0,
        reduce: ReduceOp::Sum,
        elements,
    };
    let ctx = Ctx { me: 1, p, root: 0 };
    let input = Buffer::F32(vec![1.0; elements as usize]);
    let buf = prepare(OpKind::Allreduce, Algorithm::Ring, ctx, elements, input);
    let sched = schedule(OpKind::Allreduce, Algorithm::Ring, ctx).expect("supported");
    let mut c = Collective::new(fp, members, ctx, sched, buf, 0);
    let mut out = Outbox::new();
    c.start(0, &mut out);
    assert_eq!(unexpected(&mut out), []);
    let chunk = |step: u32, len: usize| {
        Box::new(CollMsg {
            fp,
            step,
            data: Buffer::F32(vec![1.0; len]),
        })
    };
    let mut deliver = |c: &mut Collective, from: u32, step: u32, len: usize| {
        let progress = c.on_chunk(0, from, chunk(step, len), &mut out);
        (progress, unexpected(&mut out))
    };
    // from a peer the step does not receive from
    assert_eq!(
        deliver(&mut c, 2, 0, 2),
        (
            Progress::Rejected,
            vec![(0, Rank(12), Unexpected::NotFromPeer)]
        )
    );
    // of a step the call does not have
    assert_eq!(
        deliver(&mut c, 0, 4, 2),
        (
            Progress::Rejected,
            vec![(4, Rank(10), Unexpected::NoSuchStep)]
        )
    );
    // not the length of the block expected
    assert_eq!(
        deliver(&mut c, 0, 0, 3),
        (
            Progress::Rejected,
            vec![(0, Rank(10), Unexpected::DoesNotFit)]
        )
    );
    assert_eq!(c.step(), 0);
    // step 1's chunk, twice, early: kept until step 1, where the second is one too many
    assert_eq!(deliver(&mut c, 0, 1, 2).1, []);
    assert_eq!(deliver(&mut c, 0, 1, 2).1, []);
    assert_eq!(
        deliver(&mut c, 0, 0, 2),
        (
            Progress::Waiting { stepped: true },
            vec![(1, Rank(10), Unexpected::Twice)]
        )
    );
    assert_eq!(c.step(), 2);
    // a step already left
    assert_eq!(
        deliver(&mut c, 0, 0, 2),
        (
            Progress::Rejected,
            vec![(0, Rank(10), Unexpected::StepOver)]
        )
    );
    // the call goes on with what it expects
    assert_eq!(
        deliver(&mut c, 0, 2, 2),
        (Progress::Waiting { stepped: true }, vec![])
    );
    assert_eq!(deliver(&mut c, 0, 3, 2), (Progress::Done, vec![]));
}

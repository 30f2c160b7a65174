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
        if let Err(m) = c.on_chunk(0, from, m, &mut out) {
            panic!("chunk of step {} refused", m.step);
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

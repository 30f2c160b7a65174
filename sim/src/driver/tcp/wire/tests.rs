use super::*;
use crate::proto::elastic::StoreRound;
use crate::proto::{CollMsg, Fingerprint, Generation};
use crate::proto::{GroupId, SeqNo};
use crate::scenario::{Algorithm, Dtype, OpKind, ReduceOp};
use proptest::prelude::*;
use std::sync::Arc;

fn fp() -> Fingerprint {
    Fingerprint {
        group: GroupId(0),
        generation: Generation(2),
        seq: SeqNo(7),
        op: OpKind::Allreduce,
        algorithm: Algorithm::Ring,
        bytes: 1 << 26,
        dtype: Dtype::F32,
        root: 0,
        reduce: ReduceOp::Sum,
        elements: 3,
    }
}

fn messages() -> Vec<Msg> {
    let p = Proposal::new(vec![(Rank(0), 0), (Rank(2), 1)], 3);
    let state = Arc::new(StoreState {
        generation: Generation(1),
        proposal: p.clone(),
        round: Some(StoreRound {
            target: Generation(2),
            participants: vec![(Rank(0), 0, Some(4)), (Rank(2), 1, None)],
            last_call: Some(99),
        }),
    });
    let b = Ballot {
        round: 3,
        rank: Rank(1),
    };
    vec![
        Msg::Coll(Box::new(CollMsg {
            fp: fp(),
            step: 2,
            data: Buffer::F32(vec![1.5, -2.0, 3.25]),
        })),
        Msg::Coll(Box::new(CollMsg {
            fp: fp(),
            step: 0,
            data: Buffer::I64(vec![i64::MIN, 5]),
        })),
        Msg::Elastic(Box::new(ElasticMsg::Heartbeat {
            generation: Generation(4),
        })),
        Msg::Elastic(Box::new(ElasticMsg::Promise {
            target: Generation(1),
            ballot: b,
            incarnation: 2,
            voter: true,
            accepted: Some((b, p.clone())),
            completed: Some(6),
        })),
        Msg::Elastic(Box::new(ElasticMsg::Commit {
            generation: Generation(1),
            proposal: p,
        })),
        Msg::Elastic(Box::new(ElasticMsg::StoreReply {
            ok: true,
            version: 12,
            state,
            lost: false,
        })),
        Msg::Registry(Box::new(RegistryMsg::State {
            scope: 0,
            incarnation: 1,
            version: 3,
            groups: vec!["todo".into(), "x".into()],
            reply: true,
        })),
    ]
}

fn envelope(msg: Msg) -> Frame {
    Frame::Message(Envelope {
        job: 42,
        from: 1,
        incarnation: 0,
        generation: generation_of(&msg),
        id: 9,
        bytes: 100,
        reliable: true,
        msg,
    })
}

#[test]
fn every_kind_of_message_survives_the_round_trip() {
    for m in messages() {
        let frame = envelope(m);
        let bytes = encode(&frame);
        let len = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        assert_eq!(check_len(len), Ok(bytes.len() - 4));
        assert_eq!(decode(&bytes[4..]), Ok(frame));
    }
    let hello = Frame::Hello {
        job: 1,
        rank: 2,
        incarnation: 3,
    };
    assert_eq!(decode(&encode(&hello)[4..]), Ok(hello));
}

#[test]
fn bad_frames_are_refused_with_a_reason() {
    assert_eq!(
        check_len(u32::MAX),
        Err(WireError::TooLarge(u32::MAX as usize))
    );
    assert_eq!(check_len(1), Err(WireError::Truncated));
    let mut body = encode(&envelope(messages().remove(0)))[4..].to_vec();
    assert_eq!(decode(&body[..body.len() - 1]), Err(WireError::Truncated));
    body[0] = 9;
    assert_eq!(decode(&body), Err(WireError::Version(9)));
    assert_eq!(decode(&[VERSION, 77]), Err(WireError::FrameType(77)));
    // a count far larger than the frame is refused before anything is allocated
    let mut e = Enc(vec![VERSION, MESSAGE]);
    e.u64(1);
    e.u32(0);
    e.u32(0);
    e.u32(0);
    e.u64(0);
    e.u64(0);
    e.u8(1);
    e.u8(0);
    e.u32(u32::MAX);
    assert_eq!(decode(&e.0), Err(WireError::Truncated));
}

proptest! {
    #[test]
    fn junk_never_panics(body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode(&body);
        let mut framed = vec![VERSION, MESSAGE];
        framed.extend_from_slice(&body);
        let _ = decode(&framed);
    }
}

//! The wire format between workers of a real run.
//!
//! Each ordered pair of processes (sender, receiver) uses one TCP connection, opened by the
//! sender; a process only reads from the connections it accepted. Every connection carries
//! frames:
//!
//! ```text
//! frame   = length:u32 (big endian, counts the bytes after it; at most MAX_FRAME)
//!           version:u8 (= VERSION) type:u8 body
//! hello   = type 1: job:u64 rank:u32 incarnation:u32        (the first frame, once)
//! message = type 2: job:u64 from:u32 incarnation:u32 generation:u32 id:u64
//!           bytes:u64 (modeled size) reliable:u8 msg
//! ```
//!
//! Integers are big endian. `msg` is the protocol message ([`Msg`]) in a compact binary
//! encoding (a tag byte per variant, then its fields; a collective's fingerprint as JSON;
//! buffers as a dtype tag, a count and the raw little-endian values; a point-to-point message
//! as group:u32 generation:u32 order:u64, then 0 bytes:u64 dtype:u8 elements:u32
//! rendezvous:u8 buffer for data, or 1 for an acknowledgement).
//!
//! The receiver checks every frame: the version, the size, the job (the group of processes a
//! `launch` started), that the sender is a node of the world and is the one that said hello on
//! this connection, and that a collective message's generation and group agree with the frame
//! and name a group the sender belongs to. A malformed, oversized or foreign frame closes that
//! connection, with a logged error; it never stops the process.
//!
//! Before the hello, the connection's opener proves that it knows the job's key (see
//! [`super::auth`]); the hello must then name the node and incarnation proven.

use crate::proto::elastic::{Ballot, ElasticMsg, Proposal, StoreState};
use crate::proto::registry::RegistryMsg;
use crate::proto::{Buffer, Msg, P2pBody, Rank};
use crate::scenario::Dtype;

/// The version byte of every frame.
pub const VERSION: u8 = 1;
/// The largest frame accepted (after the length prefix).
pub const MAX_FRAME: usize = 1 << 20;

const HELLO: u8 = 1;
const MESSAGE: u8 = 2;

/// Why a frame was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    #[error("frame of {0} bytes exceeds the maximum of {MAX_FRAME}")]
    TooLarge(usize),
    #[error("unsupported wire version {0} (this build speaks {VERSION})")]
    Version(u8),
    #[error("unknown frame type {0}")]
    FrameType(u8),
    #[error("truncated frame")]
    Truncated,
    #[error("malformed frame: {0}")]
    Malformed(String),
    #[error("{0}")]
    Refused(String),
}

/// A decoded frame.
#[derive(Debug, PartialEq)]
pub enum Frame {
    Hello {
        job: u64,
        rank: u32,
        incarnation: u32,
    },
    Message(Envelope),
}

/// A protocol message with what the transport says about it.
#[derive(Debug, PartialEq)]
pub struct Envelope {
    pub job: u64,
    pub from: u32,
    pub incarnation: u32,
    pub generation: u32,
    pub id: u64,
    pub bytes: u64,
    pub reliable: bool,
    pub msg: Msg,
}

/// The generation a message speaks for (0 for messages outside collectives).
pub fn generation_of(msg: &Msg) -> u32 {
    match msg {
        Msg::Coll(m) => m.fp.generation.0,
        Msg::P2p(m) => m.generation.0,
        Msg::Elastic(_) | Msg::Registry(_) | Msg::Node(_) => 0,
    }
}

/// A dtype's tag, as buffers carry it.
fn dtype_tag(d: Dtype) -> u8 {
    match d {
        Dtype::F32 => 0,
        Dtype::F64 => 1,
        Dtype::I64 => 2,
    }
}

/// Encodes a whole frame, length prefix included.
pub fn encode(frame: &Frame) -> Vec<u8> {
    let mut e = Enc(Vec::with_capacity(64));
    e.u32(0);
    e.u8(VERSION);
    match frame {
        Frame::Hello {
            job,
            rank,
            incarnation,
        } => {
            e.u8(HELLO);
            e.u64(*job);
            e.u32(*rank);
            e.u32(*incarnation);
        }
        Frame::Message(m) => {
            e.u8(MESSAGE);
            e.u64(m.job);
            e.u32(m.from);
            e.u32(m.incarnation);
            e.u32(m.generation);
            e.u64(m.id);
            e.u64(m.bytes);
            e.u8(u8::from(m.reliable));
            e.msg(&m.msg);
        }
    }
    let len = (e.0.len() - 4) as u32;
    e.0[..4].copy_from_slice(&len.to_be_bytes());
    e.0
}

/// Checks a length prefix before the body is read.
pub fn check_len(len: u32) -> Result<usize, WireError> {
    let len = len as usize;
    if len > MAX_FRAME {
        return Err(WireError::TooLarge(len));
    }
    if len < 2 {
        return Err(WireError::Truncated);
    }
    Ok(len)
}

/// Decodes a frame body (what follows the length prefix).
pub fn decode(body: &[u8]) -> Result<Frame, WireError> {
    let mut d = Dec(body);
    let version = d.u8()?;
    if version != VERSION {
        return Err(WireError::Version(version));
    }
    let frame = match d.u8()? {
        HELLO => Frame::Hello {
            job: d.u64()?,
            rank: d.u32()?,
            incarnation: d.u32()?,
        },
        MESSAGE => Frame::Message(Envelope {
            job: d.u64()?,
            from: d.u32()?,
            incarnation: d.u32()?,
            generation: d.u32()?,
            id: d.u64()?,
            bytes: d.u64()?,
            reliable: d.bool()?,
            msg: d.msg()?,
        }),
        t => return Err(WireError::FrameType(t)),
    };
    if !d.0.is_empty() {
        return Err(WireError::Malformed(format!(
            "{} bytes after the message",
            d.0.len()
        )));
    }
    Ok(frame)
}

struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn opt_u64(&mut self, v: Option<u64>) {
        match v {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                self.u64(v);
            }
        }
    }
    fn ranks(&mut self, rs: &[Rank]) {
        self.u32(rs.len() as u32);
        for r in rs {
            self.u32(r.0);
        }
    }
    fn ballot(&mut self, b: &Ballot) {
        self.u32(b.round);
        self.u32(b.rank.0);
    }
    fn proposal(&mut self, p: &Proposal) {
        self.ranks(&p.members.ranks);
        self.u32(p.incarnations.len() as u32);
        for i in &p.incarnations {
            self.u32(*i);
        }
        self.u32(p.resume);
    }
    fn buffer(&mut self, b: &Buffer) {
        match b {
            Buffer::F32(v) => {
                self.u8(0);
                self.u32(v.len() as u32);
                v.iter()
                    .for_each(|x| self.0.extend_from_slice(&x.to_le_bytes()));
            }
            Buffer::F64(v) => {
                self.u8(1);
                self.u32(v.len() as u32);
                v.iter()
                    .for_each(|x| self.0.extend_from_slice(&x.to_le_bytes()));
            }
            Buffer::I64(v) => {
                self.u8(2);
                self.u32(v.len() as u32);
                v.iter()
                    .for_each(|x| self.0.extend_from_slice(&x.to_le_bytes()));
            }
        }
    }
    fn store_state(&mut self, s: &StoreState) {
        self.u32(s.generation.0);
        self.proposal(&s.proposal);
        match &s.round {
            None => self.u8(0),
            Some(r) => {
                self.u8(1);
                self.u32(r.target.0);
                self.u32(r.participants.len() as u32);
                for (rank, inc, done) in &r.participants {
                    self.u32(rank.0);
                    self.u32(*inc);
                    self.opt_u64(done.map(u64::from));
                }
                self.opt_u64(r.last_call);
            }
        }
    }
    fn msg(&mut self, m: &Msg) {
        match m {
            Msg::Coll(c) => {
                self.u8(0);
                // the fingerprint's enums have stable serde names
                let fp = serde_json::to_vec(&c.fp).unwrap_or_default();
                self.bytes(&fp);
                self.u32(c.step);
                self.buffer(&c.data);
            }
            Msg::Elastic(e) => {
                self.u8(1);
                self.elastic(e);
            }
            Msg::P2p(p) => {
                self.u8(3);
                self.u32(p.group.0);
                self.u32(p.generation.0);
                self.u64(p.order);
                match &p.body {
                    P2pBody::Data {
                        sig,
                        rendezvous,
                        data,
                    } => {
                        self.u8(0);
                        self.u64(sig.bytes);
                        self.u8(dtype_tag(sig.dtype));
                        self.u32(sig.elements);
                        self.u8(u8::from(*rendezvous));
                        self.buffer(data);
                    }
                    P2pBody::Ack => self.u8(1),
                }
            }
            Msg::Node(b) => {
                self.u8(4);
                self.bytes(b);
            }
            Msg::Registry(r) => {
                self.u8(2);
                match r.as_ref() {
                    RegistryMsg::Heartbeat { incarnation } => {
                        self.u8(0);
                        self.u32(*incarnation);
                    }
                    RegistryMsg::State {
                        scope,
                        incarnation,
                        version,
                        groups,
                        reply,
                    } => {
                        self.u8(1);
                        self.u32(*scope);
                        self.u32(*incarnation);
                        self.u64(*version);
                        self.u32(groups.len() as u32);
                        groups.iter().for_each(|g| self.bytes(g.as_bytes()));
                        self.u8(u8::from(*reply));
                    }
                    RegistryMsg::Deliver {
                        scope,
                        group,
                        message,
                    } => {
                        self.u8(2);
                        self.u32(*scope);
                        self.bytes(group.as_bytes());
                        self.bytes(message.as_bytes());
                    }
                }
            }
        }
    }
    fn elastic(&mut self, e: &ElasticMsg) {
        match e {
            ElasticMsg::Heartbeat { generation } => {
                self.u8(0);
                self.u32(generation.0);
            }
            ElasticMsg::Prepare { target, ballot } => {
                self.u8(1);
                self.u32(target.0);
                self.ballot(ballot);
            }
            ElasticMsg::Promise {
                target,
                ballot,
                incarnation,
                voter,
                accepted,
                completed,
            } => {
                self.u8(2);
                self.u32(target.0);
                self.ballot(ballot);
                self.u32(*incarnation);
                self.u8(u8::from(*voter));
                match accepted {
                    None => self.u8(0),
                    Some((b, p)) => {
                        self.u8(1);
                        self.ballot(b);
                        self.proposal(p);
                    }
                }
                self.opt_u64(completed.map(u64::from));
            }
            ElasticMsg::Reject {
                target,
                ballot,
                promised,
            } => {
                self.u8(3);
                self.u32(target.0);
                self.ballot(ballot);
                self.ballot(promised);
            }
            ElasticMsg::Accept {
                target,
                ballot,
                proposal,
            } => {
                self.u8(4);
                self.u32(target.0);
                self.ballot(ballot);
                self.proposal(proposal);
            }
            ElasticMsg::Accepted { target, ballot } => {
                self.u8(5);
                self.u32(target.0);
                self.ballot(ballot);
            }
            ElasticMsg::Commit {
                generation,
                proposal,
            } => {
                self.u8(6);
                self.u32(generation.0);
                self.proposal(proposal);
            }
            ElasticMsg::Query => self.u8(7),
            ElasticMsg::Join { known } => {
                self.u8(8);
                self.u32(known.0);
            }
            ElasticMsg::StoreGet => self.u8(9),
            ElasticMsg::StoreCas { expected, state } => {
                self.u8(10);
                self.u64(*expected);
                self.store_state(state);
            }
            ElasticMsg::StoreReply {
                ok,
                version,
                state,
                lost,
            } => {
                self.u8(11);
                self.u8(u8::from(*ok));
                self.u64(*version);
                self.store_state(state);
                self.u8(u8::from(*lost));
            }
        }
    }
}

mod dec;
use dec::Dec;

#[cfg(test)]
mod tests;

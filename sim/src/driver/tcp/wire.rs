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
//! buffers as a dtype tag, a count and the raw little-endian values).
//!
//! The receiver checks every frame: the version, the size, the job (the group of processes a
//! `launch` started), that the sender is a node of the world and is the one that said hello on
//! this connection, and that a collective message's generation and group agree with the frame
//! and name a group the sender belongs to. A malformed, oversized or foreign frame closes that
//! connection, with a logged error; it never stops the process.
//!
//! There is no authentication: anyone who can reach a worker's port can talk to it. Workers
//! listen on 127.0.0.1 unless `--bind` says otherwise.

use crate::proto::collective::Members;
use crate::proto::elastic::{Ballot, ElasticMsg, Proposal, StoreRound, StoreState};
use crate::proto::registry::RegistryMsg;
use crate::proto::{Buffer, CollMsg, Fingerprint, Generation, Msg, Rank};
use std::sync::Arc;

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
        Msg::Elastic(_) | Msg::Registry(_) => 0,
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

struct Dec<'a>(&'a [u8]);

fn malformed(what: &str) -> WireError {
    WireError::Malformed(what.into())
}

impl<'a> Dec<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.0.len() < n {
            return Err(WireError::Truncated);
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    fn bool(&mut self) -> Result<bool, WireError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(WireError::Malformed(format!("boolean byte {b}"))),
        }
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    /// A count of items of at least `min` bytes each, checked against what is left.
    fn count(&mut self, min: usize) -> Result<usize, WireError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min) > self.0.len() {
            return Err(WireError::Truncated);
        }
        Ok(n)
    }
    fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.count(1)?;
        self.take(n)
    }
    fn string(&mut self) -> Result<String, WireError> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| malformed("string is not UTF-8"))
    }
    fn opt_u64(&mut self) -> Result<Option<u64>, WireError> {
        Ok(if self.bool()? {
            Some(self.u64()?)
        } else {
            None
        })
    }
    fn opt_u32(&mut self) -> Result<Option<u32>, WireError> {
        self.opt_u64()?
            .map(|v| u32::try_from(v).map_err(|_| malformed("count out of range")))
            .transpose()
    }
    fn ranks(&mut self) -> Result<Vec<Rank>, WireError> {
        let n = self.count(4)?;
        (0..n).map(|_| self.u32().map(Rank)).collect()
    }
    fn ballot(&mut self) -> Result<Ballot, WireError> {
        Ok(Ballot {
            round: self.u32()?,
            rank: Rank(self.u32()?),
        })
    }
    fn proposal(&mut self) -> Result<Arc<Proposal>, WireError> {
        let ranks = self.ranks()?;
        let n = self.count(4)?;
        let incarnations = (0..n).map(|_| self.u32()).collect::<Result<Vec<_>, _>>()?;
        let resume = self.u32()?;
        if incarnations.len() != ranks.len() || ranks.windows(2).any(|w| w[0] >= w[1]) {
            return Err(malformed("proposal members out of order"));
        }
        Ok(Arc::new(Proposal {
            members: Members::new(ranks),
            incarnations,
            resume,
        }))
    }
    fn buffer(&mut self) -> Result<Buffer, WireError> {
        let tag = self.u8()?;
        let width = match tag {
            0 => 4,
            1 | 2 => 8,
            t => return Err(WireError::Malformed(format!("buffer dtype tag {t}"))),
        };
        let n = self.count(width)?;
        let raw = self.take(n * width)?;
        Ok(match tag {
            0 => Buffer::F32(
                raw.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            1 => Buffer::F64(
                raw.chunks_exact(8)
                    .map(|c| f64::from_le_bytes(arr8(c)))
                    .collect(),
            ),
            _ => Buffer::I64(
                raw.chunks_exact(8)
                    .map(|c| i64::from_le_bytes(arr8(c)))
                    .collect(),
            ),
        })
    }
    fn store_state(&mut self) -> Result<Arc<StoreState>, WireError> {
        let generation = Generation(self.u32()?);
        let proposal = self.proposal()?;
        let round = if self.bool()? {
            let target = Generation(self.u32()?);
            let n = self.count(9)?;
            let participants = (0..n)
                .map(|_| Ok((Rank(self.u32()?), self.u32()?, self.opt_u32()?)))
                .collect::<Result<Vec<_>, WireError>>()?;
            Some(StoreRound {
                target,
                participants,
                last_call: self.opt_u64()?,
            })
        } else {
            None
        };
        Ok(Arc::new(StoreState {
            generation,
            proposal,
            round,
        }))
    }
    fn msg(&mut self) -> Result<Msg, WireError> {
        Ok(match self.u8()? {
            0 => {
                let fp: Fingerprint = serde_json::from_slice(self.bytes()?)
                    .map_err(|e| WireError::Malformed(format!("fingerprint: {e}")))?;
                let step = self.u32()?;
                let data = self.buffer()?;
                Msg::Coll(Box::new(CollMsg { fp, step, data }))
            }
            1 => Msg::Elastic(Box::new(self.elastic()?)),
            2 => Msg::Registry(Box::new(match self.u8()? {
                0 => RegistryMsg::Heartbeat {
                    incarnation: self.u32()?,
                },
                1 => {
                    let scope = self.u32()?;
                    let incarnation = self.u32()?;
                    let version = self.u64()?;
                    let n = self.count(4)?;
                    let groups = (0..n)
                        .map(|_| self.string())
                        .collect::<Result<Vec<_>, _>>()?;
                    RegistryMsg::State {
                        scope,
                        incarnation,
                        version,
                        groups,
                        reply: self.bool()?,
                    }
                }
                2 => RegistryMsg::Deliver {
                    scope: self.u32()?,
                    group: self.string()?,
                    message: self.string()?,
                },
                t => return Err(WireError::Malformed(format!("registry message tag {t}"))),
            })),
            t => return Err(WireError::Malformed(format!("message tag {t}"))),
        })
    }
    fn elastic(&mut self) -> Result<ElasticMsg, WireError> {
        Ok(match self.u8()? {
            0 => ElasticMsg::Heartbeat {
                generation: Generation(self.u32()?),
            },
            1 => ElasticMsg::Prepare {
                target: Generation(self.u32()?),
                ballot: self.ballot()?,
            },
            2 => ElasticMsg::Promise {
                target: Generation(self.u32()?),
                ballot: self.ballot()?,
                incarnation: self.u32()?,
                voter: self.bool()?,
                accepted: if self.bool()? {
                    Some((self.ballot()?, self.proposal()?))
                } else {
                    None
                },
                completed: self.opt_u32()?,
            },
            3 => ElasticMsg::Reject {
                target: Generation(self.u32()?),
                ballot: self.ballot()?,
                promised: self.ballot()?,
            },
            4 => ElasticMsg::Accept {
                target: Generation(self.u32()?),
                ballot: self.ballot()?,
                proposal: self.proposal()?,
            },
            5 => ElasticMsg::Accepted {
                target: Generation(self.u32()?),
                ballot: self.ballot()?,
            },
            6 => ElasticMsg::Commit {
                generation: Generation(self.u32()?),
                proposal: self.proposal()?,
            },
            7 => ElasticMsg::Query,
            8 => ElasticMsg::Join {
                known: Generation(self.u32()?),
            },
            9 => ElasticMsg::StoreGet,
            10 => ElasticMsg::StoreCas {
                expected: self.u64()?,
                state: self.store_state()?,
            },
            11 => ElasticMsg::StoreReply {
                ok: self.bool()?,
                version: self.u64()?,
                state: self.store_state()?,
                lost: self.bool()?,
            },
            t => return Err(WireError::Malformed(format!("elastic message tag {t}"))),
        })
    }
}

fn arr8(c: &[u8]) -> [u8; 8] {
    let mut a = [0u8; 8];
    a.copy_from_slice(c);
    a
}

#[cfg(test)]
mod tests;

//! Decoding: every read is bounds-checked, and every count is checked against the bytes left
//! before anything is allocated, so no input can make the decoder panic or balloon.

use super::WireError;
use crate::proto::collective::Members;
use crate::proto::elastic::{Ballot, ElasticMsg, Proposal, StoreRound, StoreState};
use crate::proto::registry::RegistryMsg;
use crate::proto::{
    Buffer, CollMsg, Fingerprint, Generation, GroupId, Msg, P2pBody, P2pMsg, P2pSig, Rank,
};
use crate::scenario::Dtype;
use std::sync::Arc;

pub(super) struct Dec<'a>(pub(super) &'a [u8]);

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
    pub(super) fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    pub(super) fn bool(&mut self) -> Result<bool, WireError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(WireError::Malformed(format!("boolean byte {b}"))),
        }
    }
    pub(super) fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(super) fn u64(&mut self) -> Result<u64, WireError> {
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
    pub(super) fn msg(&mut self) -> Result<Msg, WireError> {
        Ok(match self.u8()? {
            0 => {
                let fp: Fingerprint = serde_json::from_slice(self.bytes()?)
                    .map_err(|e| WireError::Malformed(format!("fingerprint: {e}")))?;
                let step = self.u32()?;
                let data = self.buffer()?;
                Msg::Coll(Box::new(CollMsg { fp, step, data }))
            }
            1 => Msg::Elastic(Box::new(self.elastic()?)),
            4 => Msg::Node(Box::new(self.bytes()?.to_vec())),
            3 => {
                let group = GroupId(self.u32()?);
                let generation = Generation(self.u32()?);
                let order = self.u64()?;
                let body = match self.u8()? {
                    0 => {
                        let bytes = self.u64()?;
                        let dtype = match self.u8()? {
                            0 => Dtype::F32,
                            1 => Dtype::F64,
                            2 => Dtype::I64,
                            t => return Err(WireError::Malformed(format!("dtype tag {t}"))),
                        };
                        let sig = P2pSig {
                            bytes,
                            dtype,
                            elements: self.u32()?,
                        };
                        P2pBody::Data {
                            sig,
                            rendezvous: self.bool()?,
                            data: self.buffer()?,
                        }
                    }
                    1 => P2pBody::Ack,
                    t => return Err(WireError::Malformed(format!("point-to-point tag {t}"))),
                };
                Msg::P2p(Box::new(P2pMsg {
                    group,
                    generation,
                    order,
                    body,
                }))
            }
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

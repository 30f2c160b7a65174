//! The frames between the `ringside` backend in a PyTorch process and `ringside torchrun`
//! (docs/torchrun.md, "The socket protocol"), after the key handshake.
//!
//! A frame is `length:u32` (big endian, at most [`MAX_FRAME`]) then a body whose first byte
//! is its type. Integers are big endian; tensor data is the elements' little-endian bytes.
//! Decoding is bounded and total: any malformed body is an error naming what is wrong.

use crate::proto::Buffer;
use crate::scenario::{Dtype, OpKind, ReduceOp};

/// The largest frame either side sends.
pub const MAX_FRAME: usize = 64 << 20;

/// What the program says.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// A process group was built: its name (torch's), its members (world ranks, in group
    /// order), and the timeout the program gave it (None: torch's default).
    Group {
        name: String,
        ranks: Vec<u32>,
        timeout_ms: Option<u64>,
    },
    /// A call; `work` is the program's number for it (1, 2, ...).
    Call(Call),
    /// The program waits for `work`.
    Wait { work: u32 },
    /// The program is leaving with `status`.
    Exit { status: i32 },
}

/// A call of the program.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub work: u32,
    pub group: String,
    pub op: OpKind,
    pub reduce: ReduceOp,
    /// Root or peer: a group rank.
    pub root: u32,
    /// Real elements per piece (see `collective::input_len`).
    pub elements: u32,
    /// The tensors' size in bytes as the program holds them (the modeled size).
    pub bytes: u64,
    /// `file:line (function)` of the program's innermost frame outside torch.
    pub site: String,
    pub input: Buffer,
}

/// What `torchrun` answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Done { work: u32, result: Option<Buffer> },
    Failed { work: u32, message: String },
}

const GROUP: u8 = 1;
const CALL: u8 = 2;
const WAIT: u8 = 3;
const EXIT: u8 = 4;
const DONE: u8 = 1;
const FAILED: u8 = 2;

/// Why a frame was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("malformed frame: {0}")]
pub struct WireError(pub String);

fn bad(what: impl Into<String>) -> WireError {
    WireError(what.into())
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], WireError> {
        if self.b.len() < n {
            return Err(bad(format!("truncated {what}")));
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }

    fn u8(&mut self, what: &str) -> Result<u8, WireError> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, WireError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &str) -> Result<u32, WireError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64, WireError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_be_bytes(a))
    }

    fn text(&mut self, what: &str) -> Result<String, WireError> {
        let n = self.u16(what)? as usize;
        let b = self.take(n, what)?;
        String::from_utf8(b.to_vec()).map_err(|_| bad(format!("{what} is not UTF-8")))
    }

    fn end(&self) -> Result<(), WireError> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(bad(format!("{} bytes after the end", self.b.len())))
        }
    }
}

fn op_of(code: u8) -> Result<OpKind, WireError> {
    OpKind::ALL
        .get(code as usize)
        .copied()
        .ok_or_else(|| bad(format!("unknown op {code}")))
}

fn reduce_of(code: u8) -> Result<ReduceOp, WireError> {
    match code {
        0 => Ok(ReduceOp::Sum),
        1 => Ok(ReduceOp::Prod),
        2 => Ok(ReduceOp::Min),
        3 => Ok(ReduceOp::Max),
        c => Err(bad(format!("unknown reduce op {c}"))),
    }
}

fn dtype_of(code: u8) -> Result<Dtype, WireError> {
    match code {
        0 => Ok(Dtype::F32),
        1 => Ok(Dtype::F64),
        2 => Ok(Dtype::I64),
        c => Err(bad(format!("unknown dtype {c}"))),
    }
}

fn dtype_code(d: Dtype) -> u8 {
    match d {
        Dtype::F32 => 0,
        Dtype::F64 => 1,
        Dtype::I64 => 2,
    }
}

/// The elements of `dtype` in `b` (little endian), which must hold a whole number of them.
fn buffer(dtype: Dtype, b: &[u8]) -> Result<Buffer, WireError> {
    let size = match dtype {
        Dtype::F32 => 4,
        Dtype::F64 | Dtype::I64 => 8,
    };
    if !b.len().is_multiple_of(size) {
        return Err(bad(format!(
            "{} data bytes are not whole {size}-byte elements",
            b.len()
        )));
    }
    Ok(match dtype {
        Dtype::F32 => Buffer::F32(
            b.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
        Dtype::F64 => Buffer::F64(
            b.chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
        ),
        Dtype::I64 => Buffer::I64(
            b.chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
        ),
    })
}

/// Decodes a request body.
pub fn decode(body: &[u8]) -> Result<Request, WireError> {
    let mut r = Reader { b: body };
    let req = match r.u8("type")? {
        GROUP => {
            let name = r.text("group name")?;
            let n = r.u32("member count")? as usize;
            if n > r.b.len() / 4 {
                return Err(bad(format!("{n} members do not fit the frame")));
            }
            let ranks = (0..n)
                .map(|_| r.u32("member"))
                .collect::<Result<Vec<_>, _>>()?;
            let timeout = r.u64("timeout")?;
            Request::Group {
                name,
                ranks,
                timeout_ms: (timeout > 0).then_some(timeout),
            }
        }
        CALL => {
            let work = r.u32("work")?;
            let group = r.text("group name")?;
            let op = op_of(r.u8("op")?)?;
            let reduce = reduce_of(r.u8("reduce op")?)?;
            let root = r.u32("root")?;
            let dtype = dtype_of(r.u8("dtype")?)?;
            let elements = r.u32("elements")?;
            let bytes = r.u64("bytes")?;
            let site = r.text("call site")?;
            let n = r.u64("data length")?;
            if n > r.b.len() as u64 {
                return Err(bad(format!("{n} data bytes do not fit the frame")));
            }
            let input = buffer(dtype, r.take(n as usize, "data")?)?;
            Request::Call(Call {
                work,
                group,
                op,
                reduce,
                root,
                elements,
                bytes,
                site,
                input,
            })
        }
        WAIT => Request::Wait {
            work: r.u32("work")?,
        },
        EXIT => Request::Exit {
            status: r.u32("status")? as i32,
        },
        t => return Err(bad(format!("unknown request type {t}"))),
    };
    r.end()?;
    Ok(req)
}

/// Encodes a reply as a whole frame (length first).
pub fn encode(reply: &Reply) -> Vec<u8> {
    let mut b = vec![0u8; 4];
    match reply {
        Reply::Done { work, result } => {
            b.push(DONE);
            b.extend_from_slice(&work.to_be_bytes());
            match result {
                None => b.push(0xff),
                Some(buf) => {
                    b.push(dtype_code(buf.dtype()));
                    let at = b.len();
                    b.extend_from_slice(&[0u8; 8]);
                    match buf {
                        Buffer::F32(v) => v.iter().for_each(|x| b.extend(x.to_le_bytes())),
                        Buffer::F64(v) => v.iter().for_each(|x| b.extend(x.to_le_bytes())),
                        Buffer::I64(v) => v.iter().for_each(|x| b.extend(x.to_le_bytes())),
                    }
                    let n = (b.len() - at - 8) as u64;
                    b[at..at + 8].copy_from_slice(&n.to_be_bytes());
                }
            }
        }
        Reply::Failed { work, message } => {
            b.push(FAILED);
            b.extend_from_slice(&work.to_be_bytes());
            let m = message.as_bytes();
            let m = &m[..m.len().min(u16::MAX as usize)];
            b.extend_from_slice(&(m.len() as u16).to_be_bytes());
            b.extend_from_slice(m);
        }
    }
    let n = (b.len() - 4) as u32;
    b[..4].copy_from_slice(&n.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_decodes_with_its_data_and_every_truncation_is_refused() {
        let mut b = vec![CALL];
        b.extend(7u32.to_be_bytes());
        b.extend(1u16.to_be_bytes());
        b.push(b'0');
        b.extend([0, 0]);
        b.extend(0u32.to_be_bytes());
        b.push(0);
        b.extend(2u32.to_be_bytes());
        b.extend(8u64.to_be_bytes());
        b.extend(3u16.to_be_bytes());
        b.extend(b"a:1");
        b.extend(8u64.to_be_bytes());
        b.extend(1.5f32.to_le_bytes());
        b.extend(2.0f32.to_le_bytes());
        let Request::Call(c) = decode(&b).expect("decodes") else {
            panic!("a call")
        };
        assert_eq!(c.work, 7);
        assert_eq!(c.input, Buffer::F32(vec![1.5, 2.0]));
        for n in 0..b.len() {
            assert!(decode(&b[..n]).is_err(), "{n} bytes");
        }
        b.push(0);
        assert!(decode(&b).is_err());
    }

    #[test]
    fn a_group_whose_member_count_overruns_the_frame_is_refused() {
        let mut b = vec![GROUP];
        b.extend(1u16.to_be_bytes());
        b.push(b'0');
        b.extend(u32::MAX.to_be_bytes());
        assert!(decode(&b).unwrap_err().0.contains("do not fit"));
    }
}

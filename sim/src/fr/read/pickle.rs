//! A pickle reader for Flight Recorder dumps that executes nothing.
//!
//! torch writes its dumps with `torch::jit::Pickler` (protocol 2): dicts, lists, tuples,
//! strings, integers, floats, booleans and None, with strings and stack frames memoized. This
//! reader understands every opcode of protocols 0 to 5 that builds such plain data, and refuses
//! every opcode that would name a Python global, call it or build an object (`GLOBAL`,
//! `STACK_GLOBAL`, `REDUCE`, `INST`, `OBJ`, `NEWOBJ`, `NEWOBJ_EX`, `BUILD`, `EXT*`,
//! persistent ids, out-of-band buffers): a dump never holds one, so a pickle that does is not a
//! dump and is rejected with the opcode, its byte offset and, for a global, the name it imports.
//!
//! It is bounded by construction: every opcode adds at most one node, references to memoized
//! objects share the node instead of copying it, and nesting of marks is capped, so memory is
//! proportional to the file and a hostile file cannot make the reader recurse or explode.
//!
//! Why not `serde-pickle`: it accepts `INST`/`OBJ`/`NEWOBJ`/`BUILD` silently (as empty dicts) and
//! resolves a few globals, copies every memoized object at each reference (a small file can
//! expand without bound) and decodes about 30 µs per record, 50 times too slow for the dumps of
//! thousands of ranks; it writes the pickles of `export --fr` instead.

use super::tree::{AppendError, Arena, Items, Node, NodeId, Tree, FALSE, MAX_DOCUMENT, NONE, TRUE};
use std::borrow::Cow;

/// How deeply marks (the start of a tuple, list or dict being built) may nest. A dump nests
/// six deep (dump, entries, entry, frames, frame, value).
const MAX_MARKS: usize = 64;

/// Why a pickle was refused: what, and at which byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickleError {
    pub offset: usize,
    pub message: String,
}

impl std::fmt::Display for PickleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pickle byte {}: {}", self.offset, self.message)
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Where the opcode being decoded starts.
    at: usize,
}

impl<'a> Reader<'a> {
    fn err<T>(&self, message: impl Into<String>) -> Result<T, PickleError> {
        Err(PickleError {
            offset: self.at,
            message: message.into(),
        })
    }

    #[inline(always)]
    fn take(&mut self, n: usize) -> Result<&'a [u8], PickleError> {
        if n > self.buf.len() - self.pos {
            return Err(self.truncated(n));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    // apart, so that `take` stays small enough to be inlined into the decoding loop
    #[cold]
    fn truncated(&self, n: usize) -> PickleError {
        PickleError {
            offset: self.at,
            message: format!(
                "the file ends in the middle of a value ({n} bytes announced, {} left): it is \
                 truncated",
                self.buf.len() - self.pos
            ),
        }
    }

    #[inline(always)]
    fn u8(&mut self) -> Result<u8, PickleError> {
        Ok(self.take(1)?[0])
    }

    #[inline(always)]
    fn u16(&mut self) -> Result<u16, PickleError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    #[inline(always)]
    fn u32(&mut self) -> Result<u32, PickleError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    #[inline(always)]
    fn u64(&mut self) -> Result<u64, PickleError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn len(&mut self, n: u64) -> Result<usize, PickleError> {
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.buf.len())
            .map_or_else(
                || self.err(format!("a length of {n} bytes is longer than the file")),
                Ok,
            )
    }

    /// A protocol-0 text argument, up to its newline.
    fn line(&mut self) -> Result<&'a [u8], PickleError> {
        match self.buf[self.pos..].iter().position(|&b| b == b'\n') {
            Some(n) => {
                let s = &self.buf[self.pos..self.pos + n];
                self.pos += n + 1;
                Ok(s.strip_suffix(b"\r").unwrap_or(s))
            }
            None => self.err("the file ends in the middle of a text argument: it is truncated"),
        }
    }

    fn utf8(&self, b: &'a [u8]) -> Result<&'a str, PickleError> {
        std::str::from_utf8(b).or_else(|_| self.err("a string is not valid UTF-8"))
    }
}

/// The name of a refused opcode and why.
fn refused(op: u8) -> Option<&'static str> {
    Some(match op {
        b'c' => "GLOBAL",
        0x93 => "STACK_GLOBAL",
        b'R' => "REDUCE",
        b'i' => "INST",
        b'o' => "OBJ",
        0x81 => "NEWOBJ",
        0x92 => "NEWOBJ_EX",
        b'b' => "BUILD",
        0x82..=0x84 => "EXT",
        b'P' | b'Q' => "PERSID",
        0x97 | 0x98 => "an out-of-band buffer",
        _ => return None,
    })
}

const TOO_MANY: &str = "more than 2^32 items in lists: not a dump";

/// The error for an opcode no dump holds: one that would import or build a Python object
/// (with the name a GLOBAL imports), or one that is not an opcode.
fn refuse(r: &mut Reader, op: u8) -> PickleError {
    let message = match refused(op) {
        Some("GLOBAL") => {
            let module = r.line().map(|s| String::from_utf8_lossy(s).into_owned());
            let name = r.line().map(|s| String::from_utf8_lossy(s).into_owned());
            match (module, name) {
                (Ok(m), Ok(n)) => format!(
                    "GLOBAL imports the Python object `{m}.{n}`: refused (a Flight Recorder \
                     dump holds only plain data, and nothing in a dump is executed)"
                ),
                _ => refusal("GLOBAL"),
            }
        }
        Some(name) => refusal(name),
        None => format!("unknown opcode 0x{op:02x}: not a pickle"),
    };
    PickleError {
        offset: r.at,
        message,
    }
}

fn refusal(name: &str) -> String {
    format!(
        "opcode {name} would import or build a Python object: refused (a Flight Recorder dump \
         holds only plain data, and nothing in a dump is executed)"
    )
}

/// Why an APPEND(S) or ADDITEMS could not add to its target.
fn not_added(e: AppendError, op: &str, kind: &str) -> String {
    match e {
        AppendError::NotA(k) => format!("{op} to {k}, not to {kind}"),
        AppendError::Full => TOO_MANY.to_string(),
    }
}

/// Little-endian two's complement of `b` as an i64, or None when it needs more bits.
fn long_bytes(b: &[u8]) -> Option<i64> {
    if b.is_empty() {
        return Some(0);
    }
    if b.len() > 8 {
        return None;
    }
    let mut a = [if b[b.len() - 1] & 0x80 != 0 { 0xff } else { 0 }; 8];
    a[..b.len()].copy_from_slice(b);
    Some(i64::from_le_bytes(a))
}

/// Decodes `buf` into a tree.
pub fn decode(buf: &[u8]) -> Result<Tree<'_>, PickleError> {
    decode_in(buf, Arena::default())
}

/// Decodes `buf` into a tree built in `arena`'s allocation.
///
/// One loop over the opcodes with one match arm each, as Python's unpickler: the arms share
/// the stack, marks and memo, and the hot path (millions of opcodes per dump) stays one
/// function the optimizer sees whole.
pub fn decode_in<'a>(buf: &'a [u8], arena: Arena) -> Result<Tree<'a>, PickleError> {
    let mut r = Reader { buf, pos: 0, at: 0 };
    if buf.len() > MAX_DOCUMENT {
        return r.err(format!("larger than {MAX_DOCUMENT} bytes: not a dump"));
    }
    let mut t = Tree::with_arena(arena);
    // nodes are added about one per twenty bytes
    t.reserve(buf.len() / 20);
    let mut stack: Vec<NodeId> = Vec::with_capacity(64);
    let mut marks: Vec<usize> = Vec::with_capacity(16);
    // memo index -> node + 1 (0 = unset): the first 256 in an array, which a BINGET reads
    // without a bounds check, the others from index 256 in a vector
    let mut short = [0 as NodeId; 256];
    let mut long: Vec<NodeId> = Vec::new();
    let mut memo_count = 0u32;
    // as Python's unpickler, an opcode takes values only above the last mark: a MARK starts
    // a new stack, and the values below it are out of reach until the mark is consumed (by
    // the LIST, TUPLE, DICT, APPENDS, SETITEMS, ADDITEMS or POP_MARK that closes it). So the
    // stack never shrinks below the last mark, and every mark is a valid index into it.
    macro_rules! pop {
        () => {
            match stack.len() > marks.last().copied().unwrap_or(0) {
                true => stack.pop().unwrap_or(NONE),
                false if stack.is_empty() => {
                    return r.err("an opcode needs a value but the stack is empty")
                }
                false => {
                    return r
                        .err("an opcode takes a value from below the last MARK (stack underflow)")
                }
            }
        };
    }
    macro_rules! pop_mark {
        () => {
            match marks.pop() {
                Some(m) => m,
                None => return r.err("an opcode needs a mark but there is none"),
            }
        };
    }
    macro_rules! mark {
        () => {
            if marks.len() >= MAX_MARKS {
                return r.err(format!("values nest more than {MAX_MARKS} deep"));
            }
            marks.push(stack.len());
        };
    }
    // the values above the last mark, taken off the stack (into the tree's item pool)
    macro_rules! mark_items {
        () => {{
            let m = pop_mark!();
            let items = items!(&stack[m..]);
            stack.truncate(m);
            items
        }};
    }
    macro_rules! items {
        ($ids:expr) => {
            match t.new_items($ids) {
                Some(items) => items,
                None => return r.err(TOO_MANY),
            }
        };
    }
    loop {
        // a memo lookup is every other opcode of a dump (its keys are memoized strings, its
        // stack frames memoized dicts): runs of them are read here, apart from the dispatch
        let mut pos = r.pos;
        while let Some(&[b'h', id]) = buf.get(pos..pos + 2) {
            match short[usize::from(id)] {
                0 => {
                    r.at = pos;
                    return r.err(format!("GET of memo index {id}, which was never set"));
                }
                n => stack.push(n - 1),
            }
            pos += 2;
        }
        r.pos = pos;
        r.at = pos;
        if pos >= buf.len() {
            return r.err("the file ends before the pickle's STOP opcode: it is truncated");
        }
        let op = r.u8()?;
        let id = match op {
            0x80 => {
                let v = r.u8()?;
                if v > 5 {
                    return r.err(format!("unknown pickle protocol {v}"));
                }
                continue;
            }
            0x95 => {
                r.u64()?;
                continue;
            }
            b'.' => {
                if !marks.is_empty() {
                    return r.err("STOP inside an unclosed MARK: not one pickled object");
                }
                let root = pop!();
                if !stack.is_empty() {
                    return r.err("STOP leaves values on the stack: not one pickled object");
                }
                t.root = root;
                return Ok(t);
            }
            b'(' => {
                mark!();
                continue;
            }
            b'0' => {
                if stack.len() > marks.last().copied().unwrap_or(0) {
                    stack.pop();
                } else if marks.pop().is_none() {
                    return r.err("POP on an empty stack");
                }
                continue;
            }
            b'1' => {
                let m = pop_mark!();
                stack.truncate(m);
                continue;
            }
            b'2' => {
                let top = pop!();
                stack.push(top);
                stack.push(top);
                continue;
            }
            // memo
            b'p' | b'q' | b'r' | 0x94 => {
                let id = match op {
                    b'p' => {
                        let l = r.line()?;
                        match r.utf8(l)?.trim().parse::<u64>() {
                            Ok(v) => v,
                            Err(_) => return r.err("PUT with a malformed index"),
                        }
                    }
                    b'q' => u64::from(r.u8()?),
                    b'r' => u64::from(r.u32()?),
                    _ => u64::from(memo_count),
                };
                let top = match stack.last() {
                    Some(&x) if stack.len() > marks.last().copied().unwrap_or(0) => x,
                    _ => return r.err("PUT without a value above the last MARK"),
                };
                // a pickler numbers its memo from 0, one per object: an index beyond the file's
                // size is not from one
                if id > buf.len() as u64 {
                    return r.err(format!("memo index {id} is larger than the file"));
                }
                let id = id as usize;
                let slot = match id.checked_sub(short.len()) {
                    None => &mut short[id],
                    Some(i) => {
                        if long.len() <= i {
                            long.resize(i + 1, 0);
                        }
                        &mut long[i]
                    }
                };
                if *slot == 0 {
                    memo_count += 1;
                }
                *slot = top + 1;
                continue;
            }
            b'g' | b'h' | b'j' => {
                let id = match op {
                    // a BINGET comes here only when the file ends in its argument
                    b'h' => u64::from(r.u8()?),
                    b'g' => {
                        let l = r.line()?;
                        match r.utf8(l)?.trim().parse::<u64>() {
                            Ok(v) => v,
                            Err(_) => return r.err("GET with a malformed index"),
                        }
                    }
                    _ => u64::from(r.u32()?),
                };
                let n = match (id as usize).checked_sub(short.len()) {
                    None => short[id as usize],
                    Some(i) => long.get(i).copied().unwrap_or(0),
                };
                match n {
                    0 => return r.err(format!("GET of memo index {id}, which was never set")),
                    n => stack.push(n - 1),
                }
                continue;
            }
            // scalars
            b'N' => {
                stack.push(NONE);
                continue;
            }
            0x88 | 0x89 => {
                stack.push(if op == 0x88 { TRUE } else { FALSE });
                continue;
            }
            // integers from 0 to 2^31 are ids of their own, not nodes
            b'K' => Tree::small_int(u16::from(r.u8()?)),
            b'M' => Tree::small_int(r.u16()?),
            b'J' => t.int(i64::from(r.u32()? as i32)),
            0x8a | 0x8b => {
                let n = match op {
                    0x8a => usize::from(r.u8()?),
                    _ => {
                        let n = r.u32()?;
                        r.len(u64::from(n))?
                    }
                };
                match long_bytes(r.take(n)?) {
                    Some(v) => t.int(v),
                    None => t.push(Node::BigInt),
                }
            }
            b'I' | b'L' => {
                let l = r.line()?;
                let s = r.utf8(l)?.trim().trim_end_matches('L');
                match s {
                    "01" if op == b'I' => TRUE,
                    "00" if op == b'I' => FALSE,
                    _ => match s.parse::<i64>() {
                        Ok(v) => t.int(v),
                        Err(_)
                            if !s.is_empty()
                                && s.trim_start_matches('-')
                                    .bytes()
                                    .all(|b| b.is_ascii_digit()) =>
                        {
                            t.push(Node::BigInt)
                        }
                        Err(_) => return r.err(format!("malformed integer `{s}`")),
                    },
                }
            }
            b'G' => {
                let b = r.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                t.push(Node::Float(f64::from_be_bytes(a)))
            }
            b'F' => {
                let l = r.line()?;
                match r.utf8(l)?.trim().parse::<f64>() {
                    Ok(v) => t.push(Node::Float(v)),
                    Err(_) => return r.err("malformed float"),
                }
            }
            // strings
            b'X' | 0x8c | 0x8d => {
                let n = match op {
                    b'X' => u64::from(r.u32()?),
                    0x8c => u64::from(r.u8()?),
                    _ => r.u64()?,
                };
                let n = r.len(n)?;
                let b = r.take(n)?;
                let s = r.utf8(b)?;
                t.push_str(Cow::Borrowed(s))
            }
            b'T' | b'U' => {
                // protocol-2 byte strings: Python 2 `str`, read as text when it is UTF-8
                let n = if op == b'T' {
                    u64::from(r.u32()?)
                } else {
                    u64::from(r.u8()?)
                };
                let n = r.len(n)?;
                let b = r.take(n)?;
                match std::str::from_utf8(b) {
                    Ok(s) => t.push_str(Cow::Borrowed(s)),
                    Err(_) => t.push(Node::Bytes),
                }
            }
            b'S' | b'V' => {
                let l = r.line()?;
                let s = r.utf8(l)?;
                let s = if op == b'S' {
                    let q = s.trim();
                    let inner = q
                        .strip_prefix('\'')
                        .and_then(|x| x.strip_suffix('\''))
                        .or_else(|| q.strip_prefix('"').and_then(|x| x.strip_suffix('"')));
                    match inner {
                        Some(x) => x,
                        None => return r.err("STRING without quotes"),
                    }
                } else {
                    s
                };
                if s.contains('\\') {
                    return r.err("an escaped protocol-0 string (not written by torch)");
                }
                t.push_str(Cow::Borrowed(s))
            }
            b'B' | b'C' | 0x8e | 0x96 => {
                let n = match op {
                    b'B' => u64::from(r.u32()?),
                    b'C' => u64::from(r.u8()?),
                    _ => r.u64()?,
                };
                let n = r.len(n)?;
                r.take(n)?;
                t.push(Node::Bytes)
            }
            // containers
            // the nodes made in every record are pushed where they are made (built into the
            // arena directly rather than on the stack and copied)
            b')' => t.push(Node::Tuple(Items::default())),
            // an empty list or dict is read with the MARK that starts its items, as a pickler
            // writes them: one dispatch of the match fewer for each, and the dispatch is what
            // the processor mispredicts
            b']' | b'}' => {
                stack.push(t.push(match op {
                    b']' => Node::List(Items::default()),
                    _ => Node::Dict(Items::default()),
                }));
                if buf.get(r.pos) == Some(&b'(') {
                    r.at = r.pos;
                    r.pos += 1;
                    mark!();
                }
                continue;
            }
            0x8f => t.push(Node::Set(Items::default())),
            b'l' => {
                let items = mark_items!();
                t.push(Node::List(items))
            }
            b't' => {
                let items = mark_items!();
                t.push(Node::Tuple(items))
            }
            0x91 => {
                let items = mark_items!();
                t.push(Node::Set(items))
            }
            0x85 => {
                let a = pop!();
                let items = items!(&[a]);
                t.push(Node::Tuple(items))
            }
            0x86 => {
                let b = pop!();
                let a = pop!();
                let items = items!(&[a, b]);
                t.push(Node::Tuple(items))
            }
            0x87 => {
                let c = pop!();
                let b = pop!();
                let a = pop!();
                let items = items!(&[a, b, c]);
                t.push(Node::Tuple(items))
            }
            b'd' => {
                let m = pop_mark!();
                let (pairs, []) = stack[m..].as_chunks::<2>() else {
                    return r.err("DICT with an odd number of items");
                };
                let Some(d) = t.new_dict(pairs) else {
                    return r.err(TOO_MANY);
                };
                stack.truncate(m);
                d
            }
            b'a' | b'e' => {
                // the items are taken off the stack in place, without a copy
                let from = if op == b'a' {
                    if stack.len() < marks.last().copied().unwrap_or(0) + 2 {
                        return r.err("APPEND needs a list and a value");
                    }
                    stack.len() - 1
                } else {
                    match marks.pop() {
                        Some(m) => m,
                        None => return r.err("APPENDS needs a mark but there is none"),
                    }
                };
                if from <= marks.last().copied().unwrap_or(0) {
                    return r.err("APPEND without a list to append to");
                }
                let target = stack[from - 1];
                if let Err(e) = t.append(target, &stack[from..], false) {
                    return r.err(not_added(e, "APPEND", "a list"));
                }
                stack.truncate(from);
                continue;
            }
            b's' | b'u' => {
                let from = if op == b's' {
                    if stack.len() < marks.last().copied().unwrap_or(0) + 3 {
                        return r.err("SETITEM needs a dict, a key and a value");
                    }
                    stack.len() - 2
                } else {
                    match marks.pop() {
                        Some(m) => m,
                        None => return r.err("SETITEMS needs a mark but there is none"),
                    }
                };
                let (pairs, []) = stack[from..].as_chunks::<2>() else {
                    return r.err("SETITEMS with an odd number of items");
                };
                if from <= marks.last().copied().unwrap_or(0) {
                    return r.err("SETITEM without a dict to set items in");
                }
                let target = stack[from - 1];
                match t.set_items(target, pairs) {
                    Ok(()) => stack.truncate(from),
                    Err(AppendError::NotA(k)) => {
                        return r.err(format!("SETITEM on {k}, not on a dict"))
                    }
                    Err(AppendError::Full) => return r.err(TOO_MANY),
                }
                continue;
            }
            0x90 => {
                let m = pop_mark!();
                // the set is the value below the mark, above the mark before
                if m == 0 {
                    return r.err("an opcode needs a value but the stack is empty");
                }
                if m <= marks.last().copied().unwrap_or(0) {
                    return r
                        .err("an opcode takes a value from below the last MARK (stack underflow)");
                }
                let target = stack[m - 1];
                if let Err(e) = t.append(target, &stack[m..], true) {
                    return r.err(not_added(e, "ADDITEMS", "a set"));
                }
                stack.truncate(m);
                continue;
            }
            // the opcodes that build Python objects come here too, and are refused
            other => return Err(refuse(&mut r, other)),
        };
        stack.push(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s<'a>(t: &'a Tree, id: NodeId) -> &'a str {
        t.str(id).unwrap()
    }

    #[test]
    fn reads_what_python_writes() {
        // pickle.dumps({'a': [1, -2, 2**40], 'b': ('x', None, True), 'c': 1.5}, protocol=2)
        let p = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(K\x01J\xfe\xff\xff\xff\x8a\x06\x00\x00\x00\x00\x00\x01eX\x01\x00\x00\x00bq\x03X\x01\x00\x00\x00xq\x04N\x88\x87q\x05X\x01\x00\x00\x00cq\x06G?\xf8\x00\x00\x00\x00\x00\x00u.";
        let t = decode(p).unwrap();
        let Node::Dict(d) = t.get(t.root) else {
            panic!()
        };
        assert_eq!(d.len(), 3);
        let a = t.field(d, "a").unwrap();
        let Node::List(v) = t.get(a) else { panic!() };
        let v = t.items(v);
        let ints: Vec<Node> = v.iter().map(|&i| t.get(i)).collect();
        assert_eq!(ints, [Node::Int(1), Node::Int(-2), Node::Int(1 << 40)]);
        let b = t.field(d, "b").unwrap();
        let Node::Tuple(v) = t.get(b) else { panic!() };
        let v = t.items(v);
        assert_eq!(s(&t, v[0]), "x");
        assert_eq!(t.get(v[1]), Node::None);
        assert_eq!(t.get(v[2]), Node::Bool(true));
        assert_eq!(t.get(t.field(d, "c").unwrap()), Node::Float(1.5));
    }

    #[test]
    fn memo_references_share_one_node() {
        // l = [1]; pickle.dumps([l, l, l], protocol=2)
        let p = b"\x80\x02]q\x00(]q\x01K\x01ah\x01h\x01e.";
        let t = decode(p).unwrap();
        let Node::List(v) = t.get(t.root) else {
            panic!()
        };
        let v = t.items(v);
        assert_eq!(v.len(), 3);
        assert!(v.iter().all(|&x| x == v[0]));
    }

    #[test]
    fn memo_indices_below_and_above_256_are_kept_apart() {
        // a list of 300 memoized strings (BINPUT below 256, LONG_BINPUT from 256), then GETs
        // of both kinds on either side of 256
        let mut p = b"\x80\x02](".to_vec();
        for i in 0..300u32 {
            let text = format!("s{i}");
            p.push(b'X');
            p.extend((text.len() as u32).to_le_bytes());
            p.extend(text.as_bytes());
            match u8::try_from(i) {
                Ok(i) => p.extend([b'q', i]),
                Err(_) => {
                    p.push(b'r');
                    p.extend(i.to_le_bytes());
                }
            }
        }
        p.extend([b'h', 0, b'h', 255]);
        for i in [256u32, 299] {
            p.push(b'j');
            p.extend(i.to_le_bytes());
        }
        let mut whole = p.clone();
        whole.extend(b"e.");
        let t = decode(&whole).unwrap();
        let Node::List(v) = t.get(t.root) else {
            panic!()
        };
        let got: Vec<&str> = t.items(v)[300..].iter().map(|&i| s(&t, i)).collect();
        assert_eq!(got, ["s0", "s255", "s256", "s299"]);
        // an index never set, on either side
        for get in [&[b'h', 7][..], b"j\x2c\x01\x00\x00"] {
            let mut p = b"\x80\x02](X\x01\x00\x00\x00aq\x00".to_vec();
            p.extend(get);
            p.extend(b"e.");
            let e = decode(&p).unwrap_err();
            assert!(e.message.contains("which was never set"), "{e}");
        }
    }

    #[test]
    fn lists_appended_to_in_turn_keep_their_own_items() {
        // a = []; b = []; x = [a, b]; then a.append(i), b.append(100 + i) in turn; then a set
        // built by two ADDITEMS
        let mut p = b"\x80\x02]q\x00(]q\x01]q\x02e".to_vec();
        for i in 1..=40u8 {
            p.extend([
                b'h',
                1,
                b'K',
                i,
                b'a',
                b'0',
                b'h',
                2,
                b'K',
                100 + i,
                b'a',
                b'0',
            ]);
        }
        p.extend(b"(\x8f(K\x01K\x02\x90(K\x03\x90\x85e.");
        let t = decode(&p).unwrap();
        let Node::List(x) = t.get(t.root) else {
            panic!()
        };
        let x = t.items(x).to_vec();
        let ints = |id: NodeId| -> Vec<i64> {
            let (Node::List(v) | Node::Set(v) | Node::Tuple(v)) = t.get(id) else {
                panic!()
            };
            (t.items(v).iter())
                .map(|&i| match t.get(i) {
                    Node::Int(v) => v,
                    _ => panic!(),
                })
                .collect()
        };
        assert_eq!(ints(x[0]), (1..=40).collect::<Vec<_>>());
        assert_eq!(ints(x[1]), (101..=140).collect::<Vec<_>>());
        let Node::Tuple(sets) = t.get(x[2]) else {
            panic!()
        };
        assert_eq!(ints(t.items(sets)[0]), [1, 2, 3]);
        // items go only where the opcode puts them
        assert!(decode(b"\x80\x02)K\x01a.")
            .unwrap_err()
            .message
            .contains("APPEND to a tuple"));
        assert!(decode(b"\x80\x02](K\x01\x90.")
            .unwrap_err()
            .message
            .contains("ADDITEMS to a list"));
    }

    #[test]
    fn globals_and_objects_are_refused() {
        // pickle.dumps(collections.OrderedDict(), protocol=2)
        let p = b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01.";
        let e = decode(p).unwrap_err();
        assert!(e.message.contains("collections.OrderedDict"), "{e}");
        assert_eq!(e.offset, 2);
        for op in [
            0x93u8, b'R', b'i', b'o', 0x81, 0x92, b'b', 0x82, b'P', b'Q', 0x97,
        ] {
            let p = [0x80, 2, b')', op, b'.'];
            let e = decode(&p).unwrap_err();
            assert!(e.message.contains("refused"), "{op:#x}: {e}");
        }
    }

    #[test]
    fn truncated_and_malformed_input_is_an_error() {
        // a list, and one holding a memoized list three times (runs of BINGET are read apart)
        for p in [
            &b"\x80\x02]q\x00(K\x01K\x02e."[..],
            b"\x80\x02]q\x00(]q\x01h\x01h\x01e.",
        ] {
            assert!(decode(p).is_ok());
            for n in 0..p.len() {
                assert!(decode(&p[..n]).is_err(), "prefix of {n} bytes accepted");
            }
        }
        let e = decode(b"\x80\x02]q\x00(h\x00h\x07e.").unwrap_err();
        assert_eq!(
            (e.offset, &*e.message),
            (8, "GET of memo index 7, which was never set")
        );
        assert!(decode(b"\x80\x02X\xff\xff\xff\x7fabc").is_err());
        assert!(decode(b"\x80\x02h\x05.").is_err());
        assert!(decode(b"\x80\x02K\x01K\x02.").is_err());
        assert!(decode(b"\x80\x02K\x01a.").is_err());
        assert!(decode(b"\xff").is_err());
        let deep = [b'('; 100];
        assert!(decode(&deep).unwrap_err().message.contains("nest"));
    }

    #[test]
    fn values_below_a_mark_are_out_of_reach() {
        // each takes a value pushed before the last MARK, then closes the mark
        for p in [
            &b"\x80\x02K\x01K\x01(\x86l."[..],
            b"\x80\x02]K\x01(\x85e.",
            b"\x80\x02}K\x01K\x02(\x86u.",
            b"\x80\x02K\x01(\x85d.",
            b"\x80\x02K\x01(2(1.",
            b"\x80\x02K\x01K\x02K\x03(\x87\x31.",
            b"\x80\x02\x8fK\x01(\x86\x90.",
            b"\x80\x02K\x01(q\x00.",
            b"\x80\x02K\x01(0\x85t.",
        ] {
            let e = decode(p).unwrap_err();
            let m = e.message.to_lowercase();
            assert!(m.contains("mark") || m.contains("stack"), "{p:?}: {e}");
        }
        // the same opcodes above the mark are fine
        let t = decode(b"\x80\x02(K\x01K\x02\x86l.").unwrap();
        assert!(matches!(t.get(t.root), Node::List(v) if v.len() == 1));
    }
}

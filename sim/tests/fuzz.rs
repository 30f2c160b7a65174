//! Fuzzing the readers that take bytes from outside: the wire frame decoder of real runs, the
//! Flight Recorder dump reader (pickle and JSON) and the trace reader (JSON Lines, with the
//! Perfetto export streamed from it).
//!
//! Two halves. A committed corpus of hostile inputs (`tests/hostile/`, written by its
//! `make.py`), each its own test with the error it must give. And proptest harnesses that
//! feed random bytes and mutations of valid inputs to each reader. Every input must give a
//! clean error or a value: no panic, and no allocation out of proportion to its size (a
//! counting allocator measures the peak of each call).
//!
//! `RINGSIDE_FUZZ_CASES` sets the cases per harness (256 by default, sized for CI); raise it
//! for a longer run, e.g. `RINGSIDE_FUZZ_CASES=100000 cargo test --release -p ringside-sim
//! --test fuzz`.

use proptest::prelude::*;
use ringside_sim::driver::tcp::wire::{self, Frame, WireError};
use ringside_sim::fr::read::read_bytes;
use ringside_sim::trace::perfetto::export_chrome;
use ringside_sim::trace::TraceReader;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::{Path, PathBuf};

/// Counts this thread's live heap bytes and their peak.
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = LIVE.try_with(|l| {
        let now = l.get() + delta;
        l.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counters are plain
// thread-locals that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// `f`'s result and the most heap it held at once beyond what was live before.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let out = f();
    let peak = PEAK.with(Cell::get) - before;
    (out, peak.max(0) as usize)
}

/// The most a reader may hold for an input of `len` bytes: a few dozen bytes per input byte
/// (a decoded node or value per byte at most), plus a constant.
fn budget(len: usize) -> usize {
    64 * len + (1 << 20)
}

/// Reads a frame as a worker does: the length prefix is checked before the body is read.
fn read_frame(bytes: &[u8]) -> Result<Frame, WireError> {
    let Some((len, rest)) = bytes.split_first_chunk::<4>() else {
        return Err(WireError::Truncated);
    };
    let n = wire::check_len(u32::from_be_bytes(*len))?;
    let body = rest.get(..n).ok_or(WireError::Truncated)?;
    wire::decode(body)
}

/// Reads `bytes` as a frame within its allocation budget; the outcome as text.
fn wire_outcome(bytes: &[u8]) -> Result<String, String> {
    let (r, peak) = peak_of(|| read_frame(bytes));
    assert!(
        peak <= budget(bytes.len()),
        "{peak} bytes held for a frame of {}",
        bytes.len()
    );
    r.map(|f| format!("{f:?}")).map_err(|e| e.to_string())
}

/// Reads `bytes` as a dump within its allocation budget; the outcome as text.
fn fr_outcome(bytes: &[u8]) -> Result<String, String> {
    let (r, peak) = peak_of(|| read_bytes(bytes, "dump", 0));
    assert!(
        peak <= budget(bytes.len()),
        "{peak} bytes held for a dump of {}",
        bytes.len()
    );
    r.map(|d| format!("{} records", d.records.len()))
}

/// Reads `bytes` as a trace to its end, and exports it to Perfetto (into nothing), within the
/// allocation budget; the outcome as text.
fn trace_outcome(bytes: &[u8]) -> Result<String, String> {
    let (r, peak) = peak_of(|| {
        let mut reader = TraceReader::new(bytes, "trace").map_err(|e| e.to_string())?;
        let mut n = 0u64;
        while reader.next_event().map_err(|e| e.to_string())?.is_some() {
            n += 1;
        }
        let mut again = TraceReader::new(bytes, "trace").map_err(|e| e.to_string())?;
        export_chrome(&mut again, std::io::sink()).map_err(|e| e.to_string())?;
        Ok(format!(
            "{n} events, complete: {}",
            again.incomplete().is_none()
        ))
    });
    assert!(
        peak <= budget(bytes.len()),
        "{peak} bytes held for a trace of {}",
        bytes.len()
    );
    r
}

fn hostile(path: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/hostile")
        .join(path);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Each file of the corpus: which reader, the file, and what must come out (`Ok`: a value;
/// else a fragment of the error).
macro_rules! corpus {
    ($($name:ident: $reader:ident $file:literal => $want:expr;)*) => {$(
        #[test]
        fn $name() {
            let got = $reader(&hostile($file));
            let want: Result<&str, &str> = $want;
            match (want, &got) {
                (Ok(_), Ok(_)) => {}
                (Err(w), Err(e)) => assert!(e.contains(w), "{}: want {w:?} in {e:?}", $file),
                _ => panic!("{}: want {want:?}, got {got:?}", $file),
            }
        }
    )*};
}

corpus! {
    wire_valid_chunk: wire_outcome "wire/valid_chunk.bin" => Ok("");
    wire_valid_hello: wire_outcome "wire/valid_hello.bin" => Ok("");
    wire_truncated_chunk: wire_outcome "wire/truncated_chunk.bin" => Err("truncated frame");
    wire_oversized_frame: wire_outcome "wire/oversized_frame.bin" => Err("exceeds the maximum");
    wire_just_over_the_limit: wire_outcome "wire/just_over_the_limit.bin"
        => Err("frame of 1048577 bytes exceeds the maximum of 1048576");
    wire_wrong_version: wire_outcome "wire/wrong_version.bin" => Err("unsupported wire version 9");
    wire_unknown_frame_type: wire_outcome "wire/unknown_frame_type.bin"
        => Err("unknown frame type 77");
    wire_http_request: wire_outcome "wire/http_request.bin" => Err("exceeds the maximum");
    wire_huge_buffer_count: wire_outcome "wire/huge_buffer_count.bin" => Err("truncated frame");
    wire_huge_string_count: wire_outcome "wire/huge_string_count.bin" => Err("truncated frame");
    wire_fingerprint_not_json: wire_outcome "wire/fingerprint_not_json.bin"
        => Err("malformed frame: fingerprint");
    wire_fingerprint_nested_deep: wire_outcome "wire/fingerprint_nested_deep.bin"
        => Err("fingerprint: invalid type: sequence");
    wire_group_name_not_utf8: wire_outcome "wire/group_name_not_utf8.bin"
        => Err("string is not UTF-8");
    wire_proposal_out_of_order: wire_outcome "wire/proposal_out_of_order.bin"
        => Err("proposal members out of order");
    wire_trailing_bytes: wire_outcome "wire/trailing_bytes.bin" => Err("2 bytes after the message");
    wire_boolean_byte_7: wire_outcome "wire/boolean_byte_7.bin" => Err("boolean byte 7");
    wire_zero_length: wire_outcome "wire/zero_length.bin" => Err("truncated frame");
    wire_junk: wire_outcome "wire/junk.bin" => Err("exceeds the maximum");

    fr_truncated: fr_outcome "fr/truncated.pkl" => Err("truncated");
    fr_truncated_at_the_end: fr_outcome "fr/truncated_at_the_end.pkl" => Err("truncated");
    fr_wrong_types: fr_outcome "fr/wrong_types.json"
        => Err("`collective_seq_id` should be an integer, found a list");
    fr_entries_a_dict: fr_outcome "fr/entries_a_dict.json" => Err("`entries` is a dict");
    fr_version_a_list: fr_outcome "fr/version_a_list.json" => Err("version");
    fr_nested_deep_json: fr_outcome "fr/nested_deep.json" => Err("malformed JSON");
    fr_nested_deep_pickle: fr_outcome "fr/nested_deep.pkl" => Err("malformed pickle");
    fr_string_claims_4gib: fr_outcome "fr/string_claims_4gib.pkl"
        => Err("a length of 4294967295 bytes is longer than the file");
    fr_bytes_claim_8eib: fr_outcome "fr/bytes_claim_8eib.pkl" => Err("malformed pickle");
    fr_frame_claims_8eib: fr_outcome "fr/frame_claims_8eib.pkl"
        => Err("the document is None/null, not a dict");
    fr_shared_reference_bomb: fr_outcome "fr/shared_reference_bomb.pkl" => Err("too many times");
    fr_huge_list: fr_outcome "fr/huge_list.pkl" => Err("1000002 records");
    fr_global_reduce: fr_outcome "fr/global_reduce.pkl" => Err("`posix.system`");
    fr_stack_global: fr_outcome "fr/stack_global.pkl" => Err("refused");
    fr_reduce_without_global: fr_outcome "fr/reduce_without_global.pkl" => Err("refused");
    fr_inst: fr_outcome "fr/inst.pkl" => Err("refused");
    fr_obj: fr_outcome "fr/obj.pkl" => Err("refused");
    fr_newobj: fr_outcome "fr/newobj.pkl" => Err("refused");
    fr_build: fr_outcome "fr/build.pkl" => Err("refused");
    fr_persistent_id: fr_outcome "fr/persistent_id.pkl" => Err("refused");
    fr_not_a_dump: fr_outcome "fr/not_a_dump.json" => Err("not a Flight Recorder dump");
    fr_empty: fr_outcome "fr/empty.json" => Err("empty file");
    fr_nul_bytes: fr_outcome "fr/nul_bytes.pkl" => Err("malformed pickle");
    fr_junk: fr_outcome "fr/junk.bin" => Err("neither a pickle nor JSON");
}

#[test]
fn the_corpus_names_every_file_it_holds() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let this = std::fs::read_to_string(here.join("fuzz.rs")).expect("fuzz.rs");
    for dir in ["wire", "fr"] {
        for e in std::fs::read_dir(here.join("hostile").join(dir)).expect("corpus") {
            let name = format!("{dir}/{}", e.expect("entry").file_name().to_string_lossy());
            assert!(
                this.contains(&format!("\"{name}\"")),
                "{name} has no test in fuzz.rs"
            );
        }
    }
}

/// Valid inputs to mutate: every corpus file, plus the real dumps and fixtures.
fn seeds(dirs: &[&str]) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = Vec::new();
    let mut stack: Vec<PathBuf> = dirs.iter().map(|d| root.join(d)).collect();
    while let Some(p) = stack.pop() {
        match std::fs::read_dir(&p) {
            Ok(entries) => stack.extend(entries.flatten().map(|e| e.path())),
            Err(_) if p.is_file() => files.push(p),
            Err(_) => {}
        }
    }
    files.sort();
    files
        .iter()
        .filter(|p| p.extension().is_none_or(|e| e != "md" && e != "py"))
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|b| b.len() <= 256 << 10)
        .collect()
}

fn config() -> ProptestConfig {
    let cases = std::env::var("RINGSIDE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// One edit of a byte string.
#[derive(Clone, Debug)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
    Truncate(usize),
    /// Writes a big-endian u32 (a length or count) at a position.
    Count(usize, u32),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(i, v)| Edit::Insert(i, v)),
        (any::<usize>(), 1usize..64).prop_map(|(i, n)| Edit::Remove(i, n)),
        any::<usize>().prop_map(Edit::Truncate),
        (
            any::<usize>(),
            prop_oneof![Just(0u32), Just(u32::MAX), Just(1 << 20), any::<u32>()]
        )
            .prop_map(|(i, v)| Edit::Count(i, v)),
    ]
}

fn apply(mut b: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let at = |i: usize, b: &Vec<u8>| if b.is_empty() { 0 } else { i % b.len() };
        match e {
            Edit::Flip(i, x) if !b.is_empty() => {
                let i = at(*i, &b);
                b[i] ^= x | 1;
            }
            Edit::Flip(..) => {}
            Edit::Insert(i, v) => {
                let i = at(*i, &b);
                b.splice(i..i, v.iter().copied());
            }
            Edit::Remove(i, n) => {
                let i = at(*i, &b);
                let end = (i + n).min(b.len());
                b.drain(i..end);
            }
            Edit::Truncate(i) => {
                let i = at(*i, &b);
                b.truncate(i);
            }
            Edit::Count(i, v) => {
                let i = at(*i, &b);
                for (k, byte) in v.to_be_bytes().iter().enumerate() {
                    if let Some(slot) = b.get_mut(i + k) {
                        *slot = *byte;
                    }
                }
            }
        }
    }
    b
}

/// A seed from `pool` and a few edits of it.
fn mutated(pool: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let n = pool.len();
    (0..n, proptest::collection::vec(edit(), 1..6))
        .prop_map(move |(k, edits)| apply(pool[k].clone(), &edits))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_bytes_are_never_a_panic_in_the_wire_decoder(
        body in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let _ = wire_outcome(&body);
        // past the length prefix and the version, where the decoding starts
        let mut framed = ((body.len() + 2) as u32).to_be_bytes().to_vec();
        framed.extend_from_slice(&[wire::VERSION, 2]);
        framed.extend_from_slice(&body);
        let _ = wire_outcome(&framed);
    }

    #[test]
    fn mutated_frames_are_never_a_panic_in_the_wire_decoder(
        bytes in mutated(seeds(&["tests/hostile/wire"])),
    ) {
        let _ = wire_outcome(&bytes);
    }

    #[test]
    fn random_bytes_are_never_a_panic_in_the_trace_reader(
        body in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let _ = trace_outcome(&body);
        // past a valid header, where the events start
        let mut b = trace_header();
        b.extend_from_slice(&body);
        let _ = trace_outcome(&b);
    }

    #[test]
    fn mutated_traces_are_never_a_panic_in_the_trace_reader(
        bytes in mutated(seeds(&["../tests/data/hostile-traces", "../tests/data/traces"])),
    ) {
        let _ = trace_outcome(&bytes);
    }

    #[test]
    fn random_bytes_are_never_a_panic_in_the_dump_reader(
        body in proptest::collection::vec(any::<u8>(), 0..512),
        first in prop_oneof![Just(vec![0x80u8, 2]), Just(vec![0x80u8, 4]), Just(b"{".to_vec())],
    ) {
        let _ = fr_outcome(&body);
        let mut b = first;
        b.extend_from_slice(&body);
        let _ = fr_outcome(&b);
    }

    #[test]
    fn mutated_dumps_are_never_a_panic_in_the_dump_reader(
        bytes in mutated(seeds(&[
            "tests/hostile/fr",
            "../tests/data/flight-recorder/real",
            "../tests/data/flight-recorder/fixtures",
        ])),
    ) {
        let _ = fr_outcome(&bytes);
    }
}

/// The header line of a real trace.
fn trace_header() -> Vec<u8> {
    let t = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/hostile-traces/footer-count-mismatch.jsonl"),
    )
    .expect("a corpus trace");
    t[..=t.iter().position(|&b| b == b'\n').expect("a header")].to_vec()
}

#[test]
fn hostile_traces_read_within_their_budget() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/hostile-traces");
    let mut n = 0;
    for e in std::fs::read_dir(dir).expect("the corpus") {
        let _ = trace_outcome(&std::fs::read(e.expect("an entry").path()).expect("a trace"));
        n += 1;
    }
    assert!(n >= 10, "{n} traces");
}

#[test]
fn the_allocation_meter_sees_what_a_reader_would_hold() {
    let (v, peak) = peak_of(|| vec![1u8; 8 << 20]);
    assert!(peak >= 8 << 20, "{peak}");
    drop(v);
    let (_, peak) = peak_of(|| vec![0u8; 16].len());
    assert!(peak < budget(0), "{peak}");
}

//! Fuzzing the readers that take bytes from outside: the wire frame decoder of real runs, the
//! Flight Recorder dump reader (pickle and JSON) and the trace reader (JSON Lines, with the
//! Perfetto export streamed from it).
//!
//! Two halves. A committed corpus of hostile inputs (`tests/hostile/`, written by its
//! `make.py`), each its own test with the error it must give. And proptest harnesses that
//! feed each reader random bytes, mutations of valid inputs, and inputs built to reach deep:
//! programs of the pickle machine (marks, containers, memo, every opcode) and documents shaped
//! like dumps whose every field may be of any type, as JSON and as pickle. Every input must
//! give a value or an error of one line that says something: no panic, no abort, and no more
//! heap held at once than 64 bytes per input byte plus 1 MiB (a counting allocator measures
//! the peak of each call).
//!
//! `RINGSIDE_FUZZ_CASES` sets the cases per harness and round (256 by default);
//! `RINGSIDE_FUZZ_SECONDS` keeps each harness going, round after round with fresh seeds, for
//! that much wall-clock time (`.ci/run` gives it 20 s), e.g. `RINGSIDE_FUZZ_SECONDS=3600
//! cargo test --release -p ringside-sim --test fuzz` for an hour each.

use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestCaseError, TestRng, TestRunner};
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
    wire_proposal_rank_at_u32_max: wire_outcome "wire/proposal_rank_at_u32_max.bin" => Ok("");
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

/// Runs `test` on inputs drawn from `strategy`: the cases of [`config`], then, while
/// `RINGSIDE_FUZZ_SECONDS` (0 by default; `.ci/run` sets it) of wall-clock time last, round
/// after round with fresh seeds. A failure is shrunk by proptest and reported with the seed of
/// its round and the minimal input.
// the fuzzing budget is wall-clock time, outside any simulated run
#[allow(clippy::disallowed_methods)]
fn fuzz<S: Strategy>(name: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let seconds: u64 = std::env::var("RINGSIDE_FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    let mut round = 0u64;
    let mut cases = 0u64;
    loop {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&round.to_le_bytes());
        seed[8..16].copy_from_slice(&(name.len() as u64).to_le_bytes());
        for (i, b) in name.bytes().enumerate() {
            seed[16 + i % 16] ^= b;
        }
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
        let mut runner = TestRunner::new_with_rng(config(), rng);
        if let Err(e) = runner.run(&strategy, &test) {
            panic!("{name}, round {round} (seed {seed:02x?}): {e}");
        }
        cases += u64::from(config().cases);
        round += 1;
        if std::time::Instant::now() >= deadline {
            break;
        }
    }
    if seconds > 0 {
        eprintln!("{name}: {cases} cases in {round} rounds");
    }
}

/// What every reader must do with any input: a value, or an error of one line that says
/// something (the allocation bound is checked by the `*_outcome` functions).
fn clean(outcome: Result<String, String>) -> Result<(), TestCaseError> {
    if let Err(e) = &outcome {
        prop_assert!(!e.trim().is_empty(), "an error without a message");
        prop_assert!(!e.contains('\n'), "an error of several lines: {e}");
    }
    Ok(())
}

#[test]
fn random_bytes_are_never_a_panic_in_the_wire_decoder() {
    fuzz(
        "wire, random bytes",
        proptest::collection::vec(any::<u8>(), 0..512),
        |body| {
            let _ = wire_outcome(&body);
            // past the length prefix and the version, where the decoding starts
            let mut framed = ((body.len() + 2) as u32).to_be_bytes().to_vec();
            framed.extend_from_slice(&[wire::VERSION, 2]);
            framed.extend_from_slice(&body);
            let _ = wire_outcome(&framed);
            Ok(())
        },
    );
}

#[test]
fn mutated_frames_are_never_a_panic_in_the_wire_decoder() {
    fuzz(
        "wire, mutated frames",
        mutated(seeds(&["tests/hostile/wire"])),
        |bytes| {
            let _ = wire_outcome(&bytes);
            Ok(())
        },
    );
}

#[test]
fn random_bytes_are_never_a_panic_in_the_trace_reader() {
    fuzz(
        "trace, random bytes",
        proptest::collection::vec(any::<u8>(), 0..512),
        |body| {
            clean(trace_outcome(&body))?;
            // past a valid header, where the events start
            let mut b = trace_header();
            b.extend_from_slice(&body);
            clean(trace_outcome(&b))
        },
    );
}

#[test]
fn mutated_traces_are_never_a_panic_in_the_trace_reader() {
    fuzz(
        "trace, mutated traces",
        mutated(seeds(&[
            "../tests/data/hostile/traces",
            "../tests/data/traces",
        ])),
        |bytes| clean(trace_outcome(&bytes)),
    );
}

#[test]
fn random_bytes_are_never_a_panic_in_the_dump_reader() {
    fuzz(
        "dump, random bytes",
        (
            proptest::collection::vec(any::<u8>(), 0..512),
            prop_oneof![
                Just(vec![0x80u8, 2]),
                Just(vec![0x80u8, 4]),
                Just(b"{".to_vec())
            ],
        ),
        |(body, first)| {
            clean(fr_outcome(&body))?;
            let mut b = first;
            b.extend_from_slice(&body);
            clean(fr_outcome(&b))
        },
    );
}

#[test]
fn mutated_dumps_are_never_a_panic_in_the_dump_reader() {
    fuzz(
        "dump, mutated dumps",
        mutated(seeds(&[
            "tests/hostile/fr",
            "../tests/data/hostile/dumps",
            "../tests/data/flight-recorder/real",
            "../tests/data/flight-recorder/fixtures",
        ])),
        |bytes| clean(fr_outcome(&bytes)),
    );
}

/// One opcode of the pickle machine with its argument, drawn from `kind` and `arg`: every
/// opcode the reader knows (stack, marks, containers, memo, scalars, strings, protocol-0
/// text forms), the ones it refuses, and any byte at all.
fn pickle_op(kind: u8, arg: u32) -> Vec<u8> {
    let small = (arg % 4) as u8;
    let text = ["", "a", "entries", "frames", "all_reduce", "é"][arg as usize % 6];
    let mut v = match kind % 44 {
        0 => vec![b'('],
        1 => vec![b'0'],
        2 => vec![b'1'],
        3 => vec![b'2'],
        4 => vec![b']'],
        5 => vec![b')'],
        6 => vec![b'}'],
        7 => vec![0x8f],
        8 => vec![b'l'],
        9 => vec![b't'],
        10 => vec![b'd'],
        11 => vec![0x91],
        12 => vec![0x85],
        13 => vec![0x86],
        14 => vec![0x87],
        15 => vec![b'a'],
        16 => vec![b'e'],
        17 => vec![b's'],
        18 => vec![b'u'],
        19 => vec![0x90],
        20 => vec![b'q', small],
        21 => vec![b'h', small],
        22 => vec![0x94],
        23 => [&[b'r'][..], &u32::from(small).to_le_bytes()].concat(),
        24 => [&[b'j'][..], &u32::from(small).to_le_bytes()].concat(),
        25 => vec![b'N'],
        26 => vec![0x88],
        27 => vec![0x89],
        28 => vec![b'K', arg as u8],
        29 => [&[b'J'][..], &arg.to_le_bytes()].concat(),
        30 => [&[b'M'][..], &(arg as u16).to_le_bytes()].concat(),
        31 => vec![0x8a, 2, arg as u8, (arg >> 8) as u8],
        32 => [&[0x8c, text.len() as u8][..], text.as_bytes()].concat(),
        33 => [
            &[b'X'][..],
            &(text.len() as u32).to_le_bytes(),
            text.as_bytes(),
        ]
        .concat(),
        34 => [&[b'G'][..], &f64::from(arg).to_be_bytes()].concat(),
        35 => format!("I{}\n", arg as i32).into_bytes(),
        36 => format!("L{arg}L\n").into_bytes(),
        37 => format!("S'{text}'\n").into_bytes(),
        38 => format!("p{small}\n").into_bytes(),
        39 => format!("g{small}\n").into_bytes(),
        40 => vec![b'R'],
        41 => b"cos\nsystem\n".to_vec(),
        42 => vec![0x95, 8, 0, 0, 0, 0, 0, 0, 0],
        _ => vec![arg as u8],
    };
    v.shrink_to_fit();
    v
}

/// Programs of the pickle machine: a protocol header, a few dozen opcodes, usually a STOP.
fn pickle_program() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec((any::<u8>(), any::<u32>()), 0..48),
        0u8..4,
    )
        .prop_map(|(ops, end)| {
            let mut b = vec![0x80, 2];
            for (kind, arg) in ops {
                b.extend(pickle_op(kind, arg));
            }
            if end > 0 {
                b.push(b'.');
            }
            b
        })
}

/// A small JSON value of any type.
fn any_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop_oneof![Just(-1i64), Just(0), Just(1), Just(3), Just(1 << 40)].prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "[a-z0-9:_ \\[\\],<>?-]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The keys of a dump and of its records, so that generated documents reach the conversion
/// of every field rather than stopping at "not a dump".
const DUMP_KEYS: &[&str] = &[
    "version",
    "pg_config",
    "pg_status",
    "entries",
    "comm_lib_version",
];
const RECORD_KEYS: &[&str] = &[
    "record_id",
    "pg_id",
    "process_group",
    "collective_seq_id",
    "p2p_seq_id",
    "op_id",
    "profiling_name",
    "time_created_ns",
    "input_sizes",
    "input_dtypes",
    "output_sizes",
    "output_dtypes",
    "state",
    "retired",
    "timeout_ms",
    "is_p2p",
    "frames",
    "time_discovered_completed_ns",
];

/// Documents shaped like dumps, each field of any type (or of its own type more often).
fn dump_shaped() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{json, Value};
    let field = |key: &'static str| {
        let typical = match key {
            "process_group" => json!(["0", "default_pg"]),
            "profiling_name" => json!("nccl:all_reduce"),
            "input_sizes" | "output_sizes" => json!([[3, 4]]),
            "input_dtypes" | "output_dtypes" => json!(["Float"]),
            "state" => json!("scheduled"),
            "retired" | "is_p2p" => json!(false),
            "frames" => json!([{"name": "f", "filename": "train.py", "line": 7}]),
            "pg_config" => json!({"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}}),
            "pg_status" => json!({"0": {"last_enqueued_collective": 2}}),
            "version" | "comm_lib_version" => json!("2.10"),
            _ => json!(1),
        };
        prop_oneof![3 => Just(typical), 1 => any_json()]
    };
    let record = proptest::sample::subsequence(RECORD_KEYS, 0..RECORD_KEYS.len())
        .prop_flat_map(move |keys| {
            keys.into_iter()
                .map(|k| field(k).prop_map(move |v| (k.to_string(), v)))
                .collect::<Vec<_>>()
        })
        .prop_map(|kv| Value::Object(kv.into_iter().collect()));
    (
        proptest::sample::subsequence(DUMP_KEYS, 0..DUMP_KEYS.len()),
        proptest::collection::vec(record, 0..4),
    )
        .prop_flat_map(move |(keys, entries)| {
            let fields: Vec<_> = keys
                .into_iter()
                .map(|k| field(k).prop_map(move |v| (k.to_string(), v)))
                .collect();
            (fields, Just(entries))
        })
        .prop_map(|(fields, entries)| {
            let mut m: serde_json::Map<String, Value> = fields.into_iter().collect();
            if m.contains_key("entries") {
                m.insert("entries".into(), Value::Array(entries));
            }
            Value::Object(m)
        })
}

/// `v` as a protocol-2 pickle, as torch would write it (without memoizing).
fn to_pickle(v: &serde_json::Value) -> Vec<u8> {
    fn put(v: &serde_json::Value, b: &mut Vec<u8>) {
        use serde_json::Value;
        match v {
            Value::Null => b.push(b'N'),
            Value::Bool(x) => b.push(if *x { 0x88 } else { 0x89 }),
            Value::Number(n) => match n.as_i64() {
                Some(i) => {
                    b.push(0x8a);
                    b.push(8);
                    b.extend(i.to_le_bytes());
                }
                None => {
                    b.push(b'G');
                    b.extend(n.as_f64().unwrap_or(0.0).to_be_bytes());
                }
            },
            Value::String(s) => {
                b.push(b'X');
                b.extend((s.len() as u32).to_le_bytes());
                b.extend(s.as_bytes());
            }
            Value::Array(items) => {
                b.extend([b']', b'(']);
                items.iter().for_each(|x| put(x, b));
                b.push(b'e');
            }
            Value::Object(m) => {
                b.extend([b'}', b'(']);
                for (k, x) in m {
                    put(&Value::String(k.clone()), b);
                    put(x, b);
                }
                b.push(b'u');
            }
        }
    }
    let mut b = vec![0x80, 2];
    put(v, &mut b);
    b.push(b'.');
    b
}

#[test]
fn programs_of_the_pickle_machine_are_never_a_panic_in_the_dump_reader() {
    fuzz("dump, pickle programs", pickle_program(), |bytes| {
        clean(fr_outcome(&bytes))
    });
}

#[test]
fn documents_shaped_like_dumps_are_never_a_panic_in_the_dump_reader() {
    fuzz("dump, dump-shaped documents", dump_shaped(), |doc| {
        clean(fr_outcome(doc.to_string().as_bytes()))?;
        clean(fr_outcome(&to_pickle(&doc)))
    });
}

/// The header line of a real trace.
fn trace_header() -> Vec<u8> {
    let t = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/hostile/traces/footer-count-mismatch.jsonl"),
    )
    .expect("a corpus trace");
    t[..=t.iter().position(|&b| b == b'\n').expect("a header")].to_vec()
}

#[test]
fn hostile_traces_read_within_their_budget() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/hostile/traces");
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

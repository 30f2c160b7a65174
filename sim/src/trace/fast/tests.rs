//! The fast path agrees with serde: on every line the writer writes, and on mutated lines of
//! recorded runs.

use super::*;
use crate::trace::digest::Digest;
use crate::trace::encode_line;
use proptest::prelude::*;

/// What the general path reads.
fn serde_reads(text: &str) -> Option<(Nanos, Event)> {
    #[derive(serde::Deserialize)]
    struct Line {
        t: Nanos,
        #[serde(flatten)]
        ev: Event,
    }
    serde_json::from_str::<Line>(text).ok().map(|l| (l.t, l.ev))
}

/// Whether the fast path should read the line of `ev`.
fn meant_for(ev: &Event) -> bool {
    match ev {
        Event::Send { msg, .. } => !msg.chars().any(|c| c == '"' || c == '\\' || c < ' '),
        Event::Complete { result, .. } => !result.chars().any(|c| c == '"' || c == '\\' || c < ' '),
        Event::Deliver { .. }
        | Event::Step { .. }
        | Event::Call { .. }
        | Event::Compute { .. }
        | Event::ComputeDone { .. }
        | Event::Iteration { .. } => true,
        _ => false,
    }
}

/// Numbers of every length, and those where a digit is added.
fn n64() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        (0..20u32, 0..3u64).prop_map(|(k, d)| 10u64.pow(k).saturating_sub(d)),
        (0..20u32).prop_flat_map(|k| 0..10u64.pow(k).max(1)),
        Just(u64::MAX),
    ]
}

fn n32() -> impl Strategy<Value = u32> {
    prop_oneof![any::<u32>(), n64().prop_map(|n| n as u32), Just(u32::MAX)]
}

fn event() -> impl Strategy<Value = Event> {
    let msg = prop_oneof![
        Just("coll".to_string()),
        "[a-z]{0,8}",
        ".{0,6}",         // quotes, backslashes, control characters, anything
        "[a-z]{400,600}", // longer than a line written by hand
    ];
    prop_oneof![
        (n64(), n32(), n32()).prop_map(|(id, from, to)| Event::Deliver { id, from, to }),
        (
            (n64(), n32(), n32(), n64()),
            msg,
            proptest::option::of(n64()),
            proptest::option::of(n32()),
            n64()
        )
            .prop_map(|((id, from, to, bytes), msg, seq, step, arrive_ns)| {
                Event::Send {
                    id,
                    from,
                    to,
                    bytes,
                    msg: msg.into(),
                    seq,
                    step,
                    arrive_ns,
                }
            }),
        (
            (n32(), n32(), n32(), n64()),
            (n32(), n32()),
            prop_oneof![
                4 => proptest::collection::vec(n32(), 0..5),
                1 => proptest::collection::vec(n32(), 5..200),
            ]
        )
            .prop_map(|((rank, g, n, q), (step, steps), waiting_for)| {
                Event::Step {
                    rank,
                    group: GroupId(g),
                    generation: Generation(n),
                    seq: SeqNo(q),
                    step,
                    steps,
                    waiting_for: waiting_for.into(),
                }
            }),
        (any::<u32>()).prop_map(|rank| Event::ComputeDone { rank }),
        (any::<u32>(), any::<u32>())
            .prop_map(|(rank, iteration)| Event::Iteration { rank, iteration }),
        (any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(rank, iteration, duration_ns)| {
            Event::Compute {
                rank,
                iteration,
                duration_ns,
            }
        }),
        (
            (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>()),
            (any::<u32>(), any::<u64>()),
            (".{0,4}", any::<Option<bool>>()),
        )
            .prop_map(|((rank, g, n, iteration), (index, q), (result, correct))| {
                Event::Complete {
                    rank,
                    group: GroupId(g),
                    generation: Generation(n),
                    seq: SeqNo(q),
                    iteration,
                    index,
                    result,
                    correct,
                }
            }),
        (
            (
                any::<u32>(),
                any::<u32>(),
                any::<u32>(),
                any::<u32>(),
                any::<u32>()
            ),
            (
                any::<u64>(),
                any::<u64>(),
                any::<u32>(),
                any::<u32>(),
                any::<u32>()
            ),
            (0usize..6, 0usize..5, 0usize..3, 0usize..4),
        )
            .prop_map(|(a, b, (op, alg, dtype, reduce))| {
                use crate::scenario::{Algorithm, Dtype, OpKind, ReduceOp};
                let ops = [
                    OpKind::Allreduce,
                    OpKind::Broadcast,
                    OpKind::Reduce,
                    OpKind::Allgather,
                    OpKind::ReduceScatter,
                    OpKind::Barrier,
                ];
                let algs = [
                    Algorithm::Ring,
                    Algorithm::RecursiveDoubling,
                    Algorithm::Tree,
                    Algorithm::Dissemination,
                    Algorithm::Direct,
                ];
                let dtypes = [Dtype::F32, Dtype::F64, Dtype::I64];
                let reduces = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod];
                Event::Call {
                    rank: a.0,
                    iteration: a.1,
                    index: a.2,
                    group: GroupId(a.3),
                    generation: Generation(a.4),
                    seq: SeqNo(b.0),
                    op: ops[op],
                    algorithm: algs[alg],
                    bytes: b.1,
                    dtype: dtypes[dtype],
                    root: b.2,
                    reduce: reduces[reduce],
                    elements: b.3,
                    members: b.4,
                    peer: (b.4 % 3 == 0).then_some(a.0 ^ b.4),
                }
            }),
    ]
}

proptest! {
    #[test]
    fn the_digests_fast_path_is_the_general_encoding(t in any::<u64>(), ev in event()) {
        let (mut fast, mut general) = (Digest::new(), Digest::new());
        fast.update(t, &ev);
        general.update_general(t, &ev);
        prop_assert_eq!(fast, general, "{:?}", ev);
    }

    #[test]
    fn agrees_with_serde_on_written_lines(t in any::<u64>(), ev in event()) {
        let mut buf = Vec::new();
        encode_line(&mut buf, t, &ev);
        let text = std::str::from_utf8(&buf).unwrap();
        let expected = serde_reads(text);
        prop_assert_eq!(expected.as_ref(), Some(&(t, ev.clone())));
        match parse(text) {
            Some(got) => prop_assert_eq!(Some(got), expected),
            // only lines it is not meant for take the general path
            None => prop_assert!(!meant_for(&ev), "{}", text),
        }
    }

    #[test]
    fn hand_written_lines_are_serdes_bytes(t in any::<u64>(), ev in event()) {
        let (mut fast, mut general) = (Vec::new(), Vec::new());
        encode_line(&mut fast, t, &ev);
        crate::trace::encode::encode_line_serde(&mut general, t, &ev);
        prop_assert_eq!(String::from_utf8(fast), String::from_utf8(general));
    }

    /// Lines of a recorded run, mutated: digits changed, bytes inserted, deleted or
    /// repeated. Many stay lines the fast path reads (a changed number), many become other
    /// spellings of the same JSON or no JSON at all. Whatever the fast path accepts, serde
    /// reads as the same event; and every line that is still exactly the writer's spelling
    /// of an event the fast path is meant for, it accepts.
    #[test]
    fn agrees_with_serde_on_mutated_recorded_lines(line in mutated_line()) {
        let serde = serde_reads(&line);
        match parse(&line) {
            Some(got) => prop_assert_eq!(Some(got), serde, "{}", line),
            None => {
                if let Some((t, ev)) = &serde {
                    let mut buf = Vec::new();
                    encode_line(&mut buf, *t, ev);
                    prop_assert!(
                        !(meant_for(ev) && buf == line.as_bytes()),
                        "the writer's own spelling, refused: {}",
                        line
                    );
                }
            }
        }
    }
}

/// Every event line of two small runs: a preemption that trips the watchdog (drops,
/// aborts, flight records) and a fault-free run of every op (calls, steps, completions).
fn recorded_lines() -> &'static [String] {
    static LINES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    LINES.get_or_init(|| {
        let base = "[world]\nsize = 3\n[group]\ntimeout = \"50ms\"\n[workload]\n\
                    iterations = 2\ncompute = \"1ms\"\nelements = 5\n";
        let ops = "[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n\
                   [[workload.ops]]\nop = \"broadcast\"\nbytes = \"4KiB\"\nroot = 1\n\
                   [[workload.ops]]\nop = \"reduce_scatter\"\nbytes = \"3KiB\"\n\
                   [[workload.ops]]\nop = \"barrier\"\n";
        let preempt = "[[faults]]\nkind = \"preempt\"\nrank = 2\nat = \"1200us\"\n";
        let mut lines = Vec::new();
        for text in [
            format!("name = \"p\"\n{base}{ops}{preempt}"),
            format!("name = \"f\"\nseed = 3\n{base}{ops}"),
        ] {
            let s = crate::scenario::parse(&text, "fast.toml").expect("valid");
            let mut rec = crate::trace::VecRecorder::default();
            crate::run::run_events(&s, &crate::run::RunOptions::default(), &mut rec);
            for (t, ev) in rec.events {
                let mut buf = Vec::new();
                encode_line(&mut buf, t, &ev);
                lines.push(String::from_utf8(buf).expect("utf-8"));
            }
        }
        lines
    })
}

#[derive(Clone, Copy, Debug)]
enum Edit {
    /// Replace the character there by a digit.
    Digit(char),
    /// Insert a character that JSON cares about.
    Insert(char),
    Delete,
    /// Repeat the character there.
    Repeat,
    /// Respell the number that starts at or after there: numbers are where a hand-written
    /// reader most easily accepts what JSON does not (or reads a value serde would not).
    Number(&'static str),
}

fn edit() -> impl Strategy<Value = Edit> {
    let json = prop::sample::select(vec![
        ' ', ',', ':', '"', '{', '}', '[', ']', '.', 'e', '-', '\\', 'x', '0', '9',
    ]);
    // what goes before or after a number's digits ("" drops the number; "9…9" makes it
    // too large for u32, then for u64)
    let number = prop::sample::select(vec![
        "0",
        "-",
        "+",
        ".0",
        ".5",
        "e0",
        "E2",
        "0000000000",
        "99999999999",
        "",
        " ",
    ]);
    prop_oneof![
        4 => prop::char::range('0', '9').prop_map(Edit::Digit),
        2 => json.prop_map(Edit::Insert),
        2 => Just(Edit::Delete),
        1 => Just(Edit::Repeat),
        3 => number.prop_map(Edit::Number),
    ]
}

fn mutated_line() -> impl Strategy<Value = String> {
    let n = recorded_lines().len();
    (
        0..n,
        proptest::collection::vec((any::<prop::sample::Index>(), edit()), 0..3),
    )
        .prop_map(|(i, edits)| {
            let mut line: Vec<char> = recorded_lines()[i].chars().collect();
            for (at, e) in edits {
                let k = at.index(line.len());
                match e {
                    Edit::Digit(d) => line[k] = d,
                    Edit::Insert(c) => line.insert(k, c),
                    Edit::Delete => {
                        line.remove(k);
                    }
                    Edit::Repeat => line.insert(k, line[k]),
                    Edit::Number(spelling) => {
                        let Some(start) = (k..line.len()).find(|&j| {
                            line[j].is_ascii_digit()
                                && (j == 0 || !line[j - 1].is_ascii_alphanumeric())
                        }) else {
                            continue;
                        };
                        let end = (start..line.len())
                            .find(|&j| !line[j].is_ascii_digit())
                            .unwrap_or(line.len());
                        let extra: Vec<char> = spelling.chars().collect();
                        match spelling {
                            "" => drop(line.drain(start..end)),
                            "0" | "-" | "+" | " " => drop(line.splice(start..start, extra)),
                            _ => drop(line.splice(end..end, extra)),
                        }
                    }
                }
            }
            line.into_iter().collect()
        })
}

#[test]
fn the_digests_fast_path_is_the_general_encoding_on_recorded_runs() {
    let (mut fast, mut general) = (Digest::new(), Digest::new());
    for line in recorded_lines() {
        let (t, ev) = serde_reads(line).expect("a recorded line reads");
        fast.update(t, &ev);
        general.update_general(t, &ev);
        assert_eq!(fast, general, "after {line}");
    }
    assert!(fast.events() > 100);
}

#[test]
fn the_recorded_lines_cover_the_fast_kinds_and_are_read_fast() {
    let mut kinds = std::collections::BTreeSet::new();
    for line in recorded_lines() {
        let (t, ev) = serde_reads(line).expect("a written line reads back");
        if meant_for(&ev) {
            assert_eq!(parse(line), Some((t, ev.clone())), "{line}");
            kinds.insert(ev.kind());
        }
    }
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            "call",
            "complete",
            "compute",
            "compute_done",
            "deliver",
            "iteration",
            "send",
            "step"
        ]
    );
}

#[test]
fn other_spellings_take_the_general_path() {
    let fast = r#"{"t":5,"kind":"deliver","id":1,"from":0,"to":2}"#;
    assert!(parse(fast).is_some());
    for other in [
        r#"{"t":5, "kind":"deliver","id":1,"from":0,"to":2}"#,
        r#"{"t":5,"kind":"deliver","from":0,"id":1,"to":2}"#,
        r#"{"t":05,"kind":"deliver","id":1,"from":0,"to":2}"#,
        r#"{"t":5,"kind":"deliver","id":1,"from":0,"to":2,"x":1}"#,
        r#"{"t":5,"kind":"deliver","id":1,"from":0,"to":2}  "#,
        r#"{"t":5,"kind":"deliver","id":1.0,"from":0,"to":2}"#,
        r#"{"t":5,"kind":"deliver","id":1,"from":0,"to":4294967296}"#,
    ] {
        assert_eq!(parse(other), None, "{other}");
    }
}

use super::*;
use crate::scenario::examples::{ANNOTATED, EVERY_KEY};
use crate::scenario::*;
use crate::units::{Bandwidth, Duration, Size};

fn err(text: &str) -> ScenarioError {
    match parse(text, "s.toml") {
        Ok(s) => panic!("accepted:\n{text}\n=> {s:?}"),
        Err(e) => e,
    }
}

#[test]
fn the_annotated_example_parses() {
    let s = parse(ANNOTATED, "annotated.toml").unwrap();
    assert_eq!(s.name, "three-worker-preempt");
    assert_eq!(s.description.as_deref(), Some("..."));
    assert_eq!(s.seed, 1);
    assert_eq!(s.time_limit, Some(Duration(60_000_000_000)));
    assert_eq!(s.world.size, 3);
    assert_eq!(s.world.ranks_per_host, 2);
    let n = &s.network;
    assert_eq!(n.model, NetModel::AlphaBeta);
    assert_eq!(n.latency, Duration(5_000));
    assert_eq!(n.bandwidth, Bandwidth(25_000_000_000));
    assert_eq!(n.reduce_bandwidth, Some(Bandwidth(100_000_000_000)));
    assert_eq!(n.jitter, Duration::ZERO);
    assert_eq!(
        n.intra_host,
        Some(Link {
            latency: Duration(1_000),
            bandwidth: Bandwidth(300_000_000_000)
        })
    );
    assert_eq!(s.group.timeout, Duration(30_000_000_000));
    assert_eq!(s.group.algorithm, Some(Algorithm::Ring));
    let e = s.group.elastic.as_ref().unwrap();
    assert_eq!((e.min_size, e.max_size), (2, 3));
    assert_eq!(e.heartbeat_interval, Duration(100_000_000));
    assert_eq!(e.heartbeat_misses, 3);
    assert_eq!(e.rendezvous, RendezvousKind::Quorum);
    let w = &s.workload;
    assert_eq!(
        (w.iterations, w.compute, w.dtype, w.elements),
        (3, Duration(10_000_000), Dtype::F32, 64)
    );
    assert_eq!(w.ops.len(), 2);
    assert_eq!(w.ops[0].op, OpKind::Allreduce);
    assert_eq!(w.ops[0].bytes, Size(64 << 20));
    assert_eq!(w.ops[0].reduce, ReduceOp::Sum);
    assert_eq!(w.ops[0].algorithm, Some(Algorithm::Ring));
    assert_eq!(w.ops[1].root, Some(0));
    assert_eq!(
        s.faults,
        vec![Fault::Preempt {
            rank: 2,
            at: Trigger::At(Duration(25_000_000)),
            restart_after: None
        }]
    );
    let x = s.expect.as_ref().unwrap();
    assert_eq!(x.outcome, Some(Outcome::Stalled));
    assert_eq!(x.blocked, Some(vec![0, 1]));
    assert_eq!(
        x.root_causes,
        Some(vec![RootCause::Preempted(crate::proto::Rank(2))])
    );
}

#[test]
fn every_key_parses() {
    let s = parse(EVERY_KEY, "every.toml").unwrap();
    assert_eq!(s.network.model, NetModel::Loggp);
    assert_eq!(s.network.loggp_l, Some(Duration(2_500)));
    assert_eq!(s.network.loggp_o, Some(Duration(1_500)));
    assert_eq!(s.network.loggp_g, Some(Duration(1_000)));
    assert_eq!(
        s.network.loggp_gb,
        Some(crate::units::PerByte::Time { num: 6, den: 1 })
    );
    assert_eq!(s.network.retransmit_timeout, Duration(50_000_000));
    assert_eq!(s.engine.tie_break, TieBreak::Shuffle);
    let e = s.group.elastic.as_ref().unwrap();
    assert_eq!(e.heartbeat_interval, Duration(50_000_000));
    assert_eq!(e.heartbeat_misses, 4);
    assert_eq!(e.rendezvous, RendezvousKind::Store);
    let m = s.group.mesh.as_ref().unwrap();
    assert_eq!(
        (m.shape.clone(), m.dims.clone()),
        (vec![2, 4], vec!["dp".into(), "tp".into()])
    );
    assert_eq!(s.workload.ops[0].group.as_deref(), Some("tp"));
    assert_eq!(s.workload.ops[0].reduce, ReduceOp::Max);
    assert_eq!(s.workload.ops[2].bytes, Size(0));
    let r = &s.workload.registry;
    assert_eq!(r.len(), 3);
    assert_eq!(r[0].scope.as_deref(), Some("s"));
    assert_eq!(r[1].message.as_deref(), Some("hello"));
    assert_eq!(r[2].expect_members, Some(vec![0]));
    let kinds: Vec<FaultKind> = s.faults.iter().map(|f| f.kind()).collect();
    assert_eq!(kinds, FaultKind::ALL);
    assert_eq!(s.faults[1].trigger(), Some(Trigger::AtCall(2)));
    assert_eq!(s.faults[1].at_call(), Some((2, 2)));
    assert_eq!(
        s.faults[2],
        Fault::Partition {
            sides: vec![vec![0, 1], vec![2, 3]],
            at: Trigger::At(Duration(1_000_000)),
            duration: Some(Duration(5_000_000)),
            oneway: true
        }
    );
    assert_eq!(
        s.faults[6],
        Fault::Mismatch {
            rank: 5,
            iteration: 1,
            op_index: Some(1),
            op: Some(OpKind::Broadcast),
            bytes: Some(Size(8_000)),
            root: Some(2),
            dtype: Some(Dtype::F64)
        }
    );
    let x = s.expect.as_ref().unwrap();
    assert_eq!(x.correct, Some(true));
    assert_eq!(x.generations, Some(2));
}

#[test]
fn defaults_fill_what_is_left_out() {
    let s = parse("name = \"m\"\n[world]\nsize = 2\n[workload]\n", "m.toml").unwrap();
    assert_eq!(s.seed, 0);
    assert_eq!(s.world.ranks_per_host, 1);
    assert_eq!(s.network, Network::default());
    assert_eq!(s.network.retransmit_timeout, Duration(200_000_000));
    assert_eq!(s.engine.tie_break, TieBreak::Insertion);
    assert_eq!(s.group, GroupConfig::default());
    assert_eq!(s.workload.iterations, 1);
    assert_eq!(s.workload.elements, 64);
    assert!(s.faults.is_empty() && s.expect.is_none());
}

#[test]
fn scenarios_round_trip_through_json() {
    for text in [ANNOTATED, EVERY_KEY] {
        let s = parse(text, "s.toml").unwrap();
        // as in a trace header: serialized to text, read back
        let line = serde_json::to_string(&s).unwrap();
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parse_json(&value, "trace.jsonl").unwrap(), s);
    }
}

#[test]
fn json_errors_name_the_scenario_key() {
    let mut v = serde_json::to_value(parse(ANNOTATED, "s.toml").unwrap()).unwrap();
    v["world"]["size"] = 0.into();
    let e = parse_json(&v, "t.jsonl").unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (1, "scenario.world.size"));
    v["world"]["bogus"] = 1.into();
    let e = parse_json(&v, "t.jsonl").unwrap_err();
    assert_eq!(e.key, "scenario");
    assert!(e.message.contains("bogus"), "{e}");
}

const BASE: &str = "name = \"b\"\n[world]\nsize = 4\n[workload]\niterations = 2\n";

/// (text, key, line, part of the message)
fn bad_inputs() -> Vec<(String, &'static str, usize, &'static str)> {
    vec![
        // malformed TOML
        (
            "name = \"x\"\n[world]\nsize = 3 4\n".into(),
            "world.size",
            3,
            "",
        ),
        ("name = \"x\"\nseed = \n".into(), "seed", 2, ""),
        (
            "name = \"x\"\n[world]\nsize = 1\nsize = 2\n".into(),
            "world.size",
            4,
            "duplicate key",
        ),
        ("name = \"x\n".into(), "name", 1, ""),
        // the document is empty, or not TOML at all
        ("".into(), "name", 1, "missing required key `name`"),
        // unknown keys: top level, nested, inline, inside a [[faults]] entry
        (format!("{BASE}bogus = 1\n"), "workload.bogus", 6, "unknown key `bogus`"),
        (format!("bogus = 1\n{BASE}"), "bogus", 1, "expected one of `name`"),
        (
            format!("{BASE}[network]\nlatencyy = \"5us\"\n"),
            "network.latencyy",
            7,
            "expected one of `model`, `latency`",
        ),
        (
            format!("{BASE}[group]\nelastic = {{ min_size = 2, max = 3 }}\n"),
            "group.elastic.max",
            7,
            "`max_size`",
        ),
        (
            format!(
                "{BASE}[[faults]]\nkind = \"hang\"\nrank = 1\niteration = 0\n\
                 [[faults]]\nkind = \"pause\"\nrank = 1\nat = \"1ms\"\n\
                 duration = \"1ms\"\nbogus = 1\n"
            ),
            "faults[1].bogus",
            15,
            "unknown key `bogus` for a `pause` fault, expected one of `kind`, `rank`, `at`, `duration`",
        ),
        (
            format!("{BASE}[[faults]]\nkind = \"pause\"\nrank = 1\nat = \"1ms\"\nduration = \"1ms\"\nfactor = 2\n"),
            "faults[0].factor",
            11,
            "for a `pause` fault",
        ),
        (
            format!("{BASE}[[faults]]\nrank = 1\nknd = \"pause\"\n"),
            "faults[0].knd",
            8,
            "unknown key `knd`",
        ),
        (
            format!("{BASE}[[faults]]\nrank = 1\n"),
            "faults[0].kind",
            6,
            "missing required key `kind`",
        ),
        (
            format!("{BASE}[[faults]]\nkind = \"paws\"\n"),
            "faults[0].kind",
            7,
            "unknown variant `paws`",
        ),
        (
            format!("{BASE}[[faults]]\nkind = \"pause\"\nrank = 1\nat = \"1ms\"\n"),
            "faults[0].duration",
            6,
            "a `pause` fault needs `rank`, `at` (or `at_call`), `duration`",
        ),
        // a fault's trigger: a time or a call, exactly one
        (
            format!("{BASE}[[faults]]\nkind = \"preempt\"\nrank = 1\n"),
            "faults[0].at",
            6,
            "missing required key `at`: a `preempt` fault needs `rank`, `at` (or `at_call`)",
        ),
        (
            format!("{BASE}[[faults]]\nkind = \"preempt\"\nrank = 1\nat = \"1ms\"\nat_call = 3\n"),
            "faults[0].at_call",
            10,
            "a fault begins `at` a time or `at_call` a call of its rank, not both",
        ),
        (
            format!("{BASE}[[faults]]\nkind = \"preempt\"\nrank = 1\nat_call = 0\n"),
            "faults[0].at_call",
            9,
            "calls count from 1",
        ),
        (
            format!("{BASE}[[faults]]\nkind = \"preempt\"\nrank = 1\nat_call = -2\n"),
            "faults[0].at_call",
            9,
            "invalid value: integer `-2`",
        ),
        (
            format!("{BASE}[[faults]]\nkind = \"delay\"\nlink = [1, 2]\nat_call = 2\nextra = \"1ms\"\n"),
            "faults[0].at_call",
            9,
            "a `delay` fault begins at a call of its `rank`: give `rank`, not `link`",
        ),
        (
            format!("{BASE}[[faults]]\nkind = \"partition\"\nsides = [[0], [1]]\nat_call = 2\n"),
            "faults[0].at_call",
            9,
            "unknown key `at_call` for a `partition` fault",
        ),
        (
            format!("{BASE}[[faults]]\nkind = \"slow\"\nrank = 9\nat_call = 2\nfactor = 2.0\n"),
            "faults[0].rank",
            8,
            "rank 9 is out of range",
        ),
        // bad units and types
        (
            format!("{BASE}[network]\nlatency = \"5\"\n"),
            "network.latency",
            7,
            "needs a unit: ns, us, ms, s, m or h",
        ),
        (
            format!("{BASE}[network]\nbandwidth = \"25GB\"\n"),
            "network.bandwidth",
            7,
            "unknown bandwidth unit `GB`",
        ),
        (
            format!("{BASE}[[faults]]\nkind = \"preempt\"\nrank = 1\nat = \"3 parsecs\"\n"),
            "faults[0].at",
            9,
            "unknown duration unit `parsecs`",
        ),
        (
            format!("{BASE}[[workload.ops]]\nop = \"allreduce\"\nbytes = 64\n"),
            "workload.ops[0].bytes",
            8,
            "expected a size string",
        ),
        (
            format!("{BASE}[[faults]]\nkind = \"pause\"\nrank = -1\nat = \"1ms\"\nduration = \"1ms\"\n"),
            "faults[0].rank",
            8,
            "invalid value: integer `-1`, expected an integer from 0 to 4294967295",
        ),
        (
            format!("{BASE}[[faults]]\nkind = \"delay\"\nlink = [1]\nat = \"1ms\"\nextra = \"1ms\"\n"),
            "faults[0].link",
            8,
            "",
        ),
        ("name = \"x\"\nworld = 3\n[workload]\n".into(), "world", 2, "expected a table"),
        ("name = \"x\"\n[world]\nsize = \"3\"\n[workload]\n".into(), "world.size", 3, "invalid type"),
        ("name = \"x\"\n[world]\nsize = 3\n".into(), "workload", 1, "missing required key `workload`"),
        ("name = \"x\"\n[world]\n[workload]\n".into(), "world.size", 2, "missing required key `size`"),
        // semantics
        (
            format!("{BASE}[[faults]]\nkind = \"preempt\"\nrank = 4\nat = \"1ms\"\n"),
            "faults[0].rank",
            8,
            "rank 4 is out of range",
        ),
        (
            format!("{BASE}[[faults]]\nkind = \"partition\"\nsides = [[0, 1],\n  [1, 2]]\nat = \"1ms\"\n"),
            "faults[0].sides[1][0]",
            9,
            "rank 1 is on side 0 and side 1",
        ),
        (
            "name = \"z\"\n[world]\nsize = 0\n[workload]\n".into(),
            "world.size",
            3,
            "at least one rank",
        ),
    ]
}

#[test]
fn bad_inputs_name_their_key_and_line() {
    for (text, key, line, fragment) in bad_inputs() {
        let e = err(&text);
        assert_eq!((e.key.as_str(), e.line), (key, line), "\n{text}\n=> {e}");
        assert!(e.message.contains(fragment), "\n{text}\n=> {e}");
        assert_eq!(
            e.to_string(),
            format!("s.toml:{line}: {key}: {}", e.message)
        );
    }
}

#[test]
fn garbage_never_panics() {
    let junk: &[&[u8]] = &[
        b"\x00\x01\x02junk",
        b"\xff\xfe\xfd",
        b"[[[[[[[[",
        b"a = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        b"= = =",
        b"name = \"x\"\r\n[world]\r\nsize = 1\r\n[workload]\r\nops = 5\r\n",
        b"\xef\xbb\xbfname = 1",
    ];
    for bytes in junk {
        let text = String::from_utf8_lossy(bytes);
        let e = err(&text);
        assert!(e.line >= 1, "{e}");
    }
    // nesting far deeper than the parser recurses
    for text in [
        format!("a = {}", "[".repeat(100_000)),
        format!("a = {}", "{ b = ".repeat(10_000)),
        "[a.".repeat(10_000),
    ] {
        assert_eq!(err(&text).line, 1);
    }
    // every prefix of a valid scenario, and every single-byte corruption of it
    let full = EVERY_KEY;
    for cut in (0..full.len()).step_by(3) {
        let _ = parse(&full[..cut], "cut.toml");
    }
    // (a sample of positions: parsing in a debug build is not free)
    for (i, c) in full.char_indices().step_by(7) {
        for sub in ["\"", "[", "]", "=", "\n", "#", "-", "9", "x"] {
            if c.to_string() == sub {
                continue;
            }
            let text = format!("{}{sub}{}", &full[..i], &full[i + 1..]);
            if let Err(e) = parse(&text, "x.toml") {
                assert!(e.line >= 1 && e.line <= text.lines().count() + 1, "{e}");
            }
        }
    }
}

#[test]
fn unreadable_files() {
    let dir = std::env::temp_dir().join(format!("ringside-parse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.toml");
    let e = load(&missing).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (0, ""));
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot read", missing.display())),
        "{e}"
    );
    let binary = dir.join("binary.toml");
    std::fs::write(&binary, b"name = \"x\"\n\xff\xfe\n").unwrap();
    let e = load(&binary).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (2, ""));
    assert_eq!(
        e.to_string(),
        format!("{}:2: the file is not UTF-8 text", binary.display())
    );
    let good = dir.join("good.toml");
    std::fs::write(&good, ANNOTATED).unwrap();
    assert_eq!(load(&good).unwrap(), parse(ANNOTATED, "x").unwrap());
    assert!(load_with(&good, &Support::ALL).is_ok());
    let no_elastic = Support {
        elastic: false,
        ..Support::ALL
    };
    let e = load_with(&good, &no_elastic).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (23, "group.elastic"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_shipped_scenarios_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            if let Err(e) = load(&path) {
                panic!("{e}");
            }
            n += 1;
        }
    }
    assert!(n > 0, "no scenarios in {}", dir.display());
}

/// Merges `over` into `base`: tables key by key, anything else replaced.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

#[test]
fn the_readme_examples_parse() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let base = "name = \"readme\"\n[world]\nsize = 8\nranks_per_host = 2\n[workload]\n\
                iterations = 3\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"64MiB\"\n";
    // the named groups an example of ops may name, when it declares none of its own
    let groups = "[[groups]]\nname = \"pp\"\nranks = [[0, 1, 2, 3], [4, 5, 6, 7]]\n\
                  [[groups]]\nname = \"dp\"\nranks = [[0, 4], [1, 5], [2, 6], [3, 7]]\n\
                  [[groups]]\nname = \"ep\"\nranks = [[0, 1, 2, 3], [4, 5, 6, 7]]\n\
                  [[groups]]\nname = \"tp\"\nranks = [[0, 1], [2, 3], [4, 5], [6, 7]]\n";
    let blocks: Vec<&str> = readme
        .split("```toml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect();
    assert!(blocks.len() >= 10, "found {} examples", blocks.len());
    for block in blocks {
        let text = if block.lines().any(|l| l.starts_with("name = ")) && block.contains("[world]") {
            block.to_string()
        } else {
            let mut t: toml::Table = toml::from_str(base).unwrap();
            if block.contains("group = \"")
                && !block.contains("[[groups]]")
                && !block.contains("[group.mesh]")
            {
                merge(&mut t, toml::from_str(groups).unwrap());
            }
            merge(&mut t, toml::from_str(block).unwrap());
            toml::to_string(&t).unwrap()
        };
        if let Err(e) = parse(&text, "README.md") {
            panic!("{block}\n=> {e}");
        }
    }
}

//! The programs real jobs run: named groups, send and recv, per-rank programs, pipelines. The
//! shipped scenarios end as documented, the diagnosis names what a divergent program or a
//! missing message does, explain and export show point-to-point waits, and bad input of every
//! new kind exits 2 naming file, line and key.

mod common;

use common::{json, ringside, scenario};
use ringside_sim::run::{run, RunOptions};
use ringside_sim::scenario::{program, OpKind, Outcome, Peer, PeerStep, RootCause};

/// The ranks of `--json`'s `blocked` entries, sorted.
fn ranks(v: &serde_json::Value) -> Vec<u64> {
    let mut r: Vec<u64> = v
        .as_array()
        .expect("an array")
        .iter()
        .map(|b| b["rank"].as_u64().expect("a rank"))
        .collect();
    r.sort_unstable();
    r
}

#[test]
fn shipped_pipelines_experts_and_programs_end_as_documented() {
    let cases: [(&str, &str, &[u64], &[&str]); 5] = [
        ("pipeline-1f1b", "completed", &[], &[]),
        (
            "pipeline-recv-mismatch",
            "stalled",
            &[0, 1, 2, 3],
            &["mismatch:2"],
        ),
        (
            "moe-all-to-all",
            "stalled",
            &[0, 1, 2, 3, 4, 6, 7],
            &["preempted:5"],
        ),
        ("cross-group-deadlock", "stalled", &[0, 1], &["mismatch:1"]),
        (
            "extra-collective",
            "stalled",
            &[0, 1, 2, 3],
            &["mismatch:2"],
        ),
    ];
    for (name, outcome, blocked, causes) in cases {
        let path = format!("scenarios/{name}.toml");
        let o = ringside(&["run", &path, "--json"]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        let j = json(&o);
        assert_eq!(j["outcome"], outcome, "{name}");
        assert_eq!(ranks(&j["blocked"]), blocked, "{name}");
        let got: Vec<&str> = j["root_causes"]
            .as_array()
            .expect("causes")
            .iter()
            .map(|c| c.as_str().expect("a string"))
            .collect();
        assert_eq!(got, causes, "{name}");
        // every completed call (collective or message) holds the right data
        assert!(
            j["ops"]
                .as_array()
                .expect("ops")
                .iter()
                .all(|o| o["correct"] == true),
            "{name}"
        );
    }
}

#[test]
fn sends_and_recvs_in_the_shared_ops_run_on_every_rank_with_a_neighbour() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("chain.toml");
    std::fs::write(
        &path,
        "name = \"chain\"\n[world]\nsize = 4\n[workload]\niterations = 2\n\
         [[workload.ops]]\nop = \"send\"\npeer = \"next\"\nbytes = \"1KiB\"\nrendezvous = true\n\
         [[workload.ops]]\nop = \"recv\"\npeer = \"prev\"\nbytes = \"1KiB\"\n\
         [[workload.ops]]\nop = \"all_to_all\"\nbytes = \"4KiB\"\n",
    )
    .expect("write");
    let o = ringside(&["run", path.to_str().expect("utf-8"), "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j = json(&o);
    assert_eq!(j["outcome"], "completed");
    let ops = j["ops"].as_array().expect("ops");
    let mut pairs: Vec<(u64, u64)> = ops
        .iter()
        .filter(|o| o["op"] == "send")
        .map(|m| (m["from"].as_u64().unwrap(), m["to"].as_u64().unwrap()))
        .collect();
    pairs.sort_unstable();
    // rank 3 has no next, rank 0 no previous: three links, twice
    assert_eq!(pairs, [(0, 1), (0, 1), (1, 2), (1, 2), (2, 3), (2, 3)]);
    assert!(ops.iter().all(|o| o["correct"] == true), "{j}");
    assert!(ops
        .iter()
        .filter(|o| o["op"] == "send")
        .all(|o| o["algorithm"] == "rendezvous"));
}

#[test]
fn a_healthy_pipeline_moves_every_microbatch_both_ways() {
    let o = ringside(&["run", "scenarios/pipeline-1f1b.toml", "--json"]);
    let j = json(&o);
    let ops = j["ops"].as_array().expect("ops");
    let messages: Vec<_> = ops.iter().filter(|o| o["op"] == "send").collect();
    // 2 iterations x 2 pipelines x 3 links x 8 microbatches x (activation + gradient)
    assert_eq!(messages.len(), 2 * 2 * 3 * 8 * 2);
    for m in &messages {
        let (from, to) = (m["from"].as_u64().unwrap(), m["to"].as_u64().unwrap());
        assert_eq!(from.abs_diff(to), 1, "neighbouring stages: {m}");
        assert_eq!(from / 4, to / 4, "inside one pipeline: {m}");
        assert_eq!(
            (&m["ranks_called"], &m["ranks_completed"]),
            (&2.into(), &2.into())
        );
    }
    // the dp allreduces run on the named group's four sub-groups (ids 3 to 6, after pp's 1, 2)
    let mut groups: Vec<u64> = ops
        .iter()
        .filter(|o| o["op"] == "allreduce")
        .map(|o| o["group"].as_u64().unwrap())
        .collect();
    groups.sort_unstable();
    assert_eq!(groups, [3, 3, 4, 4, 5, 5, 6, 6]);
}

#[test]
fn explain_export_and_the_human_report_show_point_to_point_waits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("t.jsonl");
    let t = trace.to_str().unwrap();
    let o = ringside(&["run", "scenarios/pipeline-recv-mismatch.toml", "--trace", t]);
    let human = String::from_utf8_lossy(&o.stdout);
    assert!(
        human.contains("rank 3 in recv #2 from rank 2 (eager)"),
        "{human}"
    );
    assert!(
        human.contains("rank 2 called recv #2 (iteration 0, op 2) with bytes 8388608 instead of 16777216, unlike rank 1"),
        "{human}"
    );
    let j = json(&ringside(&["explain", t, "--json"]));
    let b3 = j["blocked"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["rank"] == 3)
        .expect("rank 3 is blocked");
    assert_eq!(
        (&b3["op"], &b3["peer"], &b3["group"]),
        (&"recv".into(), &2.into(), &0.into())
    );
    let w = j["waits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["from"] == 2)
        .expect("rank 2 waits");
    assert_eq!(w["to"], 1);
    assert_eq!(w["message"]["op"], "recv");
    assert_eq!(w["message"]["seq"], 2);
    assert_eq!(w["causes"][0], "mismatch:2");
    let dot = String::from_utf8_lossy(&ringside(&["explain", t, "--dot"]).stdout).to_string();
    assert!(dot.contains("recv #2 from rank 1 (eager)"), "{dot}");
    assert!(dot.contains("r3 -> r2 [label=\"recv #2\"]"), "{dot}");
    let out = dir.path().join("p.json");
    let o = ringside(&["export", t, "--perfetto", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let p = std::fs::read_to_string(&out).unwrap();
    assert!(
        p.contains("\"name\":\"recv #2 from rank 2\""),
        "the call names its peer"
    );
    assert!(p.contains("\"name\":\"waits for the message of rank 1\""));
    assert!(p.contains("\"direction\":\"recv\""));
}

/// Runs `text` and returns (outcome, blocked, root causes as strings).
fn diagnosed(text: &str) -> (Outcome, Vec<u32>, Vec<String>) {
    let s = scenario(text);
    let out = run(&s, &RunOptions::default()).expect("runs");
    let r = out.report;
    let blocked = r.blocked.iter().map(|b| b.rank).collect();
    let causes = r.root_causes.iter().map(RootCause::to_string).collect();
    (r.outcome, blocked, causes)
}

/// A four-stage pipeline of `schedule` with `rest` appended (faults, programs).
fn pipeline(schedule: &str, rest: &str) -> String {
    format!(
        "name = \"p\"\n[world]\nsize = 4\n[group]\ntimeout = \"1s\"\n\
         [workload]\niterations = 2\n[workload.pipeline]\nmicrobatches = 4\n\
         schedule = \"{schedule}\"\nforward = \"1ms\"\nbackward = \"2ms\"\nbytes = \"4MiB\"\n{rest}"
    )
}

#[test]
fn two_stages_that_both_receive_first_deadlock() {
    for rendezvous in [false, true] {
        let text = format!(
            "name = \"d\"\n[world]\nsize = 3\n[group]\ntimeout = \"1s\"\n[workload]\n\
             [[workload.ops]]\nop = \"barrier\"\n\
             [[workload.programs]]\nranks = [0]\n\
             [[workload.programs.ops]]\nop = \"recv\"\npeer = 1\nbytes = \"1MiB\"\n\
             [[workload.programs.ops]]\nop = \"send\"\npeer = 1\nbytes = \"1MiB\"\nrendezvous = {rendezvous}\n\
             [[workload.programs]]\nranks = [1]\n\
             [[workload.programs.ops]]\nop = \"recv\"\npeer = 0\nbytes = \"1MiB\"\n\
             [[workload.programs.ops]]\nop = \"send\"\npeer = 0\nbytes = \"1MiB\"\n\
             [[workload.programs]]\nranks = [2]\n"
        );
        let (outcome, blocked, causes) = diagnosed(&text);
        assert_eq!(outcome, Outcome::Stalled);
        assert_eq!(
            (blocked, causes),
            (vec![0, 1], vec!["deadlock:0,1".to_string()])
        );
    }
}

#[test]
fn two_rendezvous_sends_to_each_other_deadlock_where_eager_ones_pass() {
    let text = |rendezvous: bool| {
        format!(
            "name = \"x\"\n[world]\nsize = 2\n[group]\ntimeout = \"1s\"\n[workload]\n\
             [[workload.ops]]\nop = \"send\"\npeer = \"next\"\nbytes = \"1MiB\"\nrendezvous = {rendezvous}\n\
             [[workload.ops]]\nop = \"send\"\npeer = \"prev\"\nbytes = \"1MiB\"\nrendezvous = {rendezvous}\n\
             [[workload.ops]]\nop = \"recv\"\npeer = \"prev\"\nbytes = \"1MiB\"\n\
             [[workload.ops]]\nop = \"recv\"\npeer = \"next\"\nbytes = \"1MiB\"\n"
        )
    };
    // rank 0 sends to 1 (it has no prev), rank 1 to 0 (no next), then both receive
    assert_eq!(diagnosed(&text(false)).0, Outcome::Completed);
    let (outcome, blocked, causes) = diagnosed(&text(true));
    assert_eq!(outcome, Outcome::Stalled);
    assert_eq!(
        (blocked, causes),
        (vec![0, 1], vec!["deadlock:0,1".to_string()])
    );
}

#[test]
fn a_send_a_stage_skips_is_named_skipped() {
    for schedule in ["gpipe", "1f1b"] {
        // stage 1's call 1 is its first send of activations to stage 2
        let fault = "[[faults]]\nkind = \"skip\"\nrank = 1\niteration = 1\nop_index = 1\n";
        let (outcome, blocked, causes) = diagnosed(&pipeline(schedule, fault));
        assert_eq!(outcome, Outcome::Stalled, "{schedule}");
        assert_eq!(causes, ["skipped:1"], "{schedule}: blocked {blocked:?}");
        assert!(
            blocked.contains(&2),
            "{schedule}: stage 2 waits: {blocked:?}"
        );
    }
}

#[test]
fn a_recv_a_stage_skips_is_its_skip_even_when_later_messages_differ_in_size() {
    // after the pipeline, each stage sends a small message back and receives one from the
    // next stage: a stage that skips a recv of gradients takes the next gradient as its
    // number, and at the end meets a message of another size. The skipping stage is the
    // culprit, not the sender whose message no longer fits.
    let rest = "[[workload.ops]]\nop = \"send\"\npeer = \"prev\"\nbytes = \"1KiB\"\n\
                [[workload.ops]]\nop = \"recv\"\npeer = \"next\"\nbytes = \"1KiB\"\n";
    for schedule in ["gpipe", "1f1b"] {
        for stage in 0..3 {
            // the first recv of gradients in the stage's program
            let s = scenario(&pipeline(schedule, rest));
            let index = program::calls(&s, stage)
                .iter()
                .position(|(op, _)| {
                    op.op == OpKind::Recv && op.peer == Some(Peer::Step(PeerStep::Next))
                })
                .expect("a recv from the next stage");
            let fault = format!(
                "{rest}[[faults]]\nkind = \"skip\"\nrank = {stage}\niteration = 0\nop_index = {index}\n"
            );
            let (outcome, blocked, causes) = diagnosed(&pipeline(schedule, &fault));
            assert_eq!(outcome, Outcome::Stalled, "{schedule} stage {stage}");
            assert_eq!(
                causes,
                [format!("skipped:{stage}")],
                "{schedule} stage {stage}: blocked {blocked:?}"
            );
        }
    }
}

#[test]
fn a_skip_that_lines_up_with_another_ranks_extra_call_blames_both_not_the_right_rank() {
    // rank 2's program has an extra allreduce; rank 0 skips the broadcast. At call #2 ranks 0
    // and 2 both call an allreduce and rank 1 the broadcast: two against one, but rank 1 is
    // where the declared program says, and rank 0, which runs the same program, is past it.
    let text = "name = \"s\"\n[world]\nsize = 3\n[group]\ntimeout = \"1s\"\n[workload]\n\
                iterations = 2\n\
                [[workload.ops]]\nop = \"allreduce\"\nbytes = \"64MiB\"\n\
                [[workload.ops]]\nop = \"broadcast\"\nbytes = \"4KiB\"\nroot = 0\n\
                [[workload.programs]]\nranks = [2]\n\
                [[workload.programs.ops]]\nop = \"allreduce\"\nbytes = \"64MiB\"\n\
                [[workload.programs.ops]]\nop = \"allreduce\"\nbytes = \"64MiB\"\n\
                [[workload.programs.ops]]\nop = \"broadcast\"\nbytes = \"4KiB\"\nroot = 0\n\
                [[faults]]\nkind = \"skip\"\nrank = 0\niteration = 0\nop_index = 1\n";
    let (outcome, blocked, causes) = diagnosed(text);
    assert_eq!(outcome, Outcome::Stalled);
    assert_eq!(
        (blocked, causes),
        (
            vec![0, 1, 2],
            vec!["mismatch:2".to_string(), "skipped:0".to_string()]
        )
    );
}

#[test]
fn faults_during_a_pipeline_are_named_as_anywhere() {
    for (fault, cause) in [
        (
            "[[faults]]\nkind = \"preempt\"\nrank = 2\nat = \"7ms\"\n",
            "preempted:2",
        ),
        ("[[faults]]\nkind = \"hang\"\nrank = 1\niteration = 1\n", "hung:1"),
        (
            "[[faults]]\nkind = \"pause\"\nrank = 3\nat = \"5ms\"\nduration = \"5s\"\n",
            "paused:3",
        ),
        (
            "[[faults]]\nkind = \"partition\"\nsides = [[0, 1], [2, 3]]\nat = \"4ms\"\n",
            "partitioned:0,1|2,3",
        ),
        (
            "[[faults]]\nkind = \"mismatch\"\nrank = 3\niteration = 0\nop_index = 0\nbytes = \"2MiB\"\n",
            "mismatch:3",
        ),
    ] {
        for schedule in ["gpipe", "1f1b"] {
            let (outcome, blocked, causes) = diagnosed(&pipeline(schedule, fault));
            assert_eq!(outcome, Outcome::Stalled, "{schedule} {fault}");
            assert_eq!(causes, [cause], "{schedule} {fault}: blocked {blocked:?}");
            assert!(!blocked.is_empty(), "{schedule} {fault}");
        }
    }
}

#[test]
fn a_program_with_one_call_too_many_is_the_mismatch_not_the_others() {
    // rank 3's extra allreduce at the end of its iteration meets the others' next-iteration
    // allreduce, and at the very end it waits for ranks that finished
    let text = "name = \"e\"\n[world]\nsize = 4\n[group]\ntimeout = \"1s\"\n[workload]\n\
                iterations = 2\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n\
                [[workload.programs]]\nranks = [3]\n\
                [[workload.programs.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n\
                [[workload.programs.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n";
    let (outcome, blocked, causes) = diagnosed(text);
    assert_eq!(outcome, Outcome::Stalled);
    assert_eq!((blocked, causes), (vec![3], vec!["mismatch:3".to_string()]));
    // a recv of a message its sender's program never sends
    let text = "name = \"r\"\n[world]\nsize = 2\n[group]\ntimeout = \"1s\"\n[workload]\n\
                [[workload.ops]]\nop = \"send\"\npeer = 1\nbytes = \"1MiB\"\n\
                [[workload.programs]]\nranks = [1]\n\
                [[workload.programs.ops]]\nop = \"recv\"\npeer = 0\nbytes = \"1MiB\"\n\
                [[workload.programs.ops]]\nop = \"recv\"\npeer = 0\nbytes = \"1MiB\"\n";
    let (outcome, blocked, causes) = diagnosed(text);
    assert_eq!(outcome, Outcome::Stalled);
    assert_eq!((blocked, causes), (vec![1], vec!["mismatch:1".to_string()]));
}

#[test]
fn a_group_a_rank_is_not_in_and_a_missing_neighbour_are_skipped_silently() {
    let text = "name = \"g\"\n[world]\nsize = 5\n\
                [[groups]]\nname = \"odd\"\nranks = [3, 1]\n[workload]\niterations = 2\n\
                [[workload.ops]]\nop = \"broadcast\"\nbytes = \"1MiB\"\nroot = 0\ngroup = \"odd\"\n\
                [[workload.ops]]\nop = \"send\"\npeer = \"next\"\nbytes = \"1KiB\"\ngroup = \"odd\"\n\
                [[workload.ops]]\nop = \"recv\"\npeer = \"prev\"\nbytes = \"1KiB\"\ngroup = \"odd\"\n";
    let s = scenario(text);
    let out = run(&s, &RunOptions::default()).expect("runs");
    let r = &out.report;
    assert_eq!(r.outcome, Outcome::Completed);
    // per iteration: one broadcast among {3, 1} rooted at 3, one message 3 -> 1
    assert_eq!(r.ops.len(), 4);
    for o in &r.ops {
        assert!(o.correct);
        assert_eq!(o.ranks_called, 2);
        if o.op.is(OpKind::Send) {
            assert_eq!((o.from, o.to), (Some(3), Some(1)));
        }
    }
}

/// Bad input of every new kind: exit 2, naming the file, the line and the key.
const BAD: &[(&str, &str, &str, usize)] = &[
    (
        "peer out of range",
        "name = \"b\"\n[world]\nsize = 4\n[workload]\n[[workload.ops]]\nop = \"send\"\npeer = 4\n",
        "workload.ops[0].peer",
        7,
    ),
    (
        "a rank in two sub-groups of one group",
        "name = \"b\"\n[world]\nsize = 4\n[[groups]]\nname = \"g\"\nranks = [[0, 1], [1, 2]]\n[workload]\n",
        "groups[0].ranks[1]",
        6,
    ),
    (
        "a program for a rank outside the world",
        "name = \"b\"\n[world]\nsize = 4\n[workload]\n[[workload.programs]]\nranks = [1, 9]\n",
        "workload.programs[0].ranks",
        6,
    ),
    (
        "a pipeline group with one stage",
        "name = \"b\"\n[world]\nsize = 4\n[[groups]]\nname = \"pp\"\nranks = [[0, 1, 2], [3]]\n\
         [workload]\n[workload.pipeline]\ngroup = \"pp\"\nmicrobatches = 2\nforward = \"1ms\"\n\
         backward = \"1ms\"\nbytes = \"1MiB\"\n",
        "workload.pipeline.group",
        9,
    ),
    (
        "a send without a peer",
        "name = \"b\"\n[world]\nsize = 4\n[workload]\n[[workload.ops]]\nop = \"send\"\nbytes = \"1MiB\"\n",
        "workload.ops[0]",
        5,
    ),
    (
        "a group that does not exist",
        "name = \"b\"\n[world]\nsize = 4\n[workload]\n[[workload.ops]]\nop = \"barrier\"\ngroup = \"tp\"\n",
        "workload.ops[0].group",
        7,
    ),
    (
        "a rank in two programs",
        "name = \"b\"\n[world]\nsize = 4\n[workload]\n[[workload.programs]]\nranks = [1]\n\
         [[workload.programs]]\nranks = [1]\n",
        "workload.programs[1].ranks",
        8,
    ),
    (
        "a skipped call past the rank's own program",
        "name = \"b\"\n[world]\nsize = 4\n[workload]\n[[workload.ops]]\nop = \"barrier\"\n\
         [[workload.programs]]\nranks = [2]\n[[faults]]\nkind = \"skip\"\nrank = 2\niteration = 0\n",
        "faults[0].op_index",
        9,
    ),
];

#[test]
fn bad_groups_peers_programs_and_pipelines_exit_2_naming_file_line_and_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text, key, line) in BAD {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, text).expect("write");
        let o = ringside(&["run", path.to_str().expect("utf-8")]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(
            err.contains(&format!("bad.toml:{line}: {key}:")),
            "{name}: names line {line} and key `{key}`: {err}"
        );
    }
}

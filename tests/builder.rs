//! A run described in code with `ringside_sim::builder` (docs/custom-algorithms.md, "Describe
//! a run in code"): the scenario it builds is the one a file holds, its run is judged by the
//! properties and diagnosed, its trace is one that `ringside` reads, and a bad input is named
//! by the builder call that gave it.

mod common;

use ringside_sim::builder::{fault, op, Builder};
use ringside_sim::check::{Property, Run};
use ringside_sim::scenario::{Algorithm, Outcome};

fn job() -> Builder {
    Builder::new("two-ops")
        .ranks(4)
        .latency("5us")
        .bandwidth("25GB/s")
        .timeout("200ms")
        .iterations(2)
        .compute("1ms")
        .op(op::allreduce("1MiB").algorithm(Algorithm::Ring))
        .op(op::broadcast("64KiB", 1))
        .seed(11)
}

#[test]
fn a_run_described_in_code_is_run_judged_diagnosed_and_traced() {
    let (case, run) = job()
        .fault(fault::partition(&[&[0, 1], &[2, 3]]).at("500us"))
        .run()
        .expect("a valid job");
    assert_eq!(run.report.outcome, Outcome::Stalled);
    let causes = run.diagnosis.root_cause_names();
    assert_eq!(
        causes,
        ["partitioned:0,1|2,3"],
        "{:#?}",
        run.report.explanation
    );
    for p in Property::all() {
        assert_eq!(p.check(&case, &run), Ok(()), "{p}");
    }

    // the trace it writes is a trace of `ringside run`: replayed identical, explained alike
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("two-ops.jsonl");
    run.write_trace(&path).expect("written");
    let replayed = common::ringside(&["replay".as_ref(), path.as_os_str()]);
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "{}",
        common::text(&replayed)
    );
    let explained = common::ringside(&["explain".as_ref(), path.as_os_str()]);
    assert!(
        common::stdout(&explained).starts_with("STALLED:"),
        "{}",
        common::text(&explained)
    );
    let (again, judged) = Run::from_trace(std::fs::read(&path).unwrap(), "two-ops.jsonl").unwrap();
    assert_eq!(again, case);
    assert_eq!(judged.report.digest, run.report.digest);

    // the same job healed before its resent messages outlast the watchdog completes
    let (_, healed) = job()
        .retransmit_timeout("1ms")
        .fault(
            fault::partition(&[&[0, 1], &[2, 3]])
                .at("500us")
                .lasting("2ms"),
        )
        .run()
        .unwrap();
    assert_eq!(healed.report.outcome, Outcome::Completed);
}

#[test]
fn a_bad_input_is_named_by_its_builder_call() {
    let e = job()
        .fault(fault::preempt(1))
        .fault(fault::pause(4, "1ms"))
        .run()
        .err()
        .expect("refused");
    assert_eq!(
        e.to_string(),
        "fault(#2 pause): faults[1].rank: rank 4 is out of range: world.size is 4, so ranks are 0..=3"
    );
    assert_eq!(
        (e.call.as_str(), e.key.as_str()),
        ("fault(#2 pause)", "faults[1].rank")
    );
    let e = job().op(op::broadcast(64, 9)).build().unwrap_err();
    assert!(
        e.to_string()
            .starts_with("op(#3 broadcast): workload.ops[2].root: "),
        "{e}"
    );
    let e = job().timeout("0s").build().unwrap_err();
    assert!(
        e.to_string().starts_with("timeout(): group.timeout: "),
        "{e}"
    );
}

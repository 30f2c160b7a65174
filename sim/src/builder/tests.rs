use super::{fault, op, Builder};
use crate::scenario::{parse, Algorithm};

/// The builder builds the scenario the reader builds from the same description.
#[test]
fn a_built_scenario_is_the_one_its_toml_reads_as() {
    let built = Builder::new("split")
        .description("two halves")
        .seed(3)
        .ranks(4)
        .latency("2us")
        .bandwidth("10GB/s")
        .ports(2)
        .timeout("1s")
        .group("pairs", &[&[0, 1][..], &[2, 3]][..])
        .iterations(2)
        .compute(std::time::Duration::from_millis(1))
        .elements(16)
        .op(op::allreduce("1MiB").algorithm(Algorithm::Ring))
        .op(op::broadcast(4096, 1).group("pairs"))
        .fault(
            fault::partition(&[&[0, 1], &[2, 3]])
                .at("1ms")
                .lasting("5ms"),
        )
        .fault(fault::preempt(3).at_call(2).restart_after("2s"))
        .build()
        .unwrap();
    let text = r#"
name = "split"
description = "two halves"
seed = 3
[world]
size = 4
[network]
latency = "2us"
bandwidth = "10GB/s"
ports = 2
[group]
timeout = "1s"
[[groups]]
name = "pairs"
ranks = [[0, 1], [2, 3]]
[workload]
iterations = 2
compute = "1ms"
elements = 16
[[workload.ops]]
op = "allreduce"
bytes = "1MiB"
algorithm = "ring"
[[workload.ops]]
op = "broadcast"
bytes = "4096B"
root = 1
group = "pairs"
[[faults]]
kind = "partition"
sides = [[0, 1], [2, 3]]
at = "1ms"
duration = "5ms"
[[faults]]
kind = "preempt"
rank = 3
at_call = 2
restart_after = "2s"
"#;
    assert_eq!(built, parse(text, "split.toml").unwrap());
}

/// Each kind of bad input is named by the call that gave it and the key it sets.
#[test]
fn errors_name_the_call_and_the_key() {
    let err = |b: Builder| b.build().unwrap_err().to_string();
    let two = || Builder::new("x").ranks(2).op(op::barrier());
    assert_eq!(
        err(two().latency("5xs")),
        "latency(): network.latency: unknown duration unit `xs` in `5xs`: use ns, us, ms, s, m or h"
    );
    assert_eq!(
        err(two().fault(fault::preempt(0)).fault(fault::pause(5, "1s"))),
        "fault(#2 pause): faults[1].rank: rank 5 is out of range: world.size is 2, so ranks are 0..=1"
    );
    assert_eq!(
        err(two().fault(fault::hang(1, 0).lasting("1s"))),
        "fault(#1 hang).lasting(): faults[0].duration: a `hang` fault has no `duration`"
    );
    assert_eq!(
        err(two().op(op::allreduce("12QB"))),
        "op(#2 allreduce): workload.ops[1].bytes: unknown size unit `QB` in `12QB`: use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB"
    );
    assert!(
        err(two().op(op::allreduce(64).group("nope")))
            .starts_with("op(#2 allreduce): workload.ops[1].group: "),
        "{}",
        err(two().op(op::allreduce(64).group("nope")))
    );
    assert!(err(two().heartbeat("1s", 3))
        .starts_with("heartbeat(): group.elastic: call elastic() first"));
    assert_eq!(
        err(Builder::new(" ").ranks(2)),
        "new(): name: the scenario needs a non-empty name"
    );
}

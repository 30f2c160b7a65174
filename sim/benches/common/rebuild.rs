//! The elastic rebuild the `membership` bench times and the `rebuild_bench` example runs once.

use ringside_sim::scenario::{self, Scenario};

/// `p` ranks in an elastic group, rank `p / 2` preempted at 10 ms: the survivors agree on the
/// next generation and finish in it.
pub fn scenario(p: u32) -> Scenario {
    scenario::parse(
        &format!(
            r#"
name = "bench-rebuild"
[world]
size = {p}
[group]
timeout = "2s"
elastic = {{ min_size = {half}, max_size = {p} }}
[workload]
iterations = 3
compute = "10ms"
elements = 1
[[workload.ops]]
op = "allreduce"
bytes = "4KiB"
algorithm = "recursive_doubling"
[[faults]]
kind = "preempt"
rank = {half}
at = "10ms"
"#,
            half = p / 2
        ),
        "bench",
    )
    .expect("valid bench scenario")
}

//! Example scenarios shared by the tests of this module.

/// A scenario with every section, annotated as a user would write it (valid:
/// `[network.intra_host]` needs `ranks_per_host > 1`).
pub(crate) const ANNOTATED: &str = r#"name = "three-worker-preempt"      # required
description = "..."                # optional
seed = 1                           # optional (default 0); --seed overrides
time_limit = "60s"                 # optional virtual-time cap

[world]
size = 3                           # number of ranks
ranks_per_host = 2                 # optional two-level topology

[network]
model = "alpha-beta"               # "alpha-beta" (default) | "loggp"
latency = "5us"                    # alpha
bandwidth = "25GB/s"               # 1/beta
reduce_bandwidth = "100GB/s"       # optional 1/gamma (default: free)
jitter = "0s"                      # optional uniform extra delay per message, seeded
[network.intra_host]               # optional, used when ranks_per_host > 1
latency = "1us"
bandwidth = "300GB/s"

[group]
timeout = "30s"                    # collective watchdog timeout
algorithm = "ring"                 # default allreduce algorithm
elastic = { min_size = 2, max_size = 3 }   # optional: detect failures, rebuild, resume

[workload]
iterations = 3                     # the training loop: each iteration = compute, then ops in order
compute = "10ms"
dtype = "f32"                      # f32 | f64 | i64
elements = 64                      # real elements per rank buffer
[[workload.ops]]
op = "allreduce"                   # allreduce | broadcast | reduce | allgather | reduce_scatter | barrier
bytes = "64MiB"                    # modeled n; allgather: the gathered output; reduce_scatter: the input
reduce = "sum"                     # sum | max | min | prod
algorithm = "ring"                 # optional per-op override
[[workload.ops]]
op = "broadcast"
bytes = "1MiB"
root = 0                           # broadcast / reduce

[[faults]]                         # any number, each with `kind`
kind = "preempt"                   # see the table below
rank = 2
at = "25ms"

[expect]                           # optional; `run` exits 1 when the outcome differs
outcome = "stalled"                # completed | stalled | rebuilt | timed_out
blocked = [0, 1]
root_causes = ["preempted:2"]
"#;

/// Every fault kind with every one of its keys, and the other optional sections.
pub(crate) const EVERY_KEY: &str = r#"name = "every-key"
[world]
size = 8
[network]
model = "loggp"
L = "2500ns"
o = "1500ns"
g = "1000ns"
G = "6ns"
retransmit_timeout = "50ms"
[engine]
tie_break = "shuffle"
[group]
timeout = "2s"
[group.elastic]
min_size = 2
max_size = 8
heartbeat_interval = "50ms"
heartbeat_misses = 4
rendezvous = "store"
[group.mesh]
shape = [2, 4]
dims = ["dp", "tp"]
[workload]
iterations = 4
dtype = "i64"
elements = 16
[[workload.ops]]
op = "allreduce"
bytes = "4KB"
group = "tp"
reduce = "max"
[[workload.ops]]
op = "reduce"
bytes = "4KB"
root = 3
algorithm = "direct"
[[workload.ops]]
op = "barrier"
[[workload.registry]]
at = "1ms"
rank = 0
action = "join"
group = "g"
scope = "s"
[[workload.registry]]
at = "2ms"
rank = 1
action = "broadcast"
group = "g"
message = "hello"
[[workload.registry]]
at = "3ms"
rank = 1
action = "query"
group = "g"
expect_members = [0]
[[faults]]
kind = "preempt"
rank = 1
at = "5ms"
restart_after = "100ms"
[[faults]]
kind = "pause"
rank = 2
at_call = 2
duration = "2ms"
[[faults]]
kind = "partition"
sides = [[0, 1], [2, 3]]
at = "1ms"
duration = "5ms"
oneway = true
[[faults]]
kind = "delay"
link = [0, 1]
at = "0s"
duration = "1s"
extra = "5us"
jitter = "1us"
[[faults]]
kind = "loss"
rank = 3
at = "0s"
duration = "1s"
rate = 0.1
[[faults]]
kind = "slow"
rank = 4
at = "0s"
duration = "1s"
factor = 2.5
[[faults]]
kind = "mismatch"
rank = 5
iteration = 1
op_index = 1
op = "broadcast"
bytes = "8KB"
root = 2
dtype = "f64"
[[faults]]
kind = "skip"
rank = 6
iteration = 2
op_index = 2
[[faults]]
kind = "hang"
rank = 7
iteration = 3
[expect]
outcome = "rebuilt"
blocked = []
root_causes = ["partitioned:2,3|0,1", "quorum_lost"]
correct = true
generations = 2
"#;

//! One test per rule: each asserts the key path, and that the line reported is the line marked
//! `# <-` in the scenario text.

use crate::scenario::parse;

/// A scenario assembled from sections; a test replaces the sections it is about.
#[derive(Clone, Copy)]
struct S<'a> {
    top: &'a str,
    world: &'a str,
    network: &'a str,
    group: &'a str,
    workload: &'a str,
    rest: &'a str,
}

const OPS: &str = "[workload]
iterations = 2
elements = 8
[[workload.ops]]
op = \"allreduce\"
bytes = \"1MiB\"
[[workload.ops]]
op = \"broadcast\"
bytes = \"1MiB\"
root = 1";

const BASE: S<'static> = S {
    top: "name = \"v\"",
    world: "[world]\nsize = 4",
    network: "",
    group: "",
    workload: OPS,
    rest: "",
};

impl S<'_> {
    fn text(&self) -> String {
        let parts = [
            self.top,
            self.world,
            self.network,
            self.group,
            self.workload,
            self.rest,
        ];
        let mut text = parts
            .iter()
            .filter(|p| !p.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join("\n");
        text.push('\n');
        text
    }
}

const MARK: &str = "# <-";

/// The scenario is rejected at `key`, on the line marked `# <-`, with `fragment` in the message.
#[track_caller]
fn rejects(s: S, key: &str, fragment: &str) {
    let text = s.text();
    let marked: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(MARK))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(marked.len(), 1, "mark exactly one line in\n{text}");
    let e = match parse(&text, "v.toml") {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    };
    assert_eq!(
        (e.key.as_str(), e.line),
        (key, marked[0]),
        "\n{text}\n=> {e}"
    );
    assert!(e.message.contains(fragment), "\n{text}\n=> {e}");
}

#[track_caller]
fn accepts(s: S) {
    let text = s.text();
    if let Err(e) = parse(&text, "v.toml") {
        panic!("rejected:\n{text}\n=> {e}");
    }
}

fn with_faults(rest: &str) -> S<'_> {
    S { rest, ..BASE }
}

#[test]
fn the_base_is_valid() {
    accepts(BASE);
}

#[test]
fn name_and_time_limit() {
    let top = "name = \"  \" # <-";
    rejects(S { top, ..BASE }, "name", "non-empty name");
    let top = "name = \"v\"\ntime_limit = \"0s\" # <-";
    rejects(S { top, ..BASE }, "time_limit", "must be > 0");
}

#[test]
fn world_size() {
    let world = "[world]\nsize = 0 # <-";
    rejects(S { world, ..BASE }, "world.size", "at least one rank");
    let world = "[world]\nsize = 1000001 # <-";
    rejects(S { world, ..BASE }, "world.size", "1000000");
    let world = "[world]\nsize = 1000000";
    accepts(S { world, ..BASE });
}

#[test]
fn ranks_per_host() {
    let world = "[world]\nsize = 4\nranks_per_host = 0 # <-";
    rejects(S { world, ..BASE }, "world.ranks_per_host", "at least 1");
    let world = "[world]\nsize = 4\nranks_per_host = 5 # <-";
    rejects(
        S { world, ..BASE },
        "world.ranks_per_host",
        "more than world.size",
    );
}

#[test]
fn loggp_needs_all_four_parameters() {
    let network = "[network] # <-\nmodel = \"loggp\"\nL = \"1us\"\no = \"1us\"\ng = \"1us\"";
    rejects(S { network, ..BASE }, "network.G", "`L`, `o`, `g` and `G`");
    let network =
        "[network]\nmodel = \"loggp\"\nL = \"1us\"\no = \"1us\"\ng = \"1us\"\nG = \"1ns\"";
    accepts(S { network, ..BASE });
}

#[test]
fn alpha_beta_parameters_with_loggp() {
    let loggp = "[network]\nmodel = \"loggp\"\nL = \"1us\"\no = \"1us\"\ng = \"1us\"\nG = \"1ns\"";
    let network = format!("{loggp}\nlatency = \"2us\" # <-");
    rejects(
        S {
            network: &network,
            ..BASE
        },
        "network.latency",
        "ignored by the loggp model",
    );
    let network = format!("{loggp}\nbandwidth = \"1GB/s\" # <-");
    rejects(
        S {
            network: &network,
            ..BASE
        },
        "network.bandwidth",
        "ignored by the loggp model",
    );
    let world = "[world]\nsize = 4\nranks_per_host = 2";
    let network =
        format!("{loggp}\n[network.intra_host] # <-\nlatency = \"1us\"\nbandwidth = \"1GB/s\"");
    rejects(
        S {
            world,
            network: &network,
            ..BASE
        },
        "network.intra_host",
        "ignored by the loggp model",
    );
}

#[test]
fn loggp_parameters_with_alpha_beta() {
    let network = "[network]\no = \"1us\" # <-";
    rejects(S { network, ..BASE }, "network.o", "would be ignored");
}

#[test]
fn retransmit_timeout() {
    let network = "[network]\nretransmit_timeout = \"0s\" # <-";
    rejects(S { network, ..BASE }, "network.retransmit_timeout", "> 0");
}

#[test]
fn intra_host_needs_several_ranks_per_host() {
    let network = "[network.intra_host] # <-\nlatency = \"1us\"\nbandwidth = \"100GB/s\"";
    rejects(
        S { network, ..BASE },
        "network.intra_host",
        "ranks_per_host > 1",
    );
    let world = "[world]\nsize = 4\nranks_per_host = 2";
    let network = "[network.intra_host]\nlatency = \"1us\"\nbandwidth = \"100GB/s\"";
    accepts(S {
        world,
        network,
        ..BASE
    });
}

#[test]
fn group_timeout_and_algorithm() {
    let group = "[group]\ntimeout = \"0s\" # <-";
    rejects(S { group, ..BASE }, "group.timeout", "> 0");
    let group = "[group]\nalgorithm = \"binomial\" # <-";
    rejects(
        S { group, ..BASE },
        "group.algorithm",
        "not an algorithm for allreduce",
    );
}

#[test]
fn elastic_sizes() {
    let group = "[group.elastic]\nmin_size = 0 # <-\nmax_size = 4";
    rejects(S { group, ..BASE }, "group.elastic.min_size", "at least 1");
    let group = "[group.elastic]\nmin_size = 5 # <-\nmax_size = 8";
    rejects(
        S { group, ..BASE },
        "group.elastic.min_size",
        "more than world.size",
    );
    let group = "[group]\nelastic = { min_size = 3, max_size = 2 } # <-";
    rejects(
        S { group, ..BASE },
        "group.elastic.max_size",
        "less than min_size",
    );
    // max_size may exceed the world: ranks can join later
    let group = "[group]\nelastic = { min_size = 2, max_size = 16 }";
    accepts(S { group, ..BASE });
}

#[test]
fn elastic_heartbeats() {
    let group = "[group.elastic]\nmin_size = 2\nmax_size = 4\nheartbeat_interval = \"0s\" # <-";
    rejects(
        S { group, ..BASE },
        "group.elastic.heartbeat_interval",
        "> 0",
    );
    let group = "[group.elastic]\nmin_size = 2\nmax_size = 4\nheartbeat_misses = 0 # <-";
    rejects(
        S { group, ..BASE },
        "group.elastic.heartbeat_misses",
        "at least 1",
    );
}

#[test]
fn mesh_shape_and_dims() {
    let group = "[group.mesh]\nshape = [2, 3] # <-\ndims = [\"dp\", \"tp\"]";
    rejects(
        S { group, ..BASE },
        "group.mesh.shape",
        "2 x 3 ranks does not equal world.size (4)",
    );
    let group = "[group.mesh]\nshape = [2, 2]\ndims = [\"dp\"] # <-";
    rejects(
        S { group, ..BASE },
        "group.mesh.dims",
        "1 names for 2 dimensions",
    );
    let group = "[group.mesh]\nshape = [2, 2]\ndims = [\"dp\",\n  \"dp\"] # <-";
    rejects(S { group, ..BASE }, "group.mesh.dims[1]", "named twice");
    let group = "[group.mesh]\nshape = [0, 4] # <-\ndims = [\"dp\", \"tp\"]";
    rejects(S { group, ..BASE }, "group.mesh.shape[0]", "at least 1");
    let group = "[group.mesh]\nshape = [] # <-\ndims = []";
    rejects(
        S { group, ..BASE },
        "group.mesh.shape",
        "at least one dimension",
    );
    let group = "[group.mesh]\nshape = [2, 2]\ndims = [\"dp\", \"tp\"]";
    accepts(S { group, ..BASE });
}

#[test]
fn op_group_names_a_mesh_dimension() {
    let workload =
        "[workload]\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KB\"\ngroup = \"tp\" # <-";
    rejects(
        S { workload, ..BASE },
        "workload.ops[0].group",
        "no [group.mesh]",
    );
    let group = "[group.mesh]\nshape = [2, 2]\ndims = [\"dp\", \"tp\"]";
    let workload =
        "[workload]\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KB\"\ngroup = \"pp\" # <-";
    rejects(
        S {
            group,
            workload,
            ..BASE
        },
        "workload.ops[0].group",
        "use one of dp, tp",
    );
}

#[test]
fn iterations_and_elements() {
    let workload = "[workload]\niterations = 0 # <-";
    rejects(
        S { workload, ..BASE },
        "workload.iterations",
        "between 1 and 10000000",
    );
    let workload = "[workload]\nelements = 0 # <-";
    rejects(
        S { workload, ..BASE },
        "workload.elements",
        "between 1 and 16777216",
    );
    let workload = "[workload]\nelements = 16777217 # <-";
    rejects(
        S { workload, ..BASE },
        "workload.elements",
        "between 1 and 16777216",
    );
    let workload = "[workload]\nelements = 16777216";
    accepts(S { workload, ..BASE });
}

#[test]
fn root_only_for_rooted_ops_and_in_range() {
    let workload =
        "[workload]\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KB\"\nroot = 0 # <-";
    rejects(
        S { workload, ..BASE },
        "workload.ops[0].root",
        "has no root",
    );
    let workload = "[workload]\n[[workload.ops]]\nop = \"reduce\"\nbytes = \"1KB\"\nroot = 4 # <-";
    rejects(
        S { workload, ..BASE },
        "workload.ops[0].root",
        "rank 4 is out of range",
    );
}

#[test]
fn reduce_only_for_reducing_ops() {
    for op in ["broadcast", "allgather", "barrier"] {
        let workload = format!(
            "[workload]\n[[workload.ops]]\nop = \"{op}\"\nreduce = \"max\" # <-\n{}",
            if op == "barrier" {
                ""
            } else {
                "bytes = \"1KB\""
            }
        );
        rejects(
            S {
                workload: &workload,
                ..BASE
            },
            "workload.ops[0].reduce",
            "does not reduce",
        );
    }
    // a sum is the default, so writing it is harmless
    let workload = "[workload]\n[[workload.ops]]\nop = \"barrier\"\nreduce = \"sum\"";
    accepts(S { workload, ..BASE });
    let workload =
        "[workload]\n[[workload.ops]]\nop = \"reduce_scatter\"\nbytes = \"1KB\"\nreduce = \"prod\"";
    accepts(S { workload, ..BASE });
}

#[test]
fn bytes_zero_exactly_for_barriers() {
    let workload = "[workload]\n[[workload.ops]]\nop = \"barrier\"\nbytes = \"1KB\" # <-";
    rejects(
        S { workload, ..BASE },
        "workload.ops[0].bytes",
        "moves no data",
    );
    let workload = "[workload]\n[[workload.ops]] # <-\nop = \"allgather\"";
    rejects(
        S { workload, ..BASE },
        "workload.ops[0].bytes",
        "needs a size > 0",
    );
    let workload = "[workload]\n[[workload.ops]]\nop = \"allgather\"\nbytes = \"0B\" # <-";
    rejects(
        S { workload, ..BASE },
        "workload.ops[0].bytes",
        "needs a size > 0",
    );
}

#[test]
fn algorithm_belongs_to_the_op() {
    let workload = "[workload]\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KB\"\nalgorithm = \"dissemination\" # <-";
    rejects(
        S { workload, ..BASE },
        "workload.ops[0].algorithm",
        "use one of ring",
    );
    let workload = "[workload]\n[[workload.ops]]\nop = \"broadcast\"\nbytes = \"1KB\"\nalgorithm = \"scatter_allgather\"";
    accepts(S { workload, ..BASE });
}

#[test]
fn registry_steps() {
    let texts = [
        "rank = 4 # <-\naction = \"join\"",
        "rank = 0\naction = \"join\"\nmessage = \"hi\" # <-",
        "rank = 0\naction = \"monitor\"\nexpect_members = [0] # <-",
        "rank = 0\naction = \"query\"\nexpect_members = [0,\n 9] # <-",
        "rank = 0\naction = \"broadcast\"\nmessage = \"hi\"",
    ]
    .map(|body| format!("[workload]\n[[workload.registry]]\nat = \"1ms\"\ngroup = \"g\"\n{body}"));
    let step = |i: usize| S {
        workload: &texts[i],
        ..BASE
    };
    rejects(step(0), "workload.registry[0].rank", "out of range");
    rejects(
        step(1),
        "workload.registry[0].message",
        "only a `broadcast` step",
    );
    rejects(
        step(2),
        "workload.registry[0].expect_members",
        "only a `query` step",
    );
    rejects(
        step(3),
        "workload.registry[0].expect_members[1]",
        "rank 9 is out of range",
    );
    accepts(step(4));
    let w = "[workload]\n[[workload.registry]]\nat = \"1ms\"\nrank = 0\naction = \"join\"\ngroup = \"\" # <-";
    rejects(
        S {
            workload: w,
            ..BASE
        },
        "workload.registry[0].group",
        "needs a name",
    );
}

#[test]
fn fault_ranks_in_range() {
    let f = "[[faults]]\nkind = \"preempt\"\nrank = 4 # <-\nat = \"1ms\"";
    rejects(
        with_faults(f),
        "faults[0].rank",
        "world.size is 4, so ranks are 0..=3",
    );
    let f = "[[faults]]\nkind = \"hang\"\nrank = 0\niteration = 0\n[[faults]]\nkind = \"slow\"\nrank = 7 # <-\nat = \"1ms\"\nfactor = 2.0";
    rejects(with_faults(f), "faults[1].rank", "rank 7");
}

#[test]
fn pause_duration() {
    let f = "[[faults]]\nkind = \"pause\"\nrank = 1\nat = \"1ms\"\nduration = \"0s\" # <-";
    rejects(with_faults(f), "faults[0].duration", "> 0");
}

#[test]
fn optional_durations_are_positive() {
    let f =
        "[[faults]]\nkind = \"slow\"\nrank = 1\nat = \"1ms\"\nfactor = 2.0\nduration = \"0s\" # <-";
    rejects(with_faults(f), "faults[0].duration", "omit `duration`");
    let f = "[[faults]]\nkind = \"delay\"\nrank = 1\nat = \"1ms\"\nextra = \"1us\"\nduration = \"0ns\" # <-";
    rejects(with_faults(f), "faults[0].duration", "> 0");
    let f = "[[faults]]\nkind = \"partition\"\nsides = [[0], [1]]\nat = \"1ms\"\nduration = \"0s\" # <-";
    rejects(with_faults(f), "faults[0].duration", "> 0");
}

#[test]
fn partition_sides() {
    let f = "[[faults]]\nkind = \"partition\"\nsides = [[0, 1]] # <-\nat = \"1ms\"";
    rejects(with_faults(f), "faults[0].sides", "at least two sides");
    let f = "[[faults]]\nkind = \"partition\"\nsides = [[0], []] # <-\nat = \"1ms\"";
    rejects(with_faults(f), "faults[0].sides[1]", "at least one rank");
    let f = "[[faults]]\nkind = \"partition\"\nsides = [[0, 0], [1]] # <-\nat = \"1ms\"";
    rejects(
        with_faults(f),
        "faults[0].sides[0][1]",
        "appears twice in this side",
    );
    let f =
        "[[faults]]\nkind = \"partition\"\nsides = [\n  [0, 2],\n  [1, 2], # <-\n]\nat = \"1ms\"";
    rejects(
        with_faults(f),
        "faults[0].sides[1][1]",
        "on side 0 and side 1",
    );
    let f = "[[faults]]\nkind = \"partition\"\nsides = [[0], [9]] # <-\nat = \"1ms\"";
    rejects(
        with_faults(f),
        "faults[0].sides[1][0]",
        "rank 9 is out of range",
    );
    let f =
        "[[faults]]\nkind = \"partition\"\nsides = [[3], [1], [0, 2]]\nat = \"1ms\"\noneway = true";
    accepts(with_faults(f));
}

#[test]
fn delay_and_loss_need_rank_or_link() {
    let f = "[[faults]] # <-\nkind = \"delay\"\nat = \"0s\"\nextra = \"1us\"";
    rejects(
        with_faults(f),
        "faults[0]",
        "exactly one of `rank` or `link",
    );
    let f = "[[faults]]\nkind = \"loss\"\nrank = 1\nlink = [0, 1] # <-\nat = \"0s\"\nrate = 0.5";
    rejects(with_faults(f), "faults[0].link", "not both");
    let f = "[[faults]]\nkind = \"delay\"\nlink = [1, 1] # <-\nat = \"0s\"\nextra = \"1us\"";
    rejects(with_faults(f), "faults[0].link", "two different ranks");
    let f = "[[faults]]\nkind = \"delay\"\nlink = [0,\n 7] # <-\nat = \"0s\"\nextra = \"1us\"";
    rejects(
        with_faults(f),
        "faults[0].link[1]",
        "rank 7 is out of range",
    );
    let f = "[[faults]]\nkind = \"loss\"\nrank = 5 # <-\nat = \"0s\"\nrate = 0.5";
    rejects(with_faults(f), "faults[0].rank", "out of range");
}

#[test]
fn loss_rate() {
    for rate in ["0.0", "1.5", "-0.5", "nan", "inf"] {
        let f = format!("[[faults]]\nkind = \"loss\"\nrank = 1\nat = \"0s\"\nrate = {rate} # <-");
        rejects(with_faults(&f), "faults[0].rate", "(0, 1]");
    }
    accepts(with_faults(
        "[[faults]]\nkind = \"loss\"\nrank = 1\nat = \"0s\"\nrate = 1",
    ));
}

#[test]
fn slow_factor() {
    for factor in ["0.0", "-2.0", "nan", "inf"] {
        let f =
            format!("[[faults]]\nkind = \"slow\"\nrank = 1\nat = \"0s\"\nfactor = {factor} # <-");
        rejects(with_faults(&f), "faults[0].factor", "finite number > 0");
    }
    accepts(with_faults(
        "[[faults]]\nkind = \"slow\"\nrank = 1\nat = \"0s\"\nfactor = 0.5",
    ));
}

#[test]
fn mismatch_and_skip_name_a_call() {
    let f = "[[faults]]\nkind = \"mismatch\"\nrank = 1\niteration = 2 # <-\nbytes = \"2MiB\"";
    rejects(
        with_faults(f),
        "faults[0].iteration",
        "iterations are 0..=1",
    );
    let f = "[[faults]]\nkind = \"skip\"\nrank = 1\niteration = 0\nop_index = 2 # <-";
    rejects(with_faults(f), "faults[0].op_index", "op_index is 0..=1");
    // op_index defaults to 0, which must exist too
    let workload = "[workload]\niterations = 2";
    let rest = "[[faults]] # <-\nkind = \"skip\"\nrank = 1\niteration = 0";
    rejects(
        S {
            workload,
            rest,
            ..BASE
        },
        "faults[0].op_index",
        "the workload has no ops",
    );
}

#[test]
fn mismatch_changes_something() {
    let f = "[[faults]] # <-\nkind = \"mismatch\"\nrank = 1\niteration = 0";
    rejects(with_faults(f), "faults[0]", "changes nothing");
    // the same parameters as workload.ops[1] (a broadcast of 1MiB from root 1, f32)
    let f = "[[faults]] # <-\nkind = \"mismatch\"\nrank = 1\niteration = 0\nop_index = 1\nop = \"broadcast\"\nbytes = \"1MiB\"\nroot = 1\ndtype = \"f32\"";
    rejects(with_faults(f), "faults[0]", "workload.ops[1]");
    let f = "[[faults]]\nkind = \"mismatch\"\nrank = 1\niteration = 0\nop_index = 1\nroot = 9 # <-";
    rejects(with_faults(f), "faults[0].root", "rank 9 is out of range");
    for change in [
        "op = \"reduce\"",
        "bytes = \"2MiB\"",
        "root = 0",
        "dtype = \"f64\"",
    ] {
        let f = format!(
            "[[faults]]\nkind = \"mismatch\"\nrank = 1\niteration = 1\nop_index = 1\n{change}"
        );
        accepts(with_faults(&f));
    }
}

#[test]
fn hang_iteration() {
    let f = "[[faults]]\nkind = \"hang\"\nrank = 1\niteration = 5 # <-";
    rejects(with_faults(f), "faults[0].iteration", "never runs");
    accepts(with_faults(
        "[[faults]]\nkind = \"hang\"\nrank = 1\niteration = 1",
    ));
}

#[test]
fn expect_blocked_and_generations() {
    let e = "[expect]\nblocked = [0, 4] # <-";
    rejects(
        with_faults(e),
        "expect.blocked[1]",
        "rank 4 is out of range",
    );
    let e = "[expect]\ngenerations = 0 # <-";
    rejects(with_faults(e), "expect.generations", "at least 1");
}

#[test]
fn expect_root_causes() {
    let e = "[expect]\nroot_causes = [\"preempted:one\"] # <-";
    rejects(with_faults(e), "expect.root_causes[0]", "not a rank number");
    let e = "[expect]\nroot_causes = [\"exploded:1\"] # <-";
    rejects(
        with_faults(e),
        "expect.root_causes[0]",
        "use one of preempted:R",
    );
    let e = "[expect]\nroot_causes = [\n  \"quorum_lost\",\n  \"partitioned:0,1|2,5\", # <-\n]";
    rejects(
        with_faults(e),
        "expect.root_causes[1]",
        "rank 5 is out of range",
    );
    let e = "[expect]\nroot_causes = [\"preempted:1\", \"paused:2\", \"partitioned:0|1,2\", \"mismatch:0\", \"skipped:3\", \"hung:1\", \"deadlock:0,1\", \"quorum_lost\", \"slow:2\"]";
    accepts(with_faults(e));
}

#[test]
fn a_bad_root_cause_is_named_with_its_file_line_and_key() {
    // the element's own line, inside an array written over several lines
    let e = "[expect]\nroot_causes = [\n  \"quorum_lost\",\n  \"deadlock:1,1\", # <-\n]";
    rejects(with_faults(e), "expect.root_causes[1]", "named twice");
    let text = with_faults(e).text();
    let line = text.lines().position(|l| l.contains(MARK)).unwrap() + 1;
    let err = parse(&text, "v.toml").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("v.toml:{line}: expect.root_causes[1]: `deadlock:1,1`: rank 1 is named twice")
    );
    let e = "[expect]\nroot_causes = [\"paused:1\", 2] # <-";
    rejects(with_faults(e), "expect.root_causes[1]", "expected a string");
    // the causes are read as written
    let e = "[expect]\nroot_causes = [\"deadlock:2,0,1\", \"partitioned:3|2,0,1\"]";
    let s = parse(&with_faults(e).text(), "v.toml").unwrap();
    let causes = s.expect.unwrap().root_causes.unwrap();
    assert_eq!(
        crate::cause::listed(&causes),
        "deadlock:2,0,1, partitioned:3|2,0,1"
    );
}

mod programs;

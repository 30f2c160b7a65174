//! The rules of named groups, point-to-point ops, per-rank programs and pipelines.

use super::{accepts, rejects, with_faults, BASE, S};

const GROUPS: &str = "[[groups]]\nname = \"pp\"\nranks = [[0, 1], [2, 3]]";

fn groups(rest: &str) -> S<'_> {
    S { rest, ..BASE }
}

/// A workload of `ops` (TOML of `[[workload.ops]]` entries and what follows them).
fn workload(ops: &str) -> String {
    format!("[workload]\niterations = 2\nelements = 8\n{ops}")
}

#[test]
fn named_groups_are_valid_lists_of_disjoint_sub_groups() {
    accepts(groups(GROUPS));
    accepts(groups("[[groups]]\nname = \"evens\"\nranks = [2, 0]"));
    let g = "[[groups]]\nname = \" \" # <-\nranks = [0]";
    rejects(groups(g), "groups[0].name", "non-empty name");
    let g = "[[groups]]\nname = \"a\"\nranks = [0]\n[[groups]]\nname = \"a\" # <-\nranks = [1]";
    rejects(groups(g), "groups[1].name", "named twice");
    let g = "[[groups]]\nname = \"a\"\nranks = [] # <-";
    rejects(groups(g), "groups[0].ranks", "at least one rank");
    let g = "[[groups]]\nname = \"a\"\nranks = [\n  [0],\n  [], # <-\n]";
    rejects(groups(g), "groups[0].ranks[1]", "at least one rank");
    let g = "[[groups]]\nname = \"a\"\nranks = [0, 4] # <-";
    rejects(groups(g), "groups[0].ranks", "out of range");
    let g = "[[groups]]\nname = \"a\"\nranks = [0, 1, 0] # <-";
    rejects(groups(g), "groups[0].ranks", "listed twice");
    let g = "[[groups]]\nname = \"a\"\nranks = [\n  [0, 1],\n  [1, 2], # <-\n]";
    rejects(groups(g), "groups[0].ranks[1]", "in at most one");
    let g = "[[groups]]\nname = \"a\"\nranks = [0, [1, 2]] # <-";
    rejects(groups(g), "groups[0].ranks", "mixes ranks and lists");
}

#[test]
fn a_named_group_is_not_a_mesh_dimension_nor_elastic() {
    let group = "[group.mesh]\nshape = [2, 2]\ndims = [\"dp\", \"tp\"]";
    let g = "[[groups]]\nname = \"tp\" # <-\nranks = [0]";
    rejects(
        S {
            group,
            rest: g,
            ..BASE
        },
        "groups[0].name",
        "already a dimension",
    );
    let group = "[group]\nelastic = { min_size = 2, max_size = 4 }";
    let g = "[[groups]]\nname = \"a\" # <-\nranks = [0]";
    rejects(
        S {
            group,
            rest: g,
            ..BASE
        },
        "groups[0].name",
        "elastic",
    );
}

#[test]
fn an_op_names_a_group_that_exists() {
    let w = workload("[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\ngroup = \"pp\"");
    accepts(S {
        workload: &w,
        rest: GROUPS,
        ..BASE
    });
    let w = workload("[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\ngroup = \"tp\" # <-");
    rejects(
        S {
            workload: &w,
            rest: GROUPS,
            ..BASE
        },
        "workload.ops[0].group",
        "use one of pp",
    );
}

#[test]
fn send_and_recv_need_a_peer_in_range() {
    let w = workload(
        "[[workload.ops]]\nop = \"send\"\npeer = \"next\"\nbytes = \"1MiB\"\n\
         [[workload.ops]]\nop = \"recv\"\npeer = \"prev\"\nbytes = \"1MiB\"",
    );
    accepts(S {
        workload: &w,
        ..BASE
    });
    let w = workload("[[workload.ops]] # <-\nop = \"send\"\nbytes = \"1MiB\"");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.ops[0]",
        "needs `peer`",
    );
    let w = workload("[[workload.ops]]\nop = \"recv\"\npeer = 4 # <-\nbytes = \"1MiB\"");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.ops[0].peer",
        "out of range",
    );
    // a group's sub-groups are smaller than the world
    let w = workload(
        "[[workload.ops]]\nop = \"recv\"\ngroup = \"pp\"\npeer = 2 # <-\nbytes = \"1MiB\"",
    );
    rejects(
        S {
            workload: &w,
            rest: GROUPS,
            ..BASE
        },
        "workload.ops[0].peer",
        "has 2 ranks",
    );
    let w = workload("[[workload.ops]]\nop = \"recv\"\npeer = \"up\" # <-\nbytes = \"1MiB\"");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.ops[0].peer",
        "not a peer",
    );
    let w = workload("[[workload.ops]]\nop = \"recv\"\npeer = -1 # <-\nbytes = \"1MiB\"");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.ops[0].peer",
        "not a rank",
    );
}

#[test]
fn peer_and_rendezvous_belong_to_point_to_point() {
    let w = workload("[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\npeer = 1 # <-");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.ops[0].peer",
        "only send and recv",
    );
    let w =
        workload("[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\nrendezvous = true # <-");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.ops[0].rendezvous",
        "only applies to send",
    );
    let w = workload(
        "[[workload.ops]]\nop = \"recv\"\npeer = 0\nbytes = \"1MiB\"\nrendezvous = true # <-",
    );
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.ops[0].rendezvous",
        "chosen by the send",
    );
    let w = workload(
        "[[workload.ops]]\nop = \"send\"\npeer = 0\nbytes = \"1MiB\"\nrendezvous = true\n\
         algorithm = \"eager\" # <-",
    );
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.ops[0].algorithm",
        "contradicts",
    );
    let w = workload("[[workload.ops]]\nop = \"recv\"\npeer = 0\nalgorithm = \"ring\" # <-");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.ops[0].algorithm",
        "not an algorithm for recv",
    );
    let group = "[group]\nelastic = { min_size = 2, max_size = 4 }";
    let w = workload("[[workload.ops]]\nop = \"send\" # <-\npeer = 0");
    rejects(
        S {
            workload: &w,
            group,
            ..BASE
        },
        "workload.ops[0].op",
        "elastic",
    );
}

#[test]
fn compute_before_a_call_is_a_duration() {
    let w = workload("[[workload.ops]]\nop = \"barrier\"\ncompute = \"2ms\"");
    accepts(S {
        workload: &w,
        ..BASE
    });
    let w = workload("[[workload.ops]]\nop = \"barrier\"\ncompute = \"fast\" # <-");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.ops[0].compute",
        "fast",
    );
}

#[test]
fn programs_name_ranks_of_the_world_once() {
    let prog = |ranks: &str| {
        workload(&format!(
            "[[workload.ops]]\nop = \"barrier\"\n[[workload.programs]]\nranks = {ranks}\n\
             [[workload.programs.ops]]\nop = \"barrier\""
        ))
    };
    accepts(S {
        workload: &prog("[1, 2]"),
        ..BASE
    });
    let w = prog("[] # <-");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.programs[0].ranks",
        "at least one rank",
    );
    let w = prog("[1, 4] # <-");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.programs[0].ranks",
        "out of range",
    );
    let w = prog("[1, 1] # <-");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.programs[0].ranks",
        "listed twice",
    );
    let w =
        workload("[[workload.programs]]\nranks = [1]\n[[workload.programs]]\nranks = [2, 1] # <-");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.programs[1].ranks",
        "already runs",
    );
    // a program's ops follow the rules of every op
    let w = workload(
        "[[workload.programs]]\nranks = [1]\n[[workload.programs.ops]] # <-\nop = \"allreduce\"",
    );
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.programs[0].ops[0].bytes",
        "size > 0",
    );
}

#[test]
fn a_pipeline_has_stages_microbatches_and_a_size() {
    let pipe = |body: &str| {
        workload(&format!(
            "[workload.pipeline]\nforward = \"1ms\"\nbackward = \"2ms\"\n{body}"
        ))
    };
    let ok = pipe("microbatches = 4\nbytes = \"1MiB\"\ngroup = \"pp\"");
    accepts(S {
        workload: &ok,
        rest: GROUPS,
        ..BASE
    });
    let w = pipe("microbatches = 0 # <-\nbytes = \"1MiB\"");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.pipeline.microbatches",
        "at least 1",
    );
    let w = pipe("microbatches = 2\nbytes = \"0B\" # <-");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.pipeline.bytes",
        "size > 0",
    );
    let w = pipe("microbatches = 2\nbytes = \"1MiB\"\ngroup = \"nope\" # <-");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.pipeline.group",
        "not a group",
    );
    let lone = "[[groups]]\nname = \"pp\"\nranks = [[0, 1, 2], [3]]";
    let w = pipe("microbatches = 2\nbytes = \"1MiB\"\ngroup = \"pp\" # <-");
    rejects(
        S {
            workload: &w,
            rest: lone,
            ..BASE
        },
        "workload.pipeline.group",
        "two stages",
    );
    let w = pipe("microbatches = 2\nbytes = \"1MiB\"\nschedule = \"zb\" # <-");
    rejects(
        S {
            workload: &w,
            ..BASE
        },
        "workload.pipeline.schedule",
        "zb",
    );
    let group = "[group]\nelastic = { min_size = 2, max_size = 4 }";
    let w = workload(
        "[workload.pipeline] # <-\nforward = \"1ms\"\nbackward = \"2ms\"\nmicrobatches = 2\nbytes = \"1MiB\"",
    );
    rejects(
        S {
            workload: &w,
            group,
            ..BASE
        },
        "workload.pipeline",
        "elastic",
    );
}

#[test]
fn application_bugs_index_the_ranks_own_program() {
    let w = workload(
        "[[workload.ops]]\nop = \"barrier\"\n[[workload.programs]]\nranks = [1]\n\
         [[workload.programs.ops]]\nop = \"barrier\"\n[[workload.programs.ops]]\n\
         op = \"allreduce\"\nbytes = \"1MiB\"",
    );
    let ok = "[[faults]]\nkind = \"skip\"\nrank = 1\niteration = 0\nop_index = 1";
    accepts(S {
        workload: &w,
        rest: ok,
        ..BASE
    });
    let bad = "[[faults]]\nkind = \"skip\"\nrank = 2\niteration = 0\nop_index = 1 # <-";
    rejects(
        S {
            workload: &w,
            rest: bad,
            ..BASE
        },
        "faults[0].op_index",
        "the workload has 1 ops",
    );
    let bad = "[[faults]]\nkind = \"skip\"\nrank = 1\niteration = 0\nop_index = 2 # <-";
    rejects(
        S {
            workload: &w,
            rest: bad,
            ..BASE
        },
        "faults[0].op_index",
        "runs workload.programs[0]",
    );
    // a mismatch keeps a send a send or recv
    let w = workload("[[workload.ops]]\nop = \"send\"\npeer = \"next\"\nbytes = \"1MiB\"");
    let bad = "[[faults]]\nkind = \"mismatch\"\nrank = 0\niteration = 0\nop = \"allreduce\" # <-";
    rejects(
        S {
            workload: &w,
            rest: bad,
            ..BASE
        },
        "faults[0].op",
        "point-to-point",
    );
    let ok = "[[faults]]\nkind = \"mismatch\"\nrank = 0\niteration = 0\nbytes = \"2MiB\"";
    accepts(with_faults(ok));
    accepts(S {
        workload: &w,
        rest: ok,
        ..BASE
    });
}

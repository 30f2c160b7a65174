//! Device meshes: ops along a mesh dimension run on every sub-group at once, each sub-group with
//! its own group id and sequence numbers, and with results checked against its own members.

use ringside_sim::report::OpReport;
use ringside_sim::run::{run, RunOptions};
use ringside_sim::scenario::Outcome;

mod common;

const MESH_2X4: &str = "name = \"mesh\"\n[world]\nsize = 8\nranks_per_host = 4\n\
    [network]\nlatency = \"5us\"\nbandwidth = \"1GB/s\"\n\
    [network.intra_host]\nlatency = \"1us\"\nbandwidth = \"10GB/s\"\n\
    [group.mesh]\nshape = [2, 4]\ndims = [\"dp\", \"tp\"]\n";

fn run_text(text: &str) -> ringside_sim::run::RunOutput {
    run(&common::scenario(text), &RunOptions::default()).expect("runs")
}

fn key(o: &OpReport) -> (u32, u32, u32, u64) {
    (o.iteration, o.index, o.group, o.seq)
}

#[test]
fn tp_then_dp_allreduces_run_on_every_row_and_column() {
    let text = format!(
        "{MESH_2X4}[workload]\niterations = 2\ndtype = \"i64\"\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"4000000B\"\ngroup = \"tp\"\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"2000000B\"\ngroup = \"dp\"\n"
    );
    let out = run_text(&text);
    let r = &out.report;
    assert_eq!(r.outcome, Outcome::Completed);
    // two tp rows (groups 5, 6), then four dp columns (groups 1-4), in each iteration; each
    // sub-group counts its own calls
    let keys: Vec<_> = r.ops.iter().map(key).collect();
    let mut want = Vec::new();
    for it in 0..2 {
        let seq = u64::from(it) + 1;
        want.extend([5, 6].map(|g| (it, 0, g, seq)));
        want.extend([1, 2, 3, 4].map(|g| (it, 1, g, seq)));
    }
    assert_eq!(keys, want);
    for o in &r.ops {
        assert!(o.correct, "{o:?}");
        assert_eq!(o.ranks_completed, if o.index == 0 { 4 } else { 2 });
    }
    // iteration 0: both rows at once inside their hosts, 2*3*(1us + 1e6 ns/10)
    let tp: Vec<&OpReport> = r
        .ops
        .iter()
        .filter(|o| o.iteration == 0 && o.index == 0)
        .collect();
    for o in &tp {
        assert_eq!((o.start_ns, o.end_ns), (0, Some(6 * (1_000 + 100_000))));
    }
    // then every column across the hosts: 2*1*(5us + 1e6 ns)
    for o in r.ops.iter().filter(|o| o.iteration == 0 && o.index == 1) {
        assert_eq!(o.start_ns, 606_000);
        assert_eq!(o.end_ns, Some(606_000 + 2 * (5_000 + 1_000_000)));
    }
}

#[test]
fn a_root_is_an_index_in_the_sub_group() {
    // root 2 of each tp row: ranks 2 and 6; root 1 of each dp column: ranks 4..=7
    for (op, group, root) in [
        ("broadcast", "tp", 2),
        ("reduce", "tp", 3),
        ("broadcast", "dp", 1),
        ("reduce", "dp", 1),
    ] {
        let text = format!(
            "{MESH_2X4}[workload]\ndtype = \"f64\"\n\
             [[workload.ops]]\nop = \"{op}\"\nbytes = \"1MiB\"\ngroup = \"{group}\"\nroot = {root}\n"
        );
        let r = run_text(&text).report;
        assert_eq!(r.outcome, Outcome::Completed, "{op} {group}");
        assert!(r.ops.iter().all(|o| o.correct), "{op} {group} root {root}");
    }
}

#[test]
fn every_op_runs_along_every_dimension_of_a_3d_mesh() {
    let ops = [
        ("allreduce", "rabenseifner"),
        ("allreduce", "hierarchical"),
        ("broadcast", "scatter_allgather"),
        ("reduce", "binomial"),
        ("allgather", "recursive_doubling"),
        ("reduce_scatter", "ring"),
        ("barrier", "dissemination"),
    ];
    for dim in ["pp", "dp", "tp"] {
        let mut text = "name = \"mesh3\"\n[world]\nsize = 24\nranks_per_host = 4\n\
             [group.mesh]\nshape = [2, 3, 4]\ndims = [\"pp\", \"dp\", \"tp\"]\n\
             [workload]\niterations = 2\ndtype = \"f32\"\nelements = 7\n"
            .to_string();
        for (op, algorithm) in ops {
            let bytes = if op == "barrier" {
                ""
            } else {
                "bytes = \"3MiB\"\n"
            };
            text.push_str(&format!(
                "[[workload.ops]]\nop = \"{op}\"\nalgorithm = \"{algorithm}\"\n{bytes}group = \"{dim}\"\n"
            ));
        }
        let r = run_text(&text).report;
        assert_eq!(r.outcome, Outcome::Completed, "{dim}");
        let groups = match dim {
            "pp" => 12,
            "dp" => 8,
            _ => 6,
        };
        assert_eq!(r.ops.len(), 2 * ops.len() * groups, "{dim}");
        for o in &r.ops {
            assert!(o.correct, "{dim}: {o:?}");
        }
    }
}

#[test]
fn a_hung_rank_stalls_only_its_own_sub_groups() {
    // rank 5 never calls: tp row {4,5,6,7} (group 6) cannot finish; row {0,1,2,3} (group 5)
    // does, and its ranks then wait in their dp columns for ranks 4, 6 and 7
    let text = format!(
        "{}[workload]\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\ngroup = \"tp\"\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\ngroup = \"dp\"\n\
         [[faults]]\nkind = \"hang\"\nrank = 5\niteration = 0\n",
        MESH_2X4.replace("[group.mesh]", "[group]\ntimeout = \"10ms\"\n[group.mesh]")
    );
    let out = run_text(&text);
    let r = &out.report;
    assert_eq!(r.outcome, Outcome::Stalled);
    let row = |g: u32| r.ops.iter().find(|o| o.group == g && o.index == 0);
    let done = row(5).expect("group 5 ran");
    assert!(done.end_ns.is_some() && done.correct);
    let stuck = row(6).expect("group 6 was called");
    assert_eq!((stuck.end_ns, stuck.ranks_called), (None, 3));
    // the ranks of row 0 went on to their columns, where nobody joins them
    let columns: Vec<u32> = r
        .ops
        .iter()
        .filter(|o| o.index == 1)
        .map(|o| o.group)
        .collect();
    assert_eq!(columns, [1, 2, 3, 4]);
    assert!(r
        .ops
        .iter()
        .filter(|o| o.index == 1)
        .all(|o| o.end_ns.is_none()));
}

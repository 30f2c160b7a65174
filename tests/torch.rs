//! `ringside torchrun`: real PyTorch programs on the simulated cluster (docs/torchrun.md).
//!
//! These tests need the pinned torch in a virtual environment outside the clone, with the
//! `ringside` Python package installed in it: `.ci/run` makes it (`$RINGSIDE_TORCH_VENV`, by
//! default `~/.cache/ringside/torch-2.15.0`). Without it each test says so and passes, so that
//! the Rust test command works on a machine without Python.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

/// The venv's `bin/` when it has torch and the ringside package, else None (and why, once).
fn venv() -> Option<PathBuf> {
    let dir = match std::env::var_os("RINGSIDE_TORCH_VENV") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/ringside/torch-2.15.0"),
    };
    let bin = dir.join("bin");
    let ok = std::process::Command::new(bin.join("python"))
        .args([
            "-c",
            "import torch, importlib.metadata as m; m.version('ringside')",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "skipped: no torch venv with the ringside package at {} (.ci/run makes it)",
            dir.display()
        );
        return None;
    }
    Some(bin)
}

/// `ringside torchrun ARGS -- python PROGRAM PARGS` with the venv's python, the checkout's
/// backend module first on the path.
fn torchrun(bin: &Path, args: &[&str], program: &[&str]) -> Output {
    with_python(bin, "torchrun", args, program)
}

/// `ringside` with the venv's `python` first on the path, the checkout's backend module first
/// on Python's.
fn in_venv(bin: &Path) -> assert_cmd::Command {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = common::cmd();
    c.env("PATH", path)
        .env("PYTHONPATH", common::root().join("python"))
        .env("PYTHONWARNINGS", "ignore");
    c
}

/// `ringside COMMAND ARGS -- python PROGRAM PARGS`, as [`torchrun`].
fn with_python(bin: &Path, command: &str, args: &[&str], program: &[&str]) -> Output {
    in_venv(bin)
        .arg(command)
        .args(args)
        .arg("--")
        .arg("python")
        .args(program)
        .output()
        .expect("ringside runs")
}

#[test]
fn two_ranks_all_reduce_and_broadcast_complete_with_correct_results() {
    let Some(bin) = venv() else { return };
    let o = torchrun(
        &bin,
        &["scenarios/torch/two-ranks.toml", "--json"],
        &["examples/torch/allreduce.py"],
    );
    let v = common::json(&o);
    assert_eq!(v["outcome"], "completed", "{}", common::text(&o));
    let ops = v["ops"].as_array().expect("ops");
    assert_eq!(ops.len(), 2);
    assert!(ops.iter().all(|op| op["correct"] == true), "{v}");
    assert_eq!(ops[0]["op"], "allreduce");
    let exits = v["ranks_exit"].as_array().expect("ranks_exit");
    assert!(exits.iter().all(|e| e["code"] == 0), "{v}");
}

#[test]
fn results_land_in_views_strided_tensors_and_converted_dtypes_leaving_their_neighbours() {
    let Some(bin) = venv() else { return };
    let o = torchrun(
        &bin,
        &["scenarios/torch/two-ranks.toml", "--json", "--nproc", "3"],
        &["tests/data/torch/layouts.py"],
    );
    let v = common::json(&o);
    // the program asserts every result and what lies around it
    assert_eq!(v["outcome"], "completed", "{}", common::text(&o));
    let exits = v["ranks_exit"].as_array().expect("ranks_exit");
    assert!(exits.iter().all(|e| e["code"] == 0), "{v}");
}

#[test]
fn two_runs_of_one_program_have_one_digest() {
    let Some(bin) = venv() else { return };
    let run = || {
        let o = torchrun(
            &bin,
            &["scenarios/torch/two-ranks.toml", "--json", "--nproc", "3"],
            &["examples/torch/allreduce.py"],
        );
        common::json(&o)["digest"]
            .as_str()
            .expect("digest")
            .to_string()
    };
    assert_eq!(run(), run());
}

/// The loss and the sum of the weights the DDP example prints on rank 0
/// (`final loss L weights W`).
fn final_loss(o: &Output) -> (f64, f64) {
    let out = common::stdout(o);
    let line = out
        .lines()
        .find(|l| l.starts_with("final loss"))
        .unwrap_or_else(|| panic!("no final loss in:\n{}", common::text(o)));
    let words: Vec<&str> = line.split(' ').collect();
    let num = |i: usize| {
        words[i]
            .parse::<f64>()
            .unwrap_or_else(|e| panic!("{line}: {e}"))
    };
    (num(2), num(4))
}

#[test]
fn ddp_on_four_ranks_ends_with_the_loss_and_weights_of_gloo() {
    let Some(bin) = venv() else { return };
    let scenario = "scenarios/torch/four-ranks.toml";
    let ours = torchrun(
        &bin,
        &[scenario],
        &["examples/torch/ddp.py", "--steps", "3"],
    );
    assert!(
        common::stdout(&ours).contains("all results correct"),
        "{}",
        common::text(&ours)
    );
    // the same program on gloo, for real, started by the same launcher (ringside sees no call)
    let gloo = torchrun(
        &bin,
        &[scenario],
        &["examples/torch/ddp.py", "--steps", "3", "--backend", "gloo"],
    );
    // the same values up to the order of each sum (ringside's ring allreduce adds the ranks'
    // gradients in another order than gloo does)
    let (ours, gloo) = (final_loss(&ours), final_loss(&gloo));
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0);
    assert!(
        close(ours.0, gloo.0) && close(ours.1, gloo.1),
        "{ours:?} on ringside, {gloo:?} on gloo"
    );
}

/// The program's except clause ran on ranks 0 and 2 at the third all_reduce, rank 1 was
/// killed, and the report names the preemption and the blocked call's line.
fn assert_rank1_preempted_at_the_third_call(o: &Output) {
    let out = common::stdout(o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "expectations met:\n{}",
        common::text(o)
    );
    for rank in [0, 2] {
        assert!(
            out.contains(&format!("rank {rank} caught a failed all_reduce at step 2")),
            "{out}"
        );
    }
    assert!(out.contains("rank 1 was preempted"), "{out}");
    assert!(
        out.contains("rank 0 was blocked in the call at ")
            && out.contains("examples/torch/resilient.py:15 (<module>)"),
        "the call site of the blocked wait: {out}"
    );
    assert!(out.contains("1 killed by signal 9"), "{out}");
    assert!(out.contains("0,2 with 3"), "{out}");
}

#[test]
fn a_rank_preempted_at_its_third_call_makes_the_others_wait_raise_and_their_except_run() {
    let Some(bin) = venv() else { return };
    let o = torchrun(
        &bin,
        &["scenarios/torch/preempt-rank1.toml"],
        &["examples/torch/resilient.py"],
    );
    assert_rank1_preempted_at_the_third_call(&o);
}

#[test]
fn a_rank_preempted_at_a_time_is_killed_while_the_others_wait() {
    let Some(bin) = venv() else { return };
    // each call costs 1 ms of compute: at 2.5 ms rank 1 is between its second and third call
    let shipped =
        std::fs::read_to_string(common::root().join("scenarios/torch/preempt-rank1.toml"))
            .expect("shipped scenario");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("at-time.toml");
    std::fs::write(&path, shipped.replace("at_call = 3", "at = \"2500us\"")).expect("written");
    let o = torchrun(
        &bin,
        &[path.to_str().expect("utf-8 path")],
        &["examples/torch/resilient.py"],
    );
    assert_rank1_preempted_at_the_third_call(&o);
}

#[test]
fn a_pipeline_stage_receiving_from_the_wrong_stage_is_named_with_its_line() {
    let Some(bin) = venv() else { return };
    let o = torchrun(
        &bin,
        &["scenarios/torch/four-ranks.toml"],
        &["examples/torch/pipeline.py", "--wrong-stage"],
    );
    // what the user reads first: the stage that receives from the wrong one, and where
    let out = common::stdout(&o);
    let verdict = out.lines().next().unwrap_or_default();
    assert!(
        verdict.starts_with(
            "STALLED: mismatch:2 — rank 2 posted a recv from rank 0, which never sends to it, \
             while the messages rank 1 sent it are never received: rank 2's recv names the wrong \
             peer"
        ) && verdict.contains("; rank 2 at ")
            && verdict.ends_with("examples/torch/pipeline.py:32 (forward)"),
        "{}",
        common::text(&o)
    );
    assert!(
        out.contains("rank 2 was blocked in the call at ")
            && out.contains("examples/torch/pipeline.py:32 (forward)"),
        "{out}"
    );
    // without the bug the same pipeline completes
    let o = torchrun(
        &bin,
        &["scenarios/torch/four-ranks.toml"],
        &["examples/torch/pipeline.py"],
    );
    assert!(
        common::stdout(&o).contains("pipeline done: gradient sum"),
        "{}",
        common::text(&o)
    );
}

#[test]
fn a_rank_dependent_extra_all_reduce_is_a_mismatch_named_at_both_call_sites() {
    let Some(bin) = venv() else { return };
    let o = torchrun(
        &bin,
        &["scenarios/torch/four-ranks.toml", "--json"],
        &["examples/torch/extra_allreduce.py"],
    );
    let v = common::json(&o);
    assert_eq!(v["outcome"], "stalled", "{}", common::text(&o));
    assert_eq!(
        v["root_causes"],
        serde_json::json!(["mismatch:1"]),
        "{}",
        common::text(&o)
    );
    let site = |rank: u64| {
        v["blocked"]
            .as_array()
            .expect("blocked")
            .iter()
            .find(|b| b["rank"] == rank)
            .and_then(|b| b["call_site"].as_str())
            .unwrap_or_else(|| panic!("rank {rank}'s call site: {v}"))
            .to_string()
    };
    // the extra call on rank 1, and the all_reduce the others meet it with
    assert!(site(1).ends_with("examples/torch/extra_allreduce.py:15 (<module>)"));
    for rank in [0, 2, 3] {
        assert!(site(rank).ends_with("examples/torch/extra_allreduce.py:16 (<module>)"));
    }
}

#[test]
fn a_two_by_two_device_mesh_runs_its_dimensions_as_groups() {
    let Some(bin) = venv() else { return };
    let o = torchrun(
        &bin,
        &["scenarios/torch/four-ranks.toml", "--json"],
        &["examples/torch/mesh.py"],
    );
    let v = common::json(&o);
    assert_eq!(v["outcome"], "completed", "{}", common::text(&o));
    let ops = v["ops"].as_array().expect("ops");
    // an all_reduce in each of the four two-rank groups, an all_gather in the two tp groups,
    // a world barrier; every program checked its own results too
    assert_eq!(ops.len(), 7, "{v}");
    assert!(ops.iter().all(|op| op["correct"] == true), "{v}");
    let exits = v["ranks_exit"].as_array().expect("ranks_exit");
    assert!(exits.iter().all(|e| e["code"] == 0), "{v}");
}

#[test]
fn isend_irecv_batch_isend_irecv_and_send_recv_carry_the_programs_tensors() {
    let Some(bin) = venv() else { return };
    let o = torchrun(
        &bin,
        &["scenarios/torch/four-ranks.toml", "--json"],
        &["examples/torch/p2p.py"],
    );
    let v = common::json(&o);
    assert_eq!(v["outcome"], "completed", "{}", common::text(&o));
    let ops = v["ops"].as_array().expect("ops");
    assert_eq!(ops.len(), 24, "{v}");
    assert!(
        ops.iter().all(|op| !op["end_ns"].is_null()),
        "every call ended: {v}"
    );
    assert!(ops.iter().all(|op| op["correct"] == true), "{v}");
    let exits = v["ranks_exit"].as_array().expect("ranks_exit");
    assert!(exits.iter().all(|e| e["code"] == 0), "{v}");
}

/// `check --torch` of `program` on the shipped check scenario: `cases` cases, failures written
/// under `out`, then `extra` arguments.
fn check_torch(bin: &Path, cases: &str, out: &Path, extra: &[&str], program: &str) -> Output {
    let out = out.display().to_string();
    let mut args = vec![
        "--torch",
        "scenarios/torch/check.toml",
        "--cases",
        cases,
        "--out",
        &out,
    ];
    args.extend_from_slice(extra);
    with_python(bin, "check", &args, &[program])
}

#[test]
fn check_torch_finds_and_shrinks_a_hang_in_error_handling_and_writes_a_scenario_that_replays_it() {
    let Some(bin) = venv() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let o = check_torch(
        &bin,
        "8",
        dir.path(),
        &["--json"],
        "examples/torch/retry_barrier.py",
    );
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let v = common::json(&o);
    let f = &v["failure"];
    assert_eq!(f["property"], "ends", "{v}");
    assert!(
        f["why"].as_str().is_some_and(|w| w.contains("never ended")),
        "{v}"
    );
    // shrunk to one fault, triggered no later than the one found
    let shrunk = f["shrunk"].as_array().expect("shrunk");
    assert_eq!(shrunk.len(), 1, "{v}");
    assert!(f["found"].as_array().expect("found").len() >= shrunk.len());
    // the scenario written replays the hang with torchrun
    let scenario = f["scenario"].as_str().expect("scenario written");
    let replay = f["replay"].as_str().expect("replay command");
    assert!(replay.starts_with("ringside torchrun ") && replay.contains("retry_barrier.py"));
    let o = torchrun(
        &bin,
        &[scenario, "--json"],
        &["examples/torch/retry_barrier.py"],
    );
    let v = common::json(&o);
    assert_eq!(v["outcome"], "timed_out", "{}", common::text(&o));
}

#[test]
fn check_torch_passes_a_program_whose_error_handling_ends_it() {
    let Some(bin) = venv() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let o = check_torch(&bin, "4", dir.path(), &[], "examples/torch/resilient.py");
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    let text = common::stdout(&o);
    assert!(text.contains("4 cases: every run ended"), "{text}");
}

#[test]
fn a_torchrun_trace_is_explained_viewed_exported_to_perfetto_and_dumped_for_flight_recorder() {
    let Some(bin) = venv() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("run.jsonl");
    let fr = dir.path().join("fr");
    let o = torchrun(
        &bin,
        &[
            "scenarios/torch/preempt-rank1.toml",
            "--trace",
            trace.to_str().expect("utf-8"),
            "--fr",
            fr.to_str().expect("utf-8"),
        ],
        &["examples/torch/resilient.py"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    // a dump for each rank alive at the end, in torch's format; none from the preempted one
    let dumps: Vec<String> = std::fs::read_dir(&fr)
        .expect("dumps written")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    let mut dumps = dumps;
    dumps.sort();
    assert_eq!(dumps, ["comm_lib_trace_rank_0", "comm_lib_trace_rank_2"]);
    // each record's stack frame is the program's call site of that call, as torch reads it
    let frames = std::process::Command::new(bin.join("python"))
        .arg("-c")
        .arg(
            "import pickle, sys\n\
             d = pickle.load(open(sys.argv[1], 'rb'))\n\
             for e in d['entries']:\n\
             \x20   f = e['frames'][0]\n\
             \x20   print(e['profiling_name'], f['filename'], f['line'], f['name'])",
        )
        .arg(fr.join("comm_lib_trace_rank_0"))
        .output()
        .expect("python reads the dump");
    let frames = common::stdout(&frames);
    let lines: Vec<&str> = frames.lines().collect();
    assert_eq!(lines.len(), 3, "{frames}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains("all_reduce")
                && l.ends_with("examples/torch/resilient.py 15 <module>")),
        "{frames}"
    );
    let import = common::ringside(&["import", fr.to_str().expect("utf-8")]);
    assert!(
        common::stdout(&import).contains("missing:1"),
        "{}",
        common::text(&import)
    );
    let explain = common::ringside(&["explain", trace.to_str().expect("utf-8")]);
    assert!(
        common::stdout(&explain).contains("rank 1 was preempted"),
        "{}",
        common::text(&explain)
    );
    let perfetto = common::ringside(&["export", trace.to_str().expect("utf-8"), "--perfetto", "-"]);
    let v: serde_json::Value =
        serde_json::from_slice(&perfetto.stdout).expect("Chrome trace-event JSON");
    assert!(
        v["traceEvents"].as_array().is_some_and(|e| !e.is_empty()),
        "{v}"
    );
    // the viewer opens it, and its end shows the scenario and the preemption
    let screen = tui_end_screen(&trace);
    assert!(screen.contains("torch-preempt-rank1"), "{screen}");
    assert!(screen.contains("preempted"), "{screen}");
}

/// The viewer's screen (120x40) at the end of the trace at `trace`.
fn tui_end_screen(trace: &Path) -> String {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use ringside_tui::app::App;
    use ringside_tui::input::Action;
    use ringside_tui::state::Loaded;
    let mut app = App::new(Loaded::open(trace).expect("the viewer reads the trace"));
    app.update(Action::End);
    assert_eq!(app.ranks(), 3);
    let mut t = Terminal::new(TestBackend::new(120, 40)).expect("test terminal");
    t.draw(|f| ringside_tui::view::render(&app, f))
        .expect("drawn");
    let b = t.backend().buffer();
    (0..b.area.height)
        .map(|y| {
            let row: String = (0..b.area.width).map(|x| b[(x, y)].symbol()).collect();
            row + "\n"
        })
        .collect()
}

/// A program that runs `body` after one all_reduce of every rank, by `python -c`.
fn after_one_all_reduce(body: &str) -> String {
    format!(
        "import sys, torch, torch.distributed as dist\n\
         dist.init_process_group(backend='ringside')\n\
         t = torch.ones(4)\n\
         dist.all_reduce(t)\n\
         {body}\n"
    )
}

#[test]
fn a_program_whose_processes_fail_is_not_reported_completed() {
    let Some(bin) = venv() else { return };
    let scenario = "scenarios/torch/two-ranks.toml";
    // every process exits 1 after its calls all completed
    let program = after_one_all_reduce("sys.exit(1)");
    let o = torchrun(&bin, &[scenario, "--json"], &["-c", &program]);
    let v = common::json(&o);
    assert_eq!(v["outcome"], "stalled", "{}", common::text(&o));
    let exits = v["ranks_exit"].as_array().expect("ranks_exit");
    assert!(exits.iter().all(|e| e["code"] == 1), "{v}");
    let o = torchrun(&bin, &[scenario], &["-c", &program]);
    let out = common::stdout(&o);
    assert!(
        out.starts_with("STALLED: the program failed: ranks 0,1 exited with status 1"),
        "{out}"
    );
    // one process raises; the other exits 0
    let program = after_one_all_reduce("if dist.get_rank() == 1: raise ValueError('boom')");
    let o = torchrun(&bin, &[scenario], &["-c", &program]);
    let out = common::stdout(&o);
    assert!(
        out.starts_with("STALLED: the program failed: rank 1 exited with status 1"),
        "{}",
        common::text(&o)
    );
    assert!(out.contains("ranks exited: 0 with 0; 1 with 1"), "{out}");
    // the same program, each process exiting 0, completes
    let o = torchrun(
        &bin,
        &[scenario, "--json"],
        &["-c", &after_one_all_reduce("dist.destroy_process_group()")],
    );
    assert_eq!(
        common::json(&o)["outcome"],
        "completed",
        "{}",
        common::text(&o)
    );
}

#[test]
fn a_torchrun_trace_replays_by_running_its_program_again() {
    let Some(bin) = venv() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("run.jsonl");
    let trace = trace.to_str().expect("utf-8");
    let o = torchrun(
        &bin,
        &[
            "scenarios/torch/preempt-rank1.toml",
            "--trace",
            trace,
            "--json",
        ],
        &["examples/torch/resilient.py"],
    );
    let digest = common::json(&o)["digest"]
        .as_str()
        .expect("digest")
        .to_string();
    // the header says what ran
    let text = std::fs::read_to_string(trace).expect("trace written");
    let header: serde_json::Value =
        serde_json::from_str(text.lines().next().expect("header")).expect("JSON header");
    assert_eq!(
        header["program"],
        serde_json::json!(["python", "examples/torch/resilient.py"])
    );
    assert!(header["cwd"].is_string(), "{header}");
    let replay = |trace: &str| {
        in_venv(&bin)
            .args(["replay", trace])
            .output()
            .expect("ringside runs")
    };
    let o = replay(trace);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    let out = common::stdout(&o);
    assert!(
        out.contains("identical") && out.contains(&digest),
        "{}",
        common::text(&o)
    );
    // it is the program that runs again: another program diverges
    let other = dir.path().join("other.jsonl");
    std::fs::write(
        &other,
        text.replacen(
            "examples/torch/resilient.py",
            "examples/torch/allreduce.py",
            1,
        ),
    )
    .expect("written");
    let o = replay(other.to_str().expect("utf-8"));
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    assert!(
        common::text(&o).contains("diverged"),
        "{}",
        common::text(&o)
    );
}

#!/usr/bin/env python3
"""Real Flight Recorder dumps of small gloo jobs that were broken on purpose.

How to run (from any directory):

    ~/.cache/ringside/torch-2.15.0/bin/python tests/data/flight-recorder/real/gen.py [CASE ...]
        [--out DIR] [--jobs N] [--no-fr-trace] [--list]

What it needs:
- a Python with torch 2.15.0 importable (the default CPU run of the PyPI wheel; no GPU, no
  CUDA), e.g. the venv above; the interpreter that runs gen.py is the one its workers use;
- free loopback TCP ports (one per case, picked by the kernel) and, per case, the time torch
  takes to import in 3-4 processes plus about 11 s (3 cases at once: `--jobs 3`);
- for `fr_trace.txt` / `fr_trace_shim.txt`: nothing more than that torch wheel. PyTorch's
  analyzer is run from a copy of the wheel's `torch/distributed/flight_recorder` package under
  a stub `torch` package (it never imports torch); its `-j` table needs the `tabulate` module
  on `PYTHONPATH` (without it that run is recorded as failing).

Without CASE arguments it writes every case of `CASES` below, then `cases.json` (the index of
every case folder, with the expected answer per form; the five cases shipped before this
generator existed are not regenerated and their expected answers are `ORIGINAL_TRUTH`). Each
case goes to `<out>/<case>/` (default: this script's folder), laid out as README.md says:

    pickle/rank_<R>          the main dump of rank R, written by torch (pickle)
    json/rank_<R>.json       the same moment, written by torch (JSON)
    late/pickle, late/json   a second dump of every live rank, after the timeouts
    pg_registry/rank_<R>.json  the rank's real groups from c10d's Python side (not FR data)
    case.json, case.md       program, ground truth per form, timeline, decoded dumps
    fr_trace.txt             PyTorch's analyzer as shipped, on pickle/
    fr_trace_shim.txt        the same analyzer with pg_config replaced by pg_registry in memory

Each worker: `init_process_group("gloo", timeout=4 s)` (through a TCPStore that waits long: a
loaded machine imports torch slowly), the case's groups (same 4 s timeout), then the case's
program. A thread dumps 2.5 s after init (ops still in flight, as an NCCL watchdog dump would
show them) unless the rank's collective raised earlier (then it dumps in the except handler),
dumps again 9 s after init or as soon as the first dump is written if that is later (`late/`,
after the timeouts), and ends the process 1.5 s later. A rank that crashes writes nothing.

The only edit to torch's output: absolute paths in the pickles' stack frames are made relative
(`site-packages/...`, `gen.py`) by rewriting those strings in place; every other byte of the
pickle is torch's (its opcodes, memo and order).

Ground truth is by construction: the program of each case is written below with the line of
the culprit's call marked `# CULPRIT`, and `expect_<case>()` states what a perfect analyzer
should conclude from each form of the dumps (main/late, pickle/json). The run's own
observations (which ranks dumped, which were still in a call, which raised) are checked against
those conclusions, and a run that behaved otherwise is refused, not written.
"""

import argparse
import json
import os
import pickle
import pickletools
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta

HERE = os.path.dirname(os.path.abspath(__file__))
SELF = os.path.basename(__file__)
TIMEOUT_S = 4
DUMP_AT_S = 2.5
LATE_AT_S = 9.0
EXIT_AT_S = 10.5
STARTUP_S = 300


def culprit_line_of(marker):
    with open(os.path.join(HERE, SELF)) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + marker):
                return n
    raise SystemExit(f"{SELF}: no line marked `# {marker}`")


def culprit_line(tag):
    """The line of gen.py marked `# CULPRIT: tag` (the culprit's call site, by construction)."""
    return culprit_line_of("CULPRIT: " + tag)


def site(tag, function):
    return {"file": SELF, "line": culprit_line(tag), "function": function}


# ---------------------------------------------------------------------------------------------
# The programs. `c` is the worker's context: c.rank, c.world, c.group(desc), c.op(it, text)
# logs the call about to be made. Every call sits on its own line so that its frame names it.
# ---------------------------------------------------------------------------------------------


def body_broadcast_wrong_src(c, torch, dist):
    t = torch.ones(4)
    for it in range(3):
        c.op(it, "all_reduce [4] float32")
        dist.all_reduce(t)
        if it == 1 and c.rank == 2:
            c.op(it, "broadcast [4] src=1  <-- wrong root (the bug)")
            dist.broadcast(t, src=1)  # CULPRIT: broadcast_wrong_src
        else:
            c.op(it, "broadcast [4] src=0")
            dist.broadcast(t, src=0)


def body_dtype_mismatch(c, torch, dist):
    for it in range(3):
        wrong = it == 1 and c.rank == 1
        t = torch.ones(4, dtype=torch.float64 if wrong else torch.float32)
        c.op(it, "all_reduce [4] " + ("float64  <-- other dtype (the bug)" if wrong else "float32"))
        dist.all_reduce(t)  # CULPRIT: dtype_mismatch


def body_subgroup_order(c, torch, dist):
    t = torch.ones(4)
    s = torch.ones(2)
    pair = c.pgs.get("pair01")  # only ranks 0 and 1 are members
    for it in range(3):
        if it == 1 and c.rank == 1:
            c.op(it, "all_reduce [2] on pair01  <-- before the world call (the bug)")
            dist.all_reduce(s, group=pair)  # CULPRIT: subgroup_order
            c.op(it, "all_reduce [4] on the world")
            dist.all_reduce(t)
        else:
            c.op(it, "all_reduce [4] on the world")
            dist.all_reduce(t)
            if c.rank in (0, 1):
                c.op(it, "all_reduce [2] on pair01")
                dist.all_reduce(s, group=pair)


def body_allgather_rs(c, torch, dist):
    t = torch.ones(4)
    for it in range(3):
        c.op(it, "all_reduce [4] float32")
        dist.all_reduce(t)
        if it == 1 and c.rank == 1:
            c.op(it, "reduce_scatter [4] from 3 x [4]  <-- instead of all_gather (the bug)")
            dist.reduce_scatter(t, [torch.ones(4) for _ in range(c.world)])  # CULPRIT: allgather_rs
        else:
            c.op(it, "all_gather 3 x [4] from [4]")
            dist.all_gather([torch.zeros(4) for _ in range(c.world)], t)


def body_skipped_collective(c, torch, dist):
    grads = torch.ones(4)
    stats = torch.ones(4)
    for it in range(3):
        c.op(it, "all_reduce [4] (gradients)")
        dist.all_reduce(grads)  # CULPRIT: skipped_collective
        if it == 1 and c.rank == 2:
            c.op(it, "(skips the statistics all_reduce: the bug)")
            continue
        c.op(it, "all_reduce [4] (statistics)")
        dist.all_reduce(stats)  # SKIPPED: skipped_collective


def body_barrier_extra(c, torch, dist):
    t = torch.ones(4)
    for it in range(3):
        if it == 1 and c.rank == 0:
            c.op(it, "barrier  <-- an extra call (the bug)")
            dist.barrier()  # CULPRIT: barrier_extra
        c.op(it, "all_reduce [4] float32")
        dist.all_reduce(t)


def body_alltoall_split(c, torch, dist):
    # rank r sends in_splits[r][j] elements to rank j; every rank sends and receives 4
    in_splits = [[2, 1, 1], [1, 2, 1], [1, 1, 2]]
    for it in range(3):
        wrong = it == 1 and c.rank == 2
        outs = [in_splits[j][c.rank] for j in range(c.world)]
        if wrong:
            outs = [2, 0, 2]  # expects 2 from rank 0 and none from rank 1: same total, 4
        inp = torch.ones(4)
        out = torch.zeros(4)
        c.op(it, f"all_to_all_single [4] in splits {in_splits[c.rank]} out splits {outs}"
             + ("  <-- other output splits, same total (the bug)" if wrong else ""))
        dist.all_to_all_single(out, inp, outs, in_splits[c.rank])  # CULPRIT: alltoall_split


# ---------------------------------------------------------------------------------------------
# Ground truth per case: the fault by construction, and what a perfect analyzer should conclude
# from each form of the dumps. `run` holds what the run observed (see Run below).
# ---------------------------------------------------------------------------------------------


class Case:
    def __init__(self, name, world, body, fault, culprits, program, groups=(), no_dump=(), expect=None):
        self.no_dump = list(no_dump)  # ranks gloo aborts (they leave no dump) besides a missing culprit
        self.name = name
        self.world = world
        self.body = body
        self.fault = fault
        self.culprits = culprits
        self.program = program
        self.groups = list(groups)  # (desc, global ranks), created in this order on every rank
        self.expect = expect


def form(root_causes, blocked, divergence, call_site, why, blocked_maybe=(), undecided=None):
    f = {
        "root_causes": sorted(root_causes),
        "blocked": sorted(blocked),
        "blocked_maybe": sorted(blocked_maybe),
        "divergence": divergence,
        "call_site": call_site,
        "why": why,
    }
    if undecided:
        f["undecided_reason"] = undecided
    return f


def div(group_desc, members, seq, kind, culprits, agree):
    return {
        "group": group_desc,
        "members": members,
        "seq": seq,
        "kind": kind,
        "culprits": culprits,
        "agree": agree,
    }


CASES = {}


def case(**kw):
    c = Case(**kw)
    CASES[c.name] = c
    return c


case(
    name="broadcast_wrong_src",
    world=4,
    body=body_broadcast_wrong_src,
    fault="wrong_root",
    culprits=[2],
    program="4 ranks, 3 iterations of `all_reduce(ones(4))` then `broadcast(ones(4), src=0)` on "
    "the world group. At iteration 1 rank 2 broadcasts with `src=1` from another line.",
)
case(
    name="dtype_mismatch",
    world=3,
    body=body_dtype_mismatch,
    fault="dtype_mismatch",
    culprits=[1],
    no_dump=[0],
    program="3 ranks, 3 iterations of `all_reduce(ones(4))` on the world group. At iteration 1 "
    "rank 1's tensor is float64 (same numel, twice the bytes); the call is on the same line.",
)
case(
    name="subgroup_order",
    world=4,
    body=body_subgroup_order,
    fault="order_inversion",
    culprits=[1],
    groups=[("pair01", [0, 1])],
    program="4 ranks, groups world and pair01 = [0, 1]. 3 iterations: `all_reduce(ones(4))` on "
    "the world, then ranks 0,1 `all_reduce(ones(2))` on pair01. At iteration 1 rank 1 calls the "
    "pair01 all_reduce first (another line), then the world one: an order inversion across groups.",
)
case(
    name="allgather_rs",
    world=3,
    body=body_allgather_rs,
    fault="op_mismatch",
    culprits=[1],
    program="3 ranks, 3 iterations of `all_reduce(ones(4))` then `all_gather(3 x [4], ones(4))` on "
    "the world group. At iteration 1 rank 1 calls `reduce_scatter([4], 3 x [4])` instead of the "
    "all_gather (another line).",
)
case(
    name="skipped_collective",
    world=3,
    body=body_skipped_collective,
    fault="skipped_collective",
    culprits=[2],
    program="3 ranks, 3 iterations of two world all_reduces of `ones(4)` from two lines "
    "(gradients, then statistics). At iteration 1 rank 2 skips the statistics all_reduce and "
    "goes on with iteration 2.",
)
case(
    name="barrier_extra",
    world=3,
    body=body_barrier_extra,
    fault="extra_collective",
    culprits=[0],
    program="3 ranks, 3 iterations of `all_reduce(ones(4))` on the world group. At iteration 1 "
    "rank 0 calls one extra `barrier()` before its all_reduce.",
)
case(
    name="alltoall_split",
    world=3,
    body=body_alltoall_split,
    fault="split_mismatch",
    culprits=[2],
    program="3 ranks, 3 iterations of `all_to_all_single` of 4 elements on the world group "
    "with uneven splits. At iteration 1 rank 2 passes other output split sizes (same total): "
    "gloo aborts rank 2 when rank 1's chunk arrives, so it leaves no dump.",
)


# What a perfect analyzer should conclude, per form of the dumps. Each returns the forms; the
# driver checks that the run behaved as these conclusions assume (who dumped, who was still in
# a call at the main dump, who raised) and refuses to write the case otherwise.
WORLD3 = [0, 1, 2]
WORLD4 = [0, 1, 2, 3]
GLOO_LATE = (
    "gloo marks a failed call retired, as a finished one, so in a late dump a rank's failed call "
    "shows only through its peers: a collective that not every member issued cannot have completed"
)


def expect_broadcast_wrong_src(run):
    cs = site("broadcast_wrong_src", "body_broadcast_wrong_src")
    d = div("default_pg", WORLD4, 4, "call_site", [2], [0, 1, 3])
    d_json = div("default_pg", WORLD4, 4, "partial_completion", [], [])
    why_pickle = (
        "broadcast #4 of the world: ranks 0,1,3 call it from one line, rank 2 from another (its "
        "frames); ranks 1,3 completed it and wait in all_reduce #5, ranks 0 and 2 never leave it"
    )
    undecided = (
        "broadcast #4 completed on ranks 1,3 and not on ranks 0,2; the root of a broadcast is not "
        "recorded and JSON dumps carry no call sites, so the dumps cannot tell whether rank 0 (as "
        "the root) or rank 2 deviated"
    )
    return {
        "pickle": form(["mismatch:2"], WORLD4, d, cs, why_pickle),
        "json": form(["undecided"], WORLD4, d_json, None, undecided, undecided=undecided),
        "late/pickle": form(["mismatch:2"], [1, 3], d, cs, why_pickle + "; " + GLOO_LATE,
                            blocked_maybe=[0, 2]),
        "late/json": form(["undecided"], [1, 3], d_json, None, undecided + "; " + GLOO_LATE,
                          blocked_maybe=[0, 2], undecided=undecided),
    }


def expect_dtype_mismatch(run):
    cs = site("dtype_mismatch", "body_dtype_mismatch")
    d = div("default_pg", WORLD3, 2, "dtype", [1], [2])
    why = (
        "all_reduce #2 of the world: rank 1's input is Double, rank 2's Float (rank 0, the "
        "receiving rank, was aborted by gloo and left no dump); with two dumps the call itself is "
        "a tie, but #1 was Float on every rank and rank 1 changed dtype, so rank 1 deviates; the "
        "dtypes differ, so #2 completed nowhere: ranks 1 and 2 are blocked (rank 1's record is "
        "already retired: gloo raised on it)"
    )
    f = form(["mismatch:1"], [1, 2], d, cs, why)
    return {"pickle": f, "json": dict(f, call_site=None), "late/pickle": f, "late/json": dict(f, call_site=None)}


def expect_subgroup_order(run):
    cs = site("subgroup_order", "body_subgroup_order")
    d = div("default_pg", WORLD4, 2, "order", [1], [0, 2, 3])
    why = (
        "in iteration 0 ranks 0 and 1 called the world all_reduce, then the pair01 one; now ranks "
        "0,2,3 are in world #2 and rank 1 in pair01 #2, which rank 0 will only call after world #2: "
        "rank 1 alone changed the order (a cycle 0 <-> 1, ranks 2,3 wait on it)"
    )
    f = form(["mismatch:1"], WORLD4, d, cs, why)
    late = dict(f, why=why + "; " + GLOO_LATE)
    return {"pickle": f, "json": dict(f, call_site=None), "late/pickle": late,
            "late/json": dict(late, call_site=None)}


def expect_allgather_rs(run):
    cs = site("allgather_rs", "body_allgather_rs")
    d = div("default_pg", WORLD3, 4, "op", [1], [0, 2])
    why = (
        "world #4: ranks 0,2 call all_gather, rank 1 all_reduce (gloo records its reduce_scatter as "
        "one all_reduce per input chunk, #4-#6); the op differs, so nobody completed #4"
    )
    f = form(["mismatch:1"], WORLD3, d, cs, why)
    late = dict(f, why=why + "; " + GLOO_LATE)
    return {"pickle": f, "json": dict(f, call_site=None), "late/pickle": late,
            "late/json": dict(late, call_site=None)}


def expect_skipped_collective(run):
    skipped = {"file": SELF, "line": culprit_line_of("SKIPPED: skipped_collective"),
               "function": "body_skipped_collective"}
    d = div("default_pg", WORLD3, 4, "call_site", [2], [0, 1])
    d_json = div("default_pg", WORLD3, 6, "stopped", [2], [0, 1])
    why = (
        "world #4: ranks 0,1 call the statistics all_reduce, rank 2 the gradients one (frames): "
        "rank 2 skipped one call; same sizes, so gloo paired every later call one off, rank 2 "
        "finished its loop and ranks 0,1 wait in #6, which rank 2 never issues"
    )
    why_json = (
        "without call sites every call looks alike: rank 2 completed #1-#5 and issued nothing "
        "after, ranks 0,1 wait in #6: rank 2 stopped"
    )
    main = form(["skipped:2"], [0, 1], d, skipped, why)
    plain = form(["hung:2"], [0, 1], d_json, None, why_json)
    return {"pickle": main, "json": plain, "late/pickle": main, "late/json": plain}


def expect_barrier_extra(run):
    cs = site("barrier_extra", "body_barrier_extra")
    d = div("default_pg", WORLD3, 2, "op", [0], [1, 2])
    why = "world #2: rank 0 calls barrier, ranks 1,2 all_reduce: rank 0's extra call; nobody completed #2"
    f = form(["mismatch:0"], WORLD3, d, cs, why)
    late = dict(f, why=why + "; " + GLOO_LATE)
    return {"pickle": f, "json": dict(f, call_site=None), "late/pickle": late,
            "late/json": dict(late, call_site=None)}


def expect_alltoall_split(run):
    d = div("default_pg", WORLD3, 3, "missing", [2], [0, 1])
    why = (
        "rank 2 left no dump (gloo aborted it when a chunk larger than its output split arrived); "
        "ranks 0,1 completed all_to_all #2 and raised in #3 (retired at their dump), which needs "
        "rank 2: the missing rank is the only explanation the dumps hold; split sizes are not "
        "recorded, so the split mismatch itself cannot be seen"
    )
    f = form(["missing:2"], [], d, None, why, blocked_maybe=[0, 1])
    return {"pickle": f, "json": f, "late/pickle": f, "late/json": f}


for _name, _case in CASES.items():
    _case.expect = globals()["expect_" + _name]


def _original(world, culprits, fault, forms):
    for f in forms.values():
        f.setdefault("blocked_maybe", [])
        f.setdefault("missing", [])
    return {"world_size": world, "fault": fault, "culprit_ranks": culprits,
            "root_causes": forms["pickle"]["root_causes"], "forms": forms}


def _same(f):
    return {"pickle": dict(f), "json": dict(f, call_site=None), "late/pickle": dict(f),
            "late/json": dict(f, call_site=None)}


# The five cases generated before this script (their dumps stay as they were): what a perfect
# analyzer should conclude from each form, read from their case.json and case.md.
ORIGINAL_TRUTH = {
    "extra_collective": _original(3, [0], "extra_collective", {
        "pickle": {"root_causes": ["mismatch:0"], "blocked": [0],
                   "divergence": div("default_pg", WORLD3, 3, "call_site", [0], [1, 2]),
                   "call_site": {"file": SELF, "line": 84, "function": "body_extra_collective"},
                   "why": "world #3: rank 0 calls it from gen.py:84, ranks 1,2 from gen.py:86: an extra call with "
                          "the same sizes, matched one off; ranks 1,2 finished, rank 0 waits in #5 alone"},
        "json": {"root_causes": ["mismatch:0"], "blocked": [0],
                 "divergence": div("default_pg", WORLD3, 5, "extra", [0], [1, 2]), "call_site": None,
                 "why": "without call sites: rank 0 issued 5 world all_reduces, ranks 1,2 issued 4 and "
                        "finished: rank 0 is one call ahead of the majority"},
        "late/pickle": {"root_causes": ["mismatch:0"], "blocked": [0],
                        "divergence": div("default_pg", WORLD3, 3, "call_site", [0], [1, 2]),
                        "call_site": {"file": SELF, "line": 84, "function": "body_extra_collective"},
                        "why": "as pickle/; rank 0's #5 is retired (failed): ranks 1,2 never issued it"},
        "late/json": {"root_causes": ["mismatch:0"], "blocked": [0],
                      "divergence": div("default_pg", WORLD3, 5, "extra", [0], [1, 2]), "call_site": None,
                      "why": "as json/; rank 0's #5 is retired (failed): ranks 1,2 never issued it"},
    }),
    "size_mismatch": _original(3, [1], "size_mismatch", _same({
        "root_causes": ["mismatch:1"], "blocked": [1, 2], "missing": [0],
        "divergence": div("default_pg", WORLD3, 3, "size", [1], [2]),
        "call_site": {"file": SELF, "line": 96, "function": "body_size_mismatch"},
        "why": "world #3: rank 1's input is [[8]], rank 2's [[4]] (rank 0, which gloo aborted, left no dump); "
               "#1 and #2 were [[4]] on both: rank 1 deviates; the sizes differ, so #3 completed nowhere"})),
    "stopped_rank": _original(4, [3], "rank_stuck_in_host_code", _same({
        "root_causes": ["hung:3"], "blocked": [0, 1, 2],
        "divergence": div("default_pg", WORLD4, 3, "stopped", [3], [0, 1, 2]), "call_site": None,
        "why": "ranks 0,1,2 issued world #3; rank 3 completed #1-#2 and issued nothing after"})),
    "killed_rank": _original(4, [2], "rank_died", {
        **{k: {"root_causes": ["missing:2"], "blocked": [0], "blocked_maybe": [1, 3], "missing": [2],
               "divergence": div("default_pg", WORLD4, 3, "missing", [2], [0, 1, 3]), "call_site": None,
               "why": "rank 2 left no dump; ranks 0,1,3 stop at world #3, still in flight on rank 0 (ranks 1,3 "
                      "raised already: their records are retired)"} for k in ("pickle", "json")},
        **{k: {"root_causes": ["missing:2"], "blocked": [], "blocked_maybe": [0, 1, 3], "missing": [2],
               "divergence": div("default_pg", WORLD4, 3, "missing", [2], [0, 1, 3]), "call_site": None,
               "why": "rank 2 left no dump; ranks 0,1,3 stop at world #3, retired everywhere; " + GLOO_LATE}
           for k in ("late/pickle", "late/json")},
    }),
    "healthy": _original(3, [], "none", _same({
        "root_causes": [], "blocked": [], "divergence": None, "call_site": None,
        "why": "nothing wrong: every call was issued alike by every member and completed"})),
}


def write_index(out):
    """cases.json: every case folder under `out`, its fault, culprit and expected answer per form."""
    cases = []
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name, "case.json")
        if name in ORIGINAL_TRUTH and os.path.exists(path):
            cases.append(dict(case=name, **ORIGINAL_TRUTH[name]))
        elif os.path.exists(path):
            with open(path) as f:
                cj = json.load(f)
            if "forms" in cj:
                cases.append({k: cj[k] for k in ("case", "world_size", "fault", "culprit_ranks", "root_causes",
                                                 "forms")})
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"corpus": "real", "generator": SELF, "cases": cases}, f, indent=1)
        f.write("\n")


# ---------------------------------------------------------------------------------------------
# Worker: one rank of one case.
# ---------------------------------------------------------------------------------------------


class Worker:
    def __init__(self, case_name, rank, port, tmp, t0):
        self.case = CASES[case_name]
        self.rank = rank
        self.world = self.case.world
        self.port = port
        self.tmp = tmp
        self.t0 = t0
        self.lock = threading.Lock()
        self.main_taken = False
        self.events = open(os.path.join(tmp, f"events_{rank}.jsonl"), "a", buffering=1)
        self.pgs = {}

    def ev(self, kind, **kw):
        d = {"t": round(time.time() - self.t0, 3), "rank": self.rank, "kind": kind}
        d.update(kw)
        self.events.write(json.dumps(d) + "\n")

    def op(self, it, text):
        self.ev("op", iteration=it, op=text)

    def dump(self, which, reason):
        with self.lock:
            if which == "main":
                if self.main_taken:
                    return
                self.main_taken = True
            c = self.c10d
            snap = round(time.time() - self.t0, 3)
            j = c._dump_fr_trace_json()
            p = c._dump_fr_trace()
            d = os.path.join(self.tmp, which)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"rank_{self.rank}"), "wb") as f:
                f.write(p)
            with open(os.path.join(d, f"rank_{self.rank}.json"), "wb") as f:
                f.write(j if isinstance(j, bytes) else j.encode())
            self.ev(
                "dump" if which == "main" else "late_dump",
                reason=reason,
                snapshot_t=snap,
                pickle_bytes=len(p),
                json_bytes=len(j),
            )

    def watchdog(self):
        time.sleep(max(0.0, self.init_done + DUMP_AT_S - time.time()))
        self.dump("main", "watchdog")
        time.sleep(max(0.0, self.init_done + LATE_AT_S - time.time()))
        self.dump("late", "watchdog_late")
        time.sleep(max(0.0, EXIT_AT_S - LATE_AT_S))
        self.ev("exit", how="watchdog os._exit(0)")
        self.events.flush()
        os._exit(0)

    def run(self):
        self.ev("start", pid=os.getpid())
        import torch
        import torch.distributed as dist
        import torch._C._distributed_c10d as c10d

        self.c10d = c10d
        # the store waits long (torch imports slowly on a loaded machine); the group does not
        store = dist.TCPStore(
            "127.0.0.1", self.port, self.world, self.rank == 0, timedelta(seconds=STARTUP_S)
        )
        dist.init_process_group(
            "gloo",
            store=store,
            rank=self.rank,
            world_size=self.world,
            timeout=timedelta(seconds=TIMEOUT_S),
        )
        registry = [{"name": "0", "desc": "default_pg", "ranks": list(range(self.world))}]
        for desc, ranks in self.case.groups:
            pg = dist.new_group(ranks, timeout=timedelta(seconds=TIMEOUT_S), group_desc=desc)
            if self.rank in ranks:
                self.pgs[desc] = pg
                registry.append(
                    {"name": pg.group_name, "desc": desc, "ranks": dist.get_process_group_ranks(pg)}
                )
        with open(os.path.join(self.tmp, f"pg_registry_{self.rank}.json"), "w") as f:
            json.dump(registry, f, indent=1)
        # every rank starts the program together (through the store: nothing is recorded)
        store.add("ready", 1)
        while store.add("ready", 0) < self.world:
            time.sleep(0.005)
        self.init_done = time.time()
        self.ev("init_done", torch=torch.__version__)
        threading.Thread(target=self.watchdog, daemon=True).start()
        try:
            self.case.body(self, torch, dist)
            self.ev("program_finished")
        except Exception as e:  # the collective raised: dump now, as a job's handler would
            self.ev("exception", type=type(e).__name__, message=str(e).splitlines()[0][:300])
            self.dump("main", "exception")
        while True:
            time.sleep(1)


# ---------------------------------------------------------------------------------------------
# Driver.
# ---------------------------------------------------------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def relative_path(p):
    if p.startswith(HERE + "/"):
        return p[len(HERE) + 1 :]
    i = p.find("site-packages/")
    if i >= 0:
        return p[i:]
    parts = p.split("/")
    for j, part in enumerate(parts):
        if part.startswith("python3"):
            return "/".join(parts[j:])
    return os.path.basename(p)


def relativize_pickle(raw):
    """torch's pickle with absolute frame paths made relative; every other byte is torch's.

    Only the BINUNICODE strings that are absolute paths are rewritten (with their length), so
    the memo, the opcodes and their order stay exactly as torch's pickler wrote them.
    """
    out = bytearray()
    last = 0
    for op, arg, pos in pickletools.genops(raw):
        if op.name in ("GLOBAL", "REDUCE", "BUILD", "STACK_GLOBAL", "NEWOBJ", "INST", "OBJ"):
            raise SystemExit(f"{SELF}: unexpected pickle opcode {op.name}")
        if op.name == "BINUNICODE" and arg.startswith("/"):
            data = arg.encode()
            end = pos + 5 + len(data)
            new = relative_path(arg).encode()
            out += raw[last:pos] + b"X" + len(new).to_bytes(4, "little") + new
            last = end
    out += raw[last:]
    out = bytes(out)
    a, b = pickle.loads(raw), pickle.loads(out)
    for ea, eb in zip(a.get("entries", []), b.get("entries", [])):
        for fa, fb in zip(ea.get("frames", []), eb.get("frames", [])):
            fa["filename"] = relative_path(fa["filename"])
    if a != b:
        raise SystemExit(f"{SELF}: rewriting the frame paths changed something else")
    return out


class Run:
    """What one run of a case observed."""

    def __init__(self, case, events, exit_codes, wall):
        self.case = case
        self.events = events
        self.exit_codes = exit_codes
        self.wall = wall
        self.dumped = sorted({e["rank"] for e in events if e["kind"] == "dump"})
        self.late_dumped = sorted({e["rank"] for e in events if e["kind"] == "late_dump"})
        self.raised = {e["rank"]: e for e in events if e["kind"] == "exception"}
        self.finished = sorted({e["rank"] for e in events if e["kind"] == "program_finished"})

    def in_flight_at_main_dump(self):
        """Ranks whose main dump was taken while a call was still inside torch."""
        out = []
        for r in self.dumped:
            dump = next(e for e in self.events if e["kind"] == "dump" and e["rank"] == r)
            if r in self.finished:
                continue
            raised = self.raised.get(r)
            if raised is None or raised["t"] >= dump["snapshot_t"] or dump["reason"] == "exception":
                out.append(r)
        return sorted(out)


def run_case(case, out_root, python):
    tmp = tempfile.mkdtemp(prefix=f"fr-{case.name}-")
    port = free_port()
    t0 = time.time()
    env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", TORCH_FR_BUFFER_SIZE="2000")
    procs = []
    for r in range(case.world):
        procs.append(
            subprocess.Popen(
                [python, SELF, "--worker", case.name, str(r), str(port), tmp, repr(t0)],
                cwd=HERE,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=open(os.path.join(tmp, f"stderr_{r}.txt"), "w"),
            )
        )
    deadline = time.time() + STARTUP_S + EXIT_AT_S + 30
    codes = {}
    for r, p in enumerate(procs):
        try:
            codes[r] = p.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            codes[r] = p.wait()
    wall = round(time.time() - t0, 1)
    events = []
    for r in range(case.world):
        path = os.path.join(tmp, f"events_{r}.jsonl")
        if os.path.exists(path):
            with open(path) as f:
                events += [json.loads(x) for x in f if x.strip()]
    events.sort(key=lambda e: (e["t"], e["rank"]))
    run = Run(case, events, codes, wall)

    dst = os.path.join(out_root, case.name)
    if os.path.exists(dst):
        shutil.rmtree(dst)
    for which, base in (("main", ""), ("late", "late/")):
        src = os.path.join(tmp, which)
        if not os.path.isdir(src):
            continue
        os.makedirs(os.path.join(dst, base + "pickle"))
        os.makedirs(os.path.join(dst, base + "json"))
        for name in sorted(os.listdir(src)):
            with open(os.path.join(src, name), "rb") as f:
                raw = f.read()
            if name.endswith(".json"):
                target = os.path.join(dst, base + "json", name)
                data = raw
            else:
                target = os.path.join(dst, base + "pickle", name)
                data = relativize_pickle(raw)
            with open(target, "wb") as f:
                f.write(data)
    os.makedirs(os.path.join(dst, "pg_registry"))
    for r in range(case.world):
        src = os.path.join(tmp, f"pg_registry_{r}.json")
        if os.path.exists(src):
            shutil.copy(src, os.path.join(dst, "pg_registry", f"rank_{r}.json"))
    stderr = {}
    for r in range(case.world):
        with open(os.path.join(tmp, f"stderr_{r}.txt")) as f:
            lines = [x for x in f.read().splitlines() if x.strip() and "NumPy" not in x
                     and "_conversion_method_template" not in x]
        if lines:
            stderr[str(r)] = lines[-3:]
    shutil.rmtree(tmp)
    run.stderr = stderr
    return run


def check(run, forms):
    """Refuse to write a case whose run did not behave as its ground truth assumes."""
    case = run.case
    inflight = set(run.in_flight_at_main_dump())
    failed = set(run.raised) | {r for r in run.dumped if r not in run.finished}
    for name, f in forms.items():
        sure, maybe = set(f["blocked"]), set(f["blocked"]) | set(f["blocked_maybe"])
        seen = inflight if not name.startswith("late") else failed & set(run.late_dumped)
        if not (sure <= seen <= maybe):
            raise SystemExit(
                f"{case.name} {name}: the run left ranks {sorted(seen)} in a call, the ground truth "
                f"says {sorted(sure)} (maybe {sorted(maybe - sure)}): gloo behaved otherwise; "
                f"events: {run.events}"
            )
    want_dumps = [r for r in range(case.world) if not any(
        c == f"missing:{r}" for c in forms["pickle"]["root_causes"]) and r not in case.no_dump]
    if run.dumped != want_dumps:
        raise SystemExit(f"{case.name}: dumps from {run.dumped}, expected {want_dumps}")


def decoded(path):
    with open(path, "rb") as f:
        d = pickle.load(f)
    return d


def describe_dump(dst, base, rank):
    d = decoded(os.path.join(dst, base, f"rank_{rank}"))
    lines = []
    head = (f"* **rank_{rank}** version `{d['version']}`, pg_config `{d['pg_config']}`, "
            f"pg_status `{d['pg_status']}`")
    lines.append(head)
    for e in d.get("entries", []):
        mine = [fr for fr in e.get("frames", []) if fr["filename"] == SELF]
        where = f"{SELF}:{mine[0]['line']}" if mine else "-"
        name, desc = e["process_group"]
        lines.append(
            f"  * {e['record_id']}: `{name}:{desc}` {e['profiling_name']} seq {e['collective_seq_id']} "
            f"in {e['input_sizes']} out {e['output_sizes']} {e['input_dtypes']} "
            f"retired={e['retired']} state={e['state']} {where}"
        )
    return lines


def fr_trace_package():
    """A copy of the wheel's flight_recorder package under a stub `torch` (no torch import)."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    src = os.path.join(spec.submodule_search_locations[0], "distributed", "flight_recorder")
    stub = tempfile.mkdtemp(prefix="frstub-")
    os.makedirs(os.path.join(stub, "torch", "distributed"))
    shutil.copytree(src, os.path.join(stub, "torch", "distributed", "flight_recorder"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    for p in ("torch/__init__.py", "torch/distributed/__init__.py"):
        open(os.path.join(stub, p), "w").close()
    return stub


def run_fr_trace(case_dir, stub, argv, shim):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([stub] + [p for p in [env.get("PYTHONPATH")] if p])
    if shim:
        cmd = [sys.executable, os.path.join(HERE, SELF), "--fr-trace-shim"] + argv
        shown = f"$ python {SELF} --fr-trace-shim " + " ".join(argv)
    else:
        cmd = [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace"] + argv
        shown = "$ python -m torch.distributed.flight_recorder.fr_trace " + " ".join(argv)
    p = subprocess.run(cmd, cwd=case_dir, env=env, capture_output=True, text=True, timeout=300)
    text = (p.stdout + p.stderr).replace(stub, "<venv>/lib/python3.11/site-packages")
    text = text.replace(HERE + "/", "")
    last = [x for x in text.splitlines() if x.strip()]
    crashed = p.returncode != 0 and bool(last) and ("Error" in last[-1] or "Traceback" in text)
    summary = {"cmd": shown[2:], "rc": p.returncode, "crashed": crashed,
               "last_line": last[-1] if crashed else None}
    return f"{shown}\n# exit status: {p.returncode}\n{text}\n", summary


def fr_traces(case_dir, incomplete):
    stub = fr_trace_package()
    extra = ["--allow-incomplete-ranks"] if incomplete else []
    plain, shim = [], []
    try:
        runs_plain = [["pickle"]] + ([["pickle"] + extra] if extra else [])
        runs_shim = [["pickle"]] + ([["pickle"] + extra] if extra else []) + [["pickle", "-j", "-v"] + extra]
        text = ""
        for argv in runs_plain:
            t, summ = run_fr_trace(case_dir, stub, argv, False)
            text += t
            plain.append(summ)
        with open(os.path.join(case_dir, "fr_trace.txt"), "w") as f:
            f.write(text)
        text = ("# fr_trace with pg_config replaced IN MEMORY by pg_registry/rank_<R>.json\n"
                f"# (dump files untouched; see {SELF} --fr-trace-shim). Not the upstream tool's\n"
                "# behaviour on these dumps -- see fr_trace.txt for that.\n\n")
        for argv in runs_shim:
            t, summ = run_fr_trace(case_dir, stub, argv, True)
            text += t
            shim.append(summ)
        with open(os.path.join(case_dir, "fr_trace_shim.txt"), "w") as f:
            f.write(text)
    finally:
        shutil.rmtree(stub)
    return {"plain": plain, "shim": shim}


def fr_trace_shim(argv):
    """fr_trace with each dump's pg_config replaced by its pg_registry/rank_<R>.json in memory."""
    from torch.distributed.flight_recorder import fr_trace
    from torch.distributed.flight_recorder.components import loader

    original = loader.read_dump

    def read_dump(prefix, filename):
        d = original(prefix, filename)
        reg = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(filename))), "pg_registry",
                           f"rank_{d['rank']}.json")
        with open(reg) as f:
            groups = json.load(f)
        d["pg_config"] = {g["name"]: {"name": g["name"], "desc": g["desc"], "ranks": str(g["ranks"])}
                          for g in groups}
        return d

    loader.read_dump = read_dump
    fr_trace.main(argv)


def write_case(run, out, with_fr_trace):
    case = run.case
    dst = os.path.join(out, case.name)
    forms = case.expect(run)
    check(run, forms)
    for f in forms.values():
        f["missing"] = [r for r in range(case.world) if r not in run.dumped]
    main_form = forms["pickle"]
    sizes = {}
    for base in ("pickle", "json", "late/pickle", "late/json"):
        d = os.path.join(dst, base)
        if os.path.isdir(d):
            for name in sorted(os.listdir(d)):
                sizes[f"{base}/{name}"] = os.path.getsize(os.path.join(d, name))
    missing = [r for r in range(case.world) if r not in run.dumped]
    torch_version = next((e.get("torch") for e in run.events if e.get("torch")), None)
    cj = {
        "case": case.name,
        "world_size": case.world,
        "fault": case.fault,
        "culprit_ranks": case.culprits,
        "program": case.program,
        "ground_truth": main_form["why"],
        "root_causes": main_form["root_causes"],
        "blocked": main_form["blocked"],
        "divergence": main_form["divergence"],
        "call_site": main_form["call_site"],
        "forms": forms,
        "dumped_ranks": run.dumped,
        "ranks_without_dump": missing,
        "exit_codes": {str(r): c for r, c in sorted(run.exit_codes.items())},
        "killed_by_parent": [],
        "wall_s": run.wall,
        "torch": torch_version,
        "pg_timeout_s": TIMEOUT_S,
        "dump_at_s_after_init": DUMP_AT_S,
        "late_dump_at_s_after_init": LATE_AT_S,
        "events": run.events,
        "file_sizes": sizes,
    }
    if with_fr_trace:
        cj["fr_trace"] = fr_traces(dst, bool(missing))
    with open(os.path.join(dst, "case.json"), "w") as f:
        json.dump(cj, f, indent=1)
        f.write("\n")
    write_case_md(run, dst, cj)


def write_case_md(run, dst, cj):
    case = run.case
    L = [f"# {case.name}", ""]
    L.append(f"Real torch {cj['torch']} gloo job on CPU, {case.world} ranks, PG timeout {TIMEOUT_S} s. "
             f"Generated by `{SELF}` (`python {SELF} {case.name}`).")
    L += ["", "## What the program did", "", case.program, "", "## Ground truth (by construction)", ""]
    L.append(f"* culprit rank(s): **{case.culprits}** (fault class `{case.fault}`)")
    if cj["call_site"]:
        cs = cj["call_site"]
        L.append(f"* the culprit's call site: `{cs['file']}:{cs['line']}` ({cs['function']})")
    L += ["", "What a perfect analyzer concludes from each form of the dumps:", "",
          "| form | root causes | blocked (sure) | blocked (maybe) | divergence |", "|---|---|---|---|---|"]
    for name, f in cj["forms"].items():
        d = f["divergence"]
        dv = f"{d['group']} #{d['seq']} ({d['kind']})" if d else "-"
        L.append(f"| `{name}` | {', '.join(f['root_causes']) or '-'} | {f['blocked']} | {f['blocked_maybe']} | {dv} |")
    L.append("")
    for name, f in cj["forms"].items():
        L.append(f"* `{name}`: {f['why']}")
    L += ["", "## What happened at run time", ""]
    L.append(f"* ranks that wrote a dump: {cj['dumped_ranks']}; without dump: {cj['ranks_without_dump']}")
    L.append(f"* exit codes: {cj['exit_codes']} (negative = killed by that signal)")
    L.append("* timeline (seconds since launch; `op` = the call about to be made):")
    L += ["", "| t (s) | rank | event | detail |", "|---|---|---|---|"]
    for e in cj["events"]:
        detail = {k: v for k, v in e.items() if k not in ("t", "rank", "kind")}
        if e["kind"] == "op":
            text = f"iter {detail['iteration']}: {detail['op']}"
        else:
            text = ", ".join(f"{k}={v}" for k, v in detail.items())
        L.append(f"| {e['t']:.2f} | {e['rank']} | {e['kind']} | {text} |")
    L += ["", "`dump` = the main dump (`pickle/`, `json/`); `snapshot_t` = when the dump call started "
          "(the pickle comes later: symbolizing stack traces is slow). Reasons: `exception` = in the "
          "except handler right after the collective raised; `watchdog` = per-rank thread "
          f"{DUMP_AT_S} s after init, while blocked ops are still in flight (PG timeout {TIMEOUT_S} s). "
          f"`late_dump` = `late/pickle/`, `late/json/`, {LATE_AT_S} s after init (or as soon as the "
          "main dump is written, if that is later), after the timeouts.", "",
          "## What the main dumps contain (pickle/, decoded)", "",
          "One row per FR entry: record_id, group `name:desc`, op, collective_seq_id, input/output "
          f"sizes, dtypes, `retired` (state is always `scheduled` with gloo), {SELF} line of the call.", ""]
    for r in cj["dumped_ranks"]:
        L += describe_dump(dst, "pickle", r)
    if run.late_dumped:
        L += ["", "Late dumps (late/pickle/):", ""]
        for r in run.late_dumped:
            L += describe_dump(dst, "late/pickle", r)
    L += ["", "## Files", "", "| file | bytes |", "|---|---|"]
    for k, v in cj["file_sizes"].items():
        L.append(f"| {k} | {v} |")
    if "fr_trace" in cj:
        L += ["", "## fr_trace", "", "* fr_trace.txt (upstream analyzer, unmodified):"]
        for x in cj["fr_trace"]["plain"]:
            L.append(f"  * `{x['cmd']}` -> " + (f"CRASHED (exit {x['rc']}): `{x['last_line']}`" if x["crashed"]
                                              else f"exit {x['rc']}"))
        L.append("* fr_trace_shim.txt (pg_config replaced in memory):")
        for x in cj["fr_trace"]["shim"]:
            L.append(f"  * `{x['cmd']}` -> " + (f"CRASHED (exit {x['rc']}): `{x['last_line']}`" if x["crashed"]
                                              else f"exit {x['rc']}"))
    with open(os.path.join(dst, "case.md"), "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="*", help="cases to generate (default: all)")
    ap.add_argument("--out", default=HERE, help="where the case folders go")
    ap.add_argument("--jobs", type=int, default=1, help="cases run at once")
    ap.add_argument("--no-fr-trace", action="store_true", help="skip PyTorch's analyzer")
    ap.add_argument("--list", action="store_true", help="print the cases and exit")
    ap.add_argument("--index", action="store_true", help="only rewrite cases.json from the case folders")
    ap.add_argument("--worker", nargs=5, metavar=("CASE", "RANK", "PORT", "TMP", "T0"), help=argparse.SUPPRESS)
    ap.add_argument("--fr-trace-shim", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        name, rank, port, tmp, t0 = args.worker
        Worker(name, int(rank), int(port), tmp, float(t0)).run()
        return
    if args.fr_trace_shim is not None:
        fr_trace_shim(args.fr_trace_shim)
        return
    if args.index:
        write_index(os.path.abspath(args.out))
        return
    if args.list:
        for c in CASES.values():
            print(f"{c.name}: {c.program}")
        return
    names = args.cases or list(CASES)
    for n in names:
        if n not in CASES:
            raise SystemExit(f"{SELF}: no case {n!r} (cases: {', '.join(CASES)})")
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    from concurrent.futures import ThreadPoolExecutor

    t0 = time.time()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for run in pool.map(lambda n: run_case(CASES[n], out, sys.executable), names):
            write_case(run, out, not args.no_fr_trace)
            print(f"{run.case.name}: {run.wall} s, dumps from {run.dumped}, exit codes {run.exit_codes}",
                  flush=True)
    write_index(out)
    print(f"{len(names)} cases in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()

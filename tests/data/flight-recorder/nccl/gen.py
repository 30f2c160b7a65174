#!/usr/bin/env python3
"""NCCL-style Flight Recorder dumps of hung jobs, written from a model of NCCL's semantics.

How to run (Python 3.8 or newer, standard library only; no torch, no GPU):

    python3 tests/data/flight-recorder/nccl/gen.py                # every committed case, here
    python3 tests/data/flight-recorder/nccl/gen.py CASE ...       # some of them
    python3 tests/data/flight-recorder/nccl/gen.py --list         # the cases and their faults
    python3 tests/data/flight-recorder/nccl/gen.py --ranks 4096 --entries 2000 --out DIR \\
        [--case 3d_hung] [--formats pickle] [--jobs 2]            # one 3-D case at any size

A size given with `--ranks` is laid out as tensor x data x pipeline parallel (tp 8 from 64 ranks
on, pp 4-16, the rest data parallel); `--entries` is the ring buffer size (records kept per
process). Output is deterministic: the same arguments write the same bytes.

Each case folder holds `pickle/comm_lib_trace_rank_<R>` (pickle, as torch's DebugInfoWriter
names them), `json/rank_<R>.json` (what `_dump_nccl_trace_json()` returns), in some cases
`late/` and `mixed/` variants, and `case.json`: the ground truth by construction (see README.md
and `Case.truth` below). Nothing here ever runs an analyzer.

The model (README.md says the same in prose):
- Every rank runs its own program: a list of calls (collectives, single p2p, batch_isend_irecv
  blocks), compute, CPU syncs. The CPU issues calls in order without waiting for them (it runs
  ahead of the device) until a sync (`.item()`, `torch.cuda.synchronize()`), a full launch queue
  (`DEPTH` calls), or the end of its program; a hung host stops issuing; a dead rank stops and
  leaves no dump.
- Each rank's device runs its queue in order: a call is `scheduled` until every earlier item on
  that rank's queue has completed, then `started`; it completes once every participant has
  started it with the same parameters (collective: every member at the same (group,
  collective_seq_id); p2p: the peer's matching op, paired per (group, src, dst) in issue order).
  Completion time = the latest start + a transfer time.
- The watchdog of a rank retires a call that has been started longer than the group timeout
  (`retired` true, state `started`); the first rank to see a timeout dumps right away and the
  others dump seconds later when the dump signal reaches them. Completed calls are retired by
  the watchdog shortly after they complete (`duration_ms` then present).
- Records: one per collective and per single p2p; a batch_isend_irecv writes one record per op
  (no events: `scheduled`, never retired) and one trailing `nccl:coalesced` record (not flagged
  `is_p2p`) that carries the batch's state. `collective_seq_id` counts collectives per group,
  `p2p_seq_id` p2p launches per group (once per batch), `op_id` every op; p2p profiling names
  use group-local ranks. A ring buffer keeps the last `entries` records of each process across
  all its groups; `record_id` counts every record of the process.
- Groups are named by a per-process counter in the order the process created them (so the same
  name means different member sets on different ranks); gloo groups take a name but write
  nothing here; `pg_id` counts the process's NCCL groups; `pg_status` is keyed by `pg_id` and
  holds the seq of the last enqueued/started/completed work (a p2p work's seq is its
  p2p_seq_id, as ProcessGroupNCCL's WorkNCCL::seq_).
"""

import argparse
import json
import math
import os
import random
import struct
import time
from collections import deque

HERE = os.path.dirname(os.path.abspath(__file__))
SELF = os.path.basename(__file__)

VERSION = "2.10"
COMM_LIB_VERSION = "2.27.5"
EPOCH_NS = 1_773_478_800_000_000_000  # 2026-03-14 09:00:00 UTC
TIMEOUT_MS = 600_000  # Megatron's distributed_timeout_minutes = 10
DEPTH = 256  # calls a CPU may have queued and not completed before it blocks
MS = 1_000_000
US = 1_000
S = 1_000_000_000
RETIRE_LAG = 40 * MS  # how late the watchdog notices a completion (its loop sleeps 100 ms)
TORCH = "/usr/local/lib/python3.12/dist-packages/torch"
LIB = "/usr/lib/python3.12"
MEG = "/workspace/megatron-lm/megatron"
PRETRAIN = "/workspace/megatron-lm/pretrain_gpt.py"
TOY = "/home/user/jobs"

# ---------------------------------------------------------------------------------------------
# The pickle, exactly as torch's c10d pickler writes it (torch/csrc/jit/serialization/pickler):
# protocol 2; every string memoized by value (BINUNICODE + BINPUT, later BINGET); dicts as
# EMPTY_DICT MARK k v ... SETITEMS and lists as EMPTY_LIST MARK ... APPENDS, never memoized,
# except values shared by several records (the frame dicts), which are memoized after they are
# written and referred to by BINGET afterwards; tuples as TUPLE1/2/3; ints as BININT1, BININT2,
# BININT or an 8-byte LONG1; floats as BINFLOAT; bools as NEWTRUE/NEWFALSE.
# ---------------------------------------------------------------------------------------------


class Frame(tuple):
    """One Python frame (name, filename, line): written once per dump, then by reference."""

    __slots__ = ()


class TorchPickle:
    def __init__(self):
        self.out = bytearray(b"\x80\x02")
        self.memo = 0
        self.strings = {}
        self.frames = {}

    def _put(self):
        i = self.memo
        self.memo += 1
        return (b"q" + bytes((i,))) if i < 256 else (b"r" + struct.pack("<I", i))

    @staticmethod
    def _get(i):
        return (b"h" + bytes((i,))) if i < 256 else (b"j" + struct.pack("<I", i))

    def s(self, v):
        """The bytes of a string: written and memoized the first time, BINGET afterwards."""
        b = self.strings.get(v)
        if b is not None:
            return b
        data = v.encode()
        out = b"X" + struct.pack("<I", len(data)) + data + self._put()
        self.strings[v] = self._get(self.memo - 1)
        return out

    @staticmethod
    def i(n):
        if n is True:
            return b"\x88"
        if n is False:
            return b"\x89"
        if 0 <= n < 256:
            return b"K" + bytes((n,))
        if 0 <= n < 65536:
            return b"M" + struct.pack("<H", n)
        if -(2**31) <= n < 2**31:
            return b"J" + struct.pack("<i", n)
        return b"\x8a\x08" + struct.pack("<q", n)

    def frame(self, f):
        b = self.frames.get(f)
        if b is not None:
            return b
        name, filename, line = f
        out = (
            b"}("
            + self.s("name")
            + self.s(name)
            + self.s("filename")
            + self.s(filename)
            + self.s("line")
            + self.i(line)
            + b"u"
            + self._put()
        )
        self.frames[f] = self._get(self.memo - 1)
        return out

    def value(self, v):
        if isinstance(v, str):
            return self.s(v)
        if v is None:
            return b"N"
        if isinstance(v, bool) or isinstance(v, int):
            return self.i(v)
        if isinstance(v, float):
            return b"G" + struct.pack(">d", v)
        if isinstance(v, Frame):
            return self.frame(v)
        if isinstance(v, tuple):
            body = b"".join(self.value(x) for x in v)
            if len(v) == 0:
                return b")"
            if len(v) <= 3:
                return body + (b"\x85", b"\x86", b"\x87")[len(v) - 1]
            return b"(" + body + b"t"
        if isinstance(v, list):
            return b"](" + b"".join(self.value(x) for x in v) + b"e"
        if isinstance(v, dict):
            return b"}(" + b"".join(self.value(k) + self.value(x) for k, x in v.items()) + b"u"
        raise TypeError(type(v))

    def dump(self, obj):
        self.out += self.value(obj)
        self.out += b"."
        return bytes(self.out)


SMALL = tuple(TorchPickle.i(n) for n in range(65536))  # the bytes of every int a BININT1/2 holds


def to_plain(v):
    """The same value as Python's pickle.loads gives back (for the JSON form and for checks)."""
    if isinstance(v, Frame):
        return {"name": v[0], "filename": v[1], "line": v[2]}
    if isinstance(v, dict):
        return {k: to_plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_plain(x) for x in v]
    if isinstance(v, tuple):
        return tuple(to_plain(x) for x in v)
    return v


# ---------------------------------------------------------------------------------------------
# Call sites: Python stacks, innermost first. The "user's call site" of a record is its innermost
# frame outside torch and the standard library (README.md).
# ---------------------------------------------------------------------------------------------


def F(name, filename, line):
    return Frame((name, filename, line))


C10D = f"{TORCH}/distributed/distributed_c10d.py"
LOGGER = F("wrapper", f"{TORCH}/distributed/c10d_logger.py", 81)
MOD = [F("_call_impl", f"{TORCH}/nn/modules/module.py", 1762),
       F("_wrapped_call_impl", f"{TORCH}/nn/modules/module.py", 1751)]
TRAIN = [
    F("train_step", f"{MEG}/training/training.py", 1187),
    F("train", f"{MEG}/training/training.py", 1654),
    F("pretrain", f"{MEG}/training/training.py", 417),
    F("main", PRETRAIN, 290),
    F("wrapper", f"{TORCH}/distributed/elastic/multiprocessing/errors/__init__.py", 355),
    F("<module>", PRETRAIN, 305),
]


def deep(stack):
    """A Megatron stack padded to 26 frames with the nested decorator frames (contextlib,
    megatron.core.utils nvtx ranges) that sit between the training loop and its callees."""
    k = 0
    while len(stack) < 26:
        cut = len(stack) - len(TRAIN)
        stack = stack[:cut] + [F("inner", f"{LIB}/contextlib.py", 81), F("wrapped", f"{MEG}/core/utils.py", 1752 + k)] \
            + stack[cut:]
        k += 1
    return stack
SCHED = f"{MEG}/core/pipeline_parallel/schedules.py"
P2P = f"{MEG}/core/pipeline_parallel/p2p_communication.py"
# the line of forward_backward_pipelining_without_interleaving that runs each step of 1F1B
SCHED_LINE = {
    "warmup_recv_forward": 1845, "warmup_forward": 1851, "warmup_send_forward": 1866,
    "recv_forward": 1875, "steady_forward": 1884, "send_forward_recv_backward": 1913,
    "steady_backward": 1922, "send_backward": 1934, "send_backward_recv_forward": 1938,
    "cooldown_recv_backward": 1955, "cooldown_backward": 1960, "cooldown_send_backward": 1964,
}


def sched_frame(step):
    return F("forward_backward_pipelining_without_interleaving", SCHED, SCHED_LINE[step])


def nvtx(line):
    return [F("inner", f"{LIB}/contextlib.py", 81), F("wrapped", f"{MEG}/core/utils.py", line)]


def site_tp_forward(sub, step):
    """A tensor-parallel all_reduce of RowParallelLinear in the forward of attention or MLP."""
    inner = F("forward", f"{MEG}/core/transformer/attention.py", 703) if sub == "attn" else \
        F("forward", f"{MEG}/core/transformer/mlp.py", 148)
    layer = F("_forward_attention", f"{MEG}/core/transformer/transformer_layer.py", 474) if sub == "attn" \
        else F("_forward_mlp", f"{MEG}/core/transformer/transformer_layer.py", 556)
    return (
        [F("all_reduce", C10D, 2806), LOGGER,
         F("_reduce", f"{MEG}/core/tensor_parallel/mappings.py", 33),
         F("forward", f"{MEG}/core/tensor_parallel/mappings.py", 214),
         F("apply", f"{TORCH}/autograd/function.py", 575),
         F("reduce_from_tensor_model_parallel_region", f"{MEG}/core/tensor_parallel/mappings.py", 470),
         F("forward", f"{MEG}/core/tensor_parallel/layers.py", 1045)] + MOD
        + [inner] + MOD + [layer, F("forward", f"{MEG}/core/transformer/transformer_layer.py", 433)]
        + [F("__call__", f"{MEG}/core/transformer/module.py", 163)]
        + [F("forward", f"{MEG}/core/transformer/transformer_block.py", 548)] + MOD
        + [F("forward", f"{MEG}/core/models/gpt/gpt_model.py", 284)] + MOD
        + [F("forward_step", PRETRAIN, 199), F("forward_step", SCHED, 289), sched_frame(step)] + TRAIN
    )


def site_tp_backward(sub, step):
    """The all_reduce of _CopyToModelParallelRegion.backward (column-parallel input grad)."""
    cols = F("forward", f"{MEG}/core/transformer/attention.py", 655) if sub == "attn" else \
        F("forward", f"{MEG}/core/transformer/mlp.py", 121)
    return deep(
        [F("all_reduce", C10D, 2806), LOGGER,
         F("_reduce", f"{MEG}/core/tensor_parallel/mappings.py", 33),
         F("backward", f"{MEG}/core/tensor_parallel/mappings.py", 199),
         F("apply", f"{TORCH}/autograd/function.py", 307), cols,
         F("_engine_run_backward", f"{TORCH}/autograd/graph.py", 823),
         F("backward", f"{TORCH}/autograd/__init__.py", 354),
         F("custom_backward", SCHED, 153)] + nvtx(1750)
        + [F("backward_step", SCHED, 380)] + nvtx(1750)
        + [F("backward_step_with_timers", SCHED, 412), sched_frame(step)] + nvtx(1751) + TRAIN
    )


P2P_FUNC_LINE = {
    "recv_forward": 498, "send_forward": 526, "recv_backward": 552, "send_backward": 579,
    "send_forward_recv_backward": 607, "send_backward_recv_forward": 636,
}


def site_p2p(func, step, torch_fn, batched):
    """Megatron's p2p_communication.<func> -> _communicate -> _batched_p2p_ops / _p2p_ops."""
    if batched:
        inner = {
            "isend": [F("isend", C10D, 2462), F("batch_isend_irecv", C10D, 2745)],
            "irecv": [F("irecv", C10D, 2503), F("batch_isend_irecv", C10D, 2745)],
            "coalesced": [F("_coalescing_manager", C10D, 2689), F("__exit__", f"{LIB}/contextlib.py", 144),
                          F("batch_isend_irecv", C10D, 2748)],
        }[torch_fn] + [F("_batched_p2p_ops", P2P, 238)]
    else:
        inner = [F(torch_fn, C10D, 2462 if torch_fn == "isend" else 2503),
                 F("_p2p_ops", P2P, {"isend": 270, "irecv": 276}[torch_fn])]
    return deep(
        [LOGGER] + inner
        + [F("_communicate", P2P, 405)] + nvtx(1733)
        + [F(func, P2P, P2P_FUNC_LINE[func])] + nvtx(1733)
        + [sched_frame(step), F("wrapped", f"{MEG}/core/utils.py", 1751),
           F("forward_backward_func", f"{MEG}/training/training.py", 1142)] + TRAIN
    )


def site_finalize(kind):
    """Calls at the end of an iteration: DP bucket sync, embedding grads, grad norm, params."""
    if kind == "dp_rs":
        inner = [F("_reduce_scatter_base", C10D, 4398), F("reduce_scatter_tensor", C10D, 4352), LOGGER,
                 F("start_grad_sync", f"{MEG}/core/distributed/param_and_grad_buffer.py", 421),
                 F("start_grad_sync", f"{MEG}/core/distributed/param_and_grad_buffer.py", 853),
                 F("start_grad_sync", f"{MEG}/core/distributed/distributed_data_parallel.py", 482),
                 F("finish_grad_sync", f"{MEG}/core/distributed/distributed_data_parallel.py", 505),
                 F("finalize_model_grads", f"{MEG}/core/distributed/finalize_model_grads.py", 283)]
        outer = [F("forward_backward_pipelining_without_interleaving", SCHED, 1990)]
    elif kind == "embd":
        inner = [F("all_reduce", C10D, 2806), LOGGER,
                 F("_allreduce_word_embedding_grads", f"{MEG}/core/distributed/finalize_model_grads.py", 137),
                 F("_allreduce_embedding_grads", f"{MEG}/core/distributed/finalize_model_grads.py", 171),
                 F("finalize_model_grads", f"{MEG}/core/distributed/finalize_model_grads.py", 296)]
        outer = [F("forward_backward_pipelining_without_interleaving", SCHED, 1990)]
    elif kind == "grad_norm":
        inner = [F("all_reduce", C10D, 2806), LOGGER,
                 F("get_grad_norm_fp32", f"{MEG}/core/optimizer/clip_grads.py", 121),
                 F("get_grad_norm", f"{MEG}/core/optimizer/optimizer.py", 227),
                 F("step_with_ready_grads", f"{MEG}/core/optimizer/optimizer.py", 472),
                 F("step", f"{MEG}/core/optimizer/optimizer.py", 498)]
        outer = []
    elif kind == "grad_norm_early":
        # the same reduction issued from a logging path before the gradients were synced
        inner = [F("all_reduce", C10D, 2806), LOGGER,
                 F("log_global_grad_norm", f"{MEG}/training/utils.py", 212),
                 F("finalize_model_grads", f"{MEG}/core/distributed/finalize_model_grads.py", 279)]
        outer = [F("forward_backward_pipelining_without_interleaving", SCHED, 1990)]
    elif kind == "dp_ag":
        inner = [F("_allgather_base", C10D, 3932), F("all_gather_into_tensor", C10D, 3890), LOGGER,
                 F("start_param_sync", f"{MEG}/core/distributed/param_and_grad_buffer.py", 356),
                 F("start_param_sync", f"{MEG}/core/distributed/distributed_data_parallel.py", 451),
                 F("_dispatch_param_sync", f"{MEG}/core/optimizer/distrib_optimizer.py", 2011),
                 F("step_with_ready_grads", f"{MEG}/core/optimizer/distrib_optimizer.py", 2030),
                 F("step", f"{MEG}/core/optimizer/optimizer.py", 498)]
        outer = []
    else:
        raise ValueError(kind)
    return deep(inner + nvtx(1760) + outer + [F("wrapped", f"{MEG}/core/utils.py", 1751)] + TRAIN)


def toy_site(fn, line, func, torch_fn="all_reduce", depth=20):
    """A stack of a small training script (`TOY`/<fn>): torch, then the script, then padding of
    nn.Module calls so that every record carries 20-30 frames."""
    torch_line = {"all_reduce": 2806, "broadcast": 2717, "all_to_all_single": 4571, "send": 2375,
                  "recv": 2420, "isend": 2462, "irecv": 2503, "barrier": 4783}[torch_fn]
    stack = [F(torch_fn, C10D, torch_line), LOGGER, F(func, f"{TOY}/{fn}", line)]
    k = 0
    while len(stack) < depth - 3:
        stack += [F("forward", f"{TOY}/model.py", 40 + 7 * k)] + MOD
        k += 1
    return stack + [F("train_step", f"{TOY}/{fn}", 88), F("main", f"{TOY}/{fn}", 131), F("<module>", f"{TOY}/{fn}", 140)]


def user_frame(stack):
    for f in stack:
        if "/torch/" not in f[1] and not f[1].startswith(LIB):
            return {"file": f[1], "line": f[2], "function": f[0]}
    return None


# ---------------------------------------------------------------------------------------------
# Jobs, groups, programs
# ---------------------------------------------------------------------------------------------


class Group:
    __slots__ = ("gid", "desc", "ranks", "local", "timeout_ms")

    def __init__(self, gid, desc, ranks, timeout_ms):
        self.gid = gid
        self.desc = desc
        self.ranks = tuple(ranks)
        self.local = {r: i for i, r in enumerate(self.ranks)}
        self.timeout_ms = timeout_ms


class Job:
    def __init__(self, world):
        self.world = world
        self.groups = []
        self.created = [[] for _ in range(world)]  # per rank: gid, or None for a gloo group
        self.world_gid = self.group("default_pg", range(world))

    def group(self, desc, ranks, timeout_ms=TIMEOUT_MS):
        g = Group(len(self.groups), desc, sorted(ranks), timeout_ms)
        self.groups.append(g)
        for r in g.ranks:
            self.created[r].append(g.gid)
        return g.gid

    def gloo_group(self, ranks):
        """A gloo group (e.g. Megatron's DATA_PARALLEL_GROUP_GLOO): takes a name, records nothing."""
        for r in ranks:
            self.created[r].append(None)

    def naming(self, r):
        """{gid: (name, pg_id)} on rank r: per-process counters in creation order."""
        out = {}
        name = 0
        pg_id = 0
        for gid in self.created[r]:
            if gid is not None:
                out[gid] = (str(name), pg_id)
                pg_id += 1
            name += 1
        return out


# Items of a rank's program (tuples, first field the kind):
#   ("C", gpu_ns, cpu_ns)                compute: the device is busy, the CPU spends cpu_ns
#   ("H",)                               a device kernel that never finishes (GPU hang)
#   ("S",)                               the CPU waits for its device (sync)
#   ("X",)                               the host stops issuing (hung outside collectives)
#   ("D",)                               the process dies here: no more calls, no dump
#   ("K", gid, op, ins, outs, dtype, site, root)          a collective
#   ("P", gid, send, peer, sizes, dtype, site)            a single isend/irecv (send: bool)
#   ("B", gid, ((send, peer, sizes, dtype, site), ...), site)   batch_isend_irecv
def compute(gpu_us, cpu_us=None):
    return ("C", int(gpu_us * US), int((cpu_us if cpu_us is not None else gpu_us / 10) * US))


def coll(gid, op, ins, outs, dtype, site, root=None):
    return ("K", gid, op, ins, outs, dtype, tuple(site), root)


def p2p(gid, send, peer, sizes, dtype, site):
    return ("P", gid, send, peer, sizes, dtype, tuple(site))


def batch(gid, ops, site):
    return ("B", gid, tuple((s, p, z, d, tuple(fs)) for s, p, z, d, fs in ops), tuple(site))


SYNC = ("S",)
STOP = ("X",)
DIE = ("D",)
GPU_HANG = ("H",)

DTYPE_BYTES = {"Float": 4, "BFloat16": 2, "Half": 2, "Long": 8, "Double": 8, "Int": 4}


def nbytes(sizes, dtype):
    n = 0
    for s in sizes:
        n += math.prod(s) * DTYPE_BYTES[dtype]
    return n


def comm_ns(nb, kind):
    """Transfer time once every participant is running: latency + bytes / bandwidth."""
    lat, gbps = {"tp": (20, 150), "p2p": (15, 40), "dp": (60, 20), "world": (80, 10)}[kind]
    return int(lat * US + nb / gbps)


# ---------------------------------------------------------------------------------------------
# The simulation: CPU issue, per-rank device queues, matching, completion.
# ---------------------------------------------------------------------------------------------


class Sim:
    """Runs programs (one list of items per rank) from per-rank CPU start times.

    After run(): iss/st/en[r][i] are the issue, start and end times (ns, None = never) of item i
    of rank r; meta[r][i] the counters a recorded call got: (collective_seq_id, p2p_seq_id,
    first op_id) with the group's counters carried in `counters`.
    """

    def __init__(self, job, programs, t0, counters=None):
        self.job = job
        self.prog = programs
        n = job.world
        self.iss = [[None] * len(p) for p in programs]
        self.st = [[None] * len(p) for p in programs]
        self.en = [[None] * len(p) for p in programs]
        self.meta = [[None] * len(p) for p in programs]
        self.keys = [[None] * len(p) for p in programs]
        self.cpu = list(t0)
        self.ip = [0] * n
        self.head = [0] * n
        self.gfree = list(t0)
        self.halt = [None] * n  # None, "X" (hung host), "D" (dead), "H" (device hung)
        self.halt_at = [None] * n
        self.counters = counters if counters is not None else [dict() for _ in range(n)]
        self.pairs = [dict() for _ in range(n)]  # (gid, peer, send) -> ops so far
        self.colls = {}
        self.p2ps = {}
        self.pending = {}
        self.work = deque(range(n))
        self.queued = [True] * n

    def wake(self, r):
        if not self.queued[r]:
            self.queued[r] = True
            self.work.append(r)

    def run(self):
        while self.work:
            r = self.work.popleft()
            self.queued[r] = False
            self.advance(r)
        return self

    def _issue(self, r, i, it):
        k = it[0]
        cnt = self.counters[r]
        g = it[1]
        c = cnt.get(g)
        if c is None:
            c = cnt[g] = [0, 0, 0]
        if k == "K":
            c[0] += 1
            c[2] += 1
            self.meta[r][i] = (c[0], c[1], c[2])
        elif k == "P":
            c[1] += 1
            c[2] += 1
            self.meta[r][i] = (c[0], c[1], c[2])
            self.keys[r][i] = (self._p2p_key(r, g, it[2], it[3]),)
        else:  # batch: one p2p launch, one op_id per op
            c[1] += 1
            first = c[2] + 1
            c[2] += len(it[2])
            self.meta[r][i] = (c[0], c[1], first)
            self.keys[r][i] = tuple(self._p2p_key(r, g, op[0], op[1]) for op in it[2])

    def _p2p_key(self, r, g, send, peer):
        pk = (g, peer, send)
        n = self.pairs[r].get(pk, 0)
        self.pairs[r][pk] = n + 1
        return (g, r, peer, n) if send else (g, peer, r, n)

    def advance(self, r):
        prog = self.prog[r]
        n = len(prog)
        iss, st, en = self.iss[r], self.st[r], self.en[r]
        while True:
            moved = False
            # the CPU issues
            while self.ip[r] < n and self.halt[r] is None:
                i = self.ip[r]
                it = prog[i]
                k = it[0]
                if k == "S":
                    if self.head[r] < i:
                        break
                    t = max(self.cpu[r], self.gfree[r])
                    iss[i] = st[i] = en[i] = t
                    self.cpu[r] = t
                    self.ip[r] += 1
                    self.head[r] += 1
                    moved = True
                    continue
                if k == "X" or k == "D":
                    self.halt[r] = k
                    self.halt_at[r] = self.cpu[r]
                    iss[i] = self.cpu[r]
                    break
                if i - self.head[r] >= DEPTH:
                    break
                iss[i] = self.cpu[r]
                if k == "C":
                    self.cpu[r] += it[2]
                elif k == "H":
                    self.cpu[r] += 100 * US
                else:
                    self._issue(r, i, it)
                    self.cpu[r] += 30 * US if k != "B" else (20 + 10 * len(it[2])) * US
                self.ip[r] += 1
                moved = True
            # the device runs its queue
            while self.head[r] < self.ip[r]:
                i = self.head[r]
                it = prog[i]
                k = it[0]
                if st[i] is None:
                    st[i] = max(iss[i], self.gfree[r])
                    if k == "C":
                        en[i] = st[i] + it[1]
                    elif k == "H":
                        self.halt[r] = "H"
                        self.halt_at[r] = st[i]
                    elif k == "K":
                        self._start_collective(r, i, it)
                    else:
                        self._start_p2p(r, i, it)
                if en[i] is None:
                    break
                self.gfree[r] = en[i]
                self.head[r] += 1
                moved = True
            if not moved:
                return

    def _start_collective(self, r, i, it):
        key = (it[1], self.meta[r][i][0])
        sig = (it[2], it[3], it[4], it[5], it[7])
        e = self.colls.get(key)
        if e is None:
            e = self.colls[key] = [0, 0, sig, True, []]
        e[0] += 1
        e[1] = max(e[1], self.st[r][i])
        if sig != e[2]:
            e[3] = False
        e[4].append((r, i))
        g = self.job.groups[it[1]]
        if e[0] == len(g.ranks) and e[3]:
            kind = "tp" if len(g.ranks) <= 8 else "world" if g.gid == self.job.world_gid else "dp"
            if g.desc.startswith("DATA"):
                kind = "dp"
            end = e[1] + comm_ns(nbytes(it[3], it[5]), kind)
            for r2, i2 in e[4]:
                self.en[r2][i2] = end
                if r2 != r:
                    self.wake(r2)

    def _start_p2p(self, r, i, it):
        start = self.st[r][i]
        ops = ((it[2], it[3], it[4], it[5]),) if it[0] == "P" else tuple(o[:4] for o in it[2])
        pend = [len(ops), start, max(nbytes(o[2], o[3]) for o in ops)]
        self.pending[(r, i)] = pend
        for key, op in zip(self.keys[r][i], ops):
            slot = self.p2ps.get(key)
            if slot is None:
                slot = self.p2ps[key] = [None, None]
            side = 0 if op[0] else 1
            sig = (op[2], op[3])
            slot[side] = (r, i, sig)
            other = slot[1 - side]
            if other is not None and other[2] == sig:
                pend[0] -= 1
                r2, i2 = other[0], other[1]
                pend[1] = max(pend[1], self.st[r2][i2])
                cp = self.pending[(r2, i2)]
                cp[0] -= 1
                cp[1] = max(cp[1], start)
                if cp[0] == 0:
                    self.en[r2][i2] = cp[1] + comm_ns(cp[2], "p2p")
                    self.wake(r2)
        if pend[0] == 0:
            self.en[r][i] = pend[1] + comm_ns(pend[2], "p2p")


# ---------------------------------------------------------------------------------------------
# Records and dumps
# ---------------------------------------------------------------------------------------------

# a record: (record_id, (pg_id, name, desc, timeout_ms), collective_seq_id, p2p_seq_id, op_id,
# profiling_name, time_created, duration_ms, input_sizes, input_dtype, output_sizes,
# output_dtype, state, time_discovered_started, time_discovered_completed, retired, is_p2p,
# frames, batch member)
MEMBER = 18


def records_of(job, naming, r, prog, iss, st, en, meta, shift_t, shift, rid0, dump_t):
    """The records rank r's calls wrote, with their state as of dump_t (None: a healthy past
    iteration, long retired). shift_t/shift: time and per-group counter offsets."""
    out = []
    rid = rid0
    for i, it in enumerate(prog):
        k = it[0]
        if k not in ("K", "P", "B") or iss[i] is None:
            continue
        g = job.groups[it[1]]
        name, pg_id = naming[g.gid]
        off = shift.get(g.gid, (0, 0, 0)) if shift else (0, 0, 0)
        cseq, pseq, op0 = meta[i]
        cseq += off[0]
        pseq += off[1]
        op0 += off[2]
        t_iss = iss[i] + shift_t
        t_st = None if st[i] is None else st[i] + shift_t
        t_en = None if en[i] is None else en[i] + shift_t
        timeout_ns = g.timeout_ms * MS
        # state at the dump
        if dump_t is None:
            state, retired, ds, dc = "completed", True, t_en + RETIRE_LAG, t_en + RETIRE_LAG
            dur = (t_en - t_st) / MS
        elif t_en is not None and t_en <= dump_t:
            retired = t_en + RETIRE_LAG <= dump_t
            state = "completed"
            ds = dc = t_en + RETIRE_LAG if retired else dump_t
            dur = (t_en - t_st) / MS if retired else None
        elif t_st is not None and t_st <= dump_t:
            state = "started"
            retired = t_st + timeout_ns <= dump_t
            ds = t_st + timeout_ns if retired else dump_t
            dc = None
            dur = None
        else:
            state, retired, ds, dc, dur = "scheduled", False, None, None, None
        if dur is not None:
            dur = struct.unpack("f", struct.pack("f", dur))[0]
        common = (pg_id, name, g.desc, g.timeout_ms)
        if k == "K":
            pname = "nccl:" + it[2]
            outs = it[4]
            out.append((rid, common, cseq, pseq, op0, pname, t_iss, dur, it[3], it[5], outs, it[5],
                        state, ds, dc, retired, False, it[6], False))
            rid += 1
        elif k == "P":
            me = g.local[r]
            peer = g.local[it[3]]
            pname = f"nccl:send {me}->{peer}" if it[2] else f"nccl:recv {me}<-{peer}"
            out.append((rid, common, cseq, pseq, op0, pname, t_iss, dur, it[4], it[5], it[4], it[5],
                        state, ds, dc, retired, True, it[6], False))
            rid += 1
        else:
            me = g.local[r]
            for j, (send, peer, sizes, dtype, fs) in enumerate(it[2]):
                p = g.local[peer]
                pname = f"nccl:send {me}->{p}" if send else f"nccl:recv {me}<-{p}"
                out.append((rid, common, cseq, pseq, op0 + j, pname, t_iss + j * 3 * US, None, sizes, dtype,
                            sizes, dtype, "scheduled", None, None, False, True, fs, True))
                rid += 1
            out.append((rid, common, cseq, pseq, op0 + len(it[2]) - 1, "nccl:coalesced",
                        t_iss + len(it[2]) * 3 * US + 2 * US, dur, (), None, (), None,
                        state, ds, dc, retired, False, it[3], False))
            rid += 1
    return out, rid


def work_seq(rec):
    """A work's seq_ as pg_status reports it: p2p_seq_id for p2p works (a batch's trailing
    record included), collective_seq_id for collectives."""
    return rec[3] if (rec[16] or rec[5] == "nccl:coalesced") else rec[2]


class Dump:
    """One rank's dump: the header and its records (newest last), ready to be written."""

    def __init__(self, rank, job, naming, records, status, clock_ns, thread_id):
        """clock_ns: what this host's clock reads at simulated time 0 (the epoch and its skew)."""
        self.rank = rank
        self.job = job
        self.naming = naming
        self.records = records
        self.status = status
        self.skew = clock_ns
        self.thread_id = thread_id

    def pg_config(self):
        items = []
        for gid, (name, _) in self.naming.items():
            g = self.job.groups[gid]
            items.append((name, g.desc, "[" + ", ".join(str(x) for x in g.ranks) + "]"))
        items.sort()
        return {n: {"name": n, "desc": d, "ranks": rs} for n, d, rs in items}

    def pg_status(self, as_json):
        out = {}
        for gid, (name, pg_id) in sorted(self.naming.items(), key=lambda x: x[1][1]):
            e, s, c = self.status.get(gid, (-1, -1, -1))
            if as_json:
                out[str(pg_id)] = {"last_completed_collective": str(c), "last_enqueued_collective": str(e),
                                   "last_started_collective": str(s)}
            else:
                out[str(pg_id)] = {"last_enqueued_collective": e, "last_started_collective": s,
                                   "last_completed_collective": c}
        return out

    def entry(self, rec, with_frames):
        (rid, (pg_id, name, desc, timeout_ms), cseq, pseq, op_id, pname, t_iss, dur, ins, in_dt, outs,
         out_dt, state, ds, dc, retired, is_p2p, frames, _) = rec
        e = {}
        if with_frames:
            e["frames"] = list(frames)
        e["record_id"] = rid
        e["pg_id"] = pg_id
        e["process_group"] = (name, desc)
        e["thread_name"] = "python"
        e["thread_id"] = self.thread_id
        e["collective_seq_id"] = cseq
        e["p2p_seq_id"] = pseq
        e["op_id"] = op_id
        e["profiling_name"] = pname
        e["time_created_ns"] = t_iss + self.skew
        if dur is not None:
            e["duration_ms"] = dur
        e["input_sizes"] = [list(s) for s in ins]
        e["input_dtypes"] = [in_dt] * len(ins) if in_dt else []
        e["output_sizes"] = [list(s) for s in outs]
        e["output_dtypes"] = [out_dt] * len(outs) if out_dt else []
        e["state"] = state
        e["time_discovered_started_ns"] = None if ds is None else ds + self.skew
        e["time_discovered_completed_ns"] = None if dc is None else dc + self.skew
        e["retired"] = retired
        e["timeout_ms"] = timeout_ms
        e["is_p2p"] = is_p2p
        return e

    def pickle_bytes(self, reference=False):
        """The dump as torch pickles it. The fast path writes each record from byte pieces
        (keys, frame lists, sizes) cached once memoized; `reference` writes every record
        through TorchPickle.value, and the two agree byte for byte (`--check`)."""
        w = TorchPickle()
        head = w.value({"version": VERSION, "pg_config": self.pg_config(), "comm_lib_version": COMM_LIB_VERSION,
                        "pg_status": self.pg_status(False)})
        # the top-level dict is written by hand so that the entries stream out without a copy
        parts = [head[:-1], w.s("entries"), b"]("]
        if reference:
            for rec in self.records:
                parts.append(w.value(self.entry(rec, True)))
        else:
            self._fast_records(w, parts)
        parts.append(b"eu.")
        return b"\x80\x02" + b"".join(parts)

    def _fast_records(self, w, parts):
        s, i = w.s, TorchPickle.i
        pack = struct.pack
        frames_cache, sizes_cache, dtypes_cache, pg_cache, str_cache = {}, {}, {}, {}, w.strings
        timeouts = {TIMEOUT_MS: i(TIMEOUT_MS)}
        tid = self.thread_id
        skew = self.skew
        append = parts.append
        keys = None
        for (rid, (pg_id, name, desc, timeout_ms), cseq, pseq, op_id, pname, t_iss, dur, ins, in_dt, outs,
             out_dt, state, ds, dc, retired, is_p2p, frames, _) in self.records:
            if keys is None:  # the first record memoizes every key: written in order, piece by piece
                out = [b"}(", s("frames")]
                fb = b"](" + b"".join(w.frame(f) for f in frames) + b"e"
                out += [fb, s("record_id"), i(rid), s("pg_id"), i(pg_id), s("process_group"), s(name), s(desc),
                        b"\x86", s("thread_name"), s("python"), s("thread_id"), s(tid), s("collective_seq_id"),
                        i(cseq), s("p2p_seq_id"), i(pseq), s("op_id"), i(op_id), s("profiling_name"), s(pname),
                        s("time_created_ns"), i(t_iss + skew)]
                if dur is not None:
                    out += [s("duration_ms"), b"G" + pack(">d", dur)]
                for key, sizes, dt, dkey in (("input_sizes", ins, in_dt, "input_dtypes"),
                                             ("output_sizes", outs, out_dt, "output_dtypes")):
                    out += [s(key), b"](" + b"".join(b"](" + b"".join(i(x) for x in one) + b"e" for one in sizes)
                            + b"e", s(dkey), b"](" + b"".join(s(dt) for _ in sizes) + b"e" if dt else b"](e"]
                out += [s("state"), s(state), s("time_discovered_started_ns"), b"N" if ds is None else i(ds + skew),
                        s("time_discovered_completed_ns"), b"N" if dc is None else i(dc + skew),
                        s("retired"), b"\x88" if retired else b"\x89", s("timeout_ms"), i(timeout_ms),
                        s("is_p2p"), b"\x88" if is_p2p else b"\x89", b"u"]
                append(b"".join(out))
                keys = {k: str_cache[k] for k in str_cache}
                k_head = b"}(" + keys["frames"]
                k_rid, k_pgid, k_pg = keys["record_id"], keys["pg_id"], keys["process_group"]
                k_thread = keys["thread_name"] + keys["python"] + keys["thread_id"] + keys[tid] + \
                    keys["collective_seq_id"]
                k_pseq, k_op, k_pn, k_t = keys["p2p_seq_id"], keys["op_id"], keys["profiling_name"], \
                    keys["time_created_ns"]
                k_is, k_id, k_os, k_od = keys["input_sizes"], keys["input_dtypes"], keys["output_sizes"], \
                    keys["output_dtypes"]
                k_state, k_ds, k_dc = keys["state"], keys["time_discovered_started_ns"], \
                    keys["time_discovered_completed_ns"]
                k_ret, k_to, k_p2p = keys["retired"], keys["timeout_ms"], keys["is_p2p"]
                frames_cache[frames] = b"](" + b"".join(w.frames[f] for f in frames) + b"e"
                continue
            fb = frames_cache.get(frames)
            if fb is None:
                fb = b"](" + b"".join(w.frame(f) for f in frames) + b"e"
                frames_cache[frames] = b"](" + b"".join(w.frames[f] for f in frames) + b"e"
            pg = pg_cache.get((name, desc))
            if pg is None:
                pg = s(name) + s(desc) + b"\x86"
                pg_cache[(name, desc)] = s(name) + s(desc) + b"\x86"
            pn = str_cache.get(pname) or s(pname)
            out = [k_head, fb, k_rid, SMALL[rid] if rid < 65536 else i(rid), k_pgid, SMALL[pg_id], k_pg, pg,
                   k_thread, SMALL[cseq] if cseq < 65536 else i(cseq), k_pseq,
                   SMALL[pseq] if pseq < 65536 else i(pseq), k_op, SMALL[op_id] if op_id < 65536 else i(op_id),
                   k_pn, pn, k_t, b"\x8a\x08" + pack("<q", t_iss + skew)]
            if dur is not None:
                out += [s("duration_ms"), b"G" + pack(">d", dur)]
            for ksz, sizes, dt, kdt in ((k_is, ins, in_dt, k_id), (k_os, outs, out_dt, k_od)):
                sb = sizes_cache.get(sizes)
                if sb is None:
                    sb = b"](" + b"".join(b"](" + b"".join(i(x) for x in one) + b"e" for one in sizes) + b"e"
                    sizes_cache[sizes] = sb
                if dt and sizes:
                    db = dtypes_cache.get((dt, len(sizes)))
                    if db is None:
                        db = b"](" + b"".join(s(dt) for _ in sizes) + b"e"
                        dtypes_cache[(dt, len(sizes))] = b"](" + s(dt) * len(sizes) + b"e"
                else:
                    db = b"](e"
                out += [ksz, sb, kdt, db]
            out += [k_state, str_cache.get(state) or s(state),
                    k_ds, b"N" if ds is None else b"\x8a\x08" + pack("<q", ds + skew),
                    k_dc, b"N" if dc is None else b"\x8a\x08" + pack("<q", dc + skew),
                    k_ret, b"\x88" if retired else b"\x89", k_to, timeouts.get(timeout_ms) or i(timeout_ms), k_p2p,
                    b"\x88" if is_p2p else b"\x89",
                    b"u"]
            append(b"".join(out))

    def json_bytes(self):
        d = {"version": VERSION, "comm_lib_version": COMM_LIB_VERSION, "pg_config": self.pg_config(),
             "pg_status": self.pg_status(True), "nccl_comm_state": {}}
        entries = []
        for rec in self.records:
            e = self.entry(rec, False)
            e["process_group"] = list(e["process_group"])
            e["time_discovered_started_ns"] = e["time_discovered_started_ns"] or 0
            e["time_discovered_completed_ns"] = e["time_discovered_completed_ns"] or 0
            entries.append(e)
        if entries:
            d["entries"] = entries
        return json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


# ---------------------------------------------------------------------------------------------
# A scenario: a job, its programs, how and when its ranks dumped; run() simulates and records.
# ---------------------------------------------------------------------------------------------


class Scenario:
    """A hung job.

    healthy: per-rank program of one healthy iteration (or None); `iterations` of them run
    before `final` (the programs of the last iterations, with the fault). Healthy iterations are
    identical, so they are simulated once and repeated, `period` apart.
    """

    def __init__(self, name, job, final, healthy=None, iterations=0, entries=2000, seed=1,
                 spread=(0.5, 2.0), late=None, drop=(), gap_ms=40):
        self.name = name
        self.job = job
        self.final = final
        self.healthy = healthy
        self.iterations = iterations if healthy else 0
        self.entries = entries
        self.rng = random.Random(f"{name}/{seed}")
        self.spread = spread
        self.late = late
        self.drop = set(drop)
        self.gap = gap_ms * MS

    def run(self):
        job = self.job
        n = job.world
        t_base = 5 * S
        self.period = 0
        self.inc = [dict() for _ in range(n)]
        self.nrec = [0] * n
        if self.healthy:
            hs = Sim(job, self.healthy, [t_base] * n).run()
            for r in range(n):
                for i, it in enumerate(self.healthy[r]):
                    if hs.en[r][i] is None:
                        raise SystemExit(f"{self.name}: the healthy iteration does not finish on rank {r} "
                                         f"(item {i}: {it[:3]})")
            self.period = max(max(x for x in hs.en[r] if x is not None) for r in range(n)) - t_base + self.gap
            self.inc = hs.counters
            self.nrec = [sum(1 if it[0] in "KP" else len(it[2]) + 1 if it[0] == "B" else 0 for it in p)
                         for p in self.healthy]
            self.hs = hs
        F = self.iterations
        counters = [{g: [c * F, p * F, o * F] for g, (c, p, o) in self.inc[r].items()} for r in range(n)]
        self.t_final = t_base + F * self.period
        fs = Sim(job, self.final, [self.t_final] * n, counters=counters).run()
        self.fs = fs
        self.dead = {r for r in range(n) if fs.halt[r] == "D"}
        self.dumpers = [r for r in range(n) if r not in self.dead and r not in self.drop]
        # the watchdog: a call started longer ago than its group's timeout
        first_to = {}
        for r in range(n):
            if r in self.dead:
                continue
            for i, it in enumerate(self.final[r]):
                if it[0] in "KPB" and fs.st[r][i] is not None and fs.en[r][i] is None:
                    to = fs.st[r][i] + job.groups[it[1]].timeout_ms * MS
                    if r not in first_to or to < first_to[r]:
                        first_to[r] = to
        if first_to:
            self.t_timeout = min(first_to.values())
            self.detector = min(first_to, key=lambda r: (first_to[r], r))
        else:  # nothing hangs: every rank dumps at the end of its program
            self.t_timeout = max(max(x for x in fs.en[r] if x is not None) for r in range(n)) + S
            self.detector = None
        self.skew = [int(self.rng.uniform(-800, 800) * US) for _ in range(n)]
        self.tid = [str(139_600_000_000_000 + self.rng.randrange(10**9) * 4096) for _ in range(n)]
        self.dump_t = self._dump_times(self.spread, 0)
        self.late_t = self._dump_times(self.late, 1) if self.late else None
        return self

    def _dump_times(self, spread, salt):
        out = {}
        for r in self.dumpers:
            if r == self.detector and salt == 0:
                out[r] = self.t_timeout + 50 * MS
            else:
                out[r] = self.t_timeout + int(self.rng.uniform(*spread) * S)
        return out

    # -- what each rank's dump holds ----------------------------------------------------------

    def dump(self, r, dump_t):
        job, fs = self.job, self.fs
        naming = job.naming(r)
        F = self.iterations
        fin, _ = records_of(job, naming, r, self.final[r], fs.iss[r], fs.st[r], fs.en[r], fs.meta[r],
                            0, None, F * self.nrec[r], dump_t)
        fin = [x for x in fin if x[6] <= dump_t]
        need = self.entries - len(fin)
        prev = []
        i = F - 1
        while need > 0 and i >= 0:
            shift = {g: (c * i, p * i, o * i) for g, (c, p, o) in self.inc[r].items()}
            hs = self.hs
            recs, _ = records_of(job, naming, r, self.healthy[r], hs.iss[r], hs.st[r], hs.en[r], hs.meta[r],
                                 i * self.period, shift, i * self.nrec[r], None)
            take = recs[-need:] if need < len(recs) else recs
            prev = take + prev
            need -= len(take)
            i -= 1
        records = (prev + fin)[-self.entries:] if self.entries else []
        status = self._status(r, naming, fin, dump_t)
        return Dump(r, job, naming, records, status, EPOCH_NS + self.skew[r], self.tid[r])

    def _status(self, r, naming, fin, dump_t):
        """pg_status: per group, the seq of the last enqueued, started and completed work."""
        F = self.iterations
        status = {}
        if F and self.healthy:
            for it in self.healthy[r]:
                if it[0] in "KPB":
                    c, p, _ = self.inc[r][it[1]]
                    seq = c * F if it[0] == "K" else p * F
                    status[it[1]] = [seq, seq, seq]
        pid_to_gid = {pid: g for g, (_, pid) in naming.items()}
        for rec in fin:
            if rec[MEMBER]:
                continue
            s = status.setdefault(pid_to_gid[rec[1][0]], [-1, -1, -1])
            seq = work_seq(rec)
            s[0] = seq
            if rec[12] in ("started", "completed"):
                s[1] = seq
            if rec[12] == "completed" and rec[15]:
                s[2] = seq
        return {g: tuple(v) for g, v in status.items()}

    def blocked(self, r, dump_t):
        fs = self.fs
        for i, it in enumerate(self.final[r]):
            if it[0] in "KPB" and fs.st[r][i] is not None and fs.st[r][i] <= dump_t and fs.en[r][i] is None:
                return True
        return False


# ---------------------------------------------------------------------------------------------
# Megatron-style 3-D parallel jobs: tensor x data x pipeline, ranks ordered tp fastest, then
# dp, then pp; 1F1B schedule; TP all_reduces in each layer's forward and backward; PP
# activations/gradients by batch_isend_irecv (or single isend/irecv); at the end of an
# iteration the DP reduce_scatter of gradient buckets, the embedding all_reduce of the first
# and last stages, the grad-norm all_reduce over the world, a CPU sync, the DP all_gather of
# parameters.
# ---------------------------------------------------------------------------------------------


class Megatron:
    def __init__(self, tp, dp, pp, microbatches=None, layers=1, batched=True, p2p_sync=True, buckets=2,
                 act=(2048, 1, 4096), slow=1.0):
        self.tp, self.dp, self.pp = tp, dp, pp
        self.M = microbatches or max(4, 2 * pp)
        self.layers = layers
        self.batched = batched
        self.p2p_sync = p2p_sync
        self.buckets = buckets
        self.act = (tuple(act),)
        self.bucket = 40 * 1024 * 1024 // 4  # 40 MB of fp32 gradients per bucket
        self.vocab = 50304
        self.hidden = act[2]
        self.slow = slow
        self.world = tp * dp * pp
        job = self.job = Job(self.world)
        self.tp_g, self.dp_g, self.pp_g, self.embd_g = {}, {}, {}, {}
        for p in range(pp):
            for d in range(dp):
                ranks = [self.rank(t, d, p) for t in range(tp)]
                gid = job.group("TENSOR_MODEL_PARALLEL_GROUP", ranks)
                for r in ranks:
                    self.tp_g[r] = gid
        for p in range(pp):
            for t in range(tp):
                ranks = [self.rank(t, d, p) for d in range(dp)]
                gid = job.group("DATA_PARALLEL_GROUP", ranks)
                for r in ranks:
                    self.dp_g[r] = gid
        for p in range(pp):
            for t in range(tp):
                job.gloo_group([self.rank(t, d, p) for d in range(dp)])
        for d in range(dp):
            for t in range(tp):
                ranks = [self.rank(t, d, p) for p in range(pp)]
                gid = job.group("PIPELINE_MODEL_PARALLEL_GROUP", ranks)
                for r in ranks:
                    self.pp_g[r] = gid
        if pp > 1:
            for d in range(dp):
                for t in range(tp):
                    ranks = [self.rank(t, d, 0), self.rank(t, d, pp - 1)]
                    gid = job.group("EMBEDDING_GROUP", ranks)
                    for r in ranks:
                        self.embd_g[r] = gid

    def rank(self, t, d, p):
        return p * self.dp * self.tp + d * self.tp + t

    def coords(self, r):
        return r % self.tp, (r // self.tp) % self.dp, r // (self.tp * self.dp)

    # -- one iteration of one rank, as (item, tag) pairs ----------------------------------------

    def iteration(self, r):
        t, d, s = self.coords(r)
        P, M = self.pp, self.M
        out = []
        prev = self.rank(t, d, s - 1) if s > 0 else None
        nxt = self.rank(t, d, s + 1) if s < P - 1 else None
        warmup = min(P - s - 1, M)
        rest = M - warmup

        def comm(func, step, mb, send_prev=False, recv_prev=False, send_next=False, recv_next=False):
            ops = []
            if send_prev and prev is not None:
                ops.append(("send_prev", True, prev))
            if recv_prev and prev is not None:
                ops.append(("recv_prev", False, prev))
            if send_next and nxt is not None:
                ops.append(("send_next", True, nxt))
            if recv_next and nxt is not None:
                ops.append(("recv_next", False, nxt))
            if not ops:
                return
            g = self.pp_g[r]
            if self.batched:
                members = [(send, peer, self.act, "BFloat16",
                            site_p2p(func, step, "isend" if send else "irecv", True)) for _, send, peer in ops]
                out.append((batch(g, members, site_p2p(func, step, "coalesced", True)),
                            ("p2p", step, mb, tuple(o[0] for o in ops))))
                if self.p2p_sync:
                    out.append((SYNC, ("p2p_sync", step, mb)))
            else:
                order = ["send_next", "recv_prev", "send_prev", "recv_next"] if s % 2 == 0 else \
                    ["recv_prev", "send_next", "recv_next", "send_prev"]
                for name in order:
                    for o in ops:
                        if o[0] == name:
                            fn = "isend" if o[1] else "irecv"
                            out.append((p2p(g, o[1], o[2], self.act, "BFloat16", site_p2p(func, step, fn, False)),
                                        ("p2p", step, mb, (name,))))

        def forward(mb, step):
            for layer in range(self.layers):
                for sub, us in (("attn", 1200), ("mlp", 1600)):
                    out.append((compute(us * self.slow), ("fwd_compute", mb, layer, sub)))
                    if self.tp > 1:
                        out.append((coll(self.tp_g[r], "all_reduce", self.act, self.act, "BFloat16",
                                         site_tp_forward(sub, step)), ("fwd", mb, layer, sub)))

        def backward(mb, step):
            for layer in reversed(range(self.layers)):
                for sub, us in (("mlp", 3200), ("attn", 2400)):
                    out.append((compute(us * self.slow), ("bwd_compute", mb, layer, sub)))
                    if self.tp > 1:
                        out.append((coll(self.tp_g[r], "all_reduce", self.act, self.act, "BFloat16",
                                         site_tp_backward(sub, step)), ("bwd", mb, layer, sub)))

        out.append((compute(2000 * self.slow, 5000), ("data",)))
        for i in range(warmup):
            comm("recv_forward", "warmup_recv_forward", i, recv_prev=True)
            forward(i, "warmup_forward")
            comm("send_forward", "warmup_send_forward", i, send_next=True)
        if rest:
            comm("recv_forward", "recv_forward", warmup, recv_prev=True)
        for i in range(rest):
            fmb, bmb = warmup + i, i
            forward(fmb, "steady_forward")
            comm("send_forward_recv_backward", "send_forward_recv_backward", fmb, send_next=True, recv_next=True)
            backward(bmb, "steady_backward")
            if i == rest - 1:
                comm("send_backward", "send_backward", bmb, send_prev=True)
            else:
                comm("send_backward_recv_forward", "send_backward_recv_forward", bmb, send_prev=True,
                     recv_prev=True)
        for i in range(warmup):
            bmb = rest + i
            comm("recv_backward", "cooldown_recv_backward", bmb, recv_next=True)
            backward(bmb, "cooldown_backward")
            comm("send_backward", "cooldown_send_backward", bmb, send_prev=True)
        out += self.finalize(r)
        return out

    def finalize(self, r, early_norm=False):
        out = []
        norm = (coll(self.job.world_gid, "all_reduce", ((1,),), ((1,),), "Float",
                     site_finalize("grad_norm_early" if early_norm else "grad_norm")), ("grad_norm",))
        if early_norm:
            out.append(norm)
        if self.dp > 1:
            for b in range(self.buckets):
                out.append((coll(self.dp_g[r], "_reduce_scatter_base", ((self.bucket,),),
                                 ((self.bucket // self.dp,),), "Float", site_finalize("dp_rs")), ("dp_rs", b)))
        if r in self.embd_g:
            shape = ((self.vocab // self.tp, self.hidden),)
            out.append((coll(self.embd_g[r], "all_reduce", shape, shape, "Float", site_finalize("embd")), ("embd",)))
        if not early_norm:
            out.append(norm)
        out.append((SYNC, ("optimizer_sync",)))
        if self.dp > 1:
            for b in range(self.buckets):
                out.append((coll(self.dp_g[r], "_allgather_base", ((self.bucket // self.dp,),), ((self.bucket,),),
                                 "BFloat16", site_finalize("dp_ag")), ("dp_ag", b)))
        return out


def find(items, pred, nth=0):
    """Index of the nth (item, tag) whose tag satisfies pred."""
    k = 0
    for i, (_, tag) in enumerate(items):
        if pred(tag):
            if k == nth:
                return i
            k += 1
    raise SystemExit(f"{SELF}: no such step in the program")


def layout(world):
    """tensor x data x pipeline sizes for a world size (Megatron-like proportions)."""
    tp = 8 if world >= 64 else 2 if world >= 4 else 1
    rest = world // tp
    pp = 16 if rest >= 128 else 4 if rest >= 8 else 2 if rest >= 2 else 1
    dp = rest // pp
    if tp * dp * pp != world:
        raise SystemExit(f"{SELF}: --ranks {world} is not tp x dp x pp with tp {tp}, pp {pp}")
    return tp, dp, pp


# ---------------------------------------------------------------------------------------------
# Cases. Each builds a Scenario and states its ground truth: what a perfect analyzer should say,
# by construction from the program (which rank deviates and how), with the blocked ranks and
# the calls' seqs taken from the simulation of that program.
# ---------------------------------------------------------------------------------------------

CASES = {}


def case(fn):
    CASES[fn.__name__[len("case_"):]] = fn
    return fn


class Truth:
    def __init__(self, scn, fault, culprits, root_causes, why, divergence=None, call_site=None,
                 json_root_causes=None, json_why=None, undecided=None, json_undecided=None, json_divergence=None):
        self.scn = scn
        self.fault = fault
        self.culprits = culprits
        self.root_causes = sorted(root_causes)
        self.why = why
        self.divergence = divergence
        self.call_site = call_site
        self.json_root_causes = sorted(json_root_causes) if json_root_causes is not None else None
        self.json_why = json_why
        self.undecided = undecided
        self.json_undecided = json_undecided
        self.json_divergence = json_divergence

    def form(self, dump_t, as_json):
        scn = self.scn
        rc = self.json_root_causes if (as_json and self.json_root_causes is not None) else self.root_causes
        f = {
            "root_causes": rc,
            "blocked": sorted(r for r, t in dump_t.items() if scn.blocked(r, t)),
            "blocked_maybe": [],
            "missing": sorted(r for r in range(scn.job.world) if r not in dump_t),
            "divergence": self.json_divergence if (as_json and self.json_divergence) else self.divergence,
            "call_site": None if as_json else self.call_site,
            "why": (self.json_why if (as_json and self.json_why) else self.why),
        }
        und = self.json_undecided if (as_json and self.json_undecided) else self.undecided
        if "undecided" in rc:
            f["undecided_reason"] = und
        return f


def group_of(scn, gid):
    g = scn.job.groups[gid]
    return g.desc, list(g.ranks)


def div_collective(scn, r, i, kind, culprits, agree):
    it = scn.final[r][i]
    desc, members = group_of(scn, it[1])
    return {"group": desc, "members": members, "seq": scn.fs.meta[r][i][0], "kind": kind,
            "op": it[2], "culprits": culprits, "agree": agree}


def div_p2p(scn, r, i, kind, culprits, agree, op=None):
    it = scn.final[r][i]
    desc, members = group_of(scn, it[1])
    g = scn.job.groups[it[1]]
    ops = [(it[2], it[3])] if it[0] == "P" else [(o[0], o[1]) for o in it[2]]
    if op is not None:
        ops = [ops[op]]
    send, peer = ops[0]
    src, dst = (r, peer) if send else (peer, r)
    return {"group": desc, "members": members, "p2p_seq": scn.fs.meta[r][i][1], "kind": kind,
            "op": "send" if send else "recv", "src": src, "dst": dst,
            "src_local": g.local[src], "dst_local": g.local[dst], "culprits": culprits, "agree": agree}


def site_of(scn, r, i, member=None):
    it = scn.final[r][i]
    stack = it[6] if it[0] in "KP" else (it[2][member][4] if member is not None else it[3])
    return user_frame(stack)


def waits_on(scn, culprit):
    """The earliest call a live rank started and never completed for want of the culprit:
    (rank, item) of a collective of a group holding the culprit, or a p2p with it."""
    best = None
    fs = scn.fs
    for r in range(scn.job.world):
        if r == culprit or r in scn.dead:
            continue
        for i, it in enumerate(scn.final[r]):
            if it[0] not in "KPB" or fs.st[r][i] is None or fs.en[r][i] is not None:
                continue
            if it[0] == "K":
                hit = culprit in scn.job.groups[it[1]].ranks
            elif it[0] == "P":
                hit = it[3] == culprit
            else:
                hit = any(o[1] == culprit for o in it[2])
            if hit and (best is None or fs.st[r][i] < best[2]):
                best = (r, i, fs.st[r][i])
            break
    return best


def div_wait(scn, culprit, kind):
    """The divergence of a culprit that issued nothing more (or left no dump): the earliest call
    another rank started and never completed for want of it."""
    r, i, _ = waits_on(scn, culprit)
    it = scn.final[r][i]
    if it[0] == "K":
        members = scn.job.groups[it[1]].ranks
        return div_collective(scn, r, i, kind, [culprit], [x for x in members if x != culprit])
    ops = [(it[2], it[3])] if it[0] == "P" else [(o[0], o[1]) for o in it[2]]
    j = next(k for k, (_, peer) in enumerate(ops) if peer == culprit)
    return div_p2p(scn, r, i, kind, [culprit], [r], op=j)


ACT = ((1024, 4, 2048),)


def toy_pipeline(world, microbatches, fault_rank=None, fault_mb=None, fault=None):
    """A forward-only pipeline over `world` stages: recv from the previous stage, compute, send
    to the next; single isend/irecv (the CPU runs ahead); a sync at the end."""
    job = Job(world)
    pp = job.group("PIPELINE_MODEL_PARALLEL_GROUP", range(world))
    progs = []
    for r in range(world):
        p = []
        for mb in range(microbatches):
            here = r == fault_rank and mb == fault_mb
            if r > 0:
                src = r - 1
                if here and fault == "wrong_peer":
                    src = r - 2
                p.append(p2p(pp, False, src, ACT, "BFloat16", toy_site("pipeline.py", 57, "recv_activation", "irecv")))
            p.append(GPU_HANG if here and fault == "gpu_hang" else compute(6000))
            if r < world - 1 and not (here and fault == "skip_send"):
                p.append(p2p(pp, True, r + 1, ACT, "BFloat16", toy_site("pipeline.py", 63, "send_activation", "isend")))
        p.append(SYNC)
        progs.append(p)
    return job, pp, progs


def index_of(prog, pred, nth=0):
    k = 0
    for i, it in enumerate(prog):
        if pred(it):
            if k == nth:
                return i
            k += 1
    raise SystemExit(f"{SELF}: no such call")


@case
def case_p2p_send_scheduled(entries=2000):
    """4-stage pipeline; rank 1's device hangs in the compute of microbatch 2: its `send 1->2`
    is issued (`scheduled`, the kernel never launched) while rank 2's recv is `started`."""
    job, pp, progs = toy_pipeline(4, 6, fault_rank=1, fault_mb=2, fault="gpu_hang")
    scn = Scenario("p2p_send_scheduled", job, progs, entries=entries).run()
    i = index_of(progs[1], lambda it: it[0] == "P" and it[2], 2)
    return Truth(
        scn, "gpu_hang", [1], ["hung:1"],
        "rank 1 received microbatch 2 and its device never finished the compute after it: its "
        "send 1->2 of microbatch 2 (and every later call) is scheduled, never started, while rank 2's "
        "recv 2<-1 is started and waits for it; rank 3 waits behind rank 2, and rank 0's send of "
        "microbatch 3 waits for rank 1's recv, scheduled behind the hang",
        divergence=div_p2p(scn, 1, i, "scheduled", [1], [2]),
        call_site=site_of(scn, 1, i),
    )


@case
def case_batch_coalesced_scheduled(entries=64):
    """4-stage Megatron 1F1B with batch_isend_irecv: rank 3's device hangs in a backward; its
    next batch's trailing `nccl:coalesced` record is `scheduled`, rank 2's matching batch
    `started`."""
    meg = Megatron(1, 1, 4, microbatches=8)
    healthy = [[it for it, _ in meg.iteration(r)] for r in range(meg.world)]
    final = [list(p) for p in healthy]
    items = meg.iteration(3)
    k = find(items, lambda tag: tag[:2] == ("bwd_compute", 3) and tag[3] == "mlp")
    final[3] = [it for it, _ in items]
    final[3][k] = GPU_HANG
    scn = Scenario("batch_coalesced_scheduled", meg.job, final, healthy, iterations=3, entries=entries).run()
    i = index_of(final[3][k:], lambda it: it[0] == "B") + k
    return Truth(
        scn, "gpu_hang", [3], ["hung:3"],
        "rank 3 (last stage) hangs in the device compute of backward microbatch 3: the "
        "batch_isend_irecv after it (send grad to stage 2, recv the next activation) is issued, its "
        "member records and its trailing nccl:coalesced record scheduled; rank 2's matching batch is "
        "started and waits for it, and the pipeline stalls behind rank 2",
        divergence=div_p2p(scn, 3, i, "scheduled", [3], [2]),
        call_site=site_of(scn, 3, i),
    )


@case
def case_p2p_first_wrong_peer(entries=2000):
    """3-stage pipeline that hangs in its very first p2p calls (no collective before them:
    collective_seq_id is 0 in every record): rank 2 posts its first recv from rank 0."""
    job, pp, progs = toy_pipeline(3, 4, fault_rank=2, fault_mb=0, fault="wrong_peer")
    scn = Scenario("p2p_first_wrong_peer", job, progs, entries=entries).run()
    i = index_of(progs[2], lambda it: it[0] == "P" and not it[2])
    return Truth(
        scn, "wrong_peer", [2], ["mismatch:2"],
        "every stage receives from its predecessor (recv 1<-0 on rank 1, as the sends 0->1 and 1->2 "
        "say), but rank 2's first recv names rank 0 (recv 2<-0), which never sends to it: rank 1's "
        "send 1->2 and rank 2's recv wait forever, rank 0's next send waits behind rank 1",
        divergence=div_p2p(scn, 2, i, "peer", [2], [1]),
        call_site=site_of(scn, 2, i),
    )


@case
def case_send_never_issued(entries=2000):
    """4-stage pipeline; rank 1 never issues its send of microbatch 2 and goes on."""
    job, pp, progs = toy_pipeline(4, 6, fault_rank=1, fault_mb=2, fault="skip_send")
    scn = Scenario("send_never_issued", job, progs, entries=entries).run()
    i = index_of(progs[2], lambda it: it[0] == "P" and not it[2], 5)
    return Truth(
        scn, "skipped_send", [1], ["skipped:1"],
        "rank 1 received 6 activations from rank 0 and sent 5 to rank 2 (same shape each time, so "
        "rank 2's recvs paired one off with them); rank 1 finished, rank 2 waits in its 6th recv 2<-1 "
        "and rank 3 behind it: rank 1 skipped one send",
        divergence=div_p2p(scn, 2, i, "missing_send", [1], [0]),
        call_site=None,
    )


@case
def case_allreduce_state(entries=2000):
    """4 ranks; all issued all_reduce #5; ranks 0,1,3 `started` it, rank 2 `scheduled` (its
    device hangs in the compute before it)."""
    job = Job(4)
    progs = []
    for r in range(4):
        p = []
        for step in range(6):
            p.append(GPU_HANG if (r == 2 and step == 4) else compute(3000))
            p.append(coll(job.world_gid, "all_reduce", ((8192, 1024),), ((8192, 1024),), "BFloat16",
                          toy_site("train.py", 72, "sync_gradients")))
        p.append(SYNC)
        progs.append(p)
    scn = Scenario("allreduce_state", job, progs, entries=entries).run()
    i = index_of(progs[2], lambda it: it[0] == "K", 4)
    return Truth(
        scn, "gpu_hang", [2], ["hung:2"],
        "every rank issued all_reduce #5; ranks 0,1,3 started it and wait, rank 2's record is "
        "scheduled: its kernel never launched because the compute before it never finished",
        divergence=div_collective(scn, 2, i, "scheduled", [2], [0, 1, 3]),
        call_site=site_of(scn, 2, i),
    )


def broadcast_job(name, late=None, entries=2000):
    job = Job(4)
    progs = []
    site_ok = toy_site("train.py", 101, "sync_buffers", "broadcast")
    site_bad = toy_site("train.py", 98, "sync_buffers", "broadcast")
    for r in range(4):
        p = []
        for step in range(5):
            p.append(compute(3000))
            p.append(coll(job.world_gid, "all_reduce", ((4096, 1024),), ((4096, 1024),), "BFloat16",
                          toy_site("train.py", 94, "sync_gradients")))
            bad = r == 2 and step == 3
            p.append(coll(job.world_gid, "broadcast", ((256, 1024),), ((256, 1024),), "Float",
                          site_bad if bad else site_ok, root=1 if bad else 0))
        p.append(SYNC)
        progs.append(p)
    scn = Scenario(name, job, progs, entries=entries, late=late).run()
    i = index_of(progs[2], lambda it: it[0] == "K" and it[2] == "broadcast", 3)
    return scn, i


BCAST_UNDECIDED = (
    "every rank issued broadcast #8 with the same sizes and all wait in it; the root of a broadcast "
    "is not recorded and JSON dumps carry no call sites, so nothing tells which rank named another root"
)


@case
def case_broadcast_wrong_root(entries=2000):
    """4 ranks, all_reduce + broadcast(root 0) per step; at step 3 rank 2 broadcasts with root 1
    from another line. Main dumps, dumps taken long after the timeout (`late/`), and a mix of
    both (`mixed/`: ranks 0,1 main, ranks 2,3 late)."""
    scn, i = broadcast_job("broadcast_wrong_root", late=(90.0, 95.0), entries=entries)
    return Truth(
        scn, "wrong_root", [2], ["mismatch:2"],
        "broadcast #8 of the world: ranks 0,1,3 call it from train.py:101, rank 2 from train.py:98 "
        "(with root 1: NCCL hangs every member); rank 2's call site differs from the three others'",
        divergence=div_collective(scn, 2, i, "call_site", [2], [0, 1, 3]),
        call_site=site_of(scn, 2, i),
        json_root_causes=["undecided"], json_why=BCAST_UNDECIDED, json_undecided=BCAST_UNDECIDED,
    )


@case
def case_late_dumps(entries=2000):
    """4 ranks; rank 3 all_reduces another size at #4; every rank dumped 1.5 minutes after the
    timeout: every stuck call is `retired` but `started`, never `completed`."""
    job = Job(4)
    progs = []
    for r in range(4):
        p = []
        for step in range(6):
            p.append(compute(3000))
            shape = ((2048, 1024),) if (r == 3 and step == 3) else ((4096, 1024),)
            p.append(coll(job.world_gid, "all_reduce", shape, shape, "BFloat16", toy_site("train.py", 72, "sync_gradients")))
        p.append(SYNC)
        progs.append(p)
    scn = Scenario("late_dumps", job, progs, entries=entries, spread=(90.0, 95.0)).run()
    scn.detector = None
    scn.dump_t = {r: scn.t_timeout + int(scn.rng.uniform(90, 95) * S) for r in scn.dumpers}
    i = index_of(progs[3], lambda it: it[0] == "K", 3)
    return Truth(
        scn, "size_mismatch", [3], ["mismatch:3"],
        "all_reduce #4: rank 3's input is [2048, 1024], ranks 0,1,2's [4096, 1024]; every rank started "
        "it, nobody completed it; the dumps were taken ~90 s after the timeout, so every #4 is retired "
        "and still started (failed), never completed",
        divergence=div_collective(scn, 3, i, "size", [3], [0, 1, 2]),
        call_site=site_of(scn, 3, i),
    )


def extra_job(name, drop, entries=2000):
    job = Job(4)
    progs = []
    for r in range(4):
        p = []
        for step in range(4):
            p.append(compute(3000))
            if r == 0 and step == 2:
                p.append(coll(job.world_gid, "all_reduce", ((4096, 1024),), ((4096, 1024),), "BFloat16",
                              toy_site("train.py", 84, "report_metrics")))
            p.append(coll(job.world_gid, "all_reduce", ((4096, 1024),), ((4096, 1024),), "BFloat16",
                          toy_site("train.py", 72, "sync_gradients")))
        p.append(SYNC)
        progs.append(p)
    scn = Scenario(name, job, progs, entries=entries, drop=drop).run()
    return scn


@case
def case_missing_victim(entries=2000):
    """4 ranks; rank 0 issues one extra all_reduce (another call site) at step 2, so it hangs
    alone in #5; rank 1, which finished, left no dump. The culprit's dump is present."""
    scn = extra_job("missing_victim", drop=[1], entries=entries)
    i = index_of(scn.final[0], lambda it: it[0] == "K", 2)
    return Truth(
        scn, "extra_collective", [0], ["mismatch:0"],
        "rank 0 called all_reduce #3 from train.py:84, where ranks 2,3 called it from train.py:72: an "
        "extra call with the same sizes, so NCCL matched it with the others' #3 and every later call "
        "one off; ranks 2,3 completed #1-#4 and stopped, rank 0 waits in #5 alone. Rank 1 left no "
        "dump: it is not a cause (ranks 2,3 show the program it ran), and it must not make ranks 2,3 "
        "blocked",
        divergence=div_collective(scn, 0, i, "call_site", [0], [2, 3]),
        call_site=site_of(scn, 0, i),
        json_why=(
            "without call sites: rank 0 issued 5 world all_reduces, ranks 2,3 issued 4 and completed "
            "them; rank 0 waits in #5 that the majority never issues: rank 0 is one call ahead"
        ),
        json_divergence=div_collective(scn, 0, index_of(scn.final[0], lambda it: it[0] == "K", 4), "extra", [0],
                                       [2, 3]),
    )


@case
def case_missing_culprit(entries=2000):
    """4 ranks; rank 2 dies at the start of step 3 (no dump); the others wait in #3."""
    job = Job(4)
    progs = []
    for r in range(4):
        p = []
        for step in range(5):
            if r == 2 and step == 2:
                p += [SYNC, DIE]
            p.append(compute(3000))
            p.append(coll(job.world_gid, "all_reduce", ((4096, 1024),), ((4096, 1024),), "BFloat16",
                          toy_site("train.py", 72, "sync_gradients")))
        p.append(SYNC)
        progs.append(p)
    scn = Scenario("missing_culprit", job, progs, entries=entries).run()
    i = index_of(progs[0], lambda it: it[0] == "K", 2)
    return Truth(
        scn, "rank_died", [2], ["missing:2"],
        "rank 2 left no dump; ranks 0,1,3 completed #1-#2 and wait in all_reduce #3, which needs rank 2",
        divergence=div_collective(scn, 0, i, "missing", [2], [0, 1, 3]),
    )


@case
def case_pair_first_size(entries=2000):
    """2 ranks whose very first all_reduce differs in size: no majority, no history."""
    job = Job(2)
    progs = []
    for r in range(2):
        shape = ((1024, 1024),) if r == 0 else ((2048, 1024),)
        progs.append([compute(3000), coll(job.world_gid, "all_reduce", shape, shape, "BFloat16",
                                          toy_site("train.py", 72, "sync_gradients")), SYNC])
    scn = Scenario("pair_first_size", job, progs, entries=entries).run()
    reason = ("the two members of the world disagree on the size of its first all_reduce ([1024, 1024] "
              "on rank 0, [2048, 1024] on rank 1): no majority, no earlier call of the group, no sibling "
              "group to compare with")
    return Truth(
        scn, "size_mismatch", [1], ["undecided"], reason,
        divergence=div_collective(scn, 0, 1, "size", [], []), undecided=reason,
    )


@case
def case_alltoall_split(entries=2000):
    """4 ranks; rank 1 passes other all_to_all split sizes at #3 (same totals): the recorded
    sizes are equal on every rank."""
    job = Job(4)
    progs = []
    for r in range(4):
        p = []
        for step in range(4):
            p.append(compute(3000))
            splits = (2, 0, 3, 3) if (r == 1 and step == 2) else (2, 2, 2, 2)
            p.append(coll(job.world_gid, "all_to_all", ((8, 4096),), ((8, 4096),), "BFloat16",
                          toy_site("moe.py", 133, "dispatch_tokens", "all_to_all_single"), root=splits))
        p.append(SYNC)
        progs.append(p)
    scn = Scenario("alltoall_split", job, progs, entries=entries).run()
    reason = ("every rank issued all_to_all #3 with input and output sizes [[8, 4096]] and all wait in "
              "it; split sizes are not recorded, so the dumps cannot tell whose splits differ")
    return Truth(scn, "split_mismatch", [1], ["undecided"], reason,
                 divergence=div_collective(scn, 1, 5, "unrecorded", [], []), undecided=reason)


def megatron_case(name, meg, culprit, fault, entries, iterations=None, spread=(0.5, 2.0)):
    """A Megatron job whose culprit runs `fault(items)` in the last iteration (items: the (item,
    tag) list of its iteration; returns the new list)."""
    healthy = [[it for it, _ in meg.iteration(r)] for r in range(meg.world)]
    final = [list(p) for p in healthy]
    final[culprit] = [it for it, _ in fault(meg.iteration(culprit))]
    if iterations is None:  # enough healthy iterations before the last that every ring wraps
        fewest = min(sum(1 if it[0] in "KP" else len(it[2]) + 1 if it[0] == "B" else 0 for it in p)
                     for p in healthy)
        iterations = entries // max(1, fewest) + 2
    return Scenario(name, meg.job, final, healthy, iterations=iterations, entries=entries, spread=spread).run()


def stop_before(pred):
    def fault(items):
        k = find(items, pred)
        return items[:k] + [(STOP, ("stop",))]
    return fault


@case
def case_pp1f1b_batched_hang(world=4, entries=64):
    """Megatron 1F1B on 4 stages, batch_isend_irecv (+ sync), 8 microbatches; rank 2's host stops
    issuing before the forward of microbatch 5 (steady state) in the last iteration."""
    meg = Megatron(1, 1, 4, microbatches=8)
    culprit = 2
    scn = megatron_case("pp1f1b_batched_hang", meg, culprit,
                        stop_before(lambda t: t[:2] == ("fwd_compute", 5)), entries)
    return Truth(
        scn, "rank_stuck_in_host_code", [culprit], [f"hung:{culprit}"],
        "rank 2 completed its calls up to the forward of microbatch 5 and issued nothing after; "
        "stage 1 waits in its batch with stage 2 (send activation 5 / recv gradient), stage 3 in its "
        "batch with stage 2, stage 0 behind stage 1",
        divergence=div_wait(scn, culprit, "stopped"),
    )


@case
def case_pp1f1b_single_mismatch(world=4, entries=64):
    """Megatron 1F1B on 4 stages with single isend/irecv (no batching, no sync): rank 1 posts
    the recv of activation 5 with another shape."""
    meg = Megatron(1, 1, 4, microbatches=8, batched=False)
    culprit = 1
    wrong = ((1024, 1, 4096),)

    def fault(items):
        k = find(items, lambda t: t[0] == "p2p" and "recv_prev" in t[3], nth=5)  # activations arrive in order
        it, tag = items[k]
        items = list(items)
        items[k] = (p2p(it[1], it[2], it[3], wrong, it[5], it[6]), tag)
        return items

    scn = megatron_case("pp1f1b_single_mismatch", meg, culprit, fault, entries)
    i = index_of(scn.final[culprit], lambda it: it[0] == "P" and it[4] == wrong)
    return Truth(
        scn, "size_mismatch", [culprit], [f"mismatch:{culprit}"],
        "rank 1's recv 1<-0 of activation 5 is [1024, 1, 4096]; rank 0's matching send, and every other "
        "send and recv of the pipeline in this and the earlier iterations, is [2048, 1, 4096]: rank 1 "
        "deviates; both calls are started and never complete",
        divergence=div_p2p(scn, culprit, i, "size", [culprit], [0]),
        call_site=site_of(scn, culprit, i),
    )


def megatron_small(world):
    tp, dp, pp = layout(world)
    return Megatron(tp, dp, pp, microbatches=max(4, pp))


@case
def case_3d_hung(world=8, entries=64):
    """tensor x data x pipeline; one rank's host stops before a tensor-parallel all_reduce in the
    forward of microbatch 2 of the last iteration."""
    meg = megatron_small(world)
    culprit = meg.rank(meg.tp - 1, 0, min(1, meg.pp - 1))
    scn = megatron_case("3d_hung", meg, culprit,
                        stop_before(lambda t: t[0] == "fwd" and t[1] == 2 and t[3] == "attn"), entries)
    return Truth(
        scn, "rank_stuck_in_host_code", [culprit], [f"hung:{culprit}"],
        f"rank {culprit} completed every call it issued and issued nothing after the compute before "
        f"its tensor-parallel all_reduce of microbatch 2: its TP peers wait in that all_reduce, their "
        f"later calls are scheduled behind it, and the pipeline and data-parallel neighbours wait on them",
        divergence=div_wait(scn, culprit, "stopped"),
    )


@case
def case_3d_dead(world=8, entries=64):
    """tensor x data x pipeline; one rank dies at the start of the last iteration (no dump)."""
    meg = megatron_small(world)
    culprit = meg.rank(0, meg.dp - 1, meg.pp - 1)

    def fault(items):
        return [(SYNC, ("sync",)), (DIE, ("die",))]

    scn = megatron_case("3d_dead", meg, culprit, fault, entries)
    div = div_wait(scn, culprit, "missing")
    return Truth(
        scn, "rank_died", [culprit], [f"missing:{culprit}"],
        f"rank {culprit} left no dump; its TP peer waits in the first tensor-parallel all_reduce of "
        f"the iteration and its pipeline neighbour in the p2p with it, with later calls scheduled "
        f"behind; every other rank waits on those",
        divergence=div,
    )


@case
def case_3d_wrong_stage_recv(world=16, entries=64):
    """tensor x data x pipeline (4 stages); a stage-2 rank posts its activation recv from stage 0
    instead of stage 1 in a steady-state batch_isend_irecv."""
    meg = megatron_small(world)
    if meg.pp < 3:
        raise SystemExit(f"{SELF}: 3d_wrong_stage_recv needs 3 pipeline stages or more")
    culprit = meg.rank(meg.tp - 1, 0, 2)
    wrong_peer = meg.rank(meg.tp - 1, 0, 0)

    def fault(items):
        k = find(items, lambda t: t[0] == "p2p" and t[1] == "send_backward_recv_forward" and "recv_prev" in t[3])
        it, tag = items[k]
        ops = tuple((s, wrong_peer if not s else p, z, d, fs) for s, p, z, d, fs in it[2])
        items = list(items)
        items[k] = (("B", it[1], ops, it[3]), tag)
        return items

    scn = megatron_case("3d_wrong_stage_recv", meg, culprit, fault, entries)
    i = index_of(scn.final[culprit], lambda it: it[0] == "B" and any(not o[0] and o[1] == wrong_peer for o in it[2]))
    member = next(j for j, o in enumerate(scn.final[culprit][i][2]) if not o[0])
    g = scn.job.groups[scn.final[culprit][i][1]]
    return Truth(
        scn, "wrong_peer", [culprit], [f"mismatch:{culprit}"],
        f"rank {culprit} (stage 2) posts recv {g.local[culprit]}<-{g.local[wrong_peer]} (from stage 0) in "
        f"its batch; every activation comes from the previous stage (stage 1 sends "
        f"{g.local[culprit] - 1}->{g.local[culprit]}, stage 0 never sends to stage 2): rank {culprit} "
        f"deviates from the pipeline's pattern",
        divergence=div_p2p(scn, culprit, i, "peer", [culprit], [], op=member),
        call_site=site_of(scn, culprit, i, member),
    )


@case
def case_3d_short_bucket(world=8, entries=64):
    """tensor x data x pipeline; one rank's data-parallel reduce_scatter of gradient bucket 1 is
    half the size in the last iteration (2-member DP groups: the group's own history and its
    sibling groups tell which size is right)."""
    meg = megatron_small(world)
    culprit = meg.rank(0, meg.dp - 1, meg.pp - 1)
    half = meg.bucket // 2

    def fault(items):
        k = find(items, lambda t: t == ("dp_rs", 1))
        it, tag = items[k]
        items = list(items)
        items[k] = (coll(it[1], it[2], ((half,),), ((half // meg.dp,),), it[5], it[6]), tag)
        return items

    scn = megatron_case("3d_short_bucket", meg, culprit, fault, entries)
    i = index_of(scn.final[culprit], lambda it: it[0] == "K" and it[3] == ((half,),))
    desc, members = group_of(scn, scn.final[culprit][i][1])
    return Truth(
        scn, "size_mismatch", [culprit], [f"mismatch:{culprit}"],
        f"the data-parallel reduce_scatter of bucket 1 is [{half}] on rank {culprit} and "
        f"[{meg.bucket}] on its DP peer; with {len(members)} members the call itself is a tie, but the "
        f"same call was [{meg.bucket}] on both in every earlier iteration in the buffer and is "
        f"[{meg.bucket}] in every sibling DP group of the same stage: rank {culprit} deviates",
        divergence=div_collective(scn, culprit, i, "size", [culprit], [r for r in members if r != culprit]),
        call_site=site_of(scn, culprit, i),
    )


@case
def case_3d_order_inversion(world=8, entries=64):
    """tensor x data x pipeline; one rank calls the world grad-norm all_reduce (from a logging
    path) before its data-parallel reduce_scatters, the others after."""
    meg = megatron_small(world)
    culprit = meg.rank(meg.tp - 1, 0, meg.pp - 1)

    def fault(items):
        k = find(items, lambda t: t[0] == "dp_rs")
        head = [x for x in items[:k]]
        return head + meg.finalize(culprit, early_norm=True)

    scn = megatron_case("3d_order_inversion", meg, culprit, fault, entries)
    i = index_of(scn.final[culprit], lambda it: it[0] == "K" and it[1] == scn.job.world_gid)
    dp_peers = [r for r in scn.job.groups[meg.dp_g[culprit]].ranks if r != culprit]
    return Truth(
        scn, "order_inversion", [culprit], [f"mismatch:{culprit}"],
        f"rank {culprit} entered the world all_reduce (grad norm, training/utils.py:212) before the "
        f"data-parallel reduce_scatters, which every other rank, and rank {culprit} itself in every "
        f"earlier iteration, calls first: its DP peers {dp_peers} wait for it in reduce_scatter, it "
        f"waits for them in the world all_reduce, everyone else waits there too",
        divergence=div_collective(scn, culprit, i, "order", [culprit], []),
        call_site=site_of(scn, culprit, i),
    )


@case
def case_3d_timeout_skew(world=8, entries=64):
    """tensor x data x pipeline with slow steps (seconds per microbatch) and dumps spread over
    6 s: a host hang whose victims block seconds apart, so some dumps were taken after their
    own timeout (stuck calls retired) and some before."""
    tp, dp, pp = layout(world)
    meg = Megatron(tp, dp, pp, microbatches=max(4, pp), slow=400.0)
    culprit = meg.rank(0, meg.dp - 1, 0)
    scn = megatron_case("3d_timeout_skew", meg, culprit,
                        stop_before(lambda t: t[0] == "bwd" and t[1] == 1 and t[3] == "mlp"), entries,
                        spread=(0.2, 6.0))
    return Truth(
        scn, "rank_stuck_in_host_code", [culprit], [f"hung:{culprit}"],
        f"rank {culprit} stopped issuing before the backward tensor-parallel all_reduce of "
        f"microbatch 1; its victims blocked seconds apart, and the dumps were taken over 6 s after "
        f"the first timeout: the stuck calls of some ranks are retired (their watchdog fired before "
        f"they dumped), of others not yet",
        divergence=div_wait(scn, culprit, "stopped"),
    )


# ---------------------------------------------------------------------------------------------
# Writing a case
# ---------------------------------------------------------------------------------------------


def write_dumps(scn, dst, dump_t, formats, jobs):
    """One file per rank and format; in `jobs` processes for large jobs."""
    ranks = sorted(dump_t)
    for f in formats:
        os.makedirs(os.path.join(dst, f), exist_ok=True)

    def work(part):
        for r in part:
            d = scn.dump(r, dump_t[r])
            if "pickle" in formats:
                b = d.pickle_bytes()
                with open(os.path.join(dst, "pickle", f"comm_lib_trace_rank_{r}"), "wb") as fh:
                    fh.write(b)
            if "json" in formats:
                b = d.json_bytes()
                with open(os.path.join(dst, "json", f"rank_{r}.json"), "wb") as fh:
                    fh.write(b)

    if jobs <= 1 or len(ranks) < 64:
        work(ranks)
        return written(dst, formats)
    parts = [ranks[k::jobs] for k in range(jobs)]
    pids = []
    for part in parts[1:]:
        pid = os.fork()
        if pid == 0:
            try:
                work(part)
            finally:
                os._exit(0)
        pids.append(pid)
    work(parts[0])
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise SystemExit(f"{SELF}: a writer process failed")
    return written(dst, formats)


def written(dst, formats):
    return sum(os.path.getsize(os.path.join(dst, f, x)) for f in formats for x in os.listdir(os.path.join(dst, f)))


def write_case(name, out, formats=("pickle", "json"), jobs=1, world=None, entries=None):
    fn = CASES[name]
    kw = {}
    if world is not None:
        kw["world"] = world
    if entries is not None:
        kw["entries"] = entries
    t0 = time.time()
    truth = fn(**kw)
    t_sim = time.time() - t0
    scn = truth.scn
    dst = os.path.join(out, name)
    if os.path.exists(dst):
        import shutil
        shutil.rmtree(dst)
    os.makedirs(dst)
    t1 = time.time()
    nbytes = write_dumps(scn, dst, scn.dump_t, formats, jobs)
    forms = {}
    for f in formats:
        forms[f] = truth.form(scn.dump_t, f == "json")
    if scn.late_t:
        nbytes += write_dumps(scn, os.path.join(dst, "late"), scn.late_t, formats, jobs)
        half = scn.job.world // 2
        mixed = {r: (scn.dump_t[r] if r < half else scn.late_t[r]) for r in scn.dump_t}
        nbytes += write_dumps(scn, os.path.join(dst, "mixed"), mixed, formats, jobs)
        for f in formats:
            forms["late/" + f] = truth.form(scn.late_t, f == "json")
            forms["mixed/" + f] = truth.form(mixed, f == "json")
    t_write = time.time() - t1
    main_form = forms[formats[0]]
    after = sorted(r for r, t in scn.dump_t.items()
                   if any(it[0] in "KPB" and scn.fs.st[r][i] is not None and scn.fs.en[r][i] is None
                          and scn.fs.st[r][i] + scn.job.groups[it[1]].timeout_ms * MS <= t
                          for i, it in enumerate(scn.final[r])))
    cj = {
        "case": name,
        "source": "model",
        "world_size": scn.job.world,
        "fault": truth.fault,
        "culprit_ranks": truth.culprits,
        "program": " ".join(fn.__doc__.split()),
        "ground_truth": truth.why,
        "root_causes": main_form["root_causes"],
        "blocked": main_form["blocked"],
        "missing": main_form["missing"],
        "divergence": truth.divergence,
        "call_site": truth.call_site,
        "forms": forms,
        "entries": scn.entries,
        "iterations_before_the_last": scn.iterations,
        "timeout_ms": TIMEOUT_MS,
        "first_timeout": {"rank": scn.detector, "t_ns": scn.t_timeout + EPOCH_NS},
        "dumps_after_own_timeout": after,
        "dumped_ranks": sorted(scn.dump_t),
        "ranks_without_dump": main_form["missing"],
        "bytes": nbytes,
    }
    with open(os.path.join(dst, "case.json"), "w") as fh:
        json.dump(cj, fh, indent=1)
        fh.write("\n")
    return cj, round(t_sim, 1), round(t_write, 1)


def check_writers(names):
    import pickle

    for name in names:
        scn = CASES[name]().scn
        for r, t in sorted(scn.dump_t.items()):
            d = scn.dump(r, t)
            fast, ref = d.pickle_bytes(), d.pickle_bytes(reference=True)
            if fast != ref:
                raise SystemExit(f"{name} rank {r}: the fast pickle writer differs from the reference")
            got = pickle.loads(fast)
            want = {"version": VERSION, "pg_config": d.pg_config(), "comm_lib_version": COMM_LIB_VERSION,
                    "pg_status": d.pg_status(False), "entries": [to_plain(d.entry(x, True)) for x in d.records]}
            if got != want:
                raise SystemExit(f"{name} rank {r}: pickle.loads does not give the records back")
            j = json.loads(d.json_bytes())
            for a, b in zip(got["entries"], j.get("entries", [])):
                a = dict(a, process_group=list(a["process_group"]))
                a.pop("frames")
                for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
                    a[k] = a[k] or 0
                if a != b:
                    raise SystemExit(f"{name} rank {r}: the JSON record differs from the pickle's: {a} {b}")
        print(f"{name}: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="*", help="cases to write (default: every committed case)")
    ap.add_argument("--out", default=HERE, help="where the case folders go (default: next to this script)")
    ap.add_argument("--ranks", type=int, help="world size of a 3-D case (tp x dp x pp, Megatron layout)")
    ap.add_argument("--entries", type=int, help="ring buffer size: records kept per process")
    ap.add_argument("--case", default=None, help="with --ranks: which 3-D case (default 3d_hung)")
    ap.add_argument("--formats", default="pickle,json", help="pickle, json or both (default)")
    ap.add_argument("--jobs", type=int, default=1, help="processes writing dumps (large jobs)")
    ap.add_argument("--list", action="store_true", help="print the cases and exit")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; check every case's pickles: fast writer == reference writer, "
                         "pickle.loads == the JSON form")
    args = ap.parse_args()
    if args.check:
        check_writers(args.cases or list(CASES))
        return
    if args.list:
        for name, fn in CASES.items():
            print(f"{name}: {' '.join(fn.__doc__.split())}")
        return
    formats = tuple(f for f in args.formats.split(",") if f)
    for f in formats:
        if f not in ("pickle", "json"):
            raise SystemExit(f"{SELF}: --formats: {f!r} is neither pickle nor json")
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    if args.ranks:
        name = args.case or "3d_hung"
        if not name.startswith("3d_"):
            raise SystemExit(f"{SELF}: --ranks sizes the 3-D cases only (3d_*), not {name}")
        cj, t_sim, t_write = write_case(name, out, formats, args.jobs, world=args.ranks,
                                        entries=args.entries or 2000)
        print(f"{name}: {cj['world_size']} ranks x {cj['entries']} records, {cj['bytes'] / 1e9:.2f} GB in "
              f"{t_sim + t_write:.1f} s (simulation {t_sim:.1f} s, writing {t_write:.1f} s); ground truth "
              f"{cj['root_causes']}")
        return
    names = args.cases or list(CASES)
    for name in names:
        if name not in CASES:
            raise SystemExit(f"{SELF}: no case {name!r} (cases: {', '.join(CASES)})")
        cj, _, _ = write_case(name, out, formats, args.jobs, entries=args.entries)
        print(f"{name}: {cj['world_size']} ranks, {cj['root_causes']}, blocked {cj['blocked']}, "
              f"missing {cj['missing']}", flush=True)
    write_index(out)


def write_index(out):
    """cases.json: every case folder under `out`, its fault, culprit and expected answer per form."""
    cases = []
    order = list(CASES)
    names = sorted((d for d in os.listdir(out) if os.path.exists(os.path.join(out, d, "case.json"))),
                   key=lambda d: (order.index(d) if d in order else len(order), d))
    for name in names:
        with open(os.path.join(out, name, "case.json")) as fh:
            cj = json.load(fh)
        cases.append({k: cj[k] for k in ("case", "world_size", "fault", "culprit_ranks", "root_causes", "forms")})
    with open(os.path.join(out, "cases.json"), "w") as fh:
        json.dump({"corpus": "nccl", "generator": SELF, "cases": cases}, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()

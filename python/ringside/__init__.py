"""The `ringside` backend of torch.distributed: every collective and point-to-point call of the
program goes to `ringside torchrun`, which runs it with ringside's protocol code on a simulated
cluster, in virtual time, and hands back the result (docs/torchrun.md).

torch finds the backend through the `torch.distributed.backends` entry point of this package:
`init_process_group(backend="ringside")` is all a program needs. `register()` registers it by
hand (for a program run from a checkout without installing the package).
"""

import ctypes
import os
import sys
import threading
from datetime import timedelta

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _CBackend

from ._conn import Connection, text

__all__ = ["register", "RingsideBackend"]

# ringside's vocabulary: OpKind::ALL order, ReduceOp, Dtype
OPS = {
    "allreduce": 0,
    "broadcast": 1,
    "reduce": 2,
    "allgather": 3,
    "reduce_scatter": 4,
    "barrier": 5,
    "all_to_all": 6,
    "gather": 7,
    "scatter": 8,
    "send": 9,
    "recv": 10,
}
F32, F64, I64 = 0, 1, 2
_WIRE = {F32: torch.float32, F64: torch.float64, I64: torch.int64}
# torch's default process-group timeout: a group built with it takes the scenario's instead
_DEFAULT_TIMEOUT = timedelta(minutes=30)

_conn = None
_conn_lock = threading.Lock()


def _connection():
    global _conn
    with _conn_lock:
        if _conn is None:
            _conn = Connection()
            import atexit

            atexit.register(_conn.exit, 0)
        return _conn


_WIRE_OF = {}


def _wire_dtype(dtype):
    """How a tensor of `dtype` travels: float32, float64 or int64 (docs/torchrun.md, "Data")."""
    wire = _WIRE_OF.get(dtype)
    if wire is None:
        if dtype == torch.float64:
            wire = F64
        elif dtype.is_floating_point:
            wire = F32
        elif dtype.is_complex:
            raise TypeError(f"the ringside backend does not carry {dtype} tensors")
        else:
            wire = I64
        _WIRE_OF[dtype] = wire
    return wire


def _reduce_code(op):
    R = dist.ReduceOp
    if op == R.SUM or op == R.AVG:
        return 0
    if op == R.PRODUCT:
        return 1
    if op == R.MIN:
        return 2
    if op == R.MAX:
        return 3
    raise ValueError(f"the ringside backend does not support reduce op {op}")


_SKIP = (
    os.path.dirname(os.path.abspath(torch.__file__)),
    os.path.dirname(os.path.abspath(__file__)),
)


# whether a code object is torch's or this package's (skipped), and the sites met so far, by
# (code, line), encoded for the wire: a call pays a few dictionary look-ups, not a formatting
_SKIPPED = {}
_SITES = {}
_NO_SITE = text("")


def _call_site():
    """`file:line (function)` of the innermost frame outside torch and this package, encoded."""
    f = sys._getframe(2)
    while f is not None:
        code = f.f_code
        skip = _SKIPPED.get(code)
        if skip is None:
            if len(_SKIPPED) > 4096:  # code made on the fly: keep the caches bounded
                _SKIPPED.clear()
                _SITES.clear()
            name = code.co_filename
            skip = _SKIPPED[code] = name.startswith(_SKIP) or name.startswith("<")
        if not skip:
            key = (code, f.f_lineno)
            site = _SITES.get(key)
            if site is None:
                site = _SITES[key] = text(f"{code.co_filename}:{key[1]} ({code.co_name})")
            return site
        f = f.f_back
    return _NO_SITE


def _bytes(tensors, wire):
    """The tensors' elements as `wire` values, little endian, one after the other."""
    dt = _WIRE[wire]
    if len(tensors) == 1:
        t = tensors[0]
        if t.dtype == dt and t.is_contiguous():
            return ctypes.string_at(t.data_ptr(), t.nbytes)
    parts = []
    for t in tensors:
        t = t.detach()
        if t.dtype != dt:
            t = t.to(dt)
        if not t.is_contiguous():
            t = t.contiguous()
        parts.append(ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()))
    return parts[0] if len(parts) == 1 else b"".join(parts)


class _Work(dist.Work):
    """A call in progress: `wait()` blocks until ringside ends it, then writes the outputs
    (straight into the output's memory when the finish allows it, see `_Fill`)."""

    def __init__(self, conn, work, outputs, finish):
        super().__init__()
        self._conn = conn
        self._work = work
        self._outputs = outputs
        self._finish = finish
        self._into = finish.into if finish is not None else None
        self._done = False
        self._error = None

    def wait(self, timeout=None):
        if not self._done:
            self._done = True
            try:
                got = self._conn.wait(self._work, self._into)
            except Exception as e:
                self._error = e
                raise
            if got is not True and self._finish is not None:
                with torch.no_grad():
                    self._finish(got)
        elif self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        return self._done

    def is_success(self):
        return self._done and self._error is None

    def exception(self):
        return self._error

    def get_future(self):
        self.wait()
        fut = torch.futures.Future()
        fut.set_result(self._outputs)
        return fut

    def result(self):
        return self._outputs


def _tensor_of(got, like_dtype, numel):
    if got is None:
        return None
    wire, data = got
    t = torch.frombuffer(bytearray(data), dtype=_WIRE[wire]) if data else torch.empty(0, dtype=_WIRE[wire])
    if t.numel() != numel:
        raise RuntimeError(f"ringside returned {t.numel()} elements, {numel} expected")
    return t if t.dtype == like_dtype else t.to(like_dtype)


class _Fill:
    """A call's finish: copies the result into `outs`, in order (dividing for AVG).

    `into` is (wire dtype, address, size) of the one output when the result can be read
    straight into its memory instead: contiguous, of a dtype that travels as it is, no AVG.
    """

    __slots__ = ("outs", "avg_over", "into")

    def __init__(self, outs, avg_over=None):
        self.outs = outs
        self.avg_over = avg_over
        self.into = None
        if len(outs) == 1 and not avg_over:
            o = outs[0]
            wire = _wire_dtype(o.dtype)
            if _WIRE[wire] == o.dtype and o.is_contiguous():
                self.into = (wire, o.data_ptr(), o.nbytes)

    def __call__(self, got):
        outs = self.outs
        total = sum(o.numel() for o in outs)
        t = _tensor_of(got, outs[0].dtype, total)
        if t is None:
            return
        if self.avg_over:
            t = t / self.avg_over
        if len(outs) == 1:
            outs[0].copy_(t.view(outs[0].shape))
            return
        at = 0
        for o in outs:
            n = o.numel()
            o.copy_(t[at : at + n].reshape(o.shape))
            at += n


class RingsideBackend(_CBackend):
    """One process group of the program, on the simulated cluster."""

    def __init__(self, rank, size, name, ranks, timeout):
        super().__init__(rank, size)
        self._rank = rank
        self._size = size
        self._name = name
        self._group = text(name)
        self._conn = _connection()
        ms = 0 if timeout is None or timeout == _DEFAULT_TIMEOUT else int(timeout.total_seconds() * 1000)
        self._conn.group(name, list(ranks), ms)

    def getBackendName(self):
        return "ringside"

    def rank(self):
        return self._rank

    def size(self):
        return self._size

    @property
    def supports_coalescing(self):
        # torch reads this as an attribute (`getattr(backend, "supports_coalescing", False)`):
        # batch_isend_irecv then issues its calls one by one
        return False

    # -- helpers

    def _call(self, op, tensors, outputs, finish, reduce=0, root=0, elements=None, nbytes=None):
        wire = _wire_dtype(tensors[0].dtype) if tensors else F32
        data = _bytes(tensors, wire) if tensors else b""
        if elements is None:
            elements = tensors[0].numel() if len(tensors) == 1 else sum(t.numel() for t in tensors)
        if nbytes is None:
            nbytes = tensors[0].nbytes if len(tensors) == 1 else sum(t.nbytes for t in tensors)
        work = self._conn.call(self._group, OPS[op], reduce, root, wire, elements, nbytes, _call_site(), data)
        return _Work(self._conn, work, outputs, finish)

    @staticmethod
    def _fill(outs, avg_over=None):
        return _Fill(outs, avg_over)

    # -- collectives

    def allreduce(self, tensors, opts):
        avg = self._size if opts.reduceOp == dist.ReduceOp.AVG else None
        return self._call("allreduce", tensors, tensors, self._fill(tensors, avg), reduce=_reduce_code(opts.reduceOp))

    def allreduce_coalesced(self, tensors, opts):
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors, opts):
        return self._call("broadcast", tensors, tensors, self._fill(tensors), root=opts.rootRank)

    def reduce(self, tensors, opts):
        avg = self._size if opts.reduceOp == dist.ReduceOp.AVG else None
        fill = self._fill(tensors, avg) if self._rank == opts.rootRank else None
        return self._call("reduce", tensors, tensors, fill, reduce=_reduce_code(opts.reduceOp), root=opts.rootRank)

    def allgather(self, output_tensors, input_tensors, opts=None):
        outs = output_tensors[0]
        return self._call("allgather", input_tensors, output_tensors, self._fill(outs))

    def _allgather_base(self, output, input, opts=None):
        return self._call("allgather", [input], [output], self._fill([output]))

    all_gather_single = _allgather_base

    def reduce_scatter(self, output_tensors, input_tensors, opts):
        outs = output_tensors
        ins = input_tensors[0]
        avg = self._size if opts.reduceOp == dist.ReduceOp.AVG else None
        return self._call("reduce_scatter", ins, outs, self._fill(outs, avg), reduce=_reduce_code(opts.reduceOp))

    def _reduce_scatter_base(self, output, input, opts):
        avg = self._size if opts.reduceOp == dist.ReduceOp.AVG else None
        return self._call("reduce_scatter", [input], [output], self._fill([output], avg), reduce=_reduce_code(opts.reduceOp))

    reduce_scatter_single = _reduce_scatter_base

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        p = self._size
        if (output_split_sizes and len(set(output_split_sizes)) > 1) or (
            input_split_sizes and len(set(input_split_sizes)) > 1
        ):
            raise ValueError("the ringside backend runs all_to_all_single with even splits only")
        return self._call("all_to_all", [input], [output], self._fill([output]), elements=input.numel() // p)

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        return self.alltoall_base(output, input, output_split_sizes, input_split_sizes, opts)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        return self._call(
            "all_to_all", input_tensors, output_tensors, self._fill(output_tensors),
            elements=input_tensors[0].numel(),
        )

    def barrier(self, opts=None):
        return self._call("barrier", [], [], None, elements=0, nbytes=0)

    def gather(self, output_tensors, input_tensors, opts):
        root = opts.rootRank
        outs = output_tensors[0] if self._rank == root else []
        fill = self._fill(outs) if outs else None
        return self._call("gather", input_tensors, outs, fill, root=root)

    def scatter(self, output_tensors, input_tensors, opts):
        root = opts.rootRank
        out = output_tensors[0]
        ins = input_tensors[0] if self._rank == root else []
        wire = _wire_dtype(out.dtype)
        data = _bytes(ins, wire) if ins else b""
        n = out.numel()
        work = self._conn.call(
            self._group, OPS["scatter"], 0, root, wire, n, n * out.element_size() * self._size, _call_site(), data
        )
        return _Work(self._conn, work, output_tensors, self._fill([out]))

    # -- point to point

    def send(self, tensors, dst, tag=0):
        return self._call("send", tensors, tensors, None, root=dst)

    def recv(self, tensors, src, tag=0):
        t = tensors[0]
        wire = _wire_dtype(t.dtype)
        work = self._conn.call(
            self._group, OPS["recv"], 0, src, wire, t.numel(), t.nbytes, _call_site(), b""
        )
        return _Work(self._conn, work, tensors, self._fill(tensors))


def _create(opts, backend_options=None):
    timeout = getattr(opts, "timeout", None)
    return RingsideBackend(
        opts.group_rank,
        opts.group_size,
        str(opts.group_id),
        list(opts.global_ranks_in_group) or list(range(opts.group_size)),
        timeout,
    )


def register():
    """Registers the backend under the name `ringside` (for CPU tensors)."""
    if "RINGSIDE" in dist.Backend._plugins:
        return
    dist.Backend.register_backend("ringside", _create, extended_api=True, devices=["cpu"])

"""The connection of one process to `ringside torchrun`: the key handshake, then frames.

The handshake is the one of `ringside launch` (sim/src/driver/tcp/auth.rs): nonces from both
sides, the claim (channel, job, rank, incarnation) with HMAC-SHA256 under the job's key, and the
server's own code back, checked in constant time. The key is read once from the file that
`RINGSIDE_TORCH_KEY_FILE` names (a directory only the user can enter); it is on no command line
and in no environment. Frames: `length:u32` (big endian) then a body whose first byte is its
type (docs/torchrun.md, "The socket protocol").
"""

import ctypes
import hashlib
import hmac
import os
import secrets
import socket
import struct
import threading

CONTROL = 2
GROUP, CALL, WAIT, EXIT = 1, 2, 3, 4
DONE, FAILED = 1, 2
NO_RESULT = 0xFF

_U32 = struct.Struct(">I")
# length, type, work: the start of every request but a group's
_FRAME = struct.Struct(">IBI")
# a call after its group: op, reduce, root, dtype, elements, bytes
_CALL = struct.Struct(">BBIBIQ")
_U64 = struct.Struct(">Q")
# a reply: type, work, then (done) dtype and data length
_REPLY = struct.Struct(">BI")
_DATA = struct.Struct(">BQ")


class ProtocolError(RuntimeError):
    """`ringside torchrun` and this process do not understand each other."""


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ProtocolError("ringside torchrun closed the connection")
        buf += chunk
    return bytes(buf)


def text(s):
    """`s` as the wire carries a text: its UTF-8 length (u16) then its bytes."""
    b = s.encode("utf-8")[:65535]
    return struct.pack(">H", len(b)) + b


class Connection:
    """One process's connection: calls go out at once, a wait blocks for its reply."""

    def __init__(self):
        path = os.environ.get("RINGSIDE_TORCH_SOCKET")
        key_file = os.environ.get("RINGSIDE_TORCH_KEY_FILE")
        if not path or not key_file:
            raise RuntimeError(
                "the ringside backend runs under `ringside torchrun` "
                "(RINGSIDE_TORCH_SOCKET and RINGSIDE_TORCH_KEY_FILE are not set)"
            )
        with open(key_file, "r", encoding="ascii") as f:
            key = bytes.fromhex(f.read().strip())
        job = int(os.environ.get("RINGSIDE_TORCH_JOB", "0"), 16)
        self.rank = int(os.environ["RANK"])
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(path)
        self._prove(key, job)
        # replies are read through a buffer: a frame's length and body in one system call
        self._replies = self._sock.makefile("rb", buffering=1 << 16)
        self._lock = threading.Lock()
        # frames not sent yet: a call gets no reply, so its frame waits for the next frame that
        # blocks (a wait) or ends (the exit), and goes out with it in one write
        self._out = []
        self.works = 0

    def _prove(self, key, job):
        mine = secrets.token_bytes(32)
        self._sock.sendall(mine)
        theirs = _recv_exact(self._sock, 32)
        nonces = mine + theirs
        claim = struct.pack(">BQII", CONTROL, job, self.rank, 0)
        code = hmac.new(key, b"ringside/1 client" + nonces + claim, hashlib.sha256).digest()
        self._sock.sendall(claim + code)
        answer = _recv_exact(self._sock, 32)
        expected = hmac.new(key, b"ringside/1 server" + nonces + claim, hashlib.sha256).digest()
        if not hmac.compare_digest(answer, expected):
            raise ProtocolError("the ringside socket does not know this job's key")

    def _send(self, body):
        """Sends every frame held back, then `body`."""
        self._out.append(_U32.pack(len(body)))
        self._out.append(body)
        self._flush()

    def _flush(self):
        out, self._out = self._out, []
        self._sock.sendall(b"".join(out))

    def _read(self, n):
        data = self._replies.read(n)
        if len(data) != n:
            raise ProtocolError("ringside torchrun closed the connection")
        return data

    def _read_into(self, address, n):
        """Reads `n` bytes into the memory at `address`."""
        if n == 0:
            return
        view = memoryview((ctypes.c_char * n).from_address(address)).cast("B")
        at = 0
        while at < n:
            got = self._replies.readinto(view[at:])
            if not got:
                raise ProtocolError("ringside torchrun closed the connection")
            at += got

    def group(self, name, ranks, timeout_ms):
        body = bytes([GROUP]) + text(name) + struct.pack(">I", len(ranks))
        body += b"".join(struct.pack(">I", r) for r in ranks)
        body += struct.pack(">Q", timeout_ms)
        with self._lock:
            self._send(body)

    def call(self, group, op, reduce, root, dtype, elements, nbytes, site, data):
        """Issues a call; returns its work number. `group` and `site` come encoded by `text`."""
        with self._lock:
            self.works += 1
            work = self.works
            n = 5 + len(group) + _CALL.size + len(site) + 8 + len(data)
            self._out += (
                _FRAME.pack(n, CALL, work),
                group,
                _CALL.pack(op, reduce, root, dtype, elements, nbytes),
                site,
                _U64.pack(len(data)),
                data,
            )
        return work

    def wait(self, work, into=None):
        """Blocks until `work` ends: (dtype, data) of its result, or None; raises if it failed.

        `into` is (dtype, address, size) of memory the result may go to as it is: a result of
        that dtype and size is read straight into it, and True is returned.
        """
        with self._lock:
            self._out.append(_FRAME.pack(5, WAIT, work))
            self._flush()
            (n,) = _U32.unpack(self._read(4))
            if n < 6:
                raise ProtocolError(f"a reply of {n} bytes")
            head = self._read(min(n, 14))
            kind, got = _REPLY.unpack_from(head)
            if got != work:
                raise ProtocolError(f"waited for call {work}, got the end of call {got}")
            if kind == DONE:
                if head[5] == NO_RESULT:
                    if n != 6:
                        raise ProtocolError("a reply without a result that carries one")
                    return None
                if n < 14:
                    raise ProtocolError("a truncated reply")
                dtype, size = _DATA.unpack_from(head, 5)
                if size != n - 14:
                    raise ProtocolError(f"a reply of {n} bytes says {size} bytes of data")
                if into is not None and into[0] == dtype and into[2] == size:
                    self._read_into(into[1], size)
                    return True
                return dtype, self._read(size)
            body = head + self._read(n - len(head))
        if kind == FAILED:
            (m,) = struct.unpack(">H", body[5:7])
            raise _timeout_error(body[7 : 7 + m].decode("utf-8", "replace"))
        raise ProtocolError(f"unknown reply {kind}")

    def exit(self, status):
        try:
            with self._lock:
                self._send(struct.pack(">BI", EXIT, status & 0xFFFFFFFF))
        except OSError:
            pass


def _timeout_error(message):
    """The error torch raises on a watchdog timeout."""
    try:
        from torch.distributed import DistBackendError

        return DistBackendError(message)
    except ImportError:  # pragma: no cover - older torch
        return RuntimeError(message)

"""The connection of one process to `ringside torchrun`: the key handshake, then frames.

The handshake is the one of `ringside launch` (sim/src/driver/tcp/auth.rs): nonces from both
sides, the claim (channel, job, rank, incarnation) with HMAC-SHA256 under the job's key, and the
server's own code back, checked in constant time. The key is read once from the file that
`RINGSIDE_TORCH_KEY_FILE` names (a directory only the user can enter); it is on no command line
and in no environment. Frames: `length:u32` (big endian) then a body whose first byte is its
type (docs/torchrun.md, "The socket protocol").
"""

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


def _text(s):
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
        self._out.append(struct.pack(">I", len(body)))
        self._out.append(body)
        out, self._out = self._out, []
        self._sock.sendall(b"".join(out))

    def _hold(self, body):
        """Holds `body` back until the next frame sent (see `_out`)."""
        self._out.append(struct.pack(">I", len(body)))
        self._out.append(body)

    def _read(self, n):
        data = self._replies.read(n)
        if len(data) != n:
            raise ProtocolError("ringside torchrun closed the connection")
        return data

    def group(self, name, ranks, timeout_ms):
        body = bytes([GROUP]) + _text(name) + struct.pack(">I", len(ranks))
        body += b"".join(struct.pack(">I", r) for r in ranks)
        body += struct.pack(">Q", timeout_ms)
        with self._lock:
            self._send(body)

    def call(self, group, op, reduce, root, dtype, elements, nbytes, site, data):
        """Issues a call; returns its work number."""
        with self._lock:
            self.works += 1
            work = self.works
            head = struct.pack(">BI", CALL, work) + _text(group)
            head += struct.pack(">BBIBIQ", op, reduce, root, dtype, elements, nbytes)
            head += _text(site) + struct.pack(">Q", len(data))
            self._hold(head + data)
        return work

    def wait(self, work):
        """Blocks until `work` ends: (dtype, data) of its result, or None; raises if it failed."""
        with self._lock:
            self._send(struct.pack(">BI", WAIT, work))
            (n,) = struct.unpack(">I", self._read(4))
            body = self._read(n)
        kind, got = struct.unpack(">BI", body[:5])
        if got != work:
            raise ProtocolError(f"waited for call {work}, got the end of call {got}")
        if kind == FAILED:
            (m,) = struct.unpack(">H", body[5:7])
            raise _timeout_error(body[7 : 7 + m].decode("utf-8", "replace"))
        if kind != DONE:
            raise ProtocolError(f"unknown reply {kind}")
        dtype = body[5]
        if dtype == NO_RESULT:
            return None
        (size,) = struct.unpack(">Q", body[6:14])
        return dtype, body[14 : 14 + size]

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

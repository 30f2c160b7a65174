"""The fork server of `ringside check --torch`: it imports torch once, then forks a process of
the program for every rank of every case, so that a case does not pay `import torch` once per
process.

`ringside` starts it as `PYTHON -m ringside._forkserver` (PYTHON: the program's interpreter)
and writes requests on its standard input, one JSON object a line:

    {"argv": ["train.py", "--steps", "3"], "env": {...}, "cwd": "/path", "silent": true}

(`argv` as after `python`: a script and its arguments, or `-m`, a module and its arguments).
It says `{"ready": VERSION}` once torch is imported, answers each request on its standard output with `{"pid": N}` (or `{"error": "..."}`), and
reports every child's end as soon as it has reaped it: `{"exit": N, "code": C}` or
`{"exit": N, "signal": S}`. When its standard input closes it kills what it forked and ends.
"""
import json
import os
import select
import signal
import sys


def _run_child(req):
    """In the forked child: become the program and run it; never returns."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.chdir(req.get("cwd") or ".")
        os.environ.clear()
        os.environ.update(req["env"])
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        if req.get("silent"):
            os.dup2(null, 1)
            os.dup2(null, 2)
        argv = list(req["argv"])
        import runpy

        if argv[0] == "-m":
            sys.argv = argv[1:]
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = argv
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
        code = 0
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            import atexit

            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xFF)


def main():
    import torch  # noqa: F401  (the cost paid once)
    import torch.distributed  # noqa: F401

    try:
        import ringside  # noqa: F401  (the backend)
    except ImportError:
        pass
    # the answers go on a copy of standard output; the server's own standard output, which
    # children that are not silent inherit, becomes its standard error
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    children = set()

    def say(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    say({"ready": torch.__version__})

    def reap():
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children.clear()
                return
            if pid == 0:
                return
            children.discard(pid)
            if os.WIFSIGNALED(status):
                say({"exit": pid, "signal": os.WTERMSIG(status)})
            else:
                say({"exit": pid, "code": os.WEXITSTATUS(status)})

    stdin = sys.stdin.buffer
    buf = b""
    while True:
        ready, _, _ = select.select([stdin], [], [], 0.01)
        reap()
        if not ready:
            continue
        chunk = os.read(stdin.fileno(), 1 << 16)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            try:
                req = json.loads(line)
                argv = req["argv"]
                if not argv or not isinstance(req.get("env"), dict):
                    raise ValueError("a request needs argv and env")
            except Exception as e:  # a request ringside never sends
                say({"error": f"bad request: {e}"})
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                out.close()
                _run_child(req)
            children.add(pid)
            say({"pid": pid})
    for pid in list(children):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    while children:
        try:
            pid, _ = os.waitpid(-1, 0)
            children.discard(pid)
        except ChildProcessError:
            break


if __name__ == "__main__":
    main()

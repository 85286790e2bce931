"""`python -m council.cli …` for the tests, without an interpreter's start-up each time.

A test session runs the CLI hundreds of times; each run used to start a Python
interpreter and import SQLAlchemy, psycopg, pydantic and typer again, about half
a second of CPU before the command's first line. The zygote is one process that
has imported those libraries (and nothing of Council: Council's modules read
their environment when imported) and forks once per command. The child is a
process of its own: it takes the command's environment, working directory,
stdin and output files, then runs ``council.cli`` as ``python -m council.cli``
would (``runpy``, ``__main__``, atexit handlers, the exit code of SystemExit or
1 with a traceback). ``COUNCIL_TEST_CLI_FORK=0`` runs every command in a fresh
interpreter instead; the README quick start and every test that starts a
server or a worker always do.

Protocol, on the zygote's stdin and stdout, one JSON document a line:
request ``{"args", "env", "cwd", "stdin", "stdout", "stderr"}`` (paths) →
``{"pid"}``, then ``{"code"}`` when the child has exited (``-N``: signal N).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

PRELOAD = ("sqlalchemy", "sqlalchemy.dialects.postgresql", "psycopg", "pydantic", "typer", "rich.console")


class Zygote:
    """The test side: start the zygote once, then ``run()`` a command at a time."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.cli_zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._lock = threading.Lock()
        self._files = Path(tempfile.mkdtemp(prefix="council-cli-"))  # the command's stdin and output

    def _send(self, message: dict[str, Any]) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(message) + "\n")
        self._proc.stdin.flush()

    def _receive(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the CLI zygote exited ({self._proc.poll()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def run(
        self, args: list[str], env: dict[str, str], cwd: Path, input: str | None, timeout: float
    ) -> tuple[int, str, str]:
        """Run one command; (exit code, stdout, stderr). Raises TimeoutExpired as subprocess.run does."""
        stdin, out, err = (self._files / name for name in ("stdin", "stdout", "stderr"))
        stdin.write_text(input or "")
        timed_out = threading.Event()
        with self._lock:
            self._send(
                {"args": args, "env": env, "cwd": str(cwd), "stdin": str(stdin), "stdout": str(out),
                 "stderr": str(err)}
            )  # fmt: skip
            pid = int(self._receive()["pid"])

            def expire() -> None:
                timed_out.set()
                _kill(pid)

            timer = threading.Timer(timeout, expire)
            timer.start()
            try:
                code = int(self._receive()["code"])
            finally:
                timer.cancel()
            stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
        if timed_out.is_set():
            raise subprocess.TimeoutExpired(["council", *args], timeout, stdout, stderr)
        return code, stdout, stderr

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        shutil.rmtree(self._files, ignore_errors=True)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------- the zygote


def _child(request: dict[str, Any], protocol: tuple[IO[str], IO[str]]) -> int:
    """In the forked child: become `python -m council.cli <args>` and return its exit code."""
    import atexit
    import runpy

    for stream in protocol:
        os.close(stream.fileno())
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path, flags in (
        (0, request["stdin"], os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    sys.path[0] = request["cwd"]  # as `python -m` puts the working directory first
    sys.argv = ["-m", *request["args"]]  # runpy sets argv[0] to the module's file
    code = 0
    try:
        runpy.run_module("council.cli", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120
    return code


def serve() -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    protocol_in = os.fdopen(os.dup(0), "r")
    protocol_out = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)  # the children's fds 0 and 1 are never the protocol's
    os.close(devnull)
    for line in protocol_in:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            os._exit(_child(request, (protocol_in, protocol_out)))
        protocol_out.write(json.dumps({"pid": pid}) + "\n")
        protocol_out.flush()
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        protocol_out.write(json.dumps({"code": code}) + "\n")
        protocol_out.flush()


if __name__ == "__main__":
    serve()

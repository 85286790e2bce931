"""The guard an agent CLI runs under (run as a script: ``python -I guard.py -- CMD …``).

It is started as the leader of a new session and process group, runs CMD in
that group with stdin from /dev/null (and the file descriptors ``--pass-fd``
names), and kills the whole group the moment its lifeline — its own stdin, a
pipe whose only writer is the process that started it — reaches end of file:
the parent ended, however it ended, even by SIGKILL. SIGTERM and SIGHUP kill
the group too. Its exit status is CMD's (128 + n for a signal). Standard
library only, so it starts in milliseconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading


def _kill_group(*_: object) -> None:
    os.killpg(os.getpgid(0), signal.SIGKILL)  # this guard included


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("usage: guard.py [--pass-fd FD]... -- COMMAND [ARG ...]", file=sys.stderr)
        return 2
    command = argv[argv.index("--") + 1 :]
    options = argv[: argv.index("--")]
    passed = [int(fd) for flag, fd in zip(options[::2], options[1::2], strict=True) if flag == "--pass-fd"]
    signal.signal(signal.SIGTERM, _kill_group)
    signal.signal(signal.SIGHUP, _kill_group)

    def lifeline() -> None:
        while os.read(0, 1024):
            pass
        _kill_group()

    try:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, pass_fds=passed)
    except OSError as exc:
        print(f"guard: cannot start {command[0]}: {exc}", file=sys.stderr)
        return 127
    for fd in passed:  # the command holds it now
        os.close(fd)
    threading.Thread(target=lifeline, daemon=True).start()
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stderr.flush()
    os._exit(status)  # no interpreter shutdown while the lifeline thread reads

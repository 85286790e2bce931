"""Files Council reads and writes: what a user names is read only if it is a regular
file, within a size cap; the embedded stack's files are its user's alone
(docs/architecture.md §11).

Reading. Every file a command takes (evidence, a rule set, a report, a debate
record, prose to lint) is read through ``read_regular``: opened once,
non-blocking (a FIFO cannot hang the command), checked to be a regular file on
the descriptor it is read from (no check-then-open race), and read up to its
cap plus one byte (``/dev/zero`` or a ``/proc`` file, whose size says nothing,
cannot grow past it). Anything else is ``BadInput``: one line, exit 2.

Writing.
The state file holds the broker's password; logs, the Redis snapshot and the
ledger's data hold what the ledger holds. So the home directory and everything
the stack writes under it are private: directories 0700, files 0600, and the
processes the stack starts run with umask 077.

One exception, forced by pgserver: run as root, it starts Postgres as the
system user ``pgserver`` and opens read and traverse permissions on every
ancestor of the data directory (the home among them) so that user can reach
it. Traversing is all it needs, so the home is set back to 0711 afterwards:
others may pass through it to ``pgdata`` (which Postgres keeps 0700, owned by
``pgserver``) but can list and read nothing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from council.errors import BadInput

PRIVATE_UMASK = 0o077
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
TRAVERSE_ONLY = 0o711


def home_mode() -> int:
    """0700, or 0711 as root (pgserver's Postgres, another user, must pass through)."""
    return TRAVERSE_ONLY if os.geteuid() == 0 else PRIVATE_DIR


def private_dir(path: Path, mode: int = PRIVATE_DIR) -> Path:
    """Create ``path`` (and parents) if missing, and give it ``mode`` whatever it had."""
    path.mkdir(mode=mode, parents=True, exist_ok=True)
    path.chmod(mode)
    return path


def private_tree(path: Path) -> None:
    """Tighten a directory the stack wrote and what it holds (an older release's files)."""
    if not path.is_dir():
        return
    path.chmod(PRIVATE_DIR)
    for entry in path.rglob("*"):
        if entry.is_symlink():
            continue
        entry.chmod(PRIVATE_DIR if entry.is_dir() else PRIVATE_FILE)


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` atomically with ``text``, the new file 0600 from its first byte."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    tmp.replace(path)


def read_regular(path: str | Path, what: str, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (the ``what`` a command was given), at most
    ``limit`` of them; a directory, FIFO, device or socket, a missing or unreadable file,
    or a larger one is refused with a one-line reason, and so is every error of the read
    itself (a kernel file such as ``/proc/kmsg`` that has nothing to give: "try again")."""
    shown = str(path)
    try:
        fd = os.open(Path(path).expanduser(), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise BadInput(f"cannot read the {what} {shown}: no such file") from None
    except OSError as exc:
        raise BadInput(f"cannot read the {what} {shown}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise BadInput(f"cannot read the {what} {shown}: {kind}")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # a kernel file (/proc/kmsg) may answer "try again": an error here
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except BlockingIOError:
        raise BadInput(f"cannot read the {what} {shown}: nothing to read now (no ordinary file)") from None
    except OSError as exc:
        raise BadInput(f"cannot read the {what} {shown}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise BadInput(f"cannot read the {what} {shown}: larger than {limit} bytes")
    return b"".join(chunks)

"""An attempt's fresh working directory (docs/architecture.md §7, CLI runtimes).

    <root>/council-run-XXXX/
        work/                  the CLI's working directory (read-only)
            evidence/index.json   id, title, sha256 and file of each item
            evidence/<sha256>.txt the content, named by its hash
        home/                  HOME, and the CLI's own config home inside it
        out/                   what the CLI writes: its event stream, stderr, last message

Everything under ``work/`` is made read-only; the sandbox (Council's Landlock
sandbox, ``sandbox.py``, which lets the CLI write only ``home/`` and ``out/``;
Codex's read-only sandbox when that is off; Claude Code's read tools only) is
what actually stops writes. The
whole directory is removed when the attempt ends. A logged-in CLI (a profile
with no key variable) gets a copy of its login file in the fresh home, and
nothing else of the user's configuration.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from council.domain.canonical import sha256_text
from council.domain.secrets import is_secret_name
from council.settings import settings

ROOT_ENV = "COUNCIL_AGENT_WORK_DIR"
INDEX = "evidence/index.json"


class EvidenceMismatch(ValueError):
    """The ledger's content for an evidence item does not hash to its address."""


@dataclass(frozen=True)
class EvidenceFile:
    evidence_id: str
    title: str
    sha256: str  # of the content as written
    file: str  # relative to the working directory

    @classmethod
    def named(cls, evidence_id: str, title: str, sha256: str) -> EvidenceFile:
        return cls(evidence_id, title, sha256, f"evidence/{sha256}.txt")


@dataclass(frozen=True)
class Attempt:
    root: Path
    work: Path
    home: Path
    out: Path


@contextmanager
def attempt_dir(files: Sequence[EvidenceFile], contents: Mapping[str, str]) -> Iterator[Attempt]:
    """A fresh attempt directory holding ``files`` (``contents`` by evidence id); removed afterwards."""
    base = settings().agent_work_dir
    if base:
        Path(base).mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="council-run-", dir=base))
    attempt = Attempt(root, root / "work", root / "home", root / "out")
    try:
        for path in (attempt.work / "evidence", attempt.home, attempt.out):
            path.mkdir(parents=True)
        index = []
        for item in files:
            text = contents.get(item.evidence_id, "")
            if sha256_text(text) != item.sha256:
                # The ledger's content is addressed by its hash; a mismatch is a defect, never a guess.
                raise EvidenceMismatch(f"evidence {item.evidence_id}: content does not match {item.sha256}")
            (attempt.work / item.file).write_text(text, encoding="utf-8")
            index.append(
                {"id": item.evidence_id, "title": item.title, "sha256": item.sha256, "file": item.file}
            )
        (attempt.work / INDEX).write_text(json.dumps(index, indent=1, ensure_ascii=False), encoding="utf-8")
        _read_only(attempt.work)
        yield attempt
    finally:
        _writable(root)
        shutil.rmtree(root, ignore_errors=True)


LOGIN_FILES = (".codex/auth.json", ".claude/.credentials.json")  # where copy_login puts them, under HOME


def login_tokens(home: Path) -> set[str]:
    """The tokens of the login files copied into an attempt's home (and whatever the CLI
    refreshed them to): every string under a secret-named key (``access_token``,
    ``refreshToken``, ``OPENAI_API_KEY``), so its output is redacted of them."""
    found: set[str] = set()
    for name in LOGIN_FILES:
        try:
            document = json.loads((home / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        found |= _secret_strings(document, secret=False)
    return found


def _secret_strings(value: object, *, secret: bool) -> set[str]:
    if isinstance(value, str):
        return {value} if secret and value.strip() else set()
    if isinstance(value, dict):
        return {
            s
            for key, item in value.items()
            for s in _secret_strings(item, secret=secret or _secret_key(str(key)))
        }
    if isinstance(value, list):
        return {s for item in value for s in _secret_strings(item, secret=secret)}
    return set()


def _secret_key(key: str) -> bool:
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key) if key != key.upper() else key
    return is_secret_name(snake)


def copy_login(source: Path, target: Path) -> bool:
    """Copy a logged-in CLI's credential file into the fresh home (private); False when there is none."""
    if not source.is_file():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    target.chmod(0o600)
    return True


def _read_only(top: Path) -> None:
    for path in sorted(top.rglob("*"), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    top.chmod(0o555)


def _writable(top: Path) -> None:
    for path in [top, *top.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR | stat.S_IXUSR)

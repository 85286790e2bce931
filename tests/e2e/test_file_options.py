"""Every option that takes a file reads only a regular file, within a size cap (issue 30
part 3): a device that never ends (/dev/zero), a FIFO nobody writes to and a directory
are each refused in one line with exit 2 and nothing written — never read without end,
never waited on. Real CLI processes, real Postgres."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine

from council.domain.validate import MAX_EVIDENCE_BYTES
from tests.builders import Ledger
from tests.conftest import CliRunner
from tests.integration.test_counterfactual import row_counts, rule_set


def _fifo(tmp_path: Path) -> str:
    path = tmp_path / "fifo.json"
    os.mkfifo(path)
    return str(path)


NOT_REGULAR: dict[str, Callable[[Path], str]] = {
    "device": lambda _: "/dev/zero",
    "fifo": _fifo,
    "directory": lambda tmp: str(tmp),
}


@pytest.mark.parametrize("kind", list(NOT_REGULAR))
def test_a_file_option_given_something_else_is_one_line_exit_2(
    cli: CliRunner, engine: Engine, tmp_path: Path, kind: str
) -> None:
    # Given a thread, a valid rule-set file, and something that is not a regular file
    thread = str(Ledger.new(engine).thread_id)
    good = tmp_path / "rules.json"
    good.write_text(json.dumps(rule_set("strict-v1", quorum=3)), encoding="utf-8")
    bad = NOT_REGULAR[kind](tmp_path)
    before = row_counts(engine)
    # When each file-taking option is given it
    for args in (
        ("rule-set", "add", bad),
        ("rule-set", "add", str(good), "--report", bad),
        ("replay", "--rule-set", bad),
        ("eval", "--rule-set", bad),
        ("import", bad),
        ("lint", bad, "--thread", thread),
        ("evidence", "add", "--thread", thread, "--file", bad),
    ):
        result = cli(*args, "--json", timeout=60)
        # Then it is refused at once: exit 2, one line naming why, one JSON document, no traceback
        assert result.code == 2, (args, result.code, result.stdout[-300:], result.stderr[-300:])
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.stderr, (args, result.stderr)
        assert "not a regular file" in lines[0] or "a directory" in lines[0], (args, lines[0])
        assert json.loads(result.stdout)["code"] == 2, args
    # And nothing was written
    assert row_counts(engine) == before


@pytest.mark.skipif(not os.access("/proc/kmsg", os.R_OK), reason="/proc/kmsg is not readable here (not root)")
def test_a_read_that_fails_is_one_line_exit_2(cli: CliRunner, engine: Engine) -> None:
    """/proc/kmsg is a regular file whose non-blocking read says "try again" once it has
    given what it had (issue 44: the second read exited 1, "unexpected TypeError")."""
    before = row_counts(engine)
    # When a file option is given it twice: the first read takes what the kernel log held
    for _ in range(2):
        result = cli("rule-set", "add", "/proc/kmsg", "--json", timeout=60)
        # Then each is refused in one line, exit 2, one JSON document, no traceback
        assert result.code == 2, (result.code, result.stdout[-300:], result.stderr[-300:])
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
        assert json.loads(result.stdout)["code"] == 2
    assert "nothing to read now" in lines[0], lines[0]
    assert row_counts(engine) == before


def test_a_regular_file_over_its_cap_is_one_line_exit_2(
    cli: CliRunner, engine: Engine, tmp_path: Path
) -> None:
    """The cap itself: a regular file larger than what its option reads is refused as it is read,
    never loaded whole. (`import`, whose cap is 512 MiB, is left out: a test would read that much.)"""
    # Given a sparse regular file one byte over the largest of these caps (evidence's 5 MiB)
    thread = str(Ledger.new(engine).thread_id)
    good = tmp_path / "rules.json"
    good.write_text(json.dumps(rule_set("strict-v1", quorum=3)), encoding="utf-8")
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(MAX_EVIDENCE_BYTES + 1)
    before = row_counts(engine)
    # When each capped file option is given it
    for args in (
        ("rule-set", "add", str(big)),
        ("rule-set", "add", str(good), "--report", str(big)),
        ("replay", "--rule-set", str(big)),
        ("eval", "--rule-set", str(big)),
        ("lint", str(big), "--thread", thread),
        ("evidence", "add", "--thread", thread, "--file", str(big)),
    ):
        result = cli(*args, "--json", timeout=60)
        # Then it is refused: exit 2, one line naming the cap, one JSON document, no traceback
        assert result.code == 2, (args, result.code, result.stdout[-300:], result.stderr[-300:])
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "larger than" in lines[0], (args, result.stderr)
        assert json.loads(result.stdout)["code"] == 2, args
    # And nothing was written
    assert row_counts(engine) == before

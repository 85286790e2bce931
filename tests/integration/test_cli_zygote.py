"""A command forked from the tests' CLI zygote behaves as `python -m council.cli` started fresh."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_zygote import Zygote


def _fresh(args: list[str], env: dict[str, str], cwd: Path, input: str | None) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "council.cli", *args],
        input=input,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    return {
        **base,
        "COUNCIL_DATABASE_URL": db_url,
        "COUNCIL_HOME": str(tmp_path),
        "COUNCIL_OFFLINE": "1",
        "NO_COLOR": "1",
        "COLUMNS": "200",
        "PYTHONUNBUFFERED": "1",
    }


def test_a_forked_command_answers_as_a_fresh_interpreter_does(env: dict[str, str], tmp_path: Path) -> None:
    # Given the zygote, and commands that succeed, fail on bad input, print help, and read stdin
    zygote = Zygote()
    try:
        commands: list[tuple[list[str], str | None]] = [
            (["--version"], None),
            (["thread", "create", "--title", "", "--json"], None),
            (["thread", "show", "not-an-id", "--json"], None),
            (["thread", "--help"], None),
            (["no-such-command"], None),
        ]
        for args, input in commands:
            # When each runs forked and fresh
            forked = zygote.run(args, env, tmp_path, input, 120)
            fresh = _fresh(args, env, tmp_path, input)
            # Then the exit code, stdout and stderr are the same
            assert forked == fresh, args
        # And a command that writes does so in the forked process, with the test's environment
        code, stdout, _ = zygote.run(
            ["thread", "create", "--title", "forked", "--objective", "O", "--json"], env, tmp_path, None, 120
        )
        assert code == 0 and json.loads(stdout)["title"] == "forked"
        code, stdout, _ = _fresh(["thread", "list", "--json"], env, tmp_path, None)
        assert code == 0 and "forked" in stdout
    finally:
        zygote.close()


def test_a_command_past_its_timeout_is_killed_as_subprocess_run_would(
    env: dict[str, str], tmp_path: Path
) -> None:
    # Given the zygote and a command that never ends by itself (a server)
    zygote = Zygote()
    try:
        # When it runs past its timeout
        # Then it is killed and the caller gets subprocess.TimeoutExpired
        with pytest.raises(subprocess.TimeoutExpired):
            zygote.run(["serve", "--port", "0"], env, tmp_path, None, 3)
    finally:
        zygote.close()

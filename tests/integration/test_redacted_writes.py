"""Known secrets never reach a row, and nothing innocent is altered (issue 44 N2, N3): text
typed through the CLI that holds a known secret of the writing process — as written,
base64, hex, URL-encoded, as JSON escapes or HTML references — is refused with a one-line
reason (exit 2) and nothing is written; evidence and nodes are content-addressed and
stored exactly as given; a path that happens to be the current directory is no secret.
Real processes, real Postgres."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine

from tests.rows import counts, row

SECRET = "tok-planted-5f0c9a7e1b2d4c6e8a0b"
ENV = {"COUNCIL_API_TOKEN": SECRET}


def _copies() -> list[str]:
    raw = SECRET.encode()
    return [
        SECRET,
        base64.b64encode(raw).decode().rstrip("="),
        raw.hex(),
        quote(SECRET, safe=""),
        "".join(f"\\u{ord(c):04x}" for c in SECRET),
        "".join(f"&#{ord(c)};" for c in SECRET),
    ]


def test_text_typed_with_a_known_secret_is_refused_and_nothing_is_written(cli: Any, engine: Engine) -> None:
    # Given a thread, a run recorded by hand and a node, from a process that knows a secret
    def run(*args: str) -> Any:
        result = cli(*args, "--json", env=ENV)
        assert result.code == 0, result.stderr
        return result.json()

    thread = run("thread", "create", "--title", "T", "--objective", "O")["id"]
    version = run("node", "add", "--thread", thread, "--content", "a node")["version_id"]
    recorded = run("run", "record", "--thread", thread, "--agent", "human", "--model", "openai/gpt-5.5")["id"]
    before = counts(engine)
    # When the secret, in any form, is typed into any field
    for copy in _copies():
        for args in (
            ("thread", "create", "--title", f"title {copy}", "--objective", "O"),
            ("evidence", "add", "--thread", thread, "--text", f"evidence {copy}"),
            ("node", "add", "--thread", thread, "--content", f"node {copy}"),
            ("claim", "add", "--run", recorded, "--node", version, "--type", "endorse", "--rationale", copy),
        ):
            refused = cli(*args, "--json", env=ENV)
            # Then it is refused with a one-line reason naming what the secret is, never its value
            assert refused.code == 2, (args, refused.stdout, refused.stderr)
            assert "known secret (COUNCIL_API_TOKEN)" in refused.stderr, refused.stderr
            assert refused.json()["code"] == 2
            assert SECRET not in refused.stdout + refused.stderr
    # And nothing was written
    assert counts(engine) == before


def test_evidence_is_stored_as_given_whatever_the_current_directory(
    cli: Any, engine: Engine, tmp_path: Path
) -> None:
    # Given the CLI run from a directory (the fixture's), with its path in the text (N3: PWD
    # was taken for a secret, and the text stored as ***/data.csv)
    text = f"the figures are in {tmp_path}/data.csv, read with PATH=/usr/bin"
    env = {"PWD": str(tmp_path), "PATH": "/usr/bin:/bin"}
    thread = cli("thread", "create", "--title", "T", "--objective", "O", "--json", env=env).json()["id"]
    added = cli("evidence", "add", "--thread", thread, "--text", text, "--json", env=env)
    assert added.code == 0, added.stderr
    # Then it is stored exactly as given, addressed by what it is
    stored = row(engine, "evidence", "id = :id", id=added.json()["id"])
    assert stored["content"] == text
    assert stored["content_sha256"] == hashlib.sha256(text.encode()).hexdigest()

"""Known secrets never reach a row, whoever writes them (issue 30 §4): text typed
through the CLI that carries a secret of the writing process's environment — as
written, base64, hex or URL-encoded — is stored with it taken out, and a
content-addressed row keeps the address of what it stores. Real processes, real
Postgres."""

from __future__ import annotations

import base64
import hashlib
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, text

SECRET = "tok-planted-5f0c9a7e1b2d4c6e8a0b"
ENV = {"COUNCIL_TEST_PLANTED_TOKEN": SECRET}


def _copies() -> list[str]:
    raw = SECRET.encode()
    return [SECRET, base64.b64encode(raw).decode().rstrip("="), raw.hex(), quote(SECRET, safe="")]


def test_text_typed_with_a_known_secret_is_stored_without_it(cli: Any, engine: Engine) -> None:
    # Given a secret in the writing process's environment, typed (encoded) into every field
    def run(*args: str) -> Any:
        result = cli(*args, "--json", env=ENV)
        assert result.code == 0, result.stderr
        return result.json()

    b64, hexed, quoted = _copies()[1:]
    thread = run("thread", "create", "--title", f"title {SECRET}", "--objective", f"objective {b64}")["id"]
    evidence = run("evidence", "add", "--thread", thread, "--text", f"evidence {hexed}")["id"]
    version = run("node", "add", "--thread", thread, "--content", f"node {quoted}")["version_id"]
    recorded = run("run", "record", "--thread", thread, "--agent", "human", "--model", "openai/gpt-5.5")["id"]
    run(
        "claim",
        "add",
        "--run",
        recorded,
        "--node",
        version,
        "--type",
        "endorse",
        "--rationale",
        f"why {SECRET}",
    )

    # Then no row holds it in any encoding
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT t.title, t.objective, e.content, e.content_sha256, v.content, v.content_sha256, "
                "c.rationale FROM threads t, evidence e, node_versions v, claims c "
                "WHERE t.id = :t AND e.id = :e AND v.id = :v AND c.node_version_id = :v"
            ),
            {"t": thread, "e": evidence, "v": version},
        ).one()
        events = " ".join(str(r[0]) for r in conn.execute(text("SELECT payload::text FROM events")))
    title, objective, body, body_sha, content, content_sha, rationale = rows
    assert (title, objective, body, content, rationale) == (
        "title ***",
        "objective ***",
        "evidence ***",
        "node ***",
        "why ***",
    )
    assert not [c for c in _copies() if c in events]
    # And what is content-addressed is addressed by what is stored
    assert body_sha == hashlib.sha256(body.encode()).hexdigest()
    assert content_sha == hashlib.sha256(content.encode()).hexdigest()

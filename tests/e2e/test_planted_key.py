"""No secret leaves its place: one distinctive key, planted everywhere a user
could put one, is found only where it belongs.

Given the embedded stack (`council up`: Postgres, Redis with its append-only
file, supervised workers and the web server), a key is planted in

- the environment of the dispatcher and of the stack's workers, as the key
  variable a real profile names (its only legitimate home);
- a profile's `params` (refused when profiles load);
- the user-info of an evidence URL (used for the fetch, never kept);
- a provider's error text (a local OpenAI-compatible server that echoes the
  key it was sent in its 401, as a careless provider might);
- a model's answer: the key and the Redis password as written, base64 (alone
  and inside a longer base64 text), hex and URL-encoded, as JSON ``\\u`` escapes
  and HTML character references, in a claim's rationale, a new node, new
  evidence, a pending action and the summary (issue 44: the kept answer held the
  JSON-escaped key, and ``json.loads`` of ``run show``'s answer text gave it back).

Then the real paths run: a dispatch whose first run meets the echoing 401 and
whose second run answers, through litellm, the workers, the ledger, the API
and the event log. The key reached the two servers it was meant for — and is in
none of: the CLI's outputs, the API's answers, a `pg_dump` of the ledger,
Redis's files, the stack's logs and state files.
"""

from __future__ import annotations

import base64
import html
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest

from tests.fakes.openai_server import fake_openai, reply, unauthorized
from tests.fakes.web_server import Site, serving
from tests.published import validate_cli_output

KEY_VARIABLE = "COUNCIL_E2E_PLANTED_KEY"


def _encodings(secret: str) -> list[str]:
    raw = secret.encode()
    return [
        secret,
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        raw.hex(),
        raw.hex().upper(),
        quote(secret, safe=""),
    ]


def _leaky_answer(node: str, key: str, password: str) -> dict[str, Any]:
    """An answer a hostile model might give after reading what it should not have."""
    inside = base64.b64encode(f"Authorization: Bearer {key}".encode()).decode()  # shifted by 22 bytes
    key_hex, password_b64 = key.encode().hex(), base64.b64encode(password.encode()).decode()
    return {
        "summary": f"[fake] leaking {quote(key, safe='')} and {password}",
        "claims": [
            {
                "node_version_id": node,
                "type": "endorse",
                "confidence": 0.7,
                "rationale": f"the key is {key}, the Redis password {password_b64}",
                "cites": [
                    {"new_evidence": {"title": "planted evidence", "content": f"planted evidence {inside}"}}
                ],
            }
        ],
        "new_nodes": [{"ref": "n1", "content": f"planted node {key_hex} {password.encode().hex()}"}],
        "pending_actions": [{"description": f"rotate {key}", "acceptance_condition": f"{password} gone"}],
    }


def _json_escaped(secret: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in secret)


def _leaky_text(node: str, key: str, password: str) -> str:
    """The answer's JSON text, the key written in it as JSON \\u escapes (a reader's json.loads
    gives the key back) and the password as HTML references (a page shows the password)."""
    answer = _leaky_answer(node, key, password)
    answer["claims"][0]["rationale"] += " and JSON-ESCAPED-KEY"
    answer["summary"] += " and " + "".join(f"&#x{ord(c):x};" for c in password)
    return json.dumps(answer).replace("JSON-ESCAPED-KEY", _json_escaped(key))


def _pg_dump() -> Path:
    import pgserver

    return Path(pgserver.__file__).parent / "pginstall" / "bin" / "pg_dump"


class Stack:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.outputs: list[str] = []  # everything a command or the API printed

    def run(self, *args: str, env: dict[str, str] | None = None, check: bool = True) -> Any:
        done = subprocess.run(
            [sys.executable, "-m", "council.cli", *args, "--json"],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.outputs += [done.stdout, done.stderr]
        if not check:
            return done
        assert done.returncode == 0, f"council {' '.join(args)}: {done.stderr}"
        document = json.loads(done.stdout)
        validate_cli_output(args, document)
        return document

    def get(self, url: str) -> Any:
        answer = httpx.get(url, timeout=30)
        self.outputs.append(answer.text)
        assert answer.status_code == 200, answer.text
        return answer.json()


@pytest.fixture
def key() -> str:
    return f"sk-planted-{uuid.uuid4().hex}"


@pytest.fixture
def stack(tmp_path: Path, key: str) -> Iterator[Stack]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(
        COUNCIL_HOME=str(tmp_path / "home"),
        COUNCIL_OFFLINE="1",
        COUNCIL_PROFILES=str(tmp_path / "profiles.toml"),
        NO_COLOR="1",
        **{KEY_VARIABLE: key},
    )
    (tmp_path / "profiles.toml").write_text("")
    council = Stack(env)
    council.run("up")
    try:
        yield council
    finally:
        council.run("down", check=False)


def test_a_planted_key_is_found_only_where_it_belongs(stack: Stack, key: str, tmp_path: Path) -> None:
    home = Path(stack.env["COUNCIL_HOME"])

    # A key written in a profile is refused when profiles load, without repeating it
    leaky = tmp_path / "leaky.toml"
    leaky.write_text(f'[profiles.leaky]\nmodel = "openai/gpt-5.5"\nparams = {{ api_key = "{key}" }}\n')
    refused = stack.run("profiles", env={"COUNCIL_PROFILES": str(leaky)}, check=False)
    assert refused.returncode == 2 and "api_key_env" in refused.stderr

    thread = stack.run("thread", "create", "--title", "Planted key", "--objective", "Does a key leak?")["id"]

    # Evidence by a URL carrying the key as its password: used for the fetch, never kept
    site = Site(pages={"/report.txt": b"The parity suite passed on 8 concurrent writers."})
    with serving(site) as base:
        host = base.split("://", 1)[1]
        added = stack.run(
            "evidence", "add", "--thread", thread, "--url", f"http://reader:{key}@{host}/report.txt",
            "--allow-private",
        )  # fmt: skip
    [(_, authorization)] = site.requests
    assert authorization == "Basic " + base64.b64encode(f"reader:{key}".encode()).decode()
    node = stack.run(
        "node", "add", "--thread", thread, "--content", "The suite proves parity", "--cites", added["id"]
    )["version_id"]

    answer = json.dumps(
        {
            "summary": "[fake] one endorsement.",
            "claims": [
                {
                    "node_version_id": node,
                    "type": "endorse",
                    "confidence": 0.8,
                    "rationale": "The report says so.",
                    "cites": [{"evidence_id": added["id"], "interpretation": "as written"}],
                }
            ],
        }
    )
    password = urlsplit(json.loads((home / "stack.json").read_text())["broker_url"]).password
    assert password
    leaky = _leaky_text(node, key, password)
    with fake_openai([unauthorized(), reply(answer), reply(leaky)]) as (api_base, seen):
        (tmp_path / "profiles.toml").write_text(
            "[profiles.fake]\n"
            'model = "openai/fake-model"\n'
            f'api_base = "{api_base}"\n'
            f'api_key_env = "{KEY_VARIABLE}"\n'
        )
        # The provider echoes the key in its 401: the run fails, the key redacted from its reason
        dispatched = stack.run(
            "dispatch", "--thread", thread, "--agents", "fake", "--wait", "--timeout", "120", check=False
        )  # fmt: skip
        # A failed council exits 1, and still says what ran
        assert dispatched.returncode == 1, dispatched.stderr
        first = json.loads(dispatched.stdout)
        # The second run gets an answer
        second = stack.run("dispatch", "--thread", thread, "--agents", "fake", "--wait", "--timeout", "120")
        # The third answer carries the key and the Redis password, encoded every common way
        third = stack.run("dispatch", "--thread", thread, "--agents", "fake", "--wait", "--timeout", "120")
    [failed] = first["runs"]
    [succeeded] = second["runs"]
    assert failed["status"] == "failed" and "401" in (failed["error"] or "")
    assert succeeded["status"] == "succeeded"
    # The key went where it belongs: to the model's endpoint, from the workers' environment
    assert [r["headers"]["authorization"] for r in seen.requests] == [f"Bearer {key}"] * 3
    [leaked_run] = third["runs"]
    assert leaked_run["status"] == "succeeded", leaked_run

    # Everything a person or a dashboard reads
    web = stack.run("status")["web_url"].rstrip("/")
    for run in (failed, succeeded, leaked_run):
        shown = stack.run("run", "show", run["id"])
        assert shown["simulated"] is False and shown["executor"]["api_key_env"] == KEY_VARIABLE
        stack.get(f"{web}/runs/{run['id']}")
    # The kept answer, read as a reader reads it (its JSON decoded, its references unescaped)
    kept = stack.run("run", "show", leaked_run["id"])["answer"]["text"]
    read = html.unescape(json.dumps(json.loads(kept), ensure_ascii=False))
    assert "planted node" in read and key not in read and password not in read, read
    stack.run("events", "--thread", thread)
    stack.run("evidence", "show", added["id"])
    stack.get(f"{web}/threads/{thread}/events")
    stack.get(f"{web}/threads/{thread}/reentry")
    planted = _encodings(key) + _encodings(password)
    for output in stack.outputs:
        assert key not in output
        assert not [p for p in planted if p in output]

    # The ledger, whole
    state = json.loads((home / "stack.json").read_text())
    dump = subprocess.run(
        [str(_pg_dump()), "--data-only", "--dbname", state["migrate_database_url"]],
        capture_output=True,
        timeout=120,
        check=True,
    ).stdout
    assert key.encode() not in dump
    assert b"The parity suite passed" in dump  # the dump holds the ledger's rows
    # the leaky answer was written, its secrets taken out
    assert b"planted node" in dump and b"planted evidence" in dump and b"rotate ***" in dump
    assert not [p for p in planted if p.encode() in dump], "an encoded secret is in the ledger"

    # Redis's files, the logs and the state files, once the stack has written them out
    time.sleep(1.5)  # appendfsync everysec
    stack.run("down")
    files = [p for p in home.rglob("*") if p.is_file() and "pgdata" not in p.parts]
    assert any(p.name.endswith(".aof") or "appendonly" in str(p) for p in files), files
    assert any(p.suffix == ".log" for p in files), files
    leaked = [str(p) for p in files if key.encode() in p.read_bytes()]
    assert not leaked, f"the key leaked into {leaked}"
    # Postgres's own files too (its WAL and heap hold every row ever written)
    pgdata = [p for p in home.rglob("*") if p.is_file() and "pgdata" in p.parts]
    assert pgdata
    leaked = [str(p) for p in pgdata if key.encode() in p.read_bytes()]
    assert not leaked, f"the key leaked into {leaked}"

"""The ledger CLI end to end: real processes, real Postgres, --json contracts."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

PAGES = {
    "/paper.txt": (200, "text/plain; charset=utf-8", b"SQLite WAL mode serialises writers."),
    "/missing": (404, "text/plain", b"no"),
    "/huge": (200, "text/plain", b"x" * (5 * 1024 * 1024 + 10)),
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status, ctype, body = PAGES.get(self.path, (404, "text/plain", b""))
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def web() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _ok(result: Any) -> dict[str, Any]:
    assert result.code == 0, result.stderr
    return result.json()  # type: ignore[no-any-return]


def _bad(result: Any, code: int = 2) -> str:
    """A failure: one line on stderr and, under --json, exactly the error document on stdout."""
    assert result.code == code, (result.code, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    if "--json" in result.args:
        assert result.json() == {"error": lines[0].removeprefix("error: "), "code": code}
    else:
        assert result.stdout == ""
    return lines[0]


def test_walkthrough_with_json(cli: Any, web: str, tmp_path: Any) -> None:
    thread = _ok(
        cli("thread", "create", "--title", "SQLite parity", "--objective", "Is parity enough?", "--json")
    )
    tid = thread["id"]
    text_ev = _ok(cli("evidence", "add", "--thread", tid, "--text", "Benchmark A", "--json"))
    doc = tmp_path / "notes.md"
    doc.write_text("# Notes\nWAL needs a single writer.\n")
    file_ev = _ok(cli("evidence", "add", "--thread", tid, "--file", str(doc), "--json"))
    url_ev = _ok(
        cli("evidence", "add", "--thread", tid, "--url", f"{web}/paper.txt", "--allow-private", "--json")
    )
    ref_ev = _ok(cli("evidence", "add", "--thread", tid, "--url", f"{web}/later", "--no-fetch", "--json"))
    assert (
        file_ev["title"] == "notes.md"
        and len({text_ev["id"], file_ev["id"], url_ev["id"], ref_ev["id"]}) == 4
    )
    shown = _ok(cli("evidence", "show", url_ev["id"], "--json"))
    assert shown["content"] == "SQLite WAL mode serialises writers." and shown["fetched_at"]
    assert _ok(cli("evidence", "show", ref_ev["id"], "--json"))["content"] is None

    base = _ok(cli("node", "add", "--thread", tid, "--content", "Adapter passes suite", "--json"))
    node = _ok(
        cli(
            "node",
            "add",
            "--thread",
            tid,
            "--content",
            "Parity is sufficient",
            "--status",
            "tentative",
            "--depends-on",
            base["version_id"],
            "--cites",
            text_ev["id"],
            "--json",
        )
    )
    assert node["status"] == "tentative" and len(node["edge_ids"]) == 1 and len(node["citation_ids"]) == 1
    run_a = _ok(
        cli("run", "record", "--thread", tid, "--agent", "claude", "--model", "claude-sonnet-4-6", "--json")
    )
    run_b = _ok(
        cli(
            "run",
            "record",
            "--thread",
            tid,
            "--agent",
            "codex",
            "--model",
            "gpt-5.5",
            "--exposed-to",
            run_a["id"],
            "--json",
        )
    )
    claim = _ok(
        cli(
            "claim",
            "add",
            "--run",
            run_b["id"],
            "--node",
            node["version_id"],
            "--type",
            "endorse",
            "--confidence",
            "0.8",
            "--cites",
            url_ev["id"],
            "--json",
        )
    )
    assert claim["claim_type"] == "endorse" and claim["confidence"] == 0.8
    shown_run = _ok(cli("run", "show", run_b["id"], "--json"))
    assert shown_run["exposures"][0]["exposed_to_run_id"] == run_a["id"]
    assert "request_sha256" in shown_run
    version = _ok(
        cli("node", "version", node["logical_node_id"], "--content", "Parity suffices for tests", "--json")
    )
    assert version["version_no"] == 2

    kinds = [e["kind"] for e in _ok(cli("events", "--thread", tid, "--json"))["items"]]
    assert kinds == [
        "thread.created",
        "evidence.added",
        "evidence.added",
        "evidence.added",
        "evidence.added",
        "node.created",
        "node.created",
        "run.recorded",
        "run.recorded",
        "claim.added",
        "node.versioned",
    ]


def test_bad_input_exits_2_with_one_line_and_writes_nothing(cli: Any, web: str) -> None:
    tid = _ok(cli("thread", "create", "--title", "t", "--objective", "o", "--json"))["id"]
    before = _ok(cli("thread", "show", tid, "--json"))["counts"]
    missing = "00000000-0000-4000-8000-000000000000"
    cases = [
        ("thread", "create", "--title", " ", "--objective", "o", "--json"),
        ("evidence", "add", "--thread", missing, "--text", "x", "--json"),
        ("evidence", "add", "--thread", "not-a-uuid", "--text", "x", "--json"),
        ("evidence", "add", "--thread", tid, "--json"),
        ("evidence", "add", "--thread", tid, "--text", "a", "--url", f"{web}/paper.txt", "--json"),
        ("evidence", "add", "--thread", tid, "--url", "ftp://example/x", "--json"),
        ("evidence", "add", "--thread", tid, "--file", "/nonexistent/file.txt", "--json"),
        ("evidence", "show", missing, "--json"),
        ("node", "add", "--thread", tid, "--content", "", "--json"),
        ("node", "add", "--thread", tid, "--content", "x", "--status", "resolved", "--json"),
        ("node", "add", "--thread", tid, "--content", "x", "--depends-on", missing, "--json"),
        ("node", "add", "--thread", tid, "--content", "x" * 20_001, "--json"),
        ("run", "record", "--thread", tid, "--agent", "a", "--model", "m", "--parent", missing, "--json"),
        ("claim", "add", "--run", missing, "--node", missing, "--type", "endorse", "--json"),
        ("claim", "add", "--run", missing, "--node", missing, "--type", "agree", "--json"),
        ("events", "--thread", missing, "--json"),
        ("node", "add", "--thread", tid, "--json"),  # missing required option (usage error)
    ]
    for args in cases:
        _bad(cli(*args))
    assert _ok(cli("thread", "show", tid, "--json"))["counts"] == before


def test_fetch_failures_are_clear_errors_and_write_nothing(cli: Any, web: str) -> None:
    tid = _ok(cli("thread", "create", "--title", "t", "--objective", "o", "--json"))["id"]
    for url, expected in ((f"{web}/missing", "HTTP 404"), (f"{web}/huge", "exceeds")):
        line = _bad(
            cli("evidence", "add", "--thread", tid, "--url", url, "--allow-private", "--json"), code=1
        )
        assert expected in line
    refused = _bad(
        cli("evidence", "add", "--thread", tid, "--url", "http://127.0.0.1:9/x", "--allow-private", "--json"),
        code=1,
    )
    assert "ConnectError" in refused
    assert _ok(cli("thread", "show", tid, "--json"))["counts"]["evidence"] == 0

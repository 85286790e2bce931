"""Evidence from files and URLs through the real CLI: a total fetch deadline, no
private addresses unless allowed, no credentials kept, and a one-line exit 2 for
every file or URL that cannot be read — with nothing written (docs/architecture.md §9, §11)."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from tests.conftest import CliResult, CliRunner
from tests.engines import unit_of_work
from tests.fakes.web_server import Site, serving

SECRET = "s3cr3t-pw-0f-the-user"
# A CLI process takes a second or two to start under load; the deadline is on top of that.
START_MARGIN_S = 8.0


@pytest.fixture
def site() -> Iterator[tuple[Site, str]]:
    pages = Site(pages={"/paper.txt": b"SQLite WAL mode serialises writers."})
    with serving(pages) as base:
        yield pages, base


@pytest.fixture
def thread(cli: CliRunner) -> str:
    created = cli("thread", "create", "--title", "t", "--objective", "o", "--json")
    assert created.code == 0, created.stderr
    return str(created.json()["id"])


def _one_line(result: CliResult, code: int) -> str:
    assert result.code == code, (result.code, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def _evidence_rows(engine: Engine) -> int:
    with unit_of_work(engine) as conn:
        return int(conn.execute(text("SELECT count(*) FROM evidence")).scalar_one())


def _everything(engine: Engine) -> str:
    """Every row of every table of the ledger as text (what a dump would hold)."""
    with unit_of_work(engine) as conn:
        tables = conn.execute(
            text("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
        ).scalars()
        return "\n".join(
            str(row[0])
            for table in list(tables)
            for row in conn.execute(text(f'SELECT t::text FROM "{table}" t'))
        )


@pytest.mark.parametrize(
    ("path", "deadline"),
    [("/drip-body", ["--timeout", "3"]), ("/drip-headers", [])],
    ids=["body-dripped-with-timeout-option", "headers-dripped-with-environment"],
)
def test_a_server_dripping_a_byte_a_second_is_cut_off_at_the_total_deadline(
    cli: CliRunner, engine: Engine, site: tuple[Site, str], thread: str, path: str, deadline: list[str]
) -> None:
    # Given a server that answers one byte a second (the body, or even the status line)
    _, base = site
    # When evidence is fetched from it with a 3 s deadline (option or environment)
    started = time.monotonic()
    result = cli(
        "evidence", "add", "--thread", thread, "--url", base + path, "--allow-private", *deadline, "--json",
        env={"COUNCIL_FETCH_TIMEOUT_S": "3"}, timeout=60,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    # Then the command ends within the deadline and a start-up margin: exit 1, one line, nothing written
    assert elapsed < 3 + START_MARGIN_S, f"took {elapsed:.1f} s"
    line = _one_line(result, code=1)
    assert "no complete answer within 3 s" in line
    assert _evidence_rows(engine) == 0


def test_a_bad_deadline_is_refused_before_anything_is_fetched(
    cli: CliRunner, engine: Engine, site: tuple[Site, str], thread: str
) -> None:
    pages, base = site
    for bad in ("0", "-1", "nan", "inf"):
        _one_line(
            cli(
                "evidence",
                "add",
                "--thread",
                thread,
                "--url",
                base + "/paper.txt",
                "--timeout",
                bad,
                "--json",
            ),
            2,
        )
    line = _one_line(
        cli(
            "evidence", "add", "--thread", thread, "--url", base + "/paper.txt", "--allow-private", "--json",
            env={"COUNCIL_FETCH_TIMEOUT_S": "soon"},
        ),
        2,
    )  # fmt: skip
    assert "COUNCIL_FETCH_TIMEOUT_S" in line
    _one_line(cli("evidence", "add", "--thread", thread, "--text", "x", "--timeout", "5", "--json"), 2)
    assert pages.requests == [] and _evidence_rows(engine) == 0


def test_private_addresses_are_refused_unless_allowed(
    cli: CliRunner, engine: Engine, site: tuple[Site, str], thread: str
) -> None:
    pages, base = site
    port = base.rsplit(":", 1)[1]
    # Given a page on loopback, named by address and by a name that resolves to loopback
    for url in (
        f"{base}/paper.txt",
        f"http://localhost:{port}/paper.txt",
        f"http://[::ffff:127.0.0.1]:{port}/x",
    ):
        # When it is fetched without --allow-private
        line = _one_line(cli("evidence", "add", "--thread", thread, "--url", url, "--json"), code=2)
        # Then it is refused before any request, saying how to allow it
        assert "non-public address" in line and "--allow-private" in line
    assert pages.requests == [] and _evidence_rows(engine) == 0
    # And with --allow-private it is fetched
    allowed = cli(
        "evidence", "add", "--thread", thread, "--url", f"{base}/paper.txt", "--allow-private", "--json"
    )
    assert allowed.code == 0, allowed.stderr
    assert _evidence_rows(engine) == 1


def test_credentials_in_a_url_are_used_but_never_stored_or_shown(
    cli: CliRunner, engine: Engine, site: tuple[Site, str], thread: str
) -> None:
    pages, base = site
    with_secret = base.replace("http://", f"http://reader:{SECRET}@")
    # When evidence is fetched, referenced and failed from URLs carrying a password
    fetched = cli(
        "evidence",
        "add",
        "--thread",
        thread,
        "--url",
        f"{with_secret}/paper.txt",
        "--allow-private",
        "--json",
    )
    referenced = cli(
        "evidence", "add", "--thread", thread, "--url", f"{with_secret}/later", "--no-fetch", "--json"
    )
    missing = cli(
        "evidence", "add", "--thread", thread, "--url", f"{with_secret}/missing", "--allow-private", "--json"
    )
    # Then the fetch authenticated with them
    assert fetched.code == 0 and referenced.code == 0, (fetched.stderr, referenced.stderr)
    assert pages.requests[0][0] == "/paper.txt" and pages.requests[0][1] is not None
    assert _one_line(missing, code=1).count("HTTP 404") == 1
    # And the source, the title and the events name the URL without them
    stored = fetched.json()
    assert stored["title"] == f"{base}/paper.txt"
    shown = cli("evidence", "show", stored["id"], "--json").json()
    assert shown["source_uri"] == f"{base}/paper.txt"
    # And the password is nowhere: not in any row of any table, not in any output
    assert SECRET not in _everything(engine)
    for result in (fetched, referenced, missing):
        assert SECRET not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1",
        "http://host:99999/x",
        "http://",
        f"http://user:{SECRET}@/x",
        "http://exa mple.org/",
        "mailto:a@b",
    ],
)
def test_a_malformed_url_is_one_line_and_exit_2(
    cli: CliRunner, engine: Engine, thread: str, url: str
) -> None:
    for extra in ([], ["--no-fetch"]):
        result = cli("evidence", "add", "--thread", thread, "--url", url, *extra, "--json")
        line = _one_line(result, code=2)
        assert "Traceback" not in result.stderr and SECRET not in line
    assert _evidence_rows(engine) == 0


def _fifo(tmp_path: Path) -> str:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return str(path)


@pytest.mark.parametrize(
    "make",
    [lambda _: "/proc/self/mem", lambda tmp: str(tmp), _fifo, lambda _: "/dev/zero"],
    ids=["proc-self-mem", "directory", "fifo", "device"],
)
def test_a_file_that_is_not_a_readable_regular_file_is_one_line_and_exit_2(
    cli: CliRunner, engine: Engine, thread: str, tmp_path: Path, make: Any
) -> None:
    result = cli("evidence", "add", "--thread", thread, "--file", make(tmp_path), "--json", timeout=30)
    line = _one_line(result, code=2)
    assert "cannot" in line and "Traceback" not in result.stderr
    assert _evidence_rows(engine) == 0


def test_an_unreadable_file_is_one_line_and_exit_2(
    cli: CliRunner, db_url: str, engine: Engine, thread: str, tmp_path: Path
) -> None:
    # Given a file its reader may not read
    secret = tmp_path / "secret.txt"
    secret.write_text("classified\n")
    secret.chmod(0o000)
    args = ("evidence", "add", "--thread", thread, "--file", str(secret), "--json")
    if os.geteuid() != 0:
        result = cli(*args)
    else:  # root reads anything: run the console script without the capabilities that let it
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: no file is unreadable to this process")
        drop = "-dac_override,-dac_read_search"
        env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
        env.update(COUNCIL_DATABASE_URL=db_url, COUNCIL_HOME=str(tmp_path), COUNCIL_OFFLINE="1", NO_COLOR="1")
        without_dac = [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}", "--"]
        done = subprocess.run(
            [*without_dac, sys.executable, "-m", "council.cli", *args],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        result = CliResult(args, done.returncode, done.stdout, done.stderr)
    # Then it is refused in one line, exit 2, and nothing is written
    assert "Permission denied" in _one_line(result, code=2)
    assert _evidence_rows(engine) == 0


@pytest.mark.parametrize("timeout", ["-1", "0", "nan"])
def test_dispatch_refuses_a_timeout_that_is_not_a_positive_number(
    cli: CliRunner, engine: Engine, thread: str, timeout: str
) -> None:
    result = cli(
        "dispatch", "--thread", thread, "--agents", "claude", "--wait", "--timeout", timeout, "--json"
    )
    assert "--timeout" in _one_line(result, code=2)
    with unit_of_work(engine) as conn:
        assert conn.execute(text("SELECT count(*) FROM dispatches")).scalar_one() == 0
        assert conn.execute(text("SELECT count(*) FROM agent_runs")).scalar_one() == 0


def test_a_gzip_bomb_and_a_utf_7_page_are_one_line_each_and_write_nothing(
    cli: CliRunner, engine: Engine, thread: str
) -> None:
    # Given a page of 64 MiB of zeros gzipped twice (a few kilobytes) and a page in UTF-7
    bomb = gzip.compress(gzip.compress(bytes(64 * 1024 * 1024), 9), 9)
    answers = {
        "/bomb": ({"Content-Type": "text/plain", "Content-Encoding": "gzip, gzip"}, bomb),
        "/utf-7": ({"Content-Type": "text/plain; charset=utf-7"}, b"a lone +2AA- surrogate"),
    }
    with serving(Site(answers=answers)) as base:
        add = ("evidence", "add", "--thread", thread, "--allow-private", "--json", "--url")
        # When each is added as evidence, then: the bomb stops at the cap (exit 1), UTF-7 is refused (exit 2)
        assert "exceeds 5242880 bytes once decoded" in _one_line(cli(*add, base + "/bomb"), code=1)
        assert "charset 'utf-7' is not supported" in _one_line(cli(*add, base + "/utf-7"), code=2)
    assert _evidence_rows(engine) == 0

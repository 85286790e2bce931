"""Council's confinement of an agent CLI (docs/operations/security.md), on this machine's kernel:
the Landlock exec wrapper (``sandbox.py``) run as a real process, and the per-attempt
provider proxy (``proxy.py``) between a real HTTP client and a real upstream.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from council.agents.runtimes import confinement, sandbox
from council.agents.runtimes.proxy import DUMMY_KEY, provider_proxy
from tests.fakes.anthropic_server import fake_anthropic
from tests.fakes.responses_server import fake_responses

needs_landlock = pytest.mark.skipif(sandbox.abi() == 0, reason="this kernel has no Landlock")


def _confined(
    read: list[Path], write: list[Path], connect: list[int], script: str
) -> subprocess.CompletedProcess[str]:
    argv = [
        *sandbox.wrapper([str(p) for p in read], [str(p) for p in write], connect),
        "--",
        "bash",
        "-c",
        script,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    made = {name: tmp_path / name for name in ("work", "home", "council_home")}
    for path in made.values():
        path.mkdir()
    (made["work"] / "evidence.txt").write_text("the evidence")
    (made["council_home"] / "stack.json").write_text('{"password": "hunter2"}')
    return made


@needs_landlock
def test_the_sandbox_reads_its_workdir_writes_its_home_and_nothing_else(dirs: dict[str, Path]) -> None:
    done = _confined(
        [dirs["work"]],
        [dirs["home"]],
        [],
        f"cat {dirs['work']}/evidence.txt; echo ok > {dirs['home']}/note && cat {dirs['home']}/note; "
        f"cat {dirs['council_home']}/stack.json; echo x > {dirs['work']}/planted; ls /root; cat /etc/shadow",
    )
    assert "the evidence" in done.stdout and "ok" in done.stdout
    assert "hunter2" not in done.stdout
    assert done.stderr.count("Permission denied") == 4, done.stderr
    assert not (dirs["work"] / "planted").exists()


@needs_landlock
def test_the_sandbox_keeps_other_processes_environment_signals_and_ports_out_of_reach(
    dirs: dict[str, Path],
) -> None:
    with socket.socket() as allowed, socket.socket() as other:
        for s in (allowed, other):
            s.bind(("127.0.0.1", 0))
            s.listen(1)
        ok, refused = allowed.getsockname()[1], other.getsockname()[1]
        done = _confined(
            [dirs["work"]],
            [dirs["home"]],
            [ok],
            f"cat /proc/{os.getpid()}/environ; cat /proc/*/environ; kill -0 {os.getpid()} && echo signalled; "
            f"(echo > /dev/tcp/127.0.0.1/{ok}) && echo connected-allowed; "
            f"(echo > /dev/tcp/127.0.0.1/{refused}) && echo connected-other",
        )
    assert "PATH=" not in done.stdout and "Permission denied" in done.stderr
    assert "connected-allowed" in done.stdout and "connected-other" not in done.stdout
    if sandbox.abi() >= 6:
        assert "signalled" not in done.stdout


_AS_NOBODY = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--"]
_CAPS = "while read -r l; do case $l in Cap*) echo $l;; esac; done < /proc/self/status; "  # builtins: its own


@needs_landlock
@pytest.mark.parametrize(
    "user",
    [
        "root",
        pytest.param(
            "nobody",
            marks=pytest.mark.skipif(
                os.getuid() != 0 or not shutil.which("setpriv") or not Path("/usr/bin/python3").exists(),
                reason="starts the sandbox as another user: needs root, setpriv and /usr/bin/python3",
            ),
        ),
    ],
)
def test_the_sandbox_reaches_its_proxy_and_nothing_else_and_holds_no_capability(
    dirs: dict[str, Path], user: str
) -> None:
    # Given a listener on 127.0.0.2 at the proxy's port, and one on 127.0.0.1 at another port
    # (Redis's, say), in this process's network
    with (
        socket.create_server(("127.0.0.2", 0)) as outside,
        socket.create_server(("127.0.0.1", 0)) as local,
    ):
        port, other = outside.getsockname()[1], local.getsockname()[1]
        outside.settimeout(0.5)
        ours, theirs = socket.socketpair()
        served: list[bytes] = []

        def proxy() -> None:  # what ProviderProxy.adopt does: accept on the socket the sandbox made
            _, fds, _, _ = socket.recv_fds(ours, 16, 1)
            with socket.socket(fileno=fds[0]) as listener:
                conn, _ = listener.accept()
                with conn:
                    served.append(conn.recv(100))
                    conn.sendall(b"from the proxy\n")

        threading.Thread(target=proxy, daemon=True).start()
        # When a command in the sandbox, with its proxy at that port, tries each, and shows its
        # capabilities (the test runs as root: without the sandbox they would all be held)
        script = (
            f"{_CAPS}(exec 3<>/dev/tcp/127.0.0.1/{port}; echo to-proxy >&3; cat <&3); "
            f"(exec 3<>/dev/tcp/127.0.0.2/{port} && echo reached-127.0.0.2 && echo leak >&3) 2>&1; "
            f"(exec 3<>/dev/tcp/127.0.0.1/{other} && echo reached-other) 2>&1; "
            "echo done"
        )
        work, home, python = dirs["work"], dirs["home"], []
        if user == "nobody":  # its work and home where another user may reach them
            shared = Path(tempfile.mkdtemp(prefix="council-sandbox-"))
            shared.chmod(0o755)
            work, home, python = shared / "work", shared / "home", [*_AS_NOBODY, "/usr/bin/python3"]
            for made in (work, home):
                made.mkdir(mode=0o777)
        prefix = sandbox.wrapper([str(work)], [str(home)], [port, other], proxy=(port, theirs.fileno()))
        argv = [*(python or prefix[:1]), *prefix[1:], "--", "bash", "-c", script]
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin"},
            pass_fds=(theirs.fileno(),),
        )
        theirs.close()
        if user == "nobody":
            shutil.rmtree(work.parent)
        with pytest.raises(TimeoutError):
            outside.accept()
    # Then it reached its proxy, and neither 127.0.0.2 at the same port nor another local port
    assert "from the proxy" in done.stdout and served == [b"to-proxy\n"], (done.stdout, done.stderr)
    assert "reached" not in done.stdout and done.stdout.rstrip().endswith("done"), done.stdout
    for address in (f"127.0.0.2/{port}", f"127.0.0.1/{other}"):
        assert f"/dev/tcp/{address}: Connection refused" in done.stdout, done.stdout
    # And it held no capability: effective, permitted, bounding, inheritable, ambient all empty
    caps = dict(line.split(":") for line in done.stdout.splitlines() if line.startswith("Cap"))
    assert set(caps) == {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}
    assert {value.strip() for value in caps.values()} == {"0" * 16}, caps


@needs_landlock
@pytest.mark.skipif(not Path("/usr/bin/python3").exists(), reason="needs /usr/bin/python3 inside the sandbox")
def test_the_sandbox_cannot_reach_a_unix_socket_by_its_path_but_keeps_its_own_pipes(
    dirs: dict[str, Path], tmp_path: Path
) -> None:
    # Given a Unix socket listening outside the sandbox (as a database's does)
    path = tmp_path / "db.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen(1)
        script = (
            "import socket; a, b = socket.socketpair(); a.send(b'pair'); print(b.recv(4).decode()); "
            f"c = socket.socket(socket.AF_UNIX); c.connect({str(path)!r}); print('connected')"
        )
        argv = [
            *sandbox.wrapper([str(dirs["work"])], [str(dirs["home"])], []),
            "--",
            "/usr/bin/python3",
            "-c",
            script,
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    # Then its own socket pair works and the listening socket is out of reach
    assert done.stdout.split() == ["pair"], done.stderr
    assert "PermissionError" in done.stderr


def test_a_kernel_without_landlock_refuses_cli_runs_unless_the_sandbox_is_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sandbox, "abi", lambda: 0)
    monkeypatch.delenv(sandbox.MODE_ENV, raising=False)
    reason = confinement.refusal("landlock")
    assert reason and "no Landlock" in reason and "COUNCIL_AGENT_SANDBOX=off" in reason
    monkeypatch.setenv(sandbox.MODE_ENV, "off")
    assert confinement.refusal("off") is None
    # A request compiled under one setting is never run under the other
    assert "compiled with council_sandbox=landlock" in (confinement.refusal("landlock") or "")
    monkeypatch.setenv(sandbox.MODE_ENV, "maybe")
    assert "must be on or off" in (confinement.refusal("landlock") or "")


# ------------------------------------------------------------------ the provider proxy


def test_the_proxy_adds_the_key_for_its_attempt_only_and_forwards_only_the_providers_routes() -> None:
    with (
        fake_anthropic("answer") as (upstream, seen),
        provider_proxy("claude-code", upstream, ("x-api-key", "sk-real")) as proxy,
    ):
        base = proxy.base_url
        head = httpx.head(base + "/", timeout=10)
        call = httpx.post(
            base + "/v1/messages?beta=true",
            headers={"x-api-key": proxy.cli_key, "authorization": f"Bearer {DUMMY_KEY}"},
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": []},
            timeout=10,
        )
        others = [
            httpx.post(base + "/v1/messages", json={}, timeout=10),  # another local process: no key
            httpx.post(base + "/v1/messages", headers={"x-api-key": DUMMY_KEY}, json={}, timeout=10),
            httpx.get(base + "/v1/models", timeout=10),
            httpx.post(base + "/v1/complete", json={}, timeout=10),
            httpx.post(base + "/v1/messages/../../admin", json={}, timeout=10),
        ]
    assert head.status_code == 200
    assert call.status_code == 200 and "message_start" in call.text
    assert [o.status_code for o in others] == [401, 401, 404, 404, 404]
    assert [(r["method"], r["path"]) for r in seen.requests] == [
        ("HEAD", "/"),
        ("POST", "/v1/messages?beta=true"),
    ]
    posted = seen.requests[1]["headers"]
    assert posted["x-api-key"] == "sk-real" and "authorization" not in posted
    assert len(proxy.refused) == 5 and proxy.cli_key.startswith(DUMMY_KEY + "-")


def test_the_proxy_keeps_the_base_urls_path_and_sends_a_bearer_key_to_a_responses_server() -> None:
    with (
        fake_responses("answer") as (upstream, seen),
        provider_proxy("codex-cli", upstream, ("authorization", "Bearer sk-real")) as proxy,
    ):
        assert proxy.base_url.endswith("/v1")
        assert (
            httpx.head(proxy.base_url.removesuffix("/v1") + "/", timeout=10).status_code == 404
        )  # not Codex's
        key = {"authorization": f"Bearer {proxy.cli_key}"}
        ok = httpx.post(proxy.base_url + "/responses", headers=key, json={"input": []}, timeout=10)
        refused = httpx.post(proxy.base_url + "/chat/completions", headers=key, json={}, timeout=10)
    assert ok.status_code == 200 and "response.completed" in ok.text
    assert refused.status_code == 404
    assert [r["headers"]["authorization"] for r in seen.requests] == ["Bearer sk-real"]


@contextmanager
def _slow_stream(released: threading.Event, waited: list[bool]) -> Iterator[str]:
    """An upstream that sends one SSE event, then sends the second only once the client has
    received the first (``released``), or after 20 s; ``waited`` records whether it was released."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(b"event: first\ndata: {}\n\n")
            self.wfile.flush()
            waited.append(released.wait(20))
            self.wfile.write(b"event: second\ndata: {}\n\n")
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_proxy_streams_events_as_they_come() -> None:
    # Given an upstream that holds its second event until the client has the first
    released, waited = threading.Event(), []
    with _slow_stream(released, waited) as upstream, provider_proxy("claude-code", upstream, None) as proxy:
        arrivals: list[str] = []
        # When the client reads the stream through the proxy, releasing the upstream on the first event
        with httpx.stream("POST", proxy.base_url + "/v1/messages", json={}, timeout=30) as answer:
            for line in answer.iter_lines():
                if line.startswith("event:"):
                    arrivals.append(line)
                    released.set()
    # Then both arrived, and the first reached the client before the upstream sent the second
    # (a proxy that buffered the answer would have held the first until the upstream gave up waiting)
    assert arrivals == ["event: first", "event: second"]
    assert waited == [True]


def test_an_unreachable_provider_gets_a_502_at_once_and_the_reason() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{s.getsockname()[1]}"
    with provider_proxy("claude-code", nowhere, ("x-api-key", "sk-real")) as proxy:
        began = time.monotonic()
        answer = httpx.post(
            proxy.base_url + "/v1/messages", headers={"x-api-key": proxy.cli_key}, json={}, timeout=30
        )
        took = time.monotonic() - began
    assert answer.status_code == 502 and took < 5
    assert "provider unreachable" in answer.json()["error"]["message"]
    assert proxy.failure and nowhere in proxy.failure and "sk-real" not in proxy.failure


def test_a_base_url_with_a_path_keeps_it_and_its_host_check_still_passes() -> None:
    with (
        fake_anthropic("answer") as (upstream, seen),
        provider_proxy("claude-code", upstream + "/api/anthropic", ("x-api-key", "sk-real")) as proxy,
    ):
        assert proxy.base_url.endswith("/api/anthropic")
        head = httpx.head(proxy.base_url.removesuffix("/api/anthropic") + "/", timeout=10)
        key = {"x-api-key": proxy.cli_key}
        call = httpx.post(proxy.base_url + "/v1/messages", headers=key, json={}, timeout=10)
        outside = httpx.post(
            proxy.base_url.removesuffix("/api/anthropic") + "/v1/messages", headers=key, json={}
        )
    assert head.status_code == 200 and call.status_code == 200 and outside.status_code == 404
    assert [(r["method"], r["path"]) for r in seen.requests] == [
        ("HEAD", "/"),
        ("POST", "/api/anthropic/v1/messages"),
    ]

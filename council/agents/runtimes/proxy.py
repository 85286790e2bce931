"""The loopback endpoint an agent CLI reaches its provider through (docs/operations/security.md).

    with provider_proxy("claude-code", "https://api.anthropic.com", ("x-api-key", key)) as proxy:
        ...  # the CLI gets ANTHROPIC_BASE_URL=proxy.base_url and a dummy key

One per attempt: a small threaded HTTP server on 127.0.0.1 at an ephemeral
port, living as long as the attempt. Under Council's sandbox the CLI has a network
namespace of its own, where the sandbox listens on 127.0.0.1 at the same port and hands
that listening socket over (:meth:`ProviderProxy.adopt`): the proxy accepts the CLI's
connections there and reaches the provider from the worker's own network. It forwards only the provider's own
routes (``ROUTES``: the Responses call for the Codex CLI; the Messages call,
its token count and the ``HEAD`` connectivity check for Claude Code) to the
real base URL, with the CLI's own credential headers replaced by the real
one, and streams the answer back as it comes (SSE included). Anything else
gets a 404 and is noted; a request without the attempt's own dummy key (a
random one when there is a real key to add) gets a 401, so no other local
process can spend the key while the attempt runs. A provider it cannot reach gets a 502 saying so at
once, and ``failure`` holds the reason, so the attempt stops instead of
letting the CLI retry for minutes. The key stays in this process: the CLI's
environment holds a dummy one.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import secrets
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import httpx

from council.agents.runtimes.registry import cli_driver

DUMMY_KEY = "council-no-key"  # what the CLI holds instead of a key (with a key: and a per-attempt suffix)
MAX_BODY = 32 * 1024 * 1024
ROUTES: dict[str, frozenset[tuple[str, str]]] = {
    # (method, path below the base URL's own path)
    "codex-cli": frozenset({("POST", "/responses")}),
    "claude-code": frozenset(
        {("POST", "/v1/messages"), ("POST", "/v1/messages/count_tokens"), ("HEAD", "/"), ("HEAD", "")}
    ),
}
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_CREDENTIALS = frozenset({"authorization", "x-api-key", "api-key", "cookie"})
_TIMEOUT = httpx.Timeout(connect=10.0, read=600.0, write=60.0, pool=10.0)


class BadUpstream(ValueError):
    """The profile's base URL is not one the proxy can forward to."""


class ProviderProxy:
    """A running proxy: ``base_url`` for the CLI, ``port`` for the sandbox, what it refused,
    and ``failure`` once the provider could not be reached."""

    def __init__(self, runtime: str, upstream: str, credential: tuple[str, str] | None) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadUpstream(f"the profile's api_base is not an http(s) URL (scheme {parts.scheme!r})")
        self.runtime = runtime
        self.upstream_root = f"{parts.scheme}://{parts.netloc}"
        port = f":{parts.port}" if parts.port else ""
        self.shown = f"{parts.scheme}://{parts.hostname}{port}"  # without any user-info, for reasons
        self.prefix = parts.path.rstrip("/")
        self.routes = ROUTES[runtime]
        self.credential = credential
        # With a real key to add, only the attempt's CLI may use it: another local process does
        # not know this (worthless elsewhere) dummy. Without one there is nothing to guard.
        self.cli_key = f"{DUMMY_KEY}-{secrets.token_hex(16)}" if credential is not None else DUMMY_KEY
        self.refused: list[str] = []
        self.failure: str | None = None
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=_TIMEOUT, follow_redirects=False, trust_env=False)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self.base_url = f"http://127.0.0.1:{self.port}{self.prefix}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="council-proxy", daemon=True)
        self._adopted: list[socket.socket] = []
        self._closed = False

    def start(self) -> None:
        self._thread.start()

    def adopt(self, channel: socket.socket) -> None:
        """Serve, too, the listening socket the sandbox sends over ``channel`` (made in the
        CLI's own network namespace), from a thread of its own until the proxy closes."""
        name = "council-proxy-ns"
        threading.Thread(target=self._serve_adopted, args=(channel,), name=name, daemon=True).start()

    def _serve_adopted(self, channel: socket.socket) -> None:
        try:
            _, fds, _, _ = socket.recv_fds(channel, 16, 1)
        except OSError:
            return  # the attempt ended before the sandbox sent one
        if not fds:
            return
        listener = socket.socket(fileno=fds[0])
        with self._lock:
            if self._closed:
                listener.close()
                return
            self._adopted.append(listener)
        while True:
            try:
                conn, address = listener.accept()
            except OSError:
                return  # closed with the proxy
            self._server.process_request(conn, address)  # a thread per connection, as its own

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for listener in self._adopted:
                with contextlib.suppress(OSError):
                    listener.shutdown(socket.SHUT_RDWR)
                listener.close()
        self._server.shutdown()
        self._server.server_close()
        self._client.close()
        self._thread.join(5)

    def route(self, method: str, target: str) -> str | None:
        """The upstream URL for a request, or None when it is not one of the provider's routes."""
        path, _, query = target.partition("?")
        if method == "HEAD" and path == "/" and ("HEAD", "/") in self.routes:
            return self.upstream_root + "/"  # a connectivity check of the host, whatever the base path
        if not path.startswith(self.prefix):
            return None
        if (method, path[len(self.prefix) :]) not in self.routes:
            return None
        return self.upstream_root + path + (f"?{query}" if query else "")

    def admits(self, method: str, headers: Any) -> bool:
        """Whether the request carries the attempt's dummy key (a HEAD check needs none)."""
        if self.credential is None or method == "HEAD":
            return True
        given = headers.get("x-api-key") or (headers.get("authorization") or "").removeprefix("Bearer ")
        return hmac.compare_digest(given.strip().encode(), self.cli_key.encode())

    def note_refused(self, method: str, target: str) -> None:
        with self._lock:
            if len(self.refused) < 20:
                self.refused.append(f"{method} {target.partition('?')[0][:200]}")

    def note_failure(self, reason: str) -> None:
        with self._lock:
            self.failure = self.failure or reason


@contextmanager
def provider_proxy(
    runtime: str, upstream: str, credential: tuple[str, str] | None
) -> Iterator[ProviderProxy]:
    proxy = ProviderProxy(runtime, upstream, credential)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.close()


def credential_header(runtime: str, key: str) -> tuple[str, str] | None:
    """The header carrying ``key`` to the runtime's provider (None: no key)."""
    if not key:
        return None
    return cli_driver(runtime).credential_header(key)


def _handler(proxy: ProviderProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self._forward()

        def do_HEAD(self) -> None:
            self._forward()

        def do_GET(self) -> None:
            self._forward()

        def _forward(self) -> None:
            self.close_connection = True
            url = proxy.route(self.command, self.path)
            if url is None:
                proxy.note_refused(self.command, self.path)
                self._error(
                    404, f"council proxy: {self.command} {self.path.partition('?')[0]} is not forwarded"
                )
                return
            if not proxy.admits(self.command, self.headers):
                proxy.note_refused(self.command, self.path + " (without the attempt's key)")
                self._error(401, "council proxy: this endpoint serves one agent attempt only")
                return
            body = self._body()
            if body is None:
                self._error(413, "council proxy: request body too large or malformed")
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP | _CREDENTIALS}
            if proxy.credential is not None:
                headers[proxy.credential[0]] = proxy.credential[1]
            try:
                request = proxy._client.build_request(self.command, url, headers=headers, content=body)
                upstream = proxy._client.send(request, stream=True)
            except httpx.HTTPError as exc:
                reason = f"provider unreachable at {proxy.shown}: {type(exc).__name__}: {exc}"
                proxy.note_failure(reason)
                self._error(502, f"council proxy: {reason}")
                return
            try:
                self.send_response(upstream.status_code)
                for name, value in upstream.headers.multi_items():
                    if name.lower() not in _HOP:
                        self.send_header(name, value)
                if "content-length" in upstream.headers and self.command != "HEAD":
                    self.send_header("content-length", upstream.headers["content-length"])
                self.send_header("connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    for chunk in upstream.iter_raw():
                        self.wfile.write(chunk)
                        self.wfile.flush()
            except (httpx.HTTPError, OSError):
                pass  # the provider or the CLI hung up mid-answer: the CLI sees a cut stream
            finally:
                upstream.close()

        def _body(self) -> bytes | None:
            if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
                return self._chunked()
            try:
                length = int(self.headers.get("content-length") or 0)
            except ValueError:
                return None
            if length < 0 or length > MAX_BODY:
                return None
            return self.rfile.read(length) if length else b""

        def _chunked(self) -> bytes | None:
            data = bytearray()
            while True:
                line = self.rfile.readline(100)
                try:
                    size = int(line.split(b";")[0].strip() or b"x", 16)
                except ValueError:
                    return None
                if size == 0:
                    while self.rfile.readline(1000).strip():
                        pass
                    return bytes(data)
                if len(data) + size > MAX_BODY:
                    return None
                data += self.rfile.read(size)
                self.rfile.readline(10)

        def _error(self, status: int, message: str) -> None:
            document = cli_driver(proxy.runtime).error_document(status, message)
            data = json.dumps(document).encode("utf-8")
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # the attempt's trace says what matters
            pass

    return Handler

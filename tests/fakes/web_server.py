"""A local HTTP server for the evidence-fetching tests: pages, redirects, and
pathological servers that drip their answer a byte at a time."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Site:
    """What the server answers, and what it was asked."""

    pages: dict[str, bytes] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    # Answers with headers of their own: path -> (headers, body as sent).
    answers: dict[str, tuple[dict[str, str], bytes]] = field(default_factory=dict)
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Authorization)
    stop: threading.Event = field(default_factory=threading.Event)


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            site.requests.append((self.path, self.headers.get("Authorization")))
            if self.path in site.redirects:
                self.send_response(302)
                self.send_header("Location", site.redirects[self.path])
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/drip-body":  # headers at once, then a byte a second, forever
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(10**6))
                self.end_headers()
                self._drip(b"x" * 10**6)
            elif self.path == "/drip-headers":  # not even the status line at once
                self._drip(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Padding: " + b"y" * 10**6)
            elif self.path in site.answers:
                headers, sent = site.answers[self.path]
                self.send_response(200)
                for name, value in {**headers, "Content-Length": str(len(sent))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(sent)
            elif self.path in site.pages:
                body = site.pages[self.path]
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        def _drip(self, data: bytes) -> None:
            for i in range(len(data)):
                if site.stop.wait(1.0):
                    return
                try:
                    self.wfile.write(data[i : i + 1])
                    self.wfile.flush()
                except OSError:  # the client gave up
                    return

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serving(site: Site, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``site`` on a free port of ``host``; yields the base URL."""
    server = ThreadingHTTPServer((host, 0), _handler(site))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        site.stop.set()
        server.shutdown()
        server.server_close()

"""A TCP proxy the soak controls: a worker reaches Postgres or Redis only through it,
so the nemesis can partition that one worker from that one server.

Three states:

- ``up``: bytes flow both ways.
- ``drop``: every open connection is reset and a new one is accepted and reset at
  once (the peer is refused; the worker sees connection errors at once).
- ``stall``: nothing flows, in either direction, on old connections or new ones
  (a blackhole: the worker's reads hang until its own timeouts). Bytes stay in
  the proxy; when the partition heals they flow again, late — a worker's write
  can reach the database long after its lease ran out.

Threads only (the soak runs a few dozen connections); each listener binds
127.0.0.1 on a free port.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from dataclasses import dataclass, field

_LINGER_RST = struct.pack("ii", 1, 0)  # close() sends RST, not FIN


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Proxy:
    name: str
    upstream_port: int
    port: int = 0
    state: str = "up"
    _listener: socket.socket | None = None
    _pairs: list[tuple[socket.socket, socket.socket]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _flow: threading.Condition = field(default_factory=threading.Condition)
    _closed: bool = False
    connections: int = 0

    def start(self) -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", self.port))
        self.port = self._listener.getsockname()[1]
        self._listener.listen(128)
        threading.Thread(target=self._accept, name=f"proxy-{self.name}", daemon=True).start()

    def set_state(self, state: str) -> None:
        if state not in ("up", "drop", "stall"):
            raise ValueError(state)
        if state == "drop":  # reset before the waiters wake: bytes a stall held are never sent
            self._reset_all()
        with self._flow:
            self.state = state
            self._flow.notify_all()
        if state == "drop":  # and any connection accepted in between
            self._reset_all()

    def _reset_all(self) -> None:
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for a, b in pairs:
            _reset(a)
            _reset(b)

    def close(self) -> None:
        self._closed = True
        if self._listener is not None:
            self._listener.close()
        self.set_state("drop")

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.state == "drop":
                _reset(client)
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
                upstream.settimeout(None)
            except OSError:  # the server is down: the client is refused, as it would be
                _reset(client)
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._pairs.append((client, upstream))
                self.connections += 1
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        while True:
            self._wait_flow()
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if data:
                self._wait_flow()  # read before a stall began: held until it ends
                try:
                    dst.sendall(data)
                    continue
                except OSError:
                    pass
            _reset(src)
            _reset(dst)
            with self._lock:
                if (src, dst) in self._pairs:
                    self._pairs.remove((src, dst))
                if (dst, src) in self._pairs:
                    self._pairs.remove((dst, src))
            return

    def _wait_flow(self) -> None:
        with self._flow:
            while self.state == "stall" and not self._closed:
                self._flow.wait(0.5)


def _reset(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
    with contextlib.suppress(OSError):  # wakes a thread blocked in recv on it (close alone would not)
        s.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        s.close()

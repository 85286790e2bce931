"""Fetching a URL for evidence, within a total deadline and to public addresses only
(docs/architecture.md §11).

- One deadline covers the whole fetch: name resolution, every connection,
  TLS handshake, redirect and read. Every socket operation waits at most for
  what is left of it, so a server that drips a byte a second is cut off at the
  deadline, not after a per-read timeout that each byte renews.
- Every host — the first and each redirect's — is resolved here and every
  address it resolves to must be public (not loopback, private, link-local,
  shared, reserved, multicast or unspecified, nor an IPv6 address carrying
  such an IPv4 one: mapped, compatible, NAT64, 6to4, Teredo) unless private
  addresses are allowed; the connection then goes to the checked address, so a second
  resolution cannot swap in another (DNS rebinding).
- No proxy from the environment and no .netrc: what is fetched is what was asked.

- The body is capped as it streams, after its content codings are undone a step at a
  time (``council.adapters.content_coding``): a small body that inflates to
  gigabytes is cut off at the cap, having held little more than the cap.

httpx does the HTTP (redirects); its connections are made through
the network backend below, which is where both rules are enforced.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from council.adapters import content_coding
from council.errors import BadInput

MAX_REDIRECTS = 5


@dataclass(frozen=True)
class Fetched:
    body: bytes
    media_type: str
    encoding: str


class PrivateAddress(BadInput):
    """The URL (or a redirect) leads to an address that is not public."""


class TooLarge(Exception):
    """The body grew past the cap."""


def fetch(url: str, *, timeout_s: float, allow_private: bool, max_bytes: int) -> Fetched:
    """GET ``url``; raises ``httpx.HTTPError`` (deadline, network, status, redirects),
    ``PrivateAddress`` or ``TooLarge``."""
    deadline = _Deadline(timeout_s)
    transport = _Transport(_Backend(deadline, allow_private))
    with (
        httpx.Client(
            transport=transport,
            follow_redirects=True,
            max_redirects=MAX_REDIRECTS,
            timeout=timeout_s,
            trust_env=False,
            headers={"Accept-Encoding": "identity"},  # the cap counts what the server sends
        ) as client,
        client.stream("GET", url) as response,
    ):
        response.raise_for_status()
        body = _bounded_body(response, deadline, max_bytes)
        media_type = response.headers.get("content-type", "text/plain").split(";")[0].strip()
        return Fetched(body, media_type, response.charset_encoding or "utf-8")


def _bounded_body(response: httpx.Response, deadline: _Deadline, max_bytes: int) -> bytes:
    """The body with its content codings undone, counted as it streams: the bytes sent and
    the bytes they decode to each stop at ``max_bytes``, and the deadline holds throughout
    (decoding included)."""
    sent = 0

    def raw() -> Iterator[bytes]:
        nonlocal sent
        for chunk in response.iter_raw():
            sent += len(chunk)
            if sent > max_bytes:
                raise TooLarge(f"the body exceeds {max_bytes} bytes as sent")
            yield chunk

    chunks: list[bytes] = []
    total = 0
    try:
        for piece in content_coding.decoded(raw(), response.headers.get("content-encoding")):
            deadline.left()
            total += len(piece)
            if total > max_bytes:
                raise TooLarge(f"the body exceeds {max_bytes} bytes once decoded")
            chunks.append(piece)
    except content_coding.UnsupportedCoding as exc:
        raise httpx.DecodingError(str(exc)) from None
    except httpcore.ReadTimeout as exc:  # the deadline passed while decoding
        raise httpx.ReadTimeout(str(exc)) from None
    return b"".join(chunks)


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._at = time.monotonic() + seconds

    def left(self, timeout: float | None = None) -> float:
        """What is left of the deadline (at most ``timeout``); ReadTimeout once it passed."""
        left = self._at - time.monotonic()
        if left <= 0:
            raise httpcore.ReadTimeout(f"the whole fetch took longer than {self.seconds:g} s")
        return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, deadline: _Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadline.left(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        wrapped = self._inner.start_tls(ssl_context, server_hostname, self._deadline.left(timeout))
        return _Stream(wrapped, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, deadline: _Deadline, allow_private: bool) -> None:
        self._inner = httpcore.SyncBackend()
        self._deadline = deadline
        self._allow_private = allow_private

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = _resolve(host, port, self._deadline.left(timeout))
        if not self._allow_private:
            private = [a for a in addresses if not _public(a)]
            if private:
                raise PrivateAddress(
                    f"refusing to fetch from {host}: it resolves to a non-public address ({private[0]}); "
                    "--allow-private allows it"
                )
        failure: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        for address in addresses:
            try:
                stream = self._inner.connect_tcp(
                    address, port, self._deadline.left(timeout), local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
                continue
            return _Stream(stream, self._deadline)
        assert failure is not None  # _resolve returns at least one address
        raise failure

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("evidence is not fetched over Unix sockets")


class _Transport(httpx.HTTPTransport):
    """httpx's transport over a pool whose connections go through ``backend``
    (httpx takes no network backend of its own; its pool is replaced)."""

    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False), network_backend=backend
        )


def _resolve(host: str, port: int, timeout: float) -> list[str]:
    """Every address of ``host``, resolved within ``timeout`` (getaddrinfo has no
    timeout of its own, so it runs in a daemon thread that may be abandoned)."""
    found: list[list[str]] = []
    failed: list[OSError] = []

    def resolve() -> None:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            found.append(list(dict.fromkeys(str(info[4][0]) for info in infos)))
        except OSError as exc:
            failed.append(exc)

    worker = threading.Thread(target=resolve, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise httpcore.ConnectTimeout(f"resolving {host} took longer than the deadline")
    if failed or not found or not found[0]:
        raise httpcore.ConnectError(f"cannot resolve {host}: {failed[0] if failed else 'no address'}")
    return found[0]


def _public(address: str) -> bool:
    """Whether ``address`` is public. An IPv6 address that carries an IPv4 one (mapped,
    compatible, NAT64, 6to4, Teredo) is public only if every IPv4 address it carries is:
    a gateway would otherwise take the request to a private IPv4 address."""
    ip = ipaddress.ip_address(address)
    if not (ip.is_global and not ip.is_multicast):
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        return all(_public(str(v4)) for v4 in _embedded(ip))
    return True


_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def _embedded(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries, by the standard embeddings."""
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    found: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip in _IPV4_COMPATIBLE or any(ip in net for net in _NAT64):
        found.append(low32)
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    return found

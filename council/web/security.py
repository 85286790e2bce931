"""The HTTP API's guard: ``council.httpguard`` (tokens, the Host allow-list, the
body bound — docs/architecture.md §11), shared with ``council mcp --http``."""

from __future__ import annotations

from council.httpguard import (
    ALLOWED_HOSTS_ENV,
    ANY_ADDRESS,
    DEFAULT_MAX_BODY_BYTES,
    LOOPBACK_HOSTS,
    MAX_BODY_ENV,
    READ_TOKEN_ENV,
    TOKEN_ENV,
    Grant,
    Guard,
    Policy,
    Refusal,
    allowed_hosts,
    hostname,
)

__all__ = [
    "ALLOWED_HOSTS_ENV",
    "ANY_ADDRESS",
    "DEFAULT_MAX_BODY_BYTES",
    "LOOPBACK_HOSTS",
    "MAX_BODY_ENV",
    "READ_TOKEN_ENV",
    "TOKEN_ENV",
    "Grant",
    "Guard",
    "Policy",
    "Refusal",
    "allowed_hosts",
    "hostname",
]

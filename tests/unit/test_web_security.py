"""The HTTP access policy as a value (council/web/security.py): what each token
grants, which Host names are answered, how the environment configures it."""

from __future__ import annotations

import pytest

from council.errors import ConfigError
from council.web.security import DEFAULT_MAX_BODY_BYTES, Policy, allowed_hosts, hostname

BOTH = Policy(write_token="w-token", read_token="r-token")


@pytest.mark.parametrize(
    ("token", "write", "status"),
    [
        ("w-token", True, None),
        ("w-token", False, None),
        ("r-token", False, None),
        ("r-token", True, 403),
        ("r-token-", False, 401),
        ("w-toke", True, 401),
        ("", False, 401),
        (None, False, 401),
        ("wörter", True, 401),  # a non-ASCII header value is compared, not an error
    ],
)
def test_what_each_token_may_do(token: str | None, write: bool, status: int | None) -> None:
    refusal = BOTH.refusal(token, write=write)
    assert (refusal.status if refusal else None) == status


def test_without_tokens_reads_are_open_and_writes_refused() -> None:
    none = Policy()
    assert none.refusal(None, write=False) is None
    refusal = none.refusal("anything", write=True)
    assert refusal is not None and refusal.status == 401 and "COUNCIL_API_TOKEN" in refusal.detail
    assert refusal.headers == {"WWW-Authenticate": "Bearer"}


def test_a_read_token_alone_guards_reads_and_still_refuses_writes() -> None:
    read_only = Policy(read_token="r-token")
    assert read_only.reads_guarded
    assert read_only.refusal("r-token", write=False) is None
    assert read_only.refusal(None, write=False) is not None
    refusal = read_only.refusal("r-token", write=True)
    assert refusal is not None and refusal.status == 401


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:8787", "127.0.0.1"),
        ("LocalHost", "localhost"),
        ("localhost.:80", "localhost"),
        ("[::1]:8787", "[::1]"),
        ("[::1]", "[::1]"),
        ("council.example:443", "council.example"),
    ],
)
def test_a_host_header_names_its_host_without_the_port(header: str, name: str) -> None:
    assert hostname(header) == name


def test_allowed_hosts_are_loopback_the_bound_host_and_the_configured_names() -> None:
    hosts = allowed_hosts(["council.example", " Other.Example:8443 ", ""], bound_host="10.0.0.5")
    assert hosts == {"127.0.0.1", "localhost", "[::1]", "10.0.0.5", "council.example", "other.example"}
    # A wildcard bind names no host; an IPv6 bind is bracketed as a Host header writes it
    assert allowed_hosts([], bound_host="0.0.0.0") == {"127.0.0.1", "localhost", "[::1]"}
    assert "[fd00::5]" in (allowed_hosts([], bound_host="fd00::5") or set())
    # And a star turns the check off
    assert allowed_hosts(["*"]) is None
    assert Policy(allowed_hosts=None).host_allowed("anything.example")


def test_a_policy_refuses_other_hosts_and_a_missing_header() -> None:
    policy = Policy()
    assert policy.host_allowed("localhost:8787") and policy.host_allowed("[::1]:1")
    assert not policy.host_allowed("attacker.example")
    assert not policy.host_allowed("127.0.0.1.attacker.example")
    assert not policy.host_allowed(None)


def test_the_environment_configures_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COUNCIL_API_TOKEN", " w ")
    monkeypatch.setenv("COUNCIL_API_READ_TOKEN", "")
    monkeypatch.setenv("COUNCIL_ALLOWED_HOSTS", "council.example")
    monkeypatch.setenv("COUNCIL_API_MAX_BODY_BYTES", "1024")
    policy = Policy.from_env(bound_host="127.0.0.1")
    assert (policy.write_token, policy.read_token, policy.max_body_bytes) == ("w", None, 1024)
    assert policy.host_allowed("council.example")
    monkeypatch.delenv("COUNCIL_API_MAX_BODY_BYTES")
    assert Policy.from_env().max_body_bytes == DEFAULT_MAX_BODY_BYTES > 5 * 1024 * 1024
    for bad in ("0", "-1", "5MB", "1e6"):
        monkeypatch.setenv("COUNCIL_API_MAX_BODY_BYTES", bad)
        with pytest.raises(ConfigError, match="COUNCIL_API_MAX_BODY_BYTES"):
            Policy.from_env()

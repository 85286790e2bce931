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
    monkeypatch.setenv("COUNCIL_API_TOKEN", " write-token-0123456789 ")
    monkeypatch.setenv("COUNCIL_API_READ_TOKEN", "")
    monkeypatch.setenv("COUNCIL_ALLOWED_HOSTS", "council.example")
    monkeypatch.setenv("COUNCIL_API_MAX_BODY_BYTES", "1024")
    policy = Policy.from_env(bound_host="127.0.0.1")
    assert (policy.write_token, policy.read_token, policy.max_body_bytes) == (
        "write-token-0123456789",
        None,
        1024,
    )
    assert policy.host_allowed("council.example")
    monkeypatch.delenv("COUNCIL_API_MAX_BODY_BYTES")
    assert Policy.from_env().max_body_bytes == DEFAULT_MAX_BODY_BYTES > 5 * 1024 * 1024
    for bad in ("0", "-1", "5MB", "1e6"):
        monkeypatch.setenv("COUNCIL_API_MAX_BODY_BYTES", bad)
        with pytest.raises(ConfigError, match="COUNCIL_API_MAX_BODY_BYTES"):
            Policy.from_env()


def test_a_token_too_short_to_be_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("COUNCIL_API_TOKEN", "COUNCIL_API_READ_TOKEN"):
        monkeypatch.setenv(variable, "fifteen-chars-x")
        with pytest.raises(ConfigError, match=f"{variable} is 15 characters"):
            Policy.from_env()
        monkeypatch.setenv(variable, "sixteen-chars-xx")
        assert Policy.from_env().reads_guarded
        monkeypatch.setenv(variable, "   ")  # blank counts as none
        assert not Policy.from_env().reads_guarded


def test_a_query_string_carrying_a_credential_is_recognised() -> None:
    policy = Policy(write_token="write-token-0123456789", read_token="read-token-0123456789")
    assert policy.token_in_query(b"access_token=x")
    assert policy.token_in_query(b"a=1&Token=")
    assert policy.token_in_query(b"q=read-token-0123456789")
    assert not policy.token_in_query(b"limit=5&thread=abc")
    assert not policy.token_in_query(b"")


def test_the_access_log_drops_query_strings() -> None:
    import logging

    from council.httpguard import QueryFreeAccessLog

    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:1", "GET", "/threads?token=secret-value", "1.1", 400), None,
    )  # fmt: skip
    assert QueryFreeAccessLog().filter(record)
    assert record.getMessage() == '127.0.0.1:1 - "GET /threads HTTP/1.1" 400'


def test_worker_metrics_need_the_token_it_was_given_and_a_token_off_loopback() -> None:
    import httpx

    from council import metrics

    with pytest.raises(ValueError, match="COUNCIL_API_READ_TOKEN"):
        metrics.serve(0, "0.0.0.0")
    token = "metrics-token-0123456789"
    port = metrics.serve(0, "127.0.0.1", token)
    url = f"http://127.0.0.1:{port}/metrics"
    assert httpx.get(url).status_code == 401
    assert httpx.get(url, headers={"Authorization": "Bearer wrong-token-0123456789"}).status_code == 401
    scraped = httpx.get(url, headers={"Authorization": f"Bearer {token}"})
    assert scraped.status_code == 200 and "council_runs" in scraped.text

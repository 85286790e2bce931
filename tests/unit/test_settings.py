"""council.settings: every variable parsed once into a frozen Settings, a bad value refused
with one line naming the variable (never repeating a password), secrets kept out of its
repr, and the installed settings being what the rest of Council reads."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from council import settings as council_settings
from council.domain.retry import RetryPolicy
from council.errors import ConfigError
from council.settings import Settings, child_environment, export, install, settings


def test_an_empty_environment_gives_the_defaults() -> None:
    read = Settings.from_environ({})
    assert read.database_url is None and read.broker_url is None and read.home is None
    assert read.retry == RetryPolicy()
    assert read.run_lease_s == 300.0 and read.mark_ttl_s == 300
    assert (read.sweep_every_s, read.reverify_every_s, read.sweep_stale_s) == (30.0, 60.0, 300.0)
    assert (read.evaluation_batch, read.evaluation_delay_s) == (50, 0.0)
    assert not read.offline and not read.debug and read.metrics_addr == "127.0.0.1"


def test_values_are_parsed_into_their_types(tmp_path: Path) -> None:
    read = Settings.from_environ(
        {
            "COUNCIL_HOME": str(tmp_path),
            "COUNCIL_RETRY_MAX": "4",
            "COUNCIL_RETRY_CAP_S": "4",
            "COUNCIL_RUN_LEASE_S": "6",
            "COUNCIL_DB_POOL_SIZE": "12",
            "COUNCIL_WEB_PORT": "8790",
            "COUNCIL_OFFLINE": "1",
            "COUNCIL_ALLOWED_HOSTS": "a.example,b.example",
            "COUNCIL_EVALUATION_BATCH": "0",
        }
    )
    assert read.home == tmp_path.resolve()
    assert (read.retry.max_retries, read.retry.cap_s) == (4, 4.0)
    assert read.run_lease_s == 6.0 and read.mark_ttl_s == 6  # the mark lives one lease by default
    assert (read.db_pool_size, read.web_port, read.offline) == (12, 8790, True)
    assert read.allowed_hosts == ("a.example", "b.example")
    assert read.evaluation_batch == 1  # at least one version a message


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("COUNCIL_RETRY_MAX", "1.5", "COUNCIL_RETRY_MAX must be a whole number from 0 to 100"),
        ("COUNCIL_RETRY_BASE_S", "soon", "COUNCIL_RETRY_BASE_S must be a number, got 'soon'"),
        ("COUNCIL_RUN_LEASE_S", "0.5", "COUNCIL_RUN_LEASE_S must be at least 1 s"),
        ("COUNCIL_MARK_TTL_S", "0", "COUNCIL_MARK_TTL_S must be at least 1 s"),
        ("COUNCIL_DB_POOL_SIZE", "lots", "COUNCIL_DB_POOL_SIZE must be a whole number, got 'lots'"),
        ("COUNCIL_EVENT_POLL_S", "0", "COUNCIL_EVENT_POLL_S must be more than 0 s"),
        ("COUNCIL_SWEEP_EVERY_S", "-3", "COUNCIL_SWEEP_EVERY_S must be a number of at least 0, got '-3'"),
        ("COUNCIL_EVIDENCE_TOOL_TURNS", "17", "COUNCIL_EVIDENCE_TOOL_TURNS must be between 1 and 16"),
        (
            "COUNCIL_INLINE_EVIDENCE_TOKENS",
            "inf",
            "INLINE_EVIDENCE_TOKENS must be a number of at least 0",
        ),
        ("COUNCIL_WEB_PORT", "70000", "COUNCIL_WEB_PORT must be a TCP port number, got '70000'"),
        ("COUNCIL_METRICS_PORT", "x", "COUNCIL_METRICS_PORT must be a TCP port number, got 'x'"),
        ("COUNCIL_API_MAX_BODY_BYTES", "0", "COUNCIL_API_MAX_BODY_BYTES must be a positive number of bytes"),
        ("COUNCIL_FETCH_TIMEOUT_S", "nan", "COUNCIL_FETCH_TIMEOUT_S must be a positive number of seconds"),
        ("COUNCIL_DATABASE_URL", "mysql://db/x", "COUNCIL_DATABASE_URL is not a Postgres URL"),
    ],
)
def test_a_bad_value_is_refused_naming_its_variable(variable: str, value: str, reason: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_environ({variable: value})
    assert reason in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    "variable", ["COUNCIL_DATABASE_URL", "COUNCIL_MIGRATE_DATABASE_URL", "COUNCIL_DASHBOARD_DATABASE_URL"]
)
def test_a_malformed_database_url_is_refused_without_its_password(variable: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_environ({variable: "postgresql://council:pw-s3cret-0123@db:notaport/council"})
    assert str(refused.value).startswith(f"{variable} is malformed")
    assert "pw-s3cret-0123" not in str(refused.value)


def test_secrets_stay_out_of_the_repr() -> None:
    read = Settings.from_environ(
        {
            "COUNCIL_DATABASE_URL": "postgresql://council:db-password-0123@db/council",
            "COUNCIL_BROKER_URL": "redis://:broker-password-0123@redis:6379/0",
            "COUNCIL_API_TOKEN": "write-token-0123456789",
            "COUNCIL_API_READ_TOKEN": "read-token-0123456789",
            "OPENAI_API_KEY": "sk-provider-key-0123456789",
        }
    )
    shown = repr(read) + str(read)
    for secret in ("db-password-0123", "broker-password-0123", "write-token", "read-token", "sk-provider"):
        assert secret not in shown
    assert read.variable("OPENAI_API_KEY") == "sk-provider-key-0123456789"  # still there to use


def test_settings_are_frozen() -> None:
    read = Settings.from_environ({})
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.run_lease_s = 1.0  # type: ignore[misc]


def test_the_installed_settings_are_read_until_bootstrap_reads_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from council.bootstrap import bootstrap_settings

    monkeypatch.setenv("COUNCIL_RUN_LEASE_S", "7")
    assert settings().run_lease_s == 7.0  # nothing installed: the environment as it is now
    bootstrap_settings()
    monkeypatch.setenv("COUNCIL_RUN_LEASE_S", "9")
    assert settings().run_lease_s == 7.0  # read once, at bootstrap
    assert bootstrap_settings().run_lease_s == 9.0
    install(None)
    monkeypatch.setenv("COUNCIL_RUN_LEASE_S", "11")
    assert settings().run_lease_s == 11.0


def test_export_sets_a_variable_for_a_library_and_the_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from council.bootstrap import bootstrap_settings

    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    bootstrap_settings()
    monkeypatch.setattr(os, "environ", dict(os.environ))  # undone after the test, export's write too
    export("PROMETHEUS_MULTIPROC_DIR", "/tmp/council-metrics")
    assert settings().metrics_dir == "/tmp/council-metrics"
    export("PROMETHEUS_MULTIPROC_DIR", "/elsewhere", overwrite=False)
    assert settings().metrics_dir == "/tmp/council-metrics"


def test_a_child_environment_is_a_copy_with_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("COUNCIL_HOME", "/parent")
    env = child_environment(COUNCIL_HOME="/child")
    assert env["COUNCIL_HOME"] == "/child" and env["LANG"] == "C.UTF-8"
    assert os.environ["COUNCIL_HOME"] == "/parent"
    assert child_environment(("LANG", "NOT_SET_ANYWHERE")) == {"LANG": "C.UTF-8"}


def test_snapshot_works_when_a_value_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Redaction reads the unparsed variables: it must work while a bad value is reported."""
    monkeypatch.setenv("COUNCIL_RUN_LEASE_S", "never")
    monkeypatch.setenv("COUNCIL_API_TOKEN", "token-to-hide-0123456789")
    with pytest.raises(ConfigError):
        settings()
    assert council_settings.snapshot()["COUNCIL_API_TOKEN"] == "token-to-hide-0123456789"


def test_the_cli_refuses_a_bad_variable_in_one_line_with_exit_2(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(COUNCIL_HOME=str(tmp_path), COUNCIL_RUN_LEASE_S="0")
    done = subprocess.run(
        [sys.executable, "-m", "council.cli", "profiles", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done
    assert done.stderr.strip().count("\n") == 0 and "COUNCIL_RUN_LEASE_S must be at least 1 s" in done.stderr

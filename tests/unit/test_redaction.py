"""Known secrets are taken out of stored text in every common encoding (issue 30 §4)."""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from council.domain.redaction import Redactor
from council.known_secrets import known_secrets, redact

SECRET = "sk-live-Q8zt0pW3/+=x9"


def _copies(secret: str) -> list[str]:
    raw = secret.encode()
    copies = [secret, raw.hex(), raw.hex().upper(), quote(secret, safe=""), quote_plus(secret)]
    for before in ("", "a", "ab", "Authorization: Bearer "):  # each base64 alignment, inside a longer text
        for after in ("", "z", "zz"):
            whole = (before + secret + after).encode()
            copies += [base64.b64encode(whole).decode(), base64.urlsafe_b64encode(whole).decode().rstrip("=")]
    return copies


@pytest.mark.parametrize("copy", _copies(SECRET))
def test_every_encoded_copy_is_redacted(copy: str) -> None:
    shown = Redactor([SECRET]).redact(f"before {copy} after")
    assert "***" in shown and shown.startswith("before ") and shown.endswith(" after")
    assert SECRET not in shown and SECRET.encode().hex() not in shown.lower()


def test_short_values_and_ordinary_text_are_left_alone() -> None:
    redactor = Redactor(["1234", SECRET])
    assert redactor.redact("port 1234, nothing else") == "port 1234, nothing else"
    assert not Redactor([])


def test_known_secrets_come_from_secret_named_variables_urls_and_the_state_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("COUNCIL_API_TOKEN", "OPENAI_API_KEY", "COUNCIL_DATABASE_URL", "COUNCIL_BROKER_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    monkeypatch.setenv("COUNCIL_API_TOKEN", "council-token-0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-0123456789")
    monkeypatch.setenv("COUNCIL_DATABASE_URL", "postgresql://council:pg-password-0123@db/council")
    (tmp_path / "stack.json").write_text('{"broker_url": "redis://:redis-password-0123@127.0.0.1:6379/0"}')
    found = known_secrets()
    expected = {"council-token-0123456789", "sk-openai-0123456789", "pg-password-0123", "redis-password-0123"}
    assert expected <= found
    text = "sk-openai-0123456789 " + base64.b64encode(b"redis-password-0123").decode()
    assert redact(text) == "*** ***"

"""Known secrets are taken out of stored text in every common encoding (issue 30 §4)."""

from __future__ import annotations

import base64
import html
import json
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


def test_known_secrets_are_the_known_ones_by_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Given a profiles file naming its own key variable, Council's token, a database URL and
    # a state file, beside variables whose names merely look secret
    for name in ("COUNCIL_API_TOKEN", "OPENAI_API_KEY", "COUNCIL_DATABASE_URL", "COUNCIL_BROKER_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    (tmp_path / "profiles.toml").write_text(
        '[profiles.local]\nmodel = "openai/m"\napi_key_env = "MY_LOCAL_KEY"\napi_base = "http://x"\n'
    )
    monkeypatch.setenv("MY_LOCAL_KEY", "local-key-0123456789")
    monkeypatch.setenv("COUNCIL_API_TOKEN", "council-token-0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-0123456789")
    monkeypatch.setenv("COUNCIL_DATABASE_URL", "postgresql://council:pg-password-0123@db/council")
    (tmp_path / "stack.json").write_text('{"broker_url": "redis://:redis-password-0123@127.0.0.1:6379/0"}')
    monkeypatch.setenv("PWD", "/home/someone/projects/council")
    monkeypatch.setenv("SOME_SERVICE_PASSWORD", "not-ours-0123456789")
    # Then the known secrets are those, each named for what it is
    assert known_secrets() == {
        "local-key-0123456789": "MY_LOCAL_KEY",
        "council-token-0123456789": "COUNCIL_API_TOKEN",
        "sk-openai-0123456789": "OPENAI_API_KEY",
        "pg-password-0123": "the password in COUNCIL_DATABASE_URL",
        "redis-password-0123": "a password of the embedded stack (stack.json)",
    }
    # And what only looks secret by its name is left alone: the current directory is no secret
    text = "sk-openai-0123456789 " + base64.b64encode(b"redis-password-0123").decode()
    assert redact(text) == "*** ***"
    assert redact("cd /home/someone/projects/council && PATH=/usr/bin") == (
        "cd /home/someone/projects/council && PATH=/usr/bin"
    )


def _json_escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


@pytest.mark.parametrize(
    "copy",
    [
        _json_escaped(SECRET),  # every character a JSON \u escape
        "sk-live-" + _json_escaped("Q8zt0pW3") + "/+=x9",  # mixed with plain characters
        SECRET.replace("/", "\\/"),  # JSON's escaped solidus
        "".join(f"&#{ord(c)};" for c in SECRET),  # HTML decimal references
        "".join(f"&#x{ord(c):x}" for c in SECRET),  # hexadecimal, no semicolons
        "".join(f"\\u0026#{ord(c)};" for c in SECRET),  # a reference inside a JSON escape
        "".join(f"%{ord(c):02X}" if c.isalpha() else c for c in SECRET),  # partly URL-encoded
    ],
)
def test_a_secret_is_found_in_what_a_reader_decodes(copy: str) -> None:
    # Given a model's answer carrying the secret in a form a reader decodes
    answer = json.dumps({"rationale": "see"})[:-2] + copy + '", "n": 1}'
    redactor = Redactor({SECRET: "OPENAI_API_KEY"})
    # Then it is found, and named
    assert redactor.found(answer) == "OPENAI_API_KEY"
    # And redacted where it stands: the answer is still the same JSON, without the secret
    shown = redactor.redact(answer)
    assert json.loads(shown) == {"rationale": "see***", "n": 1}, shown
    assert SECRET not in html.unescape(json.loads(shown)["rationale"])


def test_text_without_a_known_secret_comes_back_unchanged() -> None:
    redactor = Redactor({SECRET: "OPENAI_API_KEY"})
    for text in ("a \\u0041 b &#65; %41 &amp; \\n", json.dumps({"é": "/tmp/x", "q": '"'}), "sk-live-Q8"):
        assert redactor.found(text) is None
        assert redactor.redact(text) == text

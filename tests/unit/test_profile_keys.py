"""A key goes only to its own provider's endpoint (issue 29 part 6): changing a profile's
model from the environment also resets its endpoint, so the new model's key never reaches
the server an earlier layer named for another model. Checked through the real gateway
(litellm) against two local servers that log the Authorization header they received."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from council.agents import gateway, profiles
from tests.fakes.openai_server import AGENT_OUTPUT_JSON, fake_openai, reply

LOCAL_KEY = "sk-local-server-key-000111"
OPENAI_KEY = "sk-openai-key-999888"


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("COUNCIL_PROFILE") or name.endswith("_API_KEY") or name == "COUNCIL_SIMULATE":
            monkeypatch.delenv(name)
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    return monkeypatch


def _call(profile: profiles.Profile) -> None:
    messages = [{"role": "user", "content": "hello"}]
    gateway.complete(profile.model, messages, {}, api_base=profile.api_base, api_key_env=profile.api_key_env)


def test_a_model_override_resets_the_endpoint_and_each_key_reaches_only_its_own_server(
    clean: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with (
        fake_openai([reply(AGENT_OUTPUT_JSON)]) as (local_base, local),
        fake_openai([reply(AGENT_OUTPUT_JSON)]) as (openai_base, openai),
    ):
        # Given a profile on a local server with its own key, and OpenAI's key for OpenAI's
        # endpoint (a second local server stands in for it)
        (tmp_path / "profiles.toml").write_text(
            f'[profiles.claude]\nmodel = "openai/local-model"\napi_base = "{local_base}"\n'
            'api_key_env = "LOCAL_LLM_KEY"\n',
            encoding="utf-8",
        )
        clean.setenv("LOCAL_LLM_KEY", LOCAL_KEY)
        clean.setenv("OPENAI_API_KEY", OPENAI_KEY)
        clean.setenv("OPENAI_BASE_URL", openai_base)
        clean.setenv("OPENAI_API_BASE", openai_base)
        # When it runs as the file says, the local key goes to the local server
        _call(profiles.resolve("claude"))
        # And when the environment changes its model to an OpenAI one
        clean.setenv("COUNCIL_PROFILE_CLAUDE_MODEL", "openai/other")
        moved = profiles.resolve("claude")
        assert (moved.model, moved.api_base, moved.api_key_env) == ("openai/other", None, "OPENAI_API_KEY")
        clean.setenv("COUNCIL_OFFLINE", "0")  # the stand-in for OpenAI's endpoint is loopback anyway
        _call(moved)
    # Then each server saw only its own key: the OpenAI key never went to the local server
    assert [r["headers"]["authorization"] for r in local.requests] == [f"Bearer {LOCAL_KEY}"]
    assert [r["headers"]["authorization"] for r in openai.requests] == [f"Bearer {OPENAI_KEY}"]


def test_an_override_that_states_its_endpoint_must_state_its_key_variable(clean: pytest.MonkeyPatch) -> None:
    clean.setenv("COUNCIL_PROFILE_CLAUDE_MODEL", "openai/other")
    clean.setenv("COUNCIL_PROFILE_CLAUDE_API_BASE", "http://127.0.0.1:9/v1")
    with pytest.raises(profiles.ConfigError, match="names its own api_base"):
        profiles.load_profiles()
    clean.setenv("COUNCIL_PROFILE_CLAUDE_API_KEY_ENV", "LOCAL_LLM_KEY")
    stated = profiles.resolve("claude")
    assert (stated.api_base, stated.api_key_env) == ("http://127.0.0.1:9/v1", "LOCAL_LLM_KEY")

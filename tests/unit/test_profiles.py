"""Agent profiles (docs/architecture.md §9 "Profiles file"): defaults that are current, the
file and the variables checked key by key, secrets refused, simulation modes,
and the executor a run pins. No database, no network."""

from __future__ import annotations

import datetime
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from council.agents import profiles
from council.agents.profiles import DEFAULTS, GLM_VIA_OPENROUTER
from council.domain.profile import Profile
from council.errors import BadInput, ConfigError

KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """A clean profile environment: no overrides, no profiles file, the three default keys set."""
    for name in list(os.environ):
        if name.startswith("COUNCIL_PROFILE") or name in (*KEYS, "COUNCIL_SIMULATE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    for key in KEYS[:3]:
        monkeypatch.setenv(key, f"secret-value-of-{key}")
    return monkeypatch


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "profiles.toml"
    path.write_text(body, encoding="utf-8")
    return path


def refusal(tmp_path: Path, body: str) -> str:
    """The one-line reason a profiles file is refused with."""
    write(tmp_path, body)
    with pytest.raises(ConfigError) as caught:
        profiles.load_profiles()
    reason = str(caught.value)
    assert "\n" not in reason
    return reason


# ------------------------------------------------------------------ defaults


def test_default_profiles(env: pytest.MonkeyPatch) -> None:
    loaded = profiles.load_profiles()
    assert sorted(loaded) == ["claude", "codex", "glm"]
    claude = profiles.resolve("claude")
    assert (claude.runtime, claude.model, claude.provider, claude.api_key_env, claude.simulated) == (
        "litellm", "anthropic/claude-sonnet-4-6", "anthropic", "ANTHROPIC_API_KEY", False,
    )  # fmt: skip
    assert claude.why == "ANTHROPIC_API_KEY is set"
    assert (loaded["codex"].model, loaded["codex"].provider) == ("openai/gpt-5.5", "openai")
    assert (loaded["glm"].model, loaded["glm"].provider, loaded["glm"].api_key_env) == (
        "zai/glm-5.1", "zhipu", "ZAI_API_KEY",
    )  # fmt: skip
    assert all("secret-value" not in repr(p) for p in loaded.values())


def _local_price_map() -> dict[str, Any]:
    path = resources.files("litellm") / "model_prices_and_context_window_backup.json"
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _priced(prices: dict[str, Any], model: str) -> dict[str, Any] | None:
    route, _, name = model.partition("/")
    for key in (model, name):
        entry = prices.get(key)
        if isinstance(entry, dict) and entry.get("litellm_provider") == route:
            return entry
    return None


def test_every_default_model_is_in_litellms_local_map_and_not_past_its_deprecation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the price map shipped with the installed litellm (never the network)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    prices = _local_price_map()
    today = datetime.date.today()
    # Then each default model is there, for its route, and not deprecated as of today
    for name, spec in DEFAULTS.items():
        entry = _priced(prices, spec["model"])
        assert entry is not None, f"{name}: {spec['model']} is not in litellm's local price map"
        deprecated = entry.get("deprecation_date")
        assert deprecated is None or datetime.date.fromisoformat(deprecated) > today, (
            f"{name}: {spec['model']} is deprecated since {deprecated}"
        )
    # And the OpenRouter route to GLM (the map prices no OpenRouter model) names the same model
    assert GLM_VIA_OPENROUTER["model"] == "openrouter/z-ai/" + DEFAULTS["glm"]["model"].split("/", 1)[1]


def test_the_map_check_catches_a_stale_model() -> None:
    # The check above can fail: the models these defaults replaced are past their dates
    prices = _local_price_map()
    for stale in ("anthropic/claude-sonnet-4-5", "openai/gpt-5-codex"):
        entry = _priced(prices, stale)
        assert entry is not None and entry.get("deprecation_date")
        assert datetime.date.fromisoformat(entry["deprecation_date"]) <= datetime.date(2026, 12, 1)


# --------------------------------------------------------------- simulation


def test_a_profile_without_its_key_is_simulated_and_keeps_its_family(env: pytest.MonkeyPatch) -> None:
    env.delenv("ANTHROPIC_API_KEY")
    claude = profiles.resolve("claude")
    assert (claude.model, claude.provider, claude.simulated) == ("council-sim/claude", "anthropic", True)
    assert claude.why == "ANTHROPIC_API_KEY is unset"
    assert claude.stands_in_for == {"runtime": "litellm", "model": "anthropic/claude-sonnet-4-6"}
    assert profiles.resolve("codex").simulated is False


@pytest.mark.parametrize("value", ["always", "1", "true", "ALWAYS"])
def test_simulation_always_simulates_every_profile(env: pytest.MonkeyPatch, value: str) -> None:
    env.setenv("COUNCIL_SIMULATE", value)
    loaded = profiles.load_profiles()
    assert all(p.simulated and p.model == f"council-sim/{p.name}" for p in loaded.values())
    assert [p.provider for p in loaded.values()] == ["anthropic", "openai", "zhipu"]
    assert {p.why for p in loaded.values()} == {"simulation mode always"}


def test_an_option_overrides_the_variable(env: pytest.MonkeyPatch) -> None:
    env.setenv("COUNCIL_SIMULATE", "always")
    assert profiles.resolve("claude", "auto").simulated is False
    assert profiles.simulation_mode("never") == "never"


def test_simulation_never_refuses_naming_each_profile_and_its_variable(env: pytest.MonkeyPatch) -> None:
    # Given two of three keys unset
    env.delenv("ANTHROPIC_API_KEY")
    env.delenv("ZAI_API_KEY")
    chosen = profiles.resolve_many(["claude", "codex", "glm"], "never")
    # When a dispatch under never would simulate them, it is refused with one line naming each
    with pytest.raises(BadInput) as caught:
        profiles.refuse_simulation(chosen, "never")
    reason = str(caught.value)
    assert "\n" not in reason
    assert "claude (ANTHROPIC_API_KEY is unset" in reason and "glm (ZAI_API_KEY is unset" in reason
    assert "codex" not in reason
    # And with every key set, nothing is refused
    profiles.refuse_simulation(profiles.resolve_many(["codex"], "never"), "never")


def test_an_unknown_simulation_mode_is_a_config_error(env: pytest.MonkeyPatch) -> None:
    env.setenv("COUNCIL_SIMULATE", "sometimes")
    with pytest.raises(ConfigError, match="COUNCIL_SIMULATE must be auto, always or never"):
        profiles.load_profiles()
    with pytest.raises(ConfigError, match="--simulate must be"):
        profiles.simulation_mode("maybe")


def test_glm_goes_through_openrouter_when_only_that_key_is_set(env: pytest.MonkeyPatch) -> None:
    env.delenv("ZAI_API_KEY")
    env.setenv("OPENROUTER_API_KEY", "secret-value-or")
    glm = profiles.resolve("glm")
    assert (glm.model, glm.provider, glm.api_key_env, glm.simulated) == (
        "openrouter/z-ai/glm-5.1", "zhipu", "OPENROUTER_API_KEY", False,
    )  # fmt: skip


# ------------------------------------------------------------ the file


def test_a_toml_file_overrides_and_adds_profiles(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    write(
        tmp_path,
        "[profiles.claude]\nparams = { temperature = 0.1 }\n\n"
        '[profiles.gemini]\nmodel = "gemini/gemini-2.5-pro"\n\n'
        '[profiles.local]\nmodel = "openai/llama-3.1-8b"\napi_key_env = ""\n'
        'api_base = "http://127.0.0.1:9/v1"\n\n'
        '[profiles.glm-router]\nmodel = "openrouter/z-ai/glm-5.1"\nprovider = "openrouter"\n'
        'api_key_env = "OPENROUTER_API_KEY"\n\n'
        '[profiles.reviewer]\nruntime = "codex-cli"\nmodel = "gpt-5.5"\nmax_turns = 8\ntimeout_s = 600\n',
    )
    env.setenv("GEMINI_API_KEY", "secret-value-g")
    env.setenv("OPENROUTER_API_KEY", "secret-value-or")
    loaded = profiles.load_profiles()
    assert loaded["claude"].params == {"temperature": 0.1, "max_tokens": 4096}
    gemini = loaded["gemini"]
    assert (gemini.model, gemini.provider, gemini.api_key_env, gemini.simulated) == (
        "gemini/gemini-2.5-pro", "google", "GEMINI_API_KEY", False,
    )  # fmt: skip
    local = loaded["local"]
    assert (local.simulated, local.provider, local.api_base, local.api_key_env, local.why) == (
        False, "meta", "http://127.0.0.1:9/v1", "", "needs no key",
    )  # fmt: skip
    # A provider that names a gateway is read past, to the model's family
    assert loaded["glm-router"].provider == "zhipu"
    reviewer = loaded["reviewer"]
    assert (reviewer.runtime, reviewer.max_turns, reviewer.timeout_s, reviewer.api_key_env) == (
        "codex-cli", 8, 600.0, "OPENAI_API_KEY",
    )  # fmt: skip

    other = tmp_path / "elsewhere.toml"
    other.write_text('[profiles.codex]\nmodel = "anthropic/claude-opus-4-8"\n')
    env.setenv("COUNCIL_PROFILES", str(other))
    codex = profiles.resolve("codex")
    assert (codex.model, codex.provider, codex.api_key_env) == (
        "anthropic/claude-opus-4-8", "anthropic", "ANTHROPIC_API_KEY",
    )  # fmt: skip
    assert "gemini" not in profiles.load_profiles()


def test_an_edited_profiles_file_is_read_again(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Given a profiles file a long-lived process has read once
    path = write(tmp_path, '[profiles.local]\nmodel = "ollama/llama3"\n')
    assert profiles.resolve("local").model == "ollama/llama3"
    assert profiles.resolve("local").model == "ollama/llama3"  # parsed once, served from the cache
    # When the file is edited (another model, another length)
    path.write_text('[profiles.local]\nmodel = "ollama/mistral-large"\n')
    # Then the next resolution sees the new model without a restart
    assert profiles.resolve("local").model == "ollama/mistral-large"


def test_a_broken_profiles_file_is_a_config_error(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    reason = refusal(tmp_path, "[profiles.claude]\nmodle = 'typo'\n")
    assert "[profiles.claude]" in reason and "modle" in reason and str(tmp_path) in reason
    assert "unreadable profiles file" in refusal(tmp_path, "[profiles.claude\n")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('runtime = "bash"\nmodel = "m"', "runtime must be one of litellm, codex-cli, claude-code"),
        ("model = 7", "model must be a string"),
        ('model = ""', "model must not be empty"),
        ('model = "openai/x"\nparams = 3', "params must be a table"),
        ('model = "codex"\nruntime = "codex-cli"\nmax_turns = 0', "max_turns must be a whole number"),
        ('model = "codex"\nruntime = "codex-cli"\nmax_turns = true', "max_turns must be a whole number"),
        ('model = "codex"\nruntime = "codex-cli"\ntimeout_s = -1', "timeout_s must be a number"),
        ('model = "openai/x"\nmax_turns = 4', "max_turns and timeout_s are for the CLI runtimes"),
        ('model = "openai/x"\napi_base = "ftp://host"\napi_key_env = ""', "api_base must be an http(s) URL"),
        ('model = "openai/x"\napi_base = "http://127.0.0.1:9/v1"', "names its own api_base"),
        ('model = "openai/x"\nparams = { when = 2026-12-01 }', "params.when must be a string, number"),
        ('model = "openai/x"\nparams = { api_base = "http://h" }', "params.api_base refused"),
        ('model = "openai/x"\nparams = { num_retries = 3 }', "params.num_retries refused"),
    ],
)
def test_every_key_and_type_is_checked(
    env: pytest.MonkeyPatch, tmp_path: Path, body: str, expected: str
) -> None:
    reason = refusal(tmp_path, f"[profiles.odd]\n{body}\n")
    assert expected in reason
    assert "[profiles.odd]" in reason or "'odd'" in reason


# ------------------------------------------------------------------ secrets


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ('api_key = "sk-live-0123456789abcdef"', "api_key"),
        ('params = { api_key = "sk-live-0123456789abcdef" }', "params.api_key"),
        ('params = { apikey = "abc" }', "params.apikey"),
        ('params = { token = "abc" }', "params.token"),
        ('params = { access_token = "abc" }', "params.access_token"),
        ('params = { client_secret = "abc" }', "params.client_secret"),
        ('params = { password = "hunter2" }', "params.password"),
        (
            'params = { extra_headers = { Authorization = "Bearer abc" } }',
            "params.extra_headers.Authorization",
        ),
        ('params = { headers = { "x-api-key" = "abc" } }', "params.headers.x-api-key"),
        ('params = { metadata = { note = "Bearer abcdef" } }', "params.metadata.note"),
        ('params = { stop = ["ok", "sk-ant-0123456789abcdefgh"] }', "params.stop[1]"),
    ],
)
def test_a_secret_shaped_key_or_value_is_refused_pointing_at_api_key_env(
    env: pytest.MonkeyPatch, tmp_path: Path, line: str, where: str
) -> None:
    reason = refusal(tmp_path, f'[profiles.leaky]\nmodel = "openai/gpt-5.5"\n{line}\n')
    assert where in reason
    assert "api_key_env" in reason
    assert "sk-live" not in reason and "hunter2" not in reason and "Bearer abc" not in reason


@pytest.mark.parametrize(
    "model",
    ["sk-live-0123456789abcdef", "openai/sk-live-0123456789abcdef", "openrouter/x/sk-ant-0123456789abcdefgh",
     "hosted_vllm/m:ghp_0123456789abcdefghij"],
)  # fmt: skip
def test_a_model_shaped_like_a_key_is_refused_wherever_the_key_stands(
    env: pytest.MonkeyPatch, tmp_path: Path, model: str
) -> None:
    """Issue 44: ``model = "openai/sk-…"`` was accepted (only a whole value was compared)."""
    reason = refusal(tmp_path, f'[profiles.leaky]\nmodel = "{model}"\n')
    assert "model looks like a key" in reason and "api_key_env" in reason
    assert "0123456789" not in reason


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('api_base = "https://user:pw@llm.example/v1"\napi_key_env = ""', "api_base carries a credential"),
        ('api_base = "https://llm.example/v1?key=abc"\napi_key_env = ""', "api_base carries a credential"),
        ('api_key_env = "sk-live-0123456789abcdef"', "api_key_env names an environment variable"),
    ],
)
def test_a_key_in_the_endpoint_or_in_place_of_a_variable_name_is_refused(
    env: pytest.MonkeyPatch, tmp_path: Path, line: str, expected: str
) -> None:
    reason = refusal(tmp_path, f'[profiles.leaky]\nmodel = "openai/gpt-5.5"\n{line}\n')
    assert expected in reason
    assert "pw@" not in reason and "key=abc" not in reason and "sk-live" not in reason


@pytest.mark.parametrize(
    ("line", "name"),
    [  # what the deny-list let through (issue 30 §6): each refused by name, its value never repeated
        ('params = { extra_headers = { X-Auth = "q8Zt0pW3" } }', "params.extra_headers"),
        ('params = { extra_headers = { Authentication = "q8Zt0pW3" } }', "params.extra_headers"),
        ('params = { extra_headers = { X-Api-Keys = "q8Zt0pW3" } }', "params.extra_headers"),
        ('params = { extra_body = { auth_info = "q8Zt0pW3" } }', "params.extra_body"),
        ('params = { user = "hf_q8Zt0pW3q8Zt0pW3q8Zt0pW3" }', "params.user"),
        ('params = { metadata = "gsk_q8Zt0pW3q8Zt0pW3q8Zt0pW3" }', "params.metadata"),
        ('params = { reasoning_effort = "gsk_q8Zt0pW3q8Zt0pW3" }', "params.reasoning_effort"),
        ("params = { temperature = true }", "params.temperature must be a number"),
        ('params = { stop = ["a", "b", "c", "d", "e"] }', "params.stop must be a string or a list"),
    ],
)
def test_params_are_an_allow_list_of_known_non_secret_parameters(
    env: pytest.MonkeyPatch, tmp_path: Path, line: str, name: str
) -> None:
    reason = refusal(tmp_path, f'[profiles.leaky]\nmodel = "openai/gpt-5.5"\n{line}\n')
    assert name in reason and "q8Zt0pW3" not in reason


def test_known_parameters_are_kept(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    write(
        tmp_path,
        '[profiles.tuned]\nmodel = "openai/gpt-5.5"\n'
        'params = { temperature = 0.2, top_p = 0.9, max_tokens = 512, seed = 7, stop = ["END"], '
        'reasoning_effort = "low", timeout = 30 }\n',
    )
    assert profiles.load_profiles()["tuned"].params["reasoning_effort"] == "low"


def test_an_unknown_parameter_is_exit_2_from_the_cli(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    (tmp_path / "profiles.toml").write_text('[profiles.x]\nmodel = "openai/m"\nparams = { X-Auth = "v" }\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env["COUNCIL_HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "council.cli", "profiles"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "params.X-Auth refused" in done.stderr, done.stderr


# ------------------------------------------------------------ the variables


def test_environment_variables_override_each_field(env: pytest.MonkeyPatch) -> None:
    env.setenv("COUNCIL_PROFILE_CODEX_MODEL", "openrouter/openai/gpt-5.5")
    env.setenv("COUNCIL_PROFILE_CODEX_PROVIDER", "openai")
    env.setenv("OPENROUTER_API_KEY", "secret-value-or")
    env.setenv("COUNCIL_PROFILE_LOCAL_MODEL", "openai/qwen3")
    env.setenv("COUNCIL_PROFILE_LOCAL_API_BASE", "http://127.0.0.1:9/v1")
    env.setenv("COUNCIL_PROFILE_LOCAL_API_KEY_ENV", "LOCAL_LLM_KEY")
    env.setenv("COUNCIL_PROFILE_HELPER_RUNTIME", "claude-code")
    env.setenv("COUNCIL_PROFILE_HELPER_MODEL", "claude-sonnet-4-6")
    env.setenv("COUNCIL_PROFILE_HELPER_MAX_TURNS", "5")
    env.setenv("COUNCIL_PROFILE_MISBEHAVE_ONCE_MALFORMED_MODEL", "council-sim/misbehave-once-malformed")
    codex = profiles.resolve("codex")
    assert (codex.model, codex.provider, codex.api_key_env, codex.simulated) == (
        "openrouter/openai/gpt-5.5", "openai", "OPENROUTER_API_KEY", False,
    )  # fmt: skip
    local = profiles.resolve("local")
    assert (local.provider, local.api_base, local.api_key_env, local.simulated, local.why) == (
        "alibaba", "http://127.0.0.1:9/v1", "LOCAL_LLM_KEY", True, "LOCAL_LLM_KEY is unset",
    )  # fmt: skip
    helper = profiles.resolve("helper")
    assert (helper.runtime, helper.max_turns, helper.api_key_env) == ("claude-code", 5, "ANTHROPIC_API_KEY")
    odd = profiles.resolve("misbehave_once_malformed")
    assert (odd.model, odd.simulated) == ("council-sim/misbehave-once-malformed", True)


LIVE_KEY = "sk-live-0123456789abcdef"


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"COUNCIL_PROFILE_CLAUDE_API_KEY": LIVE_KEY}, "keys are never written in a profile"),
        ({"COUNCIL_PROFILE_CLAUDE_TOKEN": LIVE_KEY}, "keys are never written in a profile"),
        ({"COUNCIL_PROFILE_CLAUDE_MODLE": "x"}, "unknown profile variable"),
        ({"COUNCIL_PROFILE_CLAUDE_API_KEY_ENV": LIVE_KEY}, "api_key_env names an environment variable"),
        ({"COUNCIL_PROFILE_CLAUDE_MAX_TURNS": "many"}, "a whole number expected"),
        (
            {
                "COUNCIL_PROFILE_LOCAL_MODEL": "openai/llama",
                "COUNCIL_PROFILE_LOCAL_API_BASE": "http://127.0.0.1:9",
            },
            "names its own api_base",
        ),
    ],
)
def test_a_bad_profile_variable_is_refused(
    env: pytest.MonkeyPatch, variables: dict[str, str], expected: str
) -> None:
    for name, value in variables.items():
        env.setenv(name, value)
    with pytest.raises(ConfigError) as caught:
        profiles.load_profiles()
    assert expected in str(caught.value)
    assert LIVE_KEY not in str(caught.value)


def test_an_unknown_profile_is_bad_input_listing_the_known_ones(env: pytest.MonkeyPatch) -> None:
    with pytest.raises(BadInput, match="known: claude, codex, glm"):
        profiles.resolve("gpt-9")


# -------------------------------------------------------------- the pin


def test_the_pinned_executor_round_trips_and_holds_names_never_values(env: pytest.MonkeyPatch) -> None:
    for name, profile in profiles.load_profiles().items():
        pinned = profile.pinned()
        assert Profile.from_pinned(json.loads(json.dumps(pinned))) == profile, name
        assert "secret-value" not in json.dumps(pinned)
    assert profiles.resolve("claude").pinned()["api_key_env"] == "ANTHROPIC_API_KEY"


@pytest.mark.parametrize(
    "record",
    [None, {}, {"profile": "x"}, {**Profile("x", "m", "p").pinned(), "runtime": "bash"}],
    ids=["none", "empty", "partial", "runtime"],
)
def test_a_malformed_pin_is_refused(record: Any) -> None:
    with pytest.raises(ValueError):
        Profile.from_pinned(record)

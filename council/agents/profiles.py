"""Agent profiles (docs/architecture.md §7, §9): an agent name → the runtime and model it
runs on, the model's provider family, non-secret call parameters, and the
*name* of the variable holding its key (a key value is read by the gateway at
call time, on the worker, and is never held by a profile or stored).

Sources, later wins:
1. the defaults: claude, codex, glm (glm goes through OpenRouter when only
   ``OPENROUTER_API_KEY`` is set);
2. the profiles file — ``COUNCIL_PROFILES``, else ``<council home>/profiles.toml``
   — with ``[profiles.NAME]`` tables (keys: ``council.agents.profile_config``);
3. ``COUNCIL_PROFILE_<NAME>_<FIELD>`` variables (NAME upper-cased, other
   characters as ``_``).
A new model without a stated provider, key variable or endpoint gets the ones its
name implies (never the endpoint an earlier layer named for another model); a
profile that names its own ``api_base`` must state ``api_key_env`` (``""`` for
none), so a provider's usual key is never sent to another server.

Simulation (``COUNCIL_SIMULATE``, or ``council dispatch --simulate``): ``auto``
simulates a profile whose key variable is unset, ``always`` every profile,
``never`` refuses a dispatch that would simulate any. A simulated profile runs
the simulated provider as ``council-sim/<name>`` but keeps its provider family,
so provider-diversity rules treat it as they would the real model.

A profile is resolved once, where a run is dispatched, and pinned on the run
(``pinned()``); the worker executes the pinned profile (``from_pinned``) and
never resolves its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from council.agents.profile_config import CLI_RUNTIMES, env_overrides, file_tables
from council.agents.runtimes.installed import version_to_pin
from council.agents.runtimes.registry import runtime as runtime_of
from council.agents.simulated import MODEL_PREFIX
from council.domain.key_variables import env_name, key_env_for_model
from council.domain.profile import Profile
from council.domain.providers import provider_family
from council.errors import BadInput, ConfigError
from council.settings import settings

SIMULATE_ENV = "COUNCIL_SIMULATE"
SIMULATION_MODES = ("auto", "always", "never")
_MODE_ALIASES = {"": "auto", "0": "auto", "false": "auto", "no": "auto", "off": "auto",
                 "1": "always", "true": "always", "yes": "always", "on": "always"}  # fmt: skip

# Models current in the installed litellm's local price map (tests/unit/test_profiles.py checks them).
DEFAULTS: dict[str, dict[str, Any]] = {
    "claude": {"model": "anthropic/claude-sonnet-4-6", "api_key_env": "ANTHROPIC_API_KEY",
               "params": {"temperature": 0.7, "max_tokens": 4096}},
    "codex": {"model": "openai/gpt-5.5", "api_key_env": "OPENAI_API_KEY", "params": {"max_tokens": 4096}},
    "glm": {"model": "zai/glm-5.1", "api_key_env": "ZAI_API_KEY",
            "params": {"temperature": 0.7, "max_tokens": 4096}},
}  # fmt: skip
GLM_VIA_OPENROUTER = {"model": "openrouter/z-ai/glm-5.1", "api_key_env": "OPENROUTER_API_KEY"}
_OVERRIDABLE = (
    "runtime", "provider", "api_base", "api_key_env", "max_turns", "timeout_s", "expected_output_tokens",
)  # fmt: skip


def simulation_mode(value: str | None = None) -> str:
    """``auto``, ``always`` or ``never``: ``value`` (a command's option), else the variable."""
    source = SIMULATE_ENV if value is None else "--simulate"
    raw = settings().simulate if value is None else value
    normal = raw.strip().lower()
    mode = _MODE_ALIASES.get(normal, normal)
    if mode not in SIMULATION_MODES:
        raise ConfigError(f"{source} must be auto, always or never, got {raw!r}")
    return mode


def resolve(name: str, simulate: str | None = None) -> Profile:
    return resolve_many([name], simulate)[0]


def resolve_many(names: Sequence[str], simulate: str | None = None) -> list[Profile]:
    """The named profiles as they would run here, under ``simulate`` (else ``COUNCIL_SIMULATE``)."""
    profiles = load_profiles(simulate)
    for name in names:
        if name not in profiles:
            raise BadInput(f"unknown agent profile {name!r}; known: {', '.join(sorted(profiles))}")
    return [profiles[name] for name in names]


def load_profiles(simulate: str | None = None) -> dict[str, Profile]:
    """Every profile as it would run here, under ``simulate`` (else ``COUNCIL_SIMULATE``)."""
    mode = simulation_mode(simulate)
    specs = {name: dict(spec) for name, spec in DEFAULTS.items()}
    if not settings().variable("ZAI_API_KEY") and settings().variable("OPENROUTER_API_KEY"):
        specs["glm"].update(GLM_VIA_OPENROUTER)
    keyed: dict[str, bool] = {}  # does the layer that set api_base (or a later one) state api_key_env?
    for name, table in file_tables().items():
        specs[name] = _merge(name, specs.get(name), table, keyed)
    by_env_name = {env_name(name): name for name in specs}
    for upper, override in env_overrides().items():
        name = by_env_name.get(upper, upper.lower())
        specs[name] = _merge(name, specs.get(name), override, keyed)
    return {name: _profile(name, spec, mode, keyed.get(name, True)) for name, spec in sorted(specs.items())}


def refuse_simulation(profiles: list[Profile], mode: str) -> None:
    """Under ``never``, a dispatch that would simulate any profile is refused, naming each and why."""
    simulated = [p for p in profiles if p.simulated]
    if mode == "never" and simulated:
        raise BadInput(
            "simulation refused (never): would simulate "
            + ", ".join(f"{p.name} ({p.why})" for p in simulated)
            + "; set the key variables or dispatch with --simulate auto"
        )


def _merge(
    name: str, base: Mapping[str, Any] | None, override: Mapping[str, Any], keyed: dict[str, bool]
) -> dict[str, Any]:
    spec = dict(base or {})
    model = override.get("model")
    if model is None and "model" not in spec:
        raise ConfigError(f"agent profile {name!r} has no model")
    if model is not None and model != spec.get("model"):
        # Another model brings its own family, key variable and endpoint (its provider's
        # default) unless the same layer states them too: a key never follows a model to the
        # endpoint an earlier layer named for another one.
        spec.update(model=model, provider=None, api_key_env=key_env_for_model(model), api_base=None)
        keyed[name] = True
    moved = override.get("runtime") not in (None, spec.get("runtime") or "litellm")
    if moved and override["runtime"] in CLI_RUNTIMES and "params" not in override:
        spec["params"] = {}  # a default's litellm call parameters mean nothing to an agent CLI
    for key in _OVERRIDABLE:
        if key in override:
            spec[key] = override[key]
    if "api_base" in override:
        keyed[name] = "api_key_env" in override
    elif "api_key_env" in override:
        keyed[name] = True
    if "params" in override:
        spec["params"] = {**(spec.get("params") or {}), **override["params"]}
    return spec


def _profile(name: str, spec: Mapping[str, Any], mode: str, keyed: bool) -> Profile:
    runtime = str(spec.get("runtime") or "litellm")
    model = str(spec["model"])
    api_base = spec.get("api_base") or None
    key_env = str(spec.get("api_key_env") if spec.get("api_key_env") is not None else "")
    if api_base and not keyed:
        raise ConfigError(
            f"agent profile {name!r} names its own api_base ({api_base}) but not api_key_env: state the "
            "variable holding that server's key, or \"\" for none (a provider's usual key is never sent "
            "to another server)"
        )
    if runtime not in CLI_RUNTIMES and (
        spec.get("max_turns") is not None or spec.get("timeout_s") is not None
    ):
        raise ConfigError(
            f"agent profile {name!r}: max_turns and timeout_s are for the CLI runtimes "
            f"({', '.join(sorted(CLI_RUNTIMES))}); a litellm profile takes params.timeout"
        )
    if runtime in CLI_RUNTIMES and not runtime_of(runtime).takes_params and spec.get("params"):
        raise ConfigError(
            f"agent profile {name!r}: Claude Code takes no call parameters (params); "
            "its model, max_turns and timeout_s are the profile's own keys"
        )
    values: dict[str, Any] = {
        "name": name,
        "model": model,
        "provider": provider_family(model, spec.get("provider")),
        "params": dict(spec.get("params") or {}),
        "api_key_env": key_env,
        "runtime": runtime,
        "api_base": api_base,
        "max_turns": spec.get("max_turns"),
        "timeout_s": float(spec["timeout_s"]) if spec.get("timeout_s") is not None else None,
        "cli_version": version_to_pin(runtime) if runtime in CLI_RUNTIMES else None,
        "expected_output_tokens": spec.get("expected_output_tokens"),
    }
    own = {"runtime": runtime, "model": model}
    if model.startswith(MODEL_PREFIX):
        return Profile(**values, simulated=True, why="its model is the simulated provider")
    if mode == "always":
        why = "simulation mode always"
    elif key_env and not settings().variable(key_env):
        why = f"{key_env} is unset" + ("; simulation mode never refuses it" if mode == "never" else "")
    else:
        return Profile(**values, why=f"{key_env} is set" if key_env else "needs no key")
    # The simulator answers through litellm, whatever runtime the profile names.
    values.update(model=MODEL_PREFIX + name, runtime="litellm", cli_version=None)
    return Profile(**values, simulated=True, stands_in_for=own, why=why)

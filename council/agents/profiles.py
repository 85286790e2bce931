"""Agent profiles (DESIGN §7): an agent name → the litellm model it runs on, the
model's provider family, call parameters, and the *name* of the environment
variable holding its key (key values are read by the gateway at call time and
are never held by a profile).

Sources, later wins:
1. the defaults: claude, codex, glm (glm goes through OpenRouter when only
   ``OPENROUTER_API_KEY`` is set);
2. a TOML file — ``COUNCIL_PROFILES``, else ``<council home>/profiles.toml``
   when it exists — with ``[profiles.NAME]`` tables of ``model``,
   ``provider``, ``api_key_env`` and ``params``; any litellm model can be
   added under a new name this way;
3. ``COUNCIL_PROFILE_<NAME>_MODEL`` and ``COUNCIL_PROFILE_<NAME>_PROVIDER``
   (NAME upper-cased, other characters as ``_``).
A new model without a stated provider or key variable gets the ones its name implies.

Simulation: under ``COUNCIL_SIMULATE=1``, or when a profile's key variable is
unset, the profile runs on the simulated provider as ``council-sim/<name>``
but keeps its real provider family, so provider-diversity rules treat it as
they would the real model. ``api_key_env = ""`` declares a model that needs no
key (e.g. a local server).
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG
from typing import Any

from council.agents.simulated import MODEL_PREFIX
from council.config import council_home
from council.domain.providers import provider_for_model
from council.errors import BadInput, ConfigError

PROFILES_FILE = "profiles.toml"
_FIELDS = frozenset({"model", "provider", "api_key_env", "params"})
_ENV_OVERRIDE = re.compile(r"^COUNCIL_PROFILE_(?P<name>.+)_(?P<field>MODEL|PROVIDER)$")
_FAMILY_KEY_ENVS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "zhipu": "ZAI_API_KEY",
    "google": "GEMINI_API_KEY",
}

_DEFAULTS: dict[str, dict[str, Any]] = {
    "claude": {"model": "anthropic/claude-sonnet-4-5", "provider": "anthropic",
               "api_key_env": "ANTHROPIC_API_KEY", "params": {"temperature": 0.7, "max_tokens": 4096}},
    "codex": {"model": "openai/gpt-5-codex", "provider": "openai",
              "api_key_env": "OPENAI_API_KEY", "params": {"max_tokens": 4096}},
    "glm": {"model": "zai/glm-4.6", "provider": "zhipu",
            "api_key_env": "ZAI_API_KEY", "params": {"temperature": 0.7, "max_tokens": 4096}},
}  # fmt: skip
_GLM_VIA_OPENROUTER = {"model": "openrouter/z-ai/glm-4.6", "api_key_env": "OPENROUTER_API_KEY"}


@dataclass(frozen=True)
class Profile:
    name: str
    model: str  # litellm model string; council-sim/<name> when simulated
    provider: str  # model family, kept when simulated
    params: Mapping[str, Any] = field(default_factory=dict)
    api_key_env: str = ""  # the variable's name, never its value
    simulated: bool = False


def resolve(name: str) -> Profile:
    profiles = load_profiles()
    if name not in profiles:
        raise BadInput(f"unknown agent profile {name!r}; known: {', '.join(sorted(profiles))}")
    return profiles[name]


def load_profiles() -> dict[str, Profile]:
    specs = {name: dict(spec) for name, spec in _DEFAULTS.items()}
    if not os.environ.get("ZAI_API_KEY") and os.environ.get("OPENROUTER_API_KEY"):
        specs["glm"].update(_GLM_VIA_OPENROUTER)
    for name, override in _file_overrides().items():
        specs[name] = _merge(name, specs.get(name), override)
    for name, override in _env_overrides(specs).items():
        specs[name] = _merge(name, specs.get(name), override)
    simulate_all = os.environ.get("COUNCIL_SIMULATE", "").strip().lower() in {"1", "true", "yes"}
    return {name: _profile(name, spec, simulate_all) for name, spec in sorted(specs.items())}


def key_env_for_model(model: str) -> str:
    """The variable litellm reads a model's key from, by its name."""
    if model.startswith("openrouter/"):
        return "OPENROUTER_API_KEY"
    family = provider_for_model(model)
    return _FAMILY_KEY_ENVS.get(family, re.sub(r"[^A-Z0-9]", "_", family.upper()) + "_API_KEY")


def _profile(name: str, spec: Mapping[str, Any], simulate_all: bool) -> Profile:
    model = str(spec["model"])
    provider = str(spec["provider"])
    params = dict(spec.get("params") or {})
    key_env = str(spec["api_key_env"])
    if model.startswith(MODEL_PREFIX):
        return Profile(name, model, provider, params, "", simulated=True)
    if simulate_all or (key_env and not os.environ.get(key_env)):
        return Profile(name, MODEL_PREFIX + name, provider, params, key_env, simulated=True)
    return Profile(name, model, provider, params, key_env)


def _merge(name: str, base: Mapping[str, Any] | None, override: Mapping[str, Any]) -> dict[str, Any]:
    spec = dict(base or {})
    model = override.get("model")
    if model is None and "model" not in spec:
        raise ConfigError(f"agent profile {name!r} has no model")
    if model is not None and model != spec.get("model"):
        # Another model brings its own family and key variable unless they are stated too.
        spec.update(model=model, provider=provider_for_model(model), api_key_env=key_env_for_model(model))
    for key in ("provider", "api_key_env"):
        if key in override:
            spec[key] = override[key]
    if "params" in override:
        spec["params"] = {**(spec.get("params") or {}), **override["params"]}
    return spec


def _file_overrides() -> dict[str, dict[str, Any]]:
    explicit = os.environ.get("COUNCIL_PROFILES")
    path = Path(explicit).expanduser() if explicit else council_home() / PROFILES_FILE
    try:
        stat = path.stat()
    except OSError:
        stat = None
    if stat is None or not S_ISREG(stat.st_mode):
        if explicit:
            raise ConfigError(f"COUNCIL_PROFILES names no file: {path}")
        return {}
    # Parsed again only when the file changes (a worker reads it for every run).
    return {name: dict(table) for name, table in _parsed(path, stat.st_mtime_ns, stat.st_size).items()}


@functools.lru_cache(maxsize=8)
def _parsed(path: Path, _mtime_ns: int, _size: int) -> dict[str, dict[str, Any]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"unreadable profiles file {path}: {exc}") from exc
    tables = data.get("profiles", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: [profiles] must be a table of [profiles.NAME] tables")
    return {str(name): _checked(path, str(name), table) for name, table in tables.items()}


def _checked(path: Path, name: str, table: Any) -> dict[str, Any]:
    where = f"{path}: [profiles.{name}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - _FIELDS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown keys {', '.join(unknown)} (allowed: {', '.join(sorted(_FIELDS))})"
        )
    for key in ("model", "provider", "api_key_env"):
        if key in table and not isinstance(table[key], str):
            raise ConfigError(f"{where}: {key} must be a string")
    if "params" in table and not isinstance(table["params"], dict):
        raise ConfigError(f"{where}: params must be a table")
    return table


def _env_name(name: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", name.upper())


def _env_overrides(known: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    by_env_name = {_env_name(name): name for name in known}
    overrides: dict[str, dict[str, Any]] = {}
    for variable, value in sorted(os.environ.items()):
        match = _ENV_OVERRIDE.match(variable)
        if match is None or not value.strip():
            continue
        name = by_env_name.get(match["name"], match["name"].lower())
        overrides.setdefault(name, {})[match["field"].lower()] = value.strip()
    return overrides

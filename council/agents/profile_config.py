"""Reading profile configuration: the TOML file and the ``COUNCIL_PROFILE_*``
variables, each key and type checked, secrets refused (docs/guide/agent-runs.md
"Profiles", docs/operations/security.md). What a profile *means* (defaults, merging,
simulation) is in ``council.agents.profiles``; this module only says whether what was written is
well-formed, in one line naming the file, the table and the key.
"""

from __future__ import annotations

import functools
import math
import re
import tomllib
from pathlib import Path
from stat import S_ISREG
from typing import Any
from urllib.parse import urlsplit

from council.config import council_home
from council.domain.secrets import (
    holds_secret_shape,
    is_secret_name,
    secret_paths,
    url_credentials,
)
from council.domain.vocabulary import RUNTIMES
from council.errors import ConfigError
from council.settings import settings

PROFILES_FILE = "profiles.toml"
CLI_RUNTIMES = frozenset(RUNTIMES[1:])
FIELDS = (
    "runtime", "model", "provider", "api_base", "api_key_env", "params", "max_turns", "timeout_s",
    "expected_output_tokens",
)  # fmt: skip
# Call parameters the gateway owns: the endpoint and key come from the profile's own keys,
# and the one retry policy is the task's (litellm's and the SDK's retries stay off).
RESERVED_PARAMS = frozenset({"model", "messages", "api_base", "base_url", "num_retries", "max_retries"})
# The call parameters a profile may set, by the type of their value (docs/architecture.md
# §11: secrets are recognised by an allow-list, not a deny-list of names): litellm's
# sampling and length parameters, the simulated provider's conformity and self_revision, and the Codex
# CLI's reasoning overrides (its `-c key=value`). Anything else is refused by name.
_NUMBER, _WHOLE, _WORD, _WORDS = "a number", "a whole number", "a word", "a string or a list of strings"
PARAMS = {
    "temperature": _NUMBER,
    "top_p": _NUMBER,
    "top_k": _WHOLE,
    "max_tokens": _WHOLE,
    "max_completion_tokens": _WHOLE,
    "seed": _WHOLE,
    "presence_penalty": _NUMBER,
    "frequency_penalty": _NUMBER,
    "stop": _WORDS,
    "reasoning_effort": _WORD,
    "timeout": _NUMBER,
    "conformity": _NUMBER,
    "self_revision": _NUMBER,
    "model_reasoning_effort": _WORD,
    "model_reasoning_summary": _WORD,
    "model_verbosity": _WORD,
}
_A_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
MAX_STOP = 4
MAX_TURNS = 1000
MAX_OUTPUT_TOKENS = 1_000_000
MAX_TIMEOUT_S = 86_400.0
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ENV_PREFIX = "COUNCIL_PROFILE_"
_ENV_FIELDS = {
    "RUNTIME": "runtime",
    "MODEL": "model",
    "PROVIDER": "provider",
    "API_BASE": "api_base",
    "API_KEY_ENV": "api_key_env",
    "MAX_TURNS": "max_turns",
    "TIMEOUT_S": "timeout_s",
    "EXPECTED_OUTPUT_TOKENS": "expected_output_tokens",
}
_ENV_OVERRIDE = re.compile(rf"^{ENV_PREFIX}(?P<name>.+?)_(?P<field>{'|'.join(_ENV_FIELDS)})$")
_KEY_HINT = "keys are never written in a profile: put the key in a variable and name it with api_key_env"


def file_tables() -> dict[str, dict[str, object]]:
    """The checked ``[profiles.NAME]`` tables of the profiles file (none when
    there is no file and ``COUNCIL_PROFILES`` names none)."""
    explicit = settings().profiles_file
    path = explicit or council_home() / PROFILES_FILE
    try:
        stat = path.stat()
    except OSError:
        stat = None
    if stat is None or not S_ISREG(stat.st_mode):
        if explicit:
            raise ConfigError(f"COUNCIL_PROFILES names no file: {path}")
        return {}
    # Parsed again only when the file changes.
    return {name: dict(table) for name, table in _parsed(path, stat.st_mtime_ns, stat.st_size).items()}


@functools.lru_cache(maxsize=8)
def _parsed(path: Path, _mtime_ns: int, _size: int) -> dict[str, dict[str, object]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"unreadable profiles file {path}: {' '.join(str(exc).split())}") from exc
    unknown = sorted(set(data) - {"profiles"})
    if unknown:
        raise ConfigError(
            f"{path}: unknown top-level keys {', '.join(unknown)} (only [profiles.NAME] tables)"
        )
    tables = data.get("profiles", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: [profiles] must be a table of [profiles.NAME] tables")
    return {str(name): _checked_table(path, str(name), table) for name, table in tables.items()}


def _checked_table(path: Path, name: str, table: object) -> dict[str, object]:
    """One profile table, every key and type checked; each reason names the file and the table."""
    where = f"{path}: [profiles.{name}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    if not _NAME.match(name):
        raise ConfigError(f"{where}: a profile name is 1-64 letters, digits, '_', '.' or '-'")
    secret = sorted(str(k) for k in table if is_secret_name(str(k)))
    if secret:
        raise ConfigError(f"{where}: {', '.join(secret)} refused: {_KEY_HINT}")
    unknown = sorted(set(table) - set(FIELDS))
    if unknown:
        raise ConfigError(f"{where}: unknown keys {', '.join(unknown)} (allowed: {', '.join(FIELDS)})")
    for key, value in table.items():
        check_value(where, key, value)
    return table


def check_value(where: str, key: str, value: Any) -> None:
    """Refuse a value of the wrong type or shape for ``key``, in one line."""
    if key in ("runtime", "model", "provider", "api_base", "api_key_env") and not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be a string")
    if key == "runtime" and value not in RUNTIMES:
        raise ConfigError(f"{where}: runtime must be one of {', '.join(RUNTIMES)}, got {value!r}")
    if key in ("model", "provider") and not value.strip():
        raise ConfigError(f"{where}: {key} must not be empty")
    if key in ("model", "provider") and holds_secret_shape(value):
        raise ConfigError(f"{where}: {key} looks like a key: {_KEY_HINT}")
    if key == "api_key_env" and value and not _VARIABLE.match(value):
        raise ConfigError(
            f'{where}: api_key_env names an environment variable (e.g. ANTHROPIC_API_KEY) or is "" for '
            "none; it never holds the key itself"
        )
    if key == "api_base":
        _check_api_base(where, value)
    if key == "params":
        _check_params(where, value)
    if key == "max_turns" and (
        isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TURNS
    ):
        raise ConfigError(f"{where}: max_turns must be a whole number from 1 to {MAX_TURNS}")
    if key == "expected_output_tokens" and (
        isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_OUTPUT_TOKENS
    ):
        raise ConfigError(
            f"{where}: expected_output_tokens must be a whole number from 1 to {MAX_OUTPUT_TOKENS}"
        )
    if key == "timeout_s" and (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value <= MAX_TIMEOUT_S
    ):
        raise ConfigError(
            f"{where}: timeout_s must be a number of seconds above 0, at most {MAX_TIMEOUT_S:g}"
        )


def _check_api_base(where: str, value: str) -> None:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{where}: api_base must be an http(s) URL, got {value!r}")
    leak = url_credentials(value)
    if leak:
        raise ConfigError(f"{where}: api_base carries a credential ({leak}) refused: {_KEY_HINT}")


def _check_params(where: str, params: object) -> None:
    if not isinstance(params, dict):
        raise ConfigError(f"{where}: params must be a table")
    secret = secret_paths(params, "params")
    if secret:
        raise ConfigError(f"{where}: {', '.join(secret)} refused as secret-shaped: {_KEY_HINT}")
    reserved = sorted(set(params) & RESERVED_PARAMS)
    if reserved:
        raise ConfigError(
            f"{where}: params.{', params.'.join(reserved)} refused: the endpoint is the profile's api_base, "
            "the model its model, and retries are the run's retry policy"
        )
    bad = _non_json(params, "params")
    if bad:
        raise ConfigError(f"{where}: {bad} must be a string, number, boolean, array or table")
    unknown = sorted(str(name) for name in params if name not in PARAMS)
    if unknown:
        raise ConfigError(
            f"{where}: params.{', params.'.join(unknown)} refused: not a known non-secret call parameter "
            f"(allowed: {', '.join(PARAMS)})"
        )
    for name, value in params.items():
        if not _param_fits(PARAMS[name], value):
            raise ConfigError(f"{where}: params.{name} must be {PARAMS[name]}")


def _param_fits(kind: str, value: object) -> bool:
    if isinstance(value, bool):
        return False
    if kind == _NUMBER:
        return isinstance(value, int | float)
    if kind == _WHOLE:
        return isinstance(value, int)
    if kind == _WORD:
        return isinstance(value, str) and bool(_A_WORD.match(value))
    items = [value] if isinstance(value, str) else value
    return (
        isinstance(items, list)
        and len(items) <= MAX_STOP
        and all(isinstance(item, str) and 0 < len(item) <= 64 for item in items)
    )


def _non_json(value: object, path: str) -> str | None:
    """The first value that has no JSON form (a TOML date or time), or None."""
    if isinstance(value, dict):
        return next((p for k, v in value.items() if (p := _non_json(v, f"{path}.{k}"))), None)
    if isinstance(value, list):
        return next((p for i, v in enumerate(value) if (p := _non_json(v, f"{path}[{i}]"))), None)
    if isinstance(value, float) and not math.isfinite(value):
        return path
    return None if isinstance(value, str | int | float | bool) else path


def env_overrides() -> dict[str, dict[str, object]]:
    """``COUNCIL_PROFILE_<NAME>_<FIELD>`` overrides, by the variable's NAME part
    (upper case; the caller maps it to a profile). Any other ``COUNCIL_PROFILE_``
    variable is refused, and a key in one is named as such."""
    overrides: dict[str, dict[str, object]] = {}
    for variable, value in sorted(settings().variables()):
        if not variable.startswith(ENV_PREFIX):
            continue
        match = _ENV_OVERRIDE.match(variable)
        if match is None:
            if is_secret_name(variable):
                raise ConfigError(f"{variable} refused: {_KEY_HINT} (COUNCIL_PROFILE_<NAME>_API_KEY_ENV)")
            raise ConfigError(
                f"{variable}: unknown profile variable (allowed: COUNCIL_PROFILE_<NAME>_"
                f"{{{','.join(_ENV_FIELDS)}}})"
            )
        if not value.strip():
            continue
        key = _ENV_FIELDS[match["field"]]
        parsed: Any = value.strip()
        if key in ("max_turns", "timeout_s", "expected_output_tokens"):
            parsed = _number(variable, parsed, integer=key != "timeout_s")
        check_value(variable, key, parsed)
        overrides.setdefault(match["name"], {})[key] = parsed
    return overrides


def _number(variable: str, text: str, *, integer: bool) -> int | float:
    try:
        return int(text) if integer else float(text)
    except ValueError:
        raise ConfigError(f"{variable}: {'a whole number' if integer else 'a number'} expected") from None

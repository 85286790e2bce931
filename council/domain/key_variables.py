"""Which environment variable holds a model's key (docs/guide/agent-runs.md#profiles): by the
model's route (``openrouter/…`` → ``OPENROUTER_API_KEY``), else its family. The profiles
read it when a profile states no ``api_key_env``; the redaction's known secrets
(``council.known_secrets``) read it to know every key variable a profile may name. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from council.domain.providers import provider_family

ROUTE_KEY_ENVS = {
    "openrouter": "OPENROUTER_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "zai": "ZAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
}
# Routes that authenticate by other means (cloud credentials) or not at all (local servers).
KEYLESS_ROUTES = frozenset(
    {"bedrock", "bedrock_converse", "sagemaker", "vertex_ai", "ollama", "ollama_chat", "lm_studio",
     "hosted_vllm", "vllm", "llamafile"}
)  # fmt: skip
FAMILY_KEY_ENVS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "zhipu": "ZAI_API_KEY",
    "google": "GEMINI_API_KEY",
}
PROFILE_ENV_PREFIX = "COUNCIL_PROFILE_"


def env_name(name: str) -> str:
    """The NAME part of a profile's variables: upper case, other characters as ``_``."""
    return re.sub(r"[^A-Z0-9]", "_", name.upper())


def key_env_for_model(model: str) -> str:
    """The variable that holds a model's key, by its route (``""``: none needed)."""
    route = model.split("/", 1)[0].strip().lower() if "/" in model else ""
    if route in KEYLESS_ROUTES:
        return ""
    if route:
        return ROUTE_KEY_ENVS.get(route, env_name(route) + "_API_KEY")
    family = provider_family(model)
    return FAMILY_KEY_ENVS.get(family, env_name(family) + "_API_KEY")


def key_variables(tables: Mapping[str, Mapping[str, object]], environ: Mapping[str, str]) -> set[str]:
    """Every variable a profile may read its key from: the routes' and families' own, each
    profile table's ``api_key_env`` (or its model's variable), and those the
    ``COUNCIL_PROFILE_<NAME>_API_KEY_ENV`` and ``_MODEL`` overrides name."""
    found = {*ROUTE_KEY_ENVS.values(), *FAMILY_KEY_ENVS.values()}
    for table in tables.values():
        found |= _of(table.get("api_key_env"), table.get("model"))
    for variable, value in environ.items():
        if variable.startswith(PROFILE_ENV_PREFIX) and variable.endswith("_API_KEY_ENV"):
            found |= _of(value, None)
        elif variable.startswith(PROFILE_ENV_PREFIX) and variable.endswith("_MODEL"):
            found |= _of(None, value)
    return {name for name in found if name}


def _of(key_env: object, model: object) -> set[str]:
    if isinstance(key_env, str):
        return {key_env.strip()}
    if isinstance(model, str):
        return {key_env_for_model(model.strip())}
    return set()

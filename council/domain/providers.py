"""Model family / provider inference: models of one provider make correlated
errors, so every run records its provider (DESIGN §3)."""

from __future__ import annotations

_PREFIXES = (
    ("anthropic/", "anthropic"),
    ("claude", "anthropic"),
    ("openai/", "openai"),
    ("gpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("codex", "openai"),
    ("zai/", "zhipu"),
    ("glm", "zhipu"),
    ("zhipu", "zhipu"),
    ("gemini", "google"),
    ("vertex_ai/", "google"),
    ("mistral", "mistral"),
    ("deepseek", "deepseek"),
)


def provider_for_model(model: str) -> str:
    """Best-effort provider of a litellm model string; `unknown` when unsure.

    OpenRouter-style names (``openrouter/anthropic/claude-…``) are read past
    the router prefix, since the router is not the model's family.
    """
    name = model.strip().lower()
    if name.startswith("openrouter/"):
        name = name[len("openrouter/") :]
    for prefix, provider in _PREFIXES:
        if name.startswith(prefix):
            return provider
    if "/" in name:
        return name.split("/", 1)[0]
    return "unknown"

"""Provider family of a model: models of one family make correlated errors, so
every run records its family and a rule set may require several (docs/architecture.md §3).

A family is the vendor whose model answers, not the route to it:
``openrouter/z-ai/glm-4.6``, ``zai/glm-4.6`` and ``bedrock/zai.glm-4.7`` are all
``zhipu``. So gateways and hosting routes (OpenRouter, Together, Bedrock,
Vertex, Azure, Groq, Fireworks, a local server, …) are stripped, vendor aliases
are mapped to one name, and a recognisable model name wins over the route it
came by (``openai/llama-3`` on an OpenAI-compatible server is a Llama).
"""

from __future__ import annotations

import re

# Routes that host other vendors' models: never a family themselves.
GATEWAYS = frozenset(
    {
        "openrouter", "together_ai", "together", "bedrock", "bedrock_converse", "sagemaker", "vertex_ai",
        "vertex_ai_beta", "azure", "azure_ai", "groq", "fireworks_ai", "deepinfra", "anyscale", "replicate",
        "huggingface", "cloudflare", "sambanova", "cerebras", "nvidia_nim", "novita", "hyperbolic",
        "nebius", "lambda_ai", "baseten", "databricks", "watsonx", "oci", "github", "friendliai",
        "featherless_ai", "ollama", "ollama_chat", "lm_studio", "hosted_vllm", "vllm", "litellm_proxy",
        "llamafile", "openai_like", "custom_openai",
    }
)  # fmt: skip

# Vendor names as routes, organisations (Hugging Face, OpenRouter) and Bedrock prefixes spell them.
_VENDORS = {
    "anthropic": "anthropic", "claude": "anthropic",
    "openai": "openai",
    "z-ai": "zhipu", "zai": "zhipu", "zhipu": "zhipu", "zhipuai": "zhipu", "thudm": "zhipu",
    "google": "google", "gemini": "google", "palm": "google",
    "meta": "meta", "meta-llama": "meta", "facebook": "meta",
    "mistral": "mistral", "mistralai": "mistral", "codestral": "mistral",
    "deepseek": "deepseek", "deepseek-ai": "deepseek",
    "qwen": "alibaba", "alibaba": "alibaba", "dashscope": "alibaba",
    "x-ai": "xai", "xai": "xai",
    "cohere": "cohere", "cohere_chat": "cohere",
    "moonshot": "moonshot", "moonshotai": "moonshot",
    "minimax": "minimax",
    "amazon": "amazon",
    "microsoft": "microsoft",
}  # fmt: skip

# Model names that identify their vendor wherever they are hosted.
_MODEL_NAMES = tuple(
    (re.compile(pattern), family)
    for pattern, family in (
        (r"^claude", "anthropic"),
        (r"^(gpt|chatgpt|codex|davinci)|^o[1-9](-|$)", "openai"),
        (r"^(glm|chatglm|codegeex)", "zhipu"),
        (r"^(gemini|gemma)", "google"),
        (r"^(code)?llama", "meta"),
        (r"^(mistral|mixtral|codestral|ministral|magistral|devstral|pixtral)", "mistral"),
        (r"^deepseek", "deepseek"),
        (r"^(qwen|qwq)", "alibaba"),
        (r"^grok", "xai"),
        (r"^command(-|$)", "cohere"),
        (r"^(kimi|moonshot)", "moonshot"),
        (r"^(minimax|abab)", "minimax"),
        (r"^phi-?\d", "microsoft"),
    )
)

UNKNOWN = "unknown"


def provider_family(model: str, stated: str | None = None) -> str:
    """The family of ``model`` (a litellm model string). ``stated`` is a provider
    someone named explicitly: used when it names a vendor (aliases mapped), read
    past when it names a gateway. ``unknown`` when nothing tells."""
    if stated is not None and stated.strip():
        name = stated.strip().lower()
        if name not in GATEWAYS:
            return _VENDORS.get(name, name)
    return _family_of_model(model)


def _family_of_model(model: str) -> str:
    segments = [s for s in model.strip().lower().split("/") if s]
    while segments and segments[0] in GATEWAYS:
        segments.pop(0)
    # Bedrock spells region.vendor.model in one segment; a version's dot splits harmlessly.
    tokens = [token for segment in segments for token in segment.split(".") if token]
    for token in reversed(tokens):
        for pattern, family in _MODEL_NAMES:
            if pattern.search(token):
                return family
    for token in tokens:
        if token in _VENDORS:
            return _VENDORS[token]
    return segments[0] if len(segments) > 1 else UNKNOWN

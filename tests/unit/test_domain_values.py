"""Pure domain helpers: vocabulary, canonical hashing, providers, validation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from council.domain import vocabulary as voc
from council.domain.canonical import canonical_json, canonical_sha256
from council.domain.ids import parse_id, parse_ids
from council.domain.providers import provider_family
from council.domain.validate import confidence, text
from council.errors import BadInput

SQL = (Path(__file__).parents[2] / "migrations" / "versions" / "0001_ledger.sql").read_text()


def _check_values(column: str, table: str | None = None) -> tuple[str, ...]:
    scope = SQL
    if table is not None:
        scope = SQL[SQL.index(f"CREATE TABLE {table} (") :]
    match = re.search(rf"CHECK \({column} IN\s*\(([^)]*)\)\)", scope)
    assert match, column
    return tuple(re.findall(r"'([^']+)'", match.group(1)))


@pytest.mark.parametrize(
    ("column", "table", "expected"),
    [
        ("claim_type", None, voc.CLAIM_TYPES),
        ("kind", "edges", voc.EDGE_KINDS),
        ("role", "citations", voc.CITATION_ROLES),
        ("status", "node_version_states", voc.NODE_STATUSES),
        ("initial_status", None, voc.NEW_NODE_STATUSES),
        ("validity", None, voc.EVIDENCE_VALIDITY),
        ("mode", "agent_runs", voc.RUN_MODES),
        ("status", "agent_runs", voc.RUN_STATUSES),
        ("channel", None, voc.EXPOSURE_CHANNELS),
        ("vote", None, voc.VOTES),
        ("status", "memory_items", voc.MEMORY_STATUSES),
        ("status", "consolidations", voc.CONSOLIDATION_STATUSES),
        ("status", "retraction_proposals", voc.PROPOSAL_STATUSES),
        ("status", "pending_actions", voc.PENDING_ACTION_STATUSES),
    ],
)
def test_vocabulary_matches_migration_checks(
    column: str, table: str | None, expected: tuple[str, ...]
) -> None:
    assert _check_values(column, table) == expected


def test_canonical_json_is_order_independent_and_compact() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": "é"}]}) == '{"a":[1,{"c":"é","d":2}],"b":1}'
    assert canonical_sha256({"a": 1, "b": 2}) == canonical_sha256({"b": 2, "a": 1})


@given(st.dictionaries(st.text(), st.integers() | st.text() | st.booleans()))
def test_canonical_hash_ignores_insertion_order(data: dict[str, object]) -> None:
    reordered = dict(reversed(list(data.items())))
    assert canonical_sha256(data) == canonical_sha256(reordered)


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("anthropic/claude-sonnet-4-6", "anthropic"),
        ("claude-opus-4-8", "anthropic"),
        ("openrouter/anthropic/claude-3.5-sonnet", "anthropic"),
        ("bedrock/us.anthropic.claude-sonnet-4-6", "anthropic"),
        ("vertex_ai/claude-sonnet-4-6", "anthropic"),
        ("openai/gpt-5.5", "openai"),
        ("gpt-5-codex", "openai"),
        ("azure/gpt-4o", "openai"),
        ("o3-mini", "openai"),
        ("groq/openai/gpt-oss-120b", "openai"),
        ("zai/glm-4.6", "zhipu"),
        ("openrouter/z-ai/glm-4.6", "zhipu"),
        ("glm-4.6", "zhipu"),
        ("bedrock/zai.glm-4.7", "zhipu"),
        ("together_ai/THUDM/glm-4-9b-chat", "zhipu"),
        ("gemini/gemini-2.5-pro", "google"),
        ("vertex_ai/gemini-2.5-flash", "google"),
        ("openrouter/google/gemma-3-27b-it", "google"),
        ("together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo", "meta"),
        ("groq/llama-3.1-8b-instant", "meta"),
        ("ollama/llama3", "meta"),
        ("openai/llama-3.1-8b", "meta"),  # an OpenAI-compatible server serving Llama
        ("fireworks_ai/accounts/fireworks/models/deepseek-v3", "deepseek"),
        ("deepseek/deepseek-chat", "deepseek"),
        ("openrouter/qwen/qwen3-235b", "alibaba"),
        ("openrouter/x-ai/grok-4", "xai"),
        ("mistral/mistral-large-latest", "mistral"),
        ("custom/house-model", "custom"),
        ("mystery", "unknown"),
    ],
)
def test_provider_family_reads_past_gateways_and_maps_aliases(model: str, family: str) -> None:
    assert provider_family(model) == family


def test_one_model_family_through_two_gateways_is_one_family() -> None:
    assert provider_family("openrouter/z-ai/glm-4.6") == provider_family("zai/glm-4.6") == "zhipu"


@pytest.mark.parametrize(
    ("stated", "model", "family"),
    [
        ("z-ai", "some/model", "zhipu"),
        ("ZhipuAI", "some/model", "zhipu"),
        ("Anthropic", "some/model", "anthropic"),
        ("gemini", "some/model", "google"),
        ("openrouter", "openrouter/z-ai/glm-4.6", "zhipu"),  # a gateway is not a family
        ("bedrock", "bedrock/us.anthropic.claude-sonnet-4-6", "anthropic"),
        ("acme", "acme/one", "acme"),
        ("", "openai/gpt-5.5", "openai"),
    ],
)
def test_a_stated_provider_is_normalised_and_a_gateway_read_past(
    stated: str, model: str, family: str
) -> None:
    assert provider_family(model, stated) == family


def test_ids_and_validation_refuse_bad_input() -> None:
    with pytest.raises(BadInput, match="malformed run id"):
        parse_id("42", "run")
    same = "6b3f6f2e-7c1a-4a57-9d55-3a1c6b1f0a10"
    assert parse_ids([same, same.upper()], "run") == [parse_id(same, "run")]
    with pytest.raises(BadInput, match="must not be empty"):
        text("  ", "title", 10)
    with pytest.raises(BadInput, match="too long"):
        text("x" * 11, "title", 10)
    assert text("  ok ", "title", 10) == "ok"
    for bad in ("nan", "-0.1", "1.01", "abc"):
        with pytest.raises(BadInput):
            confidence(bad)
    assert str(confidence(None)) == "0.500"


def test_every_lock_on_a_node_or_evidence_uses_the_same_namespaced_key() -> None:
    from council.sql import _queries

    queries = _queries()
    # The committer's locks are taken inside council_evaluate_read_v1 (migration 0044), which
    # its named query calls: checked in the migration's text, as the named queries are.
    evaluation = (Path(__file__).parents[2] / "migrations/versions/0044_evaluation_functions.sql").read_text()
    node_key = "council_node_lock_key_v1("  # the one definition: migration 0032
    evidence_key = "hashtextextended('council.evidence:' || CAST("
    assert "council_evaluate_read_v1(" in queries["evaluate_read"]
    for name in ("lock_node",):
        assert node_key in queries[name], name
    assert node_key in evaluation and evidence_key in evaluation
    for name in ("lock_evidence_exclusive",):
        assert evidence_key in queries[name], name
    alternatives_key = "council_alternatives_lock_key_v1("  # a thread's alternative sets: migration 0040
    assert alternatives_key in queries["alternatives_guard"] and alternatives_key in evaluation
    assert not [
        name for name, sql in queries.items() if "'council.node:'" in sql or "'council.alternatives:'" in sql
    ]
    assert "'council.node:'" not in evaluation and "'council.alternatives:'" not in evaluation
    locking = [name for name, sql in queries.items() if "advisory" in sql]
    assert sorted(locking) == [
        "alternatives_guard",
        "lock_dispatch_key",
        "lock_evidence_exclusive",
        "lock_node",
        "lock_proposal",
        "lock_thread_budget",
        "round_closed_versions",
    ]
    # whether a round closed is asked under the dispatch's key, as every run's end asks it
    assert "council_round_state_v1(" in queries["round_closed_versions"]


def test_the_simulated_latency_is_fixed_or_a_spread_drawn_per_answer() -> None:
    from council.agents import simulated

    assert simulated.latency_s("2", "a") == 2.0 and simulated.latency_s("0", "a") == 0.0
    drawn = [simulated.latency_s("2±0.5", str(i)) for i in range(200)]
    assert all(1.5 <= d <= 2.5 for d in drawn) and len(set(drawn)) > 100
    assert simulated.latency_s("2+-0.5", "x") == simulated.latency_s("2±0.5", "x")
    assert simulated.latency_spec({"COUNCIL_SIM_LATENCY_S": "0.1"}) == "0.1"
    assert simulated.latency_spec({"COUNCIL_SIM_LATENCY": "1±1", "COUNCIL_SIM_LATENCY_S": "3"}) == "1±1"
    with pytest.raises(ValueError, match="COUNCIL_SIM_LATENCY"):
        simulated.latency_s("soon", "x")

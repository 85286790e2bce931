"""The simulated provider's misbehaviour on request (``council-sim/misbehave-<kind>``,
:mod:`council.agents.simulated`), for tests of a run's validation and re-prompt: not JSON,
a claim on an unknown id, wrong field types, or an oversize rationale."""

from __future__ import annotations

import json
import random
import uuid

from council.domain.agent_output import AgentOutput, ClaimOut


def misbehave(kind: str, agent: str, first_head: str | None, rng: random.Random) -> str | None:
    """The answer of misbehaviour ``kind`` (None: an unknown kind, which behaves)."""
    target = first_head if first_head is not None else str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if kind == "malformed":
        return f"[simulated {agent}] The heads look plausible to me overall; no JSON this time."
    if kind == "unknown-ids":
        unknown = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        claim = ClaimOut(node_version_id=unknown, type="endorse", confidence=0.6, rationale="Looks right.")
        return AgentOutput(
            summary=f"[simulated {agent}] misbehaving: unknown ids.", claims=[claim]
        ).model_dump_json()
    if kind == "schema":
        return json.dumps({"summary": 42, "claims": "endorse everything", "new_nodes": {"ref": None}})
    if kind == "oversize":
        big = {"node_version_id": target, "type": "endorse", "confidence": 0.5, "rationale": "x" * 30_000}
        return json.dumps({"summary": f"[simulated {agent}] misbehaving: oversize.", "claims": [big]})
    return None

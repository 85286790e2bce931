"""A run's phases as one SQL function call each (docs/architecture.md §7, delivery; issue 46).

:func:`begin_run` calls ``council_begin_run_v1`` (revision 0044): the claim of a run for an
attempt, with its lease and fencing token (the ``claim_run`` query, unchanged), plus its
round's stored shared briefing and the text of the evidence an API run is given inline,
read in the same call and returned as one document. The request is then compiled in Python
and stored with its exposures in the same transaction (``Runs.store_request``). Nothing
claimed is a state of the result (``done``, ``leased``, ``missing``), not an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast
from uuid import UUID

from council.domain.requests import StoredRequest
from council.domain.round_briefing import RoundBriefing
from council.ledger.pg import Connection, column
from council.ledger.run_rows import AgentDown, ClaimedRun

BeginState = Literal["claimed", "done", "leased", "missing"]


@dataclass(frozen=True, slots=True)
class Begun:
    """What ``council_begin_run_v1`` returned: the claimed run, or why none was claimed;
    for a run of a dispatch with no stored request, its round's stored shared briefing
    (None: not stored, the round is opened in Python) and, for an API run, the text of each
    evidence item the briefing names (as ``EvidenceStore.contents``; None: not read)."""

    state: BeginState
    run: ClaimedRun | None = None
    briefing: RoundBriefing | None = None
    evidence: dict[str, str] | None = None


def begin_run(
    conn: Connection,
    run_id: UUID,
    *,
    owner: str,
    lease_s: float,
    held_attempt: int | None = None,
    api_runtimes: Sequence[str] = (),
) -> Begun:
    """Take the run for a new attempt and read its briefing, in one statement.
    ``api_runtimes``: the runtimes that give evidence inline (their runs get its text)."""
    [document] = column(
        conn,
        "begin_run",
        dict,
        run_id=run_id,
        owner=owner,
        lease_s=lease_s,
        held_attempt=held_attempt,
        api_runtimes=list(api_runtimes),
    )
    state = cast("BeginState", document["state"])
    row = document.get("run")
    if state != "claimed" or not isinstance(row, dict):
        return Begun(state=state)
    briefing = document.get("briefing")
    texts = document.get("evidence")
    return Begun(
        state=state,
        run=_claimed(row),
        briefing=None if briefing is None else RoundBriefing.model_validate(briefing["body"]),
        evidence=None
        if texts is None
        else {
            str(e["id"]): e["content"] if e["content"] is not None else f"reference:{e['source_uri']}"
            for e in texts
        },
    )


def _uuid(value: object) -> UUID | None:
    return None if value is None else UUID(str(value))


def _claimed(row: dict[str, object]) -> ClaimedRun:
    """The claimed run from its row as JSON (ids as text, the cost as a number)."""
    cost = row["cost_usd"]
    return ClaimedRun(
        id=UUID(str(row["id"])),
        attempt=cast("int", row["attempt"]),
        thread_id=UUID(str(row["thread_id"])),
        dispatch_id=_uuid(row["dispatch_id"]),
        agent=cast("str", row["agent"]),
        model=cast("str", row["model"]),
        provider=cast("str", row["provider"]),
        simulated=cast("bool", row["simulated"]),
        round=cast("int", row["round"]),
        mode=cast("str", row["mode"]),
        proposal_id=_uuid(row["proposal_id"]),
        request=cast("StoredRequest | None", row["request"]),
        request_sha256=cast("str | None", row["request_sha256"]),
        executor=cast("dict[str, object] | None", row["executor"]),
        dispatch_rounds=cast("int | None", row["dispatch_rounds"]),
        quorum_rule=cast("bool", row["quorum_rule"]),
        control_of=_uuid(row["control_of"]),
        usage=cast("dict[str, object] | None", row["usage"]),
        cost_usd=None if cost is None else float(cast("float", cost)),
        agent_down=cast("AgentDown | None", row["agent_down"]),
    )

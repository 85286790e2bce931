"""A run's phases as one SQL function call each (docs/architecture.md §7, delivery; issue 46).

:func:`begin_run` calls ``council_begin_run_v1`` (revision 0042): the claim of a run for an
attempt, with its lease and fencing token and the attempt's record, plus its
round's stored shared briefing and the text of the evidence an API run is given inline,
read in the same call and returned as one document. The request is then compiled in Python
and stored with its exposures in the same transaction (``Runs.store_request``). Nothing
claimed is a state of the result (``done``, ``leased``, ``missing``), not an error.

:func:`end_run` calls ``council_end_run_v2`` (revision 0043): the writing transaction's first
statement keeps the attempt's answer, fences the run and reads what the output check needs of
the output's references (the check itself stays in Python: ``council.domain.output_check``),
and the rival alternatives of what it claims on. A fenced-out attempt is ``Ended(run=None)``,
not an error. :func:`apply_run` calls ``council_apply_run_v2``: the claims and citations the
writer checked (:class:`DeferredClaims`), then the run's end with its events, then — for a run
of a dispatch, under the dispatch's advisory lock — whether its round closed
(:class:`~council.ledger.run_rows.RoundEnd`), in one statement: every run's end.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict, cast
from uuid import UUID

from council.domain.requests import StoredRequest
from council.domain.round_briefing import RoundBriefing
from council.known_secrets import refuse_in_parameters
from council.ledger.answers import answer_parameters
from council.ledger.pg import Connection, column
from council.ledger.run_rows import AgentDown, ClaimedRun, FencedRun, RoundEnd

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


@dataclass
class DeferredClaims:
    """An output's claims and their citations, checked by its writer and left for the run's
    end to insert in the statement that ends the run (``council_apply_run_v1``): the rows of
    ``add_claims`` and ``add_citations``."""

    claims: list[dict[str, object]] = field(default_factory=list)
    citations: list[dict[str, object]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Ended:
    """What ``council_end_run_v1`` returned: the fenced run (None: the attempt no longer
    owns it; its answer was kept all the same) and what the output check needs of the
    references it was given (:class:`CheckFacts`)."""

    run: FencedRun | None
    facts: CheckFacts | None = None


@dataclass(frozen=True, slots=True)
class CheckFacts:
    """The output check's reads, made by the call that fenced the run: the node versions
    the output claims on, by id (as ``claimable_versions``: thread, branch, maker and the
    type of the claim this run has on it already), and which of the evidence it cites is
    attached to the run's thread (as ``attached_evidence``)."""

    claimable: dict[UUID, ClaimableVersion]
    attached: frozenset[UUID]
    rivals: tuple[UUID, ...] = ()  # heads of the claimed versions' rival alternatives (evaluated next)


class ClaimableVersion(TypedDict):
    """A node version an output claims on, as the check and the claims' citations read it."""

    id: UUID
    thread_id: UUID
    branch_id: UUID
    created_by_run_id: UUID | None
    claimed_by_this_run: str | None


def end_run(
    conn: Connection,
    run_id: UUID,
    attempt: int,
    *,
    answer: tuple[int, str] | None,
    versions: Sequence[UUID],
    evidence: Sequence[UUID],
) -> Ended:
    """Keep the attempt's answer (round, text), fence the run and read the output check's
    facts of ``versions`` and ``evidence``, in one statement."""
    kept = answer_parameters(run_id, attempt, *answer) if answer is not None else None
    params = {
        "run_id": run_id,
        "attempt": attempt,
        "round": None if kept is None else kept["round"],
        "sha256": None if kept is None else kept["sha256"],
        "body": None if kept is None else kept["body"],
        "byte_length": None if kept is None else kept["byte_length"],
        "truncated": None if kept is None else kept["truncated"],
        "versions": list(dict.fromkeys(versions)),
        "evidence": list(dict.fromkeys(evidence)),
    }
    refuse_in_parameters(params)  # it writes the answer: the check every INSERT's parameters pass
    [document] = column(conn, "end_run", dict, screen=False, **params)
    row = document.get("run")
    if not isinstance(row, dict):
        return Ended(run=None)
    run = FencedRun(
        id=UUID(str(row["id"])),
        attempt=cast("int", row["attempt"]),
        thread_id=UUID(str(row["thread_id"])),
        dispatch_id=_uuid(row["dispatch_id"]),
        round=cast("int", row["round"]),
        agent=cast("str", row["agent"]),
        mode=cast("str", row["mode"]),
        proposal_id=_uuid(row["proposal_id"]),
        request_sha256=cast("str | None", row["request_sha256"]),
        control_of=_uuid(row["control_of"]),
    )
    claimable: dict[UUID, ClaimableVersion] = {}
    for found in document["claimable"]:
        version_id = UUID(str(found["id"]))
        claimable[version_id] = {
            "id": version_id,
            "thread_id": UUID(str(found["thread_id"])),
            "branch_id": UUID(str(found["branch_id"])),
            "created_by_run_id": _uuid(found["created_by_run_id"]),
            "claimed_by_this_run": cast("str | None", found["claimed_by_this_run"]),
        }
    attached = frozenset(UUID(str(e)) for e in document["attached"])
    rivals = tuple(UUID(str(v)) for v in document["rivals"])
    return Ended(run=run, facts=CheckFacts(claimable=claimable, attached=attached, rivals=rivals))


def apply_run(
    conn: Connection,
    run_id: UUID,
    attempt: int,
    deferred: DeferredClaims,
    *,
    status: str,
    usage: dict[str, object] | None,
    cost_usd: float | None,
    error: str | None,
    lint_findings: list[dict[str, object]] | None,
    events: Sequence[dict[str, object]],
) -> RoundEnd | None:
    """Insert the writer's checked claims and citations, then end the run with its events,
    then, for a run of a dispatch, ask whether its round closed, in one statement: what it
    found of the round (None: a run outside a dispatch, or an attempt that no longer owned
    the run, so nothing was written)."""
    params = {
        "run_id": run_id,
        "attempt": attempt,
        "claims": json.dumps(deferred.claims, default=str),
        "citations": json.dumps(deferred.citations, default=str),
        "status": status,
        "usage": json.dumps(usage) if usage is not None else None,
        "cost_usd": cost_usd,
        "error": error,
        "lint_findings": json.dumps(lint_findings) if lint_findings is not None else None,
        "events": json.dumps(list(events)),
    }
    refuse_in_parameters(params)  # it writes: the check every INSERT's parameters pass
    [ended] = column(conn, "apply_run", dict, screen=False, **params)
    state = ended["state"]
    if not ended["ended"] or ended["dispatch_id"] is None or not isinstance(state, dict):
        return None
    return RoundEnd(
        dispatch_id=UUID(str(ended["dispatch_id"])),
        round=int(ended["round"]),
        closed=bool(state["closed"]),
        versions=tuple(UUID(str(v)) for v in state["versions"]),
    )


class RunPhases:
    """The run store's phase calls (``tx.runs.begin``, ``tx.runs.end``) over its connection."""

    _conn: Connection

    def begin(
        self,
        run_id: UUID,
        *,
        owner: str,
        lease_s: float,
        held_attempt: int | None = None,
        api_runtimes: Sequence[str] = (),
    ) -> Begun:
        """Claim the run for a new attempt, with what the request is compiled from, in one call
        (:func:`begin_run`)."""
        return begin_run(
            self._conn,
            run_id,
            owner=owner,
            lease_s=lease_s,
            held_attempt=held_attempt,
            api_runtimes=api_runtimes,
        )

    def end(
        self,
        run_id: UUID,
        attempt: int,
        *,
        answer: tuple[int, str] | None,
        versions: Sequence[UUID] = (),
        evidence: Sequence[UUID] = (),
    ) -> Ended:
        """As ``Runs.fence_keeping`` (or ``Runs.fence``, no ``answer``), with the output check's
        facts of ``versions`` and ``evidence``, in one call (:func:`end_run`)."""
        return end_run(self._conn, run_id, attempt, answer=answer, versions=versions, evidence=evidence)

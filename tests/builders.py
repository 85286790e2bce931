"""Ledger builders for tests and benchmarks: real service calls, no shortcuts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from sqlalchemy import Engine, text

from council.domain.commands import NewClaim, NewNode, RecordedRun, same_reading
from council.ledger.unit import UnitOfWork
from council.services.evidence import EvidenceInput, add_evidence
from council.services.nodes import add_node
from council.services.runs import record_run
from council.services.threads import create_thread
from tests.engines import unit_of_work, uow_of

ACTOR = "test"
MODELS = {"anthropic": "anthropic/claude-sonnet-4-6", "openai": "openai/gpt-5.5", "zhipu": "zai/glm-5.1"}


@dataclass
class Ledger:
    engine: Engine
    thread_id: UUID
    evidence: list[UUID] = field(default_factory=list)

    @classmethod
    def new(cls, engine: Engine, title: str = "SQLite parity", evidence_items: int = 3) -> Ledger:
        thread = create_thread(
            uow_of(engine),
            title=title,
            objective="Is SQLite parity sufficient for the production adapter?",
            actor=ACTOR,
        )
        ledger = cls(engine, thread.id)
        for i in range(evidence_items):
            ledger.add_evidence(f"{title}: evidence item {i}")
        return ledger

    def add_evidence(self, body: str) -> UUID:
        added = add_evidence(uow_of(self.engine), self.thread_id, EvidenceInput(text=body), actor=ACTOR)
        self.evidence.append(added.id)
        return added.id

    @property
    def uow(self) -> UnitOfWork:
        return uow_of(self.engine)

    def node(
        self,
        content: str = "SQLite parity is sufficient for tests",
        *,
        status: str = "open",
        depends_on: list[UUID] | tuple[UUID, ...] = (),
        edges: list[tuple[str, UUID]] | tuple[tuple[str, UUID], ...] = (),
        cites: list[UUID] | tuple[UUID, ...] = (),
        citation_role: str = "supports",
        interpretation: str = "",
        branch_id: UUID | None = None,
        run_id: UUID | None = None,
    ) -> dict[str, Any]:
        """A node through the service (its result as a plain dict of Python values)."""
        node = NewNode(
            thread=self.thread_id,
            content=content,
            status=status,
            branch=branch_id,
            edges=(*(("depends_on", d) for d in depends_on), *edges),
            cites=same_reading(cites, citation_role, interpretation),
            run=run_id,
        )
        return add_node(self.uow, node, actor=ACTOR).model_dump()

    def dispatched(self, agent: str = "claude") -> UUID:
        """One run of ``agent`` dispatched (simulated) on the thread, queued, not executed."""
        from council.adapters.scheduler import Recorder
        from council.services.dispatch import dispatch

        made = dispatch(
            self.uow, Recorder(), self.thread_id, [agent], mode="independent", rounds=1, actor=ACTOR,
            simulate="always",
        )  # fmt: skip
        [run_id] = made.run_ids
        return run_id

    def run(
        self,
        provider: str = "anthropic",
        agent: str | None = None,
        *,
        parent_run_id: UUID | None = None,
        exposed_to: list[UUID] | tuple[UUID, ...] = (),
        round_no: int = 1,
    ) -> UUID:
        """A run recorded by hand, held open by its recorder: the builder's :meth:`claim`
        adds its claims as the recorder (the database takes a claim only from a run that is
        live and held); :meth:`close` ends it."""
        return self.open_run(
            provider, agent, parent_run_id=parent_run_id, exposed_to=exposed_to, round_no=round_no
        )

    def close(self, run_id: UUID) -> None:
        """End a run recorded by hand (``succeeded``): it takes no more claims."""
        from council.services.runs import close_run

        close_run(self.uow, run_id, actor=ACTOR)

    def open_run(
        self,
        provider: str = "anthropic",
        agent: str | None = None,
        *,
        parent_run_id: UUID | None = None,
        exposed_to: list[UUID] | tuple[UUID, ...] = (),
        round_no: int = 1,
        actor: str = ACTOR,
    ) -> UUID:
        """A run recorded by hand by ``actor``, still open: it takes its recorder's claims."""
        recorded = RecordedRun(
            thread=self.thread_id,
            agent=agent or provider,
            model=MODELS.get(provider, f"{provider}/model"),
            provider=provider,
            parent_run=parent_run_id,
            exposed_to=tuple(exposed_to),
            round_no=round_no,
        )
        return record_run(self.uow, recorded, actor=actor).id

    def claim(
        self,
        run_id: UUID,
        version_id: UUID,
        claim_type: str = "endorse",
        *,
        confidence: float | str | None = None,
        rationale: str = "",
        cites: list[UUID] | tuple[UUID, ...] = (),
        citation_role: str | None = None,
        interpretation: str = "",
    ) -> dict[str, Any]:
        claim = NewClaim(
            version=version_id,
            claim_type=claim_type,
            confidence=confidence,
            rationale=rationale,
            cites=same_reading(cites, citation_role, interpretation),
        )
        from tests.rows import row

        run = row(self.engine, "agent_runs", "id = :id", id=run_id)
        with self.uow() as tx:
            if run["mode"] == "external":  # as its recorder, who holds it open
                [added] = tx.claims.add(run_id, [claim], actor=ACTOR)
            else:  # a worker's running attempt, as its own output would: fenced first
                assert tx.runs.fence(run_id, run["attempt"]) is not None, f"run {run_id} is not running"
                [added] = tx.claims.add(run_id, [claim], actor=ACTOR, held=True)
        return added.model_dump()

    def ready_node(self, content: str = "SQLite parity is sufficient for tests") -> UUID:
        """A node with two independent endorsements from two providers, each
        citing different evidence: ready to consolidate under the default rules."""
        version_id = UUID(str(self.node(content)["version_id"]))
        for i, provider in enumerate(("anthropic", "openai")):
            run_id = self.run(provider)
            self.claim(run_id, version_id, confidence=0.8, cites=[self.evidence[i % len(self.evidence)]])
            self.close(run_id)
        return version_id


def alter_claims_behind_the_ledgers_back(engine: Engine, version_id: UUID, confidence: float) -> None:
    """Rewrite the confidence of every claim on a version with the immutability
    trigger disabled: what replay must detect. Only the owner can (``owner_engine``);
    the application's role cannot disable a trigger."""
    with unit_of_work(engine) as conn:
        conn.execute(text("ALTER TABLE claims DISABLE TRIGGER claims_immutable"))
        conn.execute(
            text("UPDATE claims SET confidence = :c WHERE node_version_id = :v"),
            {"c": confidence, "v": version_id},
        )
        conn.execute(text("ALTER TABLE claims ENABLE TRIGGER claims_immutable"))

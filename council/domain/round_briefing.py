"""The shared part of a round's briefing (docs/architecture.md §7, simultaneous rounds).

A round is simultaneous: every run of it is shown the thread as it stood when the round
opened, whatever order workers take its runs in. So what the runs of a round share — the
blind reentry packet (propositions without author or stance, every evidence item of the
thread, the questions asked on it), the previous round's stances in a deliberative round,
and the proposal a review votes on — is compiled once, when the round opens, and stored by
the SHA-256 of its canonical JSON (``round_briefings``, ``dispatch_rounds``). A run's
request is compiled from it plus what is the run's own: its agent, and in the council's
later rounds which propositions its own lineage originated
(``council.agents.compiler.compile_request``).

Values only.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from council.domain.canonical import canonical_json, sha256_text
from council.domain.jsonvalue import JsonObject
from council.domain.protocol import Phase
from council.domain.reentry import ReentryPacket

FORMAT: Final = "council-round-briefing-v1"


class ShownStance(BaseModel):
    """A stance of the previous round as a deliberative run is shown it (every value as text;
    the ledger reads them so, ordered by version then claim: ``previous_round_stances``)."""

    model_config = ConfigDict(frozen=True)

    claim_id: str
    run_id: str
    agent: str
    node_version_id: str
    type: str
    confidence: str | None
    rationale: str | None


class ShownEvidence(BaseModel):
    """An evidence item of a reviewed consolidation, with its validity now."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    validity: str


class ShownProposal(BaseModel):
    """What a review run is shown of the retraction proposal it votes on (no votes: blind)."""

    model_config = ConfigDict(frozen=True)

    id: str
    reason: str
    consolidation_id: str
    node_version_id: str
    content: str
    evidence: list[ShownEvidence]


class RoundBriefing(BaseModel):
    """What every run of one round is shown, the same for each (its request adds its agent)."""

    model_config = ConfigDict(frozen=True)

    format: Literal["council-round-briefing-v1"] = FORMAT
    mode: str
    round: int
    phase: Phase
    packet: ReentryPacket  # blind; its event high-water mark unset (it is no part of what is shown)
    previous_round: list[ShownStance] = []
    proposal: ShownProposal | None = None

    def document(self) -> JsonObject:
        """What is hashed and stored."""
        found: JsonObject = self.model_dump(mode="json")
        return found

    @property
    def sha256(self) -> str:
        return sha256_text(canonical_json(self.document()))

    def blind(self) -> RoundBriefing:
        """The round's briefing without the previous round's stances: what a control run of a
        deliberative round is compiled from (no stance shown, none recorded as its exposure)."""
        return self.model_copy(update={"previous_round": []}) if self.previous_round else self

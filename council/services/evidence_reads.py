"""What a run may cite (docs/architecture.md §7: a run cites only what it read): the
check the one loop of ``council.services.execution`` makes of every answer, whatever its
runtime. What it was given and read, each runtime says with its answer (an API run:
inline, or through ``council.agents.evidence_tool``; an agent CLI: the files it opened).
"""

from __future__ import annotations

from collections.abc import Sequence

from council.agents.compiler import READ_EVIDENCE
from council.domain.agent_output import AgentOutput, cited_evidence
from council.domain.ids import MIN_PREFIX


def refuse_unread(output: AgentOutput, citable: Sequence[str], *, how: str | None = None) -> None:
    """ValueError (an invalid output: re-prompted once, then the run fails with it) when the
    output cites evidence the run was neither given nor read (docs/architecture.md §7).
    ``how`` says how this runtime reads evidence (an API run: inline or through the tool)."""
    unread = [
        cited
        for cited in cited_evidence(output)
        if not any(e == cited or (len(cited) >= MIN_PREFIX and e.startswith(cited)) for e in citable)
    ]
    if unread:
        how = how or f"whose text is in the briefing's evidence_texts or that you read with {READ_EVIDENCE}"
        raise ValueError(
            f"cites evidence it was not given to read and did not read: {', '.join(unread)}; "
            f"cite only evidence {how}"
        )

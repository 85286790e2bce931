"""Use cases of learning from the record (docs/architecture.md §12): stance changes
and calibration, read from the core tables through their views."""

from __future__ import annotations

from dataclasses import asdict

from council.domain.calibration import calibrate
from council.domain.commands import IdRef
from council.domain.results.learning import (
    CalibrationShown,
    ModelCalibrationShown,
    StanceChange,
    StancesShown,
)
from council.domain.stances import CLASSES, StanceFacts, classify
from council.ledger.learning import StanceChangeRow
from council.services.ports import UnitOfWork


def stances(uow: UnitOfWork, thread: IdRef) -> StancesShown:
    """Every claim in the thread that follows an earlier stance of its agent on the
    node, or was shown others' stances, classified (``council_v_stance_changes``)."""
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        rows = tx.learning.stance_changes(thread_id)
    changes = [StanceChange.model_validate({**row, "change_class": stance_class(row)}) for row in rows]
    counts = {name: sum(1 for c in changes if c.change_class == name) for name in CLASSES}
    return StancesShown(thread_id=thread_id, counts=counts, changes=changes)


def stance_class(row: StanceChangeRow) -> str:
    """The domain's class; the view computes the same (a test keeps them equal)."""
    facts = StanceFacts(
        claim_type=str(row["claim_type"]),
        prior_claim_type=None if row["prior_claim_type"] is None else str(row["prior_claim_type"]),
        exposed_types=tuple(row["exposed_claim_types"] or ()),
        new_evidence=int(row["new_evidence"]),
        invalidated_evidence=int(row["invalidated_evidence"]),
        control_claim_type=None if row["control_claim_type"] is None else str(row["control_claim_type"]),
    )
    return classify(facts)


def calibration(uow: UnitOfWork, *, thread: IdRef | None = None) -> CalibrationShown:
    """Per model and provider family: endorsements that survived, disputes vindicated,
    confidence against outcome (reliability by bucket, Brier score)."""
    with uow() as tx:
        thread_id = None
        if thread is not None:
            thread_id = tx.resolve("thread", thread)
            tx.threads.get(thread_id)
        rows = tx.learning.claim_outcomes(thread_id)
    figures = calibrate(rows)
    return CalibrationShown(
        thread_id=thread_id, models=[ModelCalibrationShown.model_validate(asdict(f)) for f in figures]
    )

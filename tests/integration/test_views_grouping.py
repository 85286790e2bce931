"""The independence-group views against the Python grouping they must equal
(schema/views.md): on random ledgers where runs are linked by lineage, exposure,
similar input and cited evidence, under three parameter sets, the SQL groups are
`council groups`' groups, member for member."""

from __future__ import annotations

import json
import random
from decimal import Decimal
from pathlib import Path
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.domain.canonical import canonical_sha256
from council.services.consolidation import groups
from tests.builders import ACTOR, MODELS, Ledger
from tests.dashboard import version_of, view_rows
from tests.engines import unit_of_work, uow_of
from tests.rows import execute, insert

VIEWS_DOC = Path(__file__).resolve().parents[2] / "schema" / "views.md"


# Grouping parameters the equivalence test runs under: the seeded record, one
# that links more loosely, and one under which every two non-empty sets link.
_GROUPINGS = {
    "indep-v1": None,
    "test-loose": {
        "link_parent": False,
        "link_exposure": True,
        "input_jaccard": 0.34,
        "evidence_jaccard": 0.25,
        "evidence_min_shared": 1,
    },
    "test-all-similar": {
        "link_parent": True,
        "link_exposure": False,
        "input_jaccard": 0,
        "evidence_jaccard": 0,
        "evidence_min_shared": 0,
    },
}
_ALL_LINKS = {"parent", "shared_parent", "exposure", "similar_input", "shared_evidence"}
_LINK_KINDS = {
    "indep-v1": _ALL_LINKS,
    "test-loose": _ALL_LINKS - {"parent", "shared_parent"},
    "test-all-similar": _ALL_LINKS - {"exposure"},
}
_FEATURES = [f"stance:{n}" for n in range(5)]
_SEED = 1  # a ledger with every kind of link the parameters allow (checked by the test)


def _random_ledger(engine: Engine, grouping: str, seed: int) -> tuple[Ledger, list[UUID]]:
    """Runs with random parents, exposures and inputs claiming on five versions
    with random stances and citations, under ``grouping``."""
    params = _GROUPINGS[grouping]
    if params is not None:
        with unit_of_work(engine) as conn:
            insert(
                conn,
                "grouping_algorithms",
                id=grouping,
                params=params,
                params_sha256=canonical_sha256({"id": grouping, "params": params}),
            )
    with uow_of(engine)() as tx:  # the service pins the default grouping; this thread pins another
        thread = tx.threads.create(
            title=f"random {seed}", objective="grouping", actor=ACTOR, grouping_algorithm_id=grouping
        )
    ledger = Ledger(engine, thread.id)
    for i in range(6):
        ledger.add_evidence(f"random {seed}: evidence {i}")
    rng = random.Random(seed)
    run_ids: list[UUID] = []
    for i in range(14):
        parent = rng.choice(run_ids) if run_ids and rng.random() < 0.3 else None
        shown = rng.sample(run_ids, k=min(len(run_ids), rng.choice([0, 0, 0, 1, 2])))
        run = ledger.run(rng.choice(list(MODELS)), agent=f"agent-{i}", parent_run_id=parent, exposed_to=shown)
        features = rng.sample(_FEATURES, k=rng.choice([0, 1, 2, 3, 4]))
        if features:  # what a worker stores with the request (write-once)
            with unit_of_work(engine) as conn:
                execute(
                    conn,
                    "UPDATE agent_runs SET input_fingerprint = CAST(:f AS jsonb) WHERE id = :v",
                    f=json.dumps(features),
                    v=run,
                )
        run_ids.append(run)
    versions = [version_of(ledger, f"proposition {n}") for n in range(5)]
    for version in versions:
        for run in rng.sample(run_ids, k=rng.randint(6, 12)):
            ledger.claim(
                run,
                version,
                claim_type=rng.choice(["endorse", "endorse", "originate", "dispute", "abstain"]),
                confidence=rng.choice(["0.3", "0.7", "0.9"]),
                cites=rng.sample(ledger.evidence, k=rng.choice([0, 1, 2, 3])),
            )
    return ledger, versions


@pytest.mark.parametrize("grouping", list(_GROUPINGS))
def test_independence_groups_view_equals_the_python_grouping(engine: Engine, grouping: str) -> None:
    # Given runs linked at random by lineage, exposure, similar input and cited evidence
    ledger, versions = _random_ledger(engine, grouping, seed=_SEED)
    # When the links view is read, every kind of link the parameters allow is there
    links = view_rows(engine, "council_v_independence_links", thread_id=ledger.thread_id)
    assert {r["kind"] for r in links} == _LINK_KINDS[grouping]
    for version in versions:
        # When the groups view and `council groups` are read for a version
        rows = view_rows(engine, "council_v_independence_groups", node_version_id=version)
        computed = groups(uow_of(engine), version)
        # Then they are the same groups, member for member
        actual = {
            (r["group_id"], r["kind"], tuple(map(str, r["runs"])), tuple(r["providers"]), r["max_confidence"],
             tuple(map(str, r["component_runs"])), r["grouping_algorithm_id"])
            for r in rows
        }  # fmt: skip
        expected = {
            (g.id, g.kind, tuple(g.runs), tuple(g.providers), Decimal(str(g.max_confidence)),
             tuple(g.component_runs), computed.grouping_algorithm_id)
            for g in computed.groups
        }  # fmt: skip
        assert actual == expected
        assert all(r["run_count"] == len(r["runs"]) for r in rows)

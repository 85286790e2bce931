"""`council replay --rule-set`, `council rule-set`, `council stances` and `council
calibration` through the console script: one JSON document each (checked against
the published schema), bad input refused with exit 2 and nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from uuid import UUID

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from council.bootstrap import bootstrap
from council.services.consolidation import consolidate
from council.web.app import create_app
from council.web.security import Policy
from tests.builders import ACTOR, Ledger
from tests.conftest import CliRunner
from tests.engines import uow_of
from tests.integration.test_counterfactual import row_counts, rule_set


def _decided(engine: Engine) -> tuple[Ledger, UUID]:
    ledger = Ledger.new(engine)
    version = ledger.ready_node()
    consolidation = consolidate(uow_of(engine), version, actor=ACTOR).consolidation_id
    assert consolidation is not None
    return ledger, consolidation


def test_counterfactual_replay_then_store_and_pin_the_rule_set(
    cli: CliRunner, engine: Engine, tmp_path: Path
) -> None:
    ledger, consolidation = _decided(engine)
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps(rule_set("three-groups-v1", min_support_groups=3)), encoding="utf-8")
    before = row_counts(engine)
    # When the stored decisions are replayed under the file's rule set
    replayed = cli("replay", "--rule-set", str(strict), "--thread", str(ledger.thread_id), "--json")
    # Then the consolidation would change, and nothing was written
    assert replayed.code == 0, replayed.stderr
    report = replayed.json()
    assert [c["id"] for c in report["changed"]] == [str(consolidation)]
    assert report["changed"][0]["counterfactual_outcome"] == "not_ready"
    assert row_counts(engine) == before
    # And the human rendering names the decision and the rule
    human = cli("replay", "--rule-set", str(strict))
    assert human.code == 0 and str(consolidation) in human.stdout and "independent_support" in human.stdout
    # And replay of one decision still works as before
    assert cli("replay", str(consolidation), "--json").json()["match"] is True
    # When the rule set is stored with that report and pinned
    report_file = tmp_path / "report.json"
    report_file.write_text(replayed.stdout, encoding="utf-8")
    stored = cli("rule-set", "add", str(strict), "--report", str(report_file), "--pin", "--json")
    assert stored.code == 0, stored.stderr
    assert stored.json()["rule_set"]["provenance"]["report_sha256"] == report["report_sha256"]
    # Then new threads are pinned to it, and it replays by id
    listed = cli("rule-set", "list", "--json").json()
    assert listed["pinned_for_new_threads"] == "three-groups-v1"
    thread = cli("thread", "create", "--title", "T", "--objective", "O", "--json").json()
    assert thread["rule_set_id"] == "three-groups-v1"
    again = cli("replay", "--rule-set", "three-groups-v1", "--thread", str(ledger.thread_id), "--json").json()
    assert again["report_sha256"] == report["report_sha256"]
    # And the default pins back
    assert cli("rule-set", "pin", "council-default-v1", "--json").json()["pinned"] is True


def test_bad_counterfactual_input_is_refused_with_exit_2_and_one_json_error(
    cli: CliRunner, engine: Engine, tmp_path: Path
) -> None:
    _decided(engine)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    unknown_rule = tmp_path / "unknown.json"
    unknown_rule.write_text(json.dumps(rule_set("x-v1", quorum=3)), encoding="utf-8")
    before = row_counts(engine)
    for args in (
        ("replay", "--rule-set", str(broken)),
        ("replay", "--rule-set", str(unknown_rule)),
        ("replay", "--rule-set", "no-such-rules-v1"),
        ("replay", "--rule-set", str(tmp_path / "missing.json")),
        ("replay", "--rule-set", "council-default-v1", "--since", "yesterday"),
        ("replay",),
        ("rule-set", "add", str(unknown_rule)),
        ("rule-set", "pin", "no-such-rules-v1"),
    ):
        result = cli(*args, "--json")
        assert result.code == 2, (args, result.stdout, result.stderr)
        assert json.loads(result.stdout)["code"] == 2, args
        assert len(result.stderr.strip().splitlines()) == 1, (args, result.stderr)
    assert row_counts(engine) == before


def test_stances_and_calibration_print_one_document(cli: CliRunner, engine: Engine) -> None:
    ledger, _ = _decided(engine)
    version = UUID(str(ledger.node("changed its mind")["version_id"]))
    first = ledger.run("anthropic", "alpha")
    ledger.claim(first, version, "endorse")
    ledger.claim(ledger.run("anthropic", "alpha"), version, "dispute")
    stances = cli("stances", "--thread", str(ledger.thread_id), "--json")
    assert stances.code == 0, stances.stderr
    assert stances.json()["counts"]["no_recorded_cause"] == 1
    assert "no_recorded_cause" in cli("stances", "--thread", str(ledger.thread_id)).stdout
    calibration = cli("calibration", "--thread", str(ledger.thread_id), "--json")
    assert calibration.code == 0, calibration.stderr
    models = {m["provider"]: m for m in calibration.json()["models"]}
    assert models["openai"]["endorsements_live"] == 1 and models["openai"]["brier"] is not None
    assert cli("calibration").code == 0
    missing = cli("stances", "--thread", "0123456789ab", "--json")
    assert missing.code == 2 and json.loads(missing.stdout)["code"] == 2


def test_the_api_serves_stance_changes(db_url: str, engine: Engine) -> None:
    ledger, _ = _decided(engine)
    version = UUID(str(ledger.node("held")["version_id"]))
    for _ in range(2):
        ledger.claim(ledger.run("openai", "beta"), version, "endorse")
    app = create_app(bootstrap(db_url), policy=Policy(write_token="w" * 16, read_token="r" * 16))
    with TestClient(
        app, base_url="http://127.0.0.1", headers={"Authorization": "Bearer " + "r" * 16}
    ) as client:
        shown = client.get(f"/threads/{ledger.thread_id}/stances").json()
    assert shown["counts"]["held"] == 1 and [c["change_class"] for c in shown["changes"]] == ["held"]

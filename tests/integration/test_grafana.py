"""deploy/grafana: the provisioned data source is the read-only dashboard role,
the dashboard's panels name that data source, and every panel's SQL runs as
the role against a migrated database holding a small ledger, and shows it."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import yaml
from sqlalchemy import Engine

from council.domain.commands import NewFork
from council.services.branches import fork_branch
from council.services.consolidation import consolidate
from council.services.observation import resolve
from council.services.reversal import change_validity
from tests.builders import ACTOR, Ledger
from tests.dashboard import DASHBOARD_ROLE, dashboard_url, fail_run, worker_run
from tests.engines import uow_of

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "deploy" / "grafana"
DATASOURCES = GRAFANA / "provisioning" / "datasources" / "council.yaml"
PROVIDERS = GRAFANA / "provisioning" / "dashboards" / "council.yaml"
DASHBOARD = GRAFANA / "dashboards" / "council.json"
COMPOSE = ROOT / "deploy" / "docker-compose.yml"


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _datasource() -> dict[str, Any]:
    [datasource] = _yaml(DATASOURCES)["datasources"]
    return dict(datasource)


def _dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text(encoding="utf-8")))


def _queries(dashboard: dict[str, Any]) -> dict[str, str]:
    """Every SQL text of the dashboard: each panel's targets and each template variable."""
    queries = {
        f"panel {panel['title']!r} target {target['refId']}": target["rawSql"]
        for panel in dashboard["panels"]
        for target in panel["targets"]
    }
    queries.update({f"variable {v['name']!r}": v["query"] for v in dashboard["templating"]["list"]})
    return queries


def _as_grafana_sends(sql: str, threads: list[str], start: datetime, end: datetime) -> str:
    """The SQL after Grafana's interpolation of the macros and variables the dashboard uses."""
    sql = re.sub(
        r"\$__timeFilter\((\w+)\)",
        lambda m: f"{m[1]} BETWEEN '{start.isoformat()}' AND '{end.isoformat()}'",
        sql,
    )
    sql = sql.replace("${thread:singlequote}", ",".join(f"'{thread}'" for thread in threads))
    assert "$" not in sql, f"a Grafana macro or variable the test does not expand: {sql}"
    return sql


def test_the_data_source_is_the_dashboard_role_with_its_password_from_the_environment() -> None:
    # Given the provisioned data source
    datasource = _datasource()
    # Then it logs in as the read-only role, on the compose file's database
    assert (datasource["type"], datasource["user"]) == ("grafana-postgresql-datasource", DASHBOARD_ROLE)
    assert (datasource["url"], datasource["jsonData"]["database"]) == ("postgres:5432", "council")
    # And its password is an environment variable, never a value in the repository
    assert datasource["secureJsonData"] == {"password": "$COUNCIL_DASHBOARD_PASSWORD"}
    assert "password" not in datasource and "password" not in datasource["jsonData"]


def test_every_panel_and_variable_uses_the_provisioned_data_source() -> None:
    # Given the dashboard and the provisioned data source
    dashboard, datasource = _dashboard(), _datasource()
    expected = {"type": datasource["type"], "uid": datasource["uid"]}
    # When every data source reference of the dashboard is collected
    references = [p["datasource"] for p in dashboard["panels"]]
    references += [t["datasource"] for p in dashboard["panels"] for t in p["targets"]]
    references += [v["datasource"] for v in dashboard["templating"]["list"]]
    # Then each names the provisioned one, and each panel has SQL to run
    assert references and all(reference == expected for reference in references)
    assert all(p["targets"] and all(t["rawSql"].strip() for t in p["targets"]) for p in dashboard["panels"])
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])


def test_the_dashboard_provider_reads_the_directory_the_compose_file_mounts() -> None:
    # Given the dashboard provider and the compose file's Grafana service
    [provider] = _yaml(PROVIDERS)["providers"]
    mounts = {
        volume.split(":")[0]: volume.split(":")[1]
        for volume in _yaml(COMPOSE)["services"]["grafana"]["volumes"]
    }
    # Then the provider reads the files of deploy/grafana/dashboards, and the
    # provisioning directory is where Grafana looks for it
    assert provider["type"] == "file"
    assert mounts["./grafana/dashboards"] == provider["options"]["path"]
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
    assert DASHBOARD.parent == COMPOSE.parent / "grafana" / "dashboards"


def test_every_panel_query_runs_as_the_dashboard_role_and_shows_the_ledger(
    engine: Engine, db_url: str
) -> None:
    # Given a small ledger: a consolidation whose evidence was challenged, a node
    # not ready, a run shown another's stance, a failed run, a fork and a resolution
    uow = uow_of(engine)
    ledger = Ledger.new(engine)
    committed = ledger.ready_node()
    consolidate(uow, committed, actor=ACTOR)
    resolve(uow, committed, outcome="true", source="bench test", reason="measured", actor=ACTOR)
    change_validity(
        uow, None, ledger.evidence[0], action="challenge", reason="method questioned", actor=ACTOR
    )
    lonely = UUID(str(ledger.node("one supporter")["version_id"]))
    first = ledger.run("anthropic")
    ledger.claim(first, lonely, cites=[ledger.evidence[1]])
    ledger.claim(ledger.run("openai", exposed_to=[first]), lonely, claim_type="dispute")
    consolidate(uow, lonely, actor=ACTOR)
    failed, attempt, _ = worker_run(ledger)
    fail_run(
        ledger,
        failed,
        attempt,
        usage={"calls": 1, "prompt_tokens": 50, "completion_tokens": 9},
        cost_usd=0.001,
    )
    fork_branch(
        uow,
        NewFork(
            thread=ledger.thread_id,
            kind="node",
            label="tail latency",
            divergence_type="claim",
            at_version=lonely,
        ),
        actor=ACTOR,
    )
    now = datetime.now(UTC)  # the range ends a minute ahead: clocks of client and server may differ
    # When each query is sent as Grafana would, as the dashboard role
    with psycopg.connect(dashboard_url(db_url), autocommit=True) as conn:
        rows = {
            where: conn.execute(
                _as_grafana_sends(
                    sql, [str(ledger.thread_id)], now - timedelta(days=7), now + timedelta(minutes=1)
                ).encode()
            ).fetchall()
            for where, sql in _queries(_dashboard()).items()
        }
    # Then every one runs, and shows something of the ledger
    assert [where for where, found in rows.items() if not found] == []

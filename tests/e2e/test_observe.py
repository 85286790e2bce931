"""`council import | resolve | eval` on real Postgres (docs/guide/observe.md): a small recorded debate,
written here (not copied from any data set), with three agents, simultaneous and
sequential rounds, a free-text record and truths, in both formats; `eval --json`
against figures computed by hand; a second import writes no row; a bad record refuses
the whole file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from tests.dashboard import dashboard_url
from tests.engines import engine_for

AGENTS = [
    {"name": "alpha", "model": "openai/gpt-4o-mini", "provider": "openai"},
    {"name": "beta", "model": "anthropic/claude-haiku", "provider": "anthropic"},
    {"name": "gamma", "model": "zai/glm-4.6", "provider": "zhipu"},
]


def _turn(round_no: int, agent: str, answer: str | None, confidence: float | None = None) -> dict[str, Any]:
    turn: dict[str, Any] = {"round": round_no, "agent": agent, "answer": answer}
    if confidence is not None:
        turn["confidence"] = confidence
    return turn


DEBATE = [
    # q1: simultaneous rounds; alpha starts right and conforms to the others' B.
    {"id": "q1", "question": "Which came first?", "options": {"A": "The hen.", "B": "The egg."},
     "truth": "A", "agents": AGENTS, "tags": ["toy", "simultaneous"],
     "turns": [_turn(0, "alpha", "A", 0.9), _turn(0, "beta", "B", 0.6), _turn(0, "gamma", "B", 0.7),
               _turn(1, "alpha", "B", 0.8), _turn(1, "beta", "B", 0.7), _turn(1, "gamma", "B", 0.75)]},
    # q2: a sequential debate: each speaker its own round, so each saw those before it.
    {"id": "q2", "question": "Is the bridge safe?", "options": {"A": "Yes.", "B": "No."},
     "truth": ["B"], "agents": AGENTS, "tags": ["toy", "sequential"],
     "turns": [_turn(0, "alpha", "A"), _turn(1, "beta", "A"), _turn(2, "gamma", "B")]},
    # q3: free answers (equal after trimming and case-folding are one); beta first abstains.
    {"id": "q3", "question": "Capital of France?", "truth": "Paris", "agents": AGENTS, "tags": ["toy"],
     "turns": [_turn(0, "alpha", "Paris"), _turn(0, "beta", None), _turn(0, "gamma", "Lyon"),
               _turn(1, "alpha", " paris "), _turn(1, "beta", "PARIS"), _turn(1, "gamma", "Paris")]},
    # q4: one blind round: alpha and beta independently right, gamma gives no answer.
    {"id": "q4", "question": "2 + 2?", "options": {"A": "4", "B": "5"}, "truth": "A",
     "agents": AGENTS, "tags": ["toy", "blind"],
     "turns": [_turn(0, "alpha", "A"), _turn(0, "beta", "A"), _turn(0, "gamma", None)]},
]  # fmt: skip


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _rows(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            table: conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
            for table in ("threads", "agent_runs", "claims", "run_exposures", "resolutions", "events")
        }


def test_import_then_eval_gives_the_hand_computed_figures(cli: Any, tmp_path: Path, engine: Engine) -> None:
    # Given a recorded debate in council-debate-v1
    path = _write_jsonl(tmp_path / "toy.jsonl", DEBATE)
    before = _rows(engine)
    # When it is imported
    imported = cli("import", str(path), "--json")
    assert imported.code == 0, imported.stderr
    doc = imported.json()
    assert (doc["created"], doc["records"], doc["turns"]) == (True, 4, 18)
    after = _rows(engine)
    # Then a thread per record, a run per turn, the truth as a resolution of every node
    assert after["threads"] - before["threads"] == 4
    assert after["agent_runs"] - before["agent_runs"] == 18
    assert after["resolutions"] - before["resolutions"] == 2 + 2 + 2 + 2  # q3: paris and lyon
    # And every imported run is marked as imported, never as run by Council
    with engine.connect() as conn:
        modes = conn.execute(text("SELECT DISTINCT mode, status FROM agent_runs")).all()
    assert [tuple(m) for m in modes] == [("imported", "succeeded")]

    # When the same file is imported again, nothing is written
    again = cli("import", str(path), "--json")
    assert again.code == 0 and again.json()["created"] is False
    assert _rows(engine) == after
    # And a person told so, with options that would have read it otherwise, learns they change nothing
    told = cli("import", str(path))
    assert told.code == 0 and "was imported before" in told.stdout and "do not change it" in told.stdout
    assert _rows(engine) == after

    # When eval reads it, under the pinned rules and a lax rule set
    lax = tmp_path / "lax.json"
    lax.write_text(json.dumps({"id": "lax-1", "description": "one group", "body": {
        "min_support_groups": 1, "min_support_providers": 1, "dispute_confidence_bar": 1.0}}))  # fmt: skip
    report = cli("eval", "--tag", "toy", "--rule-set", "council-default-v1", "--rule-set", str(lax), "--json")
    assert report.code == 0, report.stderr
    r = report.json()
    assert (r["records"], r["resolved"]) == (4, 4)
    agents = r["agents"]
    assert (agents["alpha"]["first_accuracy"], agents["alpha"]["last_accuracy"]) == (0.75, 0.5)
    assert (agents["beta"]["first_accuracy"], agents["beta"]["last_accuracy"]) == (0.25, 0.5)
    assert (agents["gamma"]["first_accuracy"], agents["gamma"]["last_accuracy"]) == (0.25, 0.5)
    # alpha: right to wrong after seeing two B's; gamma: Lyon to Paris after seeing alpha's Paris
    assert agents["alpha"]["flips"]["by_cause"]["toward_exposure"]["correct_to_wrong"] == 1
    assert agents["gamma"]["flips"]["by_cause"]["toward_exposure"]["wrong_to_correct"] == 1
    assert agents["beta"]["flips"]["correct_to_wrong"] + agents["beta"]["flips"]["wrong_to_correct"] == 0
    # Majority: first round q3 ties Paris/Lyon (Paris was given first)
    assert r["majority"]["first_round"] == {"accuracy": 0.5, "ties": 1, "correct": 2}
    assert r["majority"]["last_round"] == {"accuracy": 0.5, "ties": 0, "correct": 2}
    # The pinned rules consolidate only q4's A: two blind supporters of two providers
    default = r["council"]["council-default-v1"]
    assert (default["decided"], default["coverage"]) == (1, 0.25)
    assert (default["accuracy"], default["wrong"]) == (1.0, 0)
    # One group is enough under lax: every supported node consolidates (q1 A and B, ...)
    assert r["council"]["lax-1"]["decided"] == 4 and r["council"]["lax-1"]["wrong"] == 3
    # alpha and beta erred on the same records: fully correlated, so q4 has one effective vote
    [node] = r["effective_votes"]["nodes"]
    assert node["supporters"] == ["alpha", "beta"] and node["n_eff"] == 1.0
    pair = next(p for p in r["effective_votes"]["pairs"] if p["agents"] == ["alpha", "beta"])
    assert pair == {"agents": ["alpha", "beta"], "correlation": 1.0, "records": 4}
    # Oracle gap: every record had a right turn; the last-round majority missed q1 and q2
    gap = {"oracle_correct": 4, "majority": 2, "council": {"council-default-v1": 0, "lax-1": 3}}
    assert r["oracle_gap"] == gap
    # Calibration over q1's six stated confidences
    cal = r["calibration"]
    assert cal["turns"] == 6
    assert cal["brier"] == pytest.approx(2.5525 / 6, abs=1e-6)
    assert cal["ece"] == pytest.approx(3.65 / 6, abs=1e-6)
    # And the dashboards' view gives each agent the same first and last accuracy, as the
    # dashboard role reads it
    reader = engine_for(dashboard_url(engine.url.render_as_string(hide_password=False)))
    with reader.connect() as conn:
        viewed = conn.execute(
            text("SELECT agent, records, first_accuracy, last_accuracy FROM council_v_agent_accuracy")
        ).all()
    assert {a: (n, f, la) for a, n, f, la in viewed} == {
        a: (agents[a]["records"], agents[a]["first_accuracy"], agents[a]["last_accuracy"]) for a in agents
    }
    # And the same ledger gives the same bytes
    assert cli("eval", "--tag", "toy", "--rule-set", "council-default-v1", "--rule-set", str(lax),
               "--json").stdout == report.stdout  # fmt: skip


def test_eval_reports_v1_against_v2_side_by_side(cli: Any, tmp_path: Path) -> None:
    # Given the toy debate imported
    assert cli("import", str(_write_jsonl(tmp_path / "toy.jsonl", DEBATE)), "--json").code == 0
    # When eval reads it under the two stored defaults
    both = ("eval", "--tag", "toy", "--rule-set", "council-default-v1", "--rule-set", "council-default-v2")
    report = cli(*both, "--json")
    assert report.code == 0, report.stderr
    council = report.json()["council"]
    # Then v1 decides q4 on alpha's and beta's blind A; v2 does not: on the three other
    # records their last answers erred together (phi 1 over 3 of 30 records), so the pair
    # is at 0.1 * 1 + 0.9 * 0.3 = 0.37 and n_eff = 4 / 2.74 = 1.46 < 1.5
    assert (council["council-default-v1"]["decided"], council["council-default-v1"]["wrong"]) == (1, 0)
    assert council["council-default-v2"]["decided"] == 0
    # And a person reads both in one table
    human = cli(*both)
    assert human.code == 0, human.stderr
    [v1_row] = [line.split() for line in human.stdout.splitlines() if "council-default-v1" in line]
    [v2_row] = [line.split() for line in human.stdout.splitlines() if "council-default-v2" in line]
    assert (v1_row[1:3], v2_row[1:3]) == (["1", "25.0%"], ["0", "0.0%"])


def test_a_bad_record_refuses_the_whole_file(cli: Any, tmp_path: Path, engine: Engine) -> None:
    bad = [DEBATE[0], {**DEBATE[1], "turns": [_turn(0, "alpha", "C")]}]
    path = _write_jsonl(tmp_path / "bad.jsonl", bad)
    before = _rows(engine)
    refused = cli("import", str(path), "--json")
    assert refused.code == 2
    assert "record q2" in refused.json()["error"] and "not an option label" in refused.json()["error"]
    assert len(refused.stderr.strip().splitlines()) == 1
    assert _rows(engine) == before
    # Not a regular file: refused, nothing written
    assert cli("import", "/dev/zero", "--json").code == 2
    assert cli("import", str(tmp_path), "--json").code == 2
    assert _rows(engine) == before


def test_du_debate_and_resolve(cli: Any, tmp_path: Path, engine: Engine) -> None:
    # Given the JSON a published debate harness writes: answers in "(X)" form
    def context(*answers: str) -> list[dict[str, str]]:
        messages = [{"role": "user", "content": "Question..."}]
        for answer in answers:
            messages += [{"role": "assistant", "content": f"Thinking. The answer is ({answer})."},
                         {"role": "user", "content": "Others said..."}]  # fmt: skip
        return messages

    du = [
        {"question": "Which?", "answer": "(B)", "agent_contexts": [context("A", "B"), context("B", "B")]},
        {"question": "Else?", "answer": "(A)", "agent_contexts": [context("A", "A"), context("B", "A")]},
    ]
    path = tmp_path / "du.json"
    path.write_text(json.dumps(du), encoding="utf-8")
    # A du-debate file needs its answer pattern
    assert cli("import", str(path), "--format", "du-debate", "--json").code == 2
    imported = cli("import", str(path), "--format", "du-debate", "--answer-pattern", r"\((\w)\)", "--json")
    assert imported.code == 0, imported.stderr
    assert (imported.json()["records"], imported.json()["turns"]) == (2, 8)
    r = cli("eval", "--tag", "file:du.json", "--json").json()
    assert r["resolved"] == 2
    # agent-0: A then B (right) in record 0, A, A (right) in record 1: first 1/2, last 2/2
    assert (r["agents"]["agent-0"]["first_accuracy"], r["agents"]["agent-0"]["last_accuracy"]) == (0.5, 1.0)
    # agent-1: B, B (right); B then A (right): first 1/2, last 2/2
    assert (r["agents"]["agent-1"]["first_accuracy"], r["agents"]["agent-1"]["last_accuracy"]) == (0.5, 1.0)
    # Each flip came after seeing the other agent's previous round, which gave the new answer
    assert r["agents"]["agent-0"]["flips"]["by_cause"]["toward_exposure"]["wrong_to_correct"] == 1
    assert r["agents"]["agent-1"]["flips"]["by_cause"]["toward_exposure"]["wrong_to_correct"] == 1

    # When a person resolves a node the other way, the later resolution supersedes the first
    thread = imported.json()["thread_ids"][0]
    with engine.connect() as conn:
        version = conn.execute(
            text("SELECT id FROM node_versions WHERE thread_id = :t AND content = 'B'"), {"t": thread}
        ).scalar_one()
    bad = cli("resolve", "--node", str(version), "--outcome", "maybe", "--source", "s", "--reason", "r",
              "--json")  # fmt: skip
    assert bad.code == 2
    done = cli("resolve", "--node", str(version)[:8], "--outcome", "false", "--source", "errata",
               "--reason", "the key was wrong", "--json")  # fmt: skip
    assert done.code == 0, done.stderr
    assert done.json()["supersedes"] is not None and done.json()["outcome"] is False
    # Record 0 now has no true node: agent-0's and agent-1's last answers there are wrong
    r = cli("eval", "--tag", "file:du.json", "--json").json()
    assert r["agents"]["agent-0"]["last_accuracy"] == 0.5


def test_du_debates_as_the_harness_dumps_them_with_numeric_answers(cli: Any, tmp_path: Path) -> None:
    # Given what gen_gsm.py dumps: {question: [agent_contexts, answer]}, boxed numbers, a "#### N" truth
    def context(*answers: str) -> list[dict[str, str]]:
        messages = [{"role": "user", "content": "Solve..."}]
        for answer in answers:
            messages += [{"role": "assistant", "content": f"So it is \\boxed{{{answer}}}."},
                         {"role": "user", "content": "Others said..."}]  # fmt: skip
        return messages

    du = {
        "How many?": [[context("1,080", "1080"), context("$1,080.00", "1079")], "steps\n#### 1080"],
        "How far?": [[context("7", "7"), context("7.0", "7")], "#### 7"],
    }
    path = tmp_path / "gsm_3_2.json"
    path.write_text(json.dumps(du), encoding="utf-8")
    pattern = r"(?:\\boxed\{|####)[^0-9-]{0,3}(-?[0-9][0-9,]*(?:\.[0-9]+)?)"
    # When it is imported with --numeric, naming the model the file is a run of
    imported = cli("import", str(path), "--format", "du-debate", "--answer-pattern", pattern, "--numeric",
                   "--model", "qwen3-14b", "--provider", "alibaba", "--json")  # fmt: skip
    assert imported.code == 0, imported.stderr
    assert (imported.json()["records"], imported.json()["turns"]) == (2, 8)
    # Then every agent is recorded as that model's
    thread = imported.json()["thread_ids"][0]
    record = cli("export", "--thread", thread, "--format", "debate", "--json").json()["record"]
    assert {(a["model"], a["provider"]) for a in record["agents"]} == {("qwen3-14b", "alibaba")}
    # Then "1,080", "$1,080.00" and "1080" are the truth: agent-0 right twice, agent-1 right then wrong
    r = cli("eval", "--tag", "file:gsm_3_2.json", "--json").json()
    assert r["resolved"] == 2
    assert (r["agents"]["agent-0"]["first_accuracy"], r["agents"]["agent-0"]["last_accuracy"]) == (1.0, 1.0)
    assert (r["agents"]["agent-1"]["first_accuracy"], r["agents"]["agent-1"]["last_accuracy"]) == (1.0, 0.5)


def test_the_guide_example_is_this_debate() -> None:
    guide = Path(__file__).resolve().parents[2] / "docs" / "guide" / "observe.md"
    section = guide.read_text(encoding="utf-8")
    block = section[section.index("```jsonl\n") + len("```jsonl\n") :]
    block = block[: block.index("```")]
    assert [json.loads(line) for line in block.splitlines() if line.strip()] == DEBATE


def test_an_imported_thread_exports_as_it_came(cli: Any, tmp_path: Path) -> None:
    from council.domain.debates import parse_council_debate

    # Given the debate imported
    path = _write_jsonl(tmp_path / "toy.jsonl", DEBATE)
    imported = cli("import", str(path), "--json").json()
    # When each thread is exported as council-debate-v1
    exported = []
    for index, thread in enumerate(imported["thread_ids"]):
        out = tmp_path / f"out-{index}.jsonl"
        done = cli("export", "--thread", thread, "--format", "json", "--out", str(out), "--json")
        assert done.code == 0, done.stderr
        assert done.json()["out"] == str(out)
        exported.append(out.read_text(encoding="utf-8"))
    # Then parsing the export gives back the records that were imported
    again = parse_council_debate("".join(exported).splitlines())
    assert again == parse_council_debate(path.read_text(encoding="utf-8").splitlines())
    # And an existing file is never overwritten, nor an unknown format accepted
    assert cli("export", "--thread", imported["thread_ids"][0], "--out", str(path), "--json").code == 2
    assert cli("export", "--thread", imported["thread_ids"][0], "--format", "xml", "--json").code == 2


def test_the_api_serves_the_same_report_and_refuses_bad_selections(
    cli: Any, tmp_path: Path, db_url: str
) -> None:
    from fastapi.testclient import TestClient

    from council.adapters.scheduler import Recorder
    from council.bootstrap import bootstrap
    from council.web.app import create_app
    from council.web.security import Policy

    # Given the toy debate imported, and the report the CLI gives under the pinned rules
    assert cli("import", str(_write_jsonl(tmp_path / "toy.jsonl", DEBATE)), "--json").code == 0
    expected = cli("eval", "--tag", "toy", "--json").json()
    read = "r" * 20
    app = create_app(bootstrap(db_url, scheduler=lambda uow: Recorder()), policy=Policy(read_token=read))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        # When the API is asked without the read token, it refuses
        assert client.get("/eval").status_code == 401
        auth = {"Authorization": f"Bearer {read}"}
        # When it is asked for the same selection, it answers the same report (the same hash)
        served = client.get("/eval", params={"tag": "toy"}, headers=auth)
        assert served.status_code == 200, served.text
        assert served.json() == expected
        assert served.json()["report_sha256"] == expected["report_sha256"]
        # And an unknown rule set is 404, a malformed thread id 422, each with a reason
        unknown = client.get("/eval", params={"rule_set": "no-such-rules"}, headers=auth)
        assert unknown.status_code == 404 and "no-such-rules" in unknown.text
        assert client.get("/eval", params={"thread": "not-a-uuid"}, headers=auth).status_code == 422


@pytest.mark.parametrize(
    ("body", "args", "reason"),
    [
        ('[{"question": "\\ud800 Which?", "answer": "answer: A", '
         '"agent_contexts": [[{"role": "assistant", "content": "answer: A"}]]}]', (), "lone surrogate"),
        ("[" * 200_000 + "]" * 200_000, (), "nested"),
        ('[{"question": "Which?", "answer": NaN, '
         '"agent_contexts": [[{"role": "assistant", "content": "answer: A"}]]}]', (), "NaN"),
        ('[{"question": "Which?", "question": "Other?", "answer": "answer: A", '
         '"agent_contexts": [[{"role": "assistant", "content": "answer: A"}]]}]', (), "appears twice"),
        (None, ("--answer-pattern", "(a+)+$"), "nested quantifiers"),
    ],
    ids=["lone-surrogate", "200k-deep", "nan-answer", "duplicate-key", "backtracking-pattern"],
)  # fmt: skip
def test_import_refuses_what_it_cannot_take_in_one_line_exit_2(
    cli: Any, engine: Engine, tmp_path: Path, body: str | None, args: tuple[str, ...], reason: str
) -> None:
    """Issue 44: a lone surrogate and a 200k-deep nesting exited 1, a NaN answer and a
    duplicate key were taken (the last value silently), and (a+)+$ ran past a minute."""
    path = tmp_path / "debates.json"
    if body is None:
        almost = [{"role": "assistant", "content": "a" * 30_000 + "!"}]  # what (a+)+$ backtracks on
        debate = {"question": "Which?", "answer": "answer: A", "agent_contexts": [almost] * 3}
        path.write_text(json.dumps([debate] * 20), encoding="utf-8")
    else:
        path.write_text(body, encoding="utf-8", errors="surrogatepass")
    before = _rows(engine)
    result = cli(
        "import", str(path), "--format", "du-debate", *(args or ("--answer-pattern", r"answer: (\w+)")),
        "--json", timeout=120,
    )  # fmt: skip
    assert result.code == 2, (result.code, result.stderr[-400:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and reason in lines[0], result.stderr[-400:]
    assert json.loads(result.stdout)["code"] == 2
    assert _rows(engine) == before

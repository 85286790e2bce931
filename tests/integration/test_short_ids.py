"""Short ids: wherever an id is taken, a unique prefix of at least six hex digits
is accepted (what tables print), and an ambiguous one is refused with its
candidates — resolved by a range scan of the primary key, against real Postgres."""

from __future__ import annotations

from uuid import UUID

import pytest

from council.errors import BadInput, NotFound
from council.ledger.unit import UnitOfWork
from council.services.threads import create_thread, show_thread
from tests.conftest import CliRunner


def _thread_with_id(uow: UnitOfWork, thread_id: str) -> None:
    with uow() as tx:
        tx.conn.execute(
            "INSERT INTO threads (id, title, objective, rule_set_id, grouping_algorithm_id) "
            "VALUES (%(id)s, 't', 'o', 'council-default-v1', 'indep-v1')",
            {"id": thread_id},
        )


def test_a_unique_prefix_names_its_row(uow: UnitOfWork) -> None:
    made = create_thread(uow, title="Short ids", objective="Are prefixes enough?", actor="test")
    for prefix in (str(made.id)[:6], str(made.id)[:8], str(made.id)[:13], str(made.id).upper()[:10]):
        assert show_thread(uow, prefix).id == made.id


def test_an_ambiguous_prefix_is_refused_with_its_candidates(uow: UnitOfWork) -> None:
    first, second = "abcdef01-0000-4000-8000-000000000001", "abcdef02-0000-4000-8000-000000000002"
    _thread_with_id(uow, first)
    _thread_with_id(uow, second)

    with pytest.raises(BadInput, match="ambiguous") as refused:
        show_thread(uow, "abcdef0")
    assert first in str(refused.value) and second in str(refused.value)
    with uow() as tx:  # one more digit tells them apart
        assert tx.resolve("thread", "abcdef02") == UUID(second)


@pytest.mark.parametrize(
    ("value", "error"), [("abc12", BadInput), ("xyz123", BadInput), ("fedcba98", NotFound)]
)
def test_short_malformed_or_unknown_prefixes_are_bad_input(
    uow: UnitOfWork, value: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        show_thread(uow, value)


def test_the_cli_takes_a_prefix_and_refuses_an_ambiguous_one_in_one_line(cli: CliRunner) -> None:
    thread = cli("thread", "create", "--title", "T", "--objective", "O", "--json").json()["id"]
    node = cli("node", "add", "--thread", thread[:8], "--content", "A proposition", "--json").json()
    assert node["thread_id"] == thread
    run = cli(
        "run", "record", "--thread", thread[:8], "--agent", "claude", "--model", "anthropic/x", "--json"
    ).json()
    claim = cli(
        "claim",
        "add",
        "--run",
        run["id"][:8],
        "--node",
        node["version_id"][:8],
        "--type",
        "endorse",
        "--json",
    ).json()
    assert (claim["run_id"], claim["node_version_id"]) == (run["id"], node["version_id"])

    refused = cli("thread", "show", "0" * 4, "--json")
    assert refused.code == 2 and refused.json() == {
        "error": refused.stderr.split("error: ", 1)[1].strip(),
        "code": 2,
    }

"""The epistemic-word guard (docs/architecture.md §6): adjudicating words need a durable transition."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from council.domain.epistemic import GUARDED_CATEGORIES, Category, Item, guarded_words, lint

SQLITE_ID = "3f2a1b9c-7d4e-4f00-9a1b-2c3d4e5f6a7b"
POSTGRES_ID = "9d8e7f6a-1111-4222-8333-444455556666"
BRANCH_ID = "b7c4d2e1-aaaa-4bbb-8ccc-dddddddddddd"


def node(
    text: str = "SQLite parity is sufficient",
    *,
    id: str = SQLITE_ID,
    allowed: frozenset[Category] = frozenset(),
    aliases: tuple[str, ...] = (),
) -> Item:
    return Item(id=id, kind="node", text=text, aliases=aliases, allowed=allowed)


ALL_CATEGORIES: frozenset[Category] = frozenset({"settled", "rejected", "preferred"})
SENTENCE = "The council concluded that SQLite parity is sufficient."

# Every form docs/architecture.md §6 guards, with the category it claims.
FORMS: list[tuple[str, Category]] = [
    *[
        (w, "settled")
        for w in [
            "conclude",
            "concluded",
            "concludes",
            "concluding",
            "conclusion",
            "conclusions",
            "conclusively",
            "settle",
            "settled",
            "settles",
            "settling",
            "settlement",
        ]
    ],
    *[
        (w, "rejected")
        for w in [
            "reject",
            "rejected",
            "rejects",
            "rejecting",
            "rejection",
            "rejections",
            "set aside",
            "sets aside",
            "setting aside",
            "set-aside",
            "set\naside",
        ]
    ],
    *[
        (w, "preferred")
        for w in [
            "prefer",
            "preferred",
            "prefers",
            "preferring",
            "preference",
            "preferences",
            "preferable",
            "preferably",
        ]
    ],
]


def test_concluded_about_an_unconsolidated_node_is_flagged_with_its_id() -> None:
    # Given a node with no live consolidation or stable memory
    items = [node()]
    # When a sentence about it says "concluded"
    findings = lint(SENTENCE, items)
    # Then it is flagged against that node
    assert len(findings) == 1
    (finding,) = findings
    assert finding.item_id == SQLITE_ID
    assert finding.word == "concluded"
    assert finding.category == "settled"
    assert finding.sentence == SENTENCE
    assert finding.reason == "“concluded” about node 3f2a1b9c…: no live consolidation or stable memory"
    assert SENTENCE[finding.span[0] : finding.span[1]] == "concluded"


def test_concluded_passes_when_the_ledger_backs_settlement() -> None:
    # Given the node is consolidated (or its memory is stable)
    items = [node(allowed=frozenset({"settled"}))]
    # When / Then the same sentence passes
    assert lint(SENTENCE, items) == []


@pytest.mark.parametrize(
    ("sentence", "category", "backing"),
    [
        ("The council rejected the claim that SQLite parity is sufficient.", "rejected", "rejected"),
        ("The claim that SQLite parity is sufficient was set aside.", "rejected", "rejected"),
        ("The council preferred the claim that SQLite parity is sufficient.", "preferred", "preferred"),
    ],
)
def test_each_category_needs_its_own_transition(sentence: str, category: Category, backing: Category) -> None:
    # Given a node backed for every category except the one the sentence claims
    others: frozenset[Category] = frozenset(ALL_CATEGORIES - {backing})
    # When the sentence is linted
    flagged = lint(sentence, [node(allowed=others)])
    # Then it is flagged, and passes once the matching transition exists
    assert [(f.category, f.item_id) for f in flagged] == [(category, SQLITE_ID)]
    assert lint(sentence, [node(allowed=frozenset({backing}))]) == []


def test_reason_names_the_missing_transition() -> None:
    # Given a branch that was neither killed nor merged
    branch = Item(id=BRANCH_ID, kind="branch", text="PostgreSQL-only deployment")
    # When the text says it was set aside and that another was preferred
    findings = lint(f"Branch {BRANCH_ID[:8]} was set aside. Branch {BRANCH_ID} is preferred.", [branch])
    # Then each reason names what the ledger lacks
    assert [f.reason for f in findings] == [
        "“set aside” about branch b7c4d2e1…: not killed",
        "“preferred” about branch b7c4d2e1…: no merge chose it",
    ]


@pytest.mark.parametrize("case", [str.lower, str.upper, str.title], ids=["lower", "upper", "title"])
@pytest.mark.parametrize(("form", "category"), FORMS, ids=[f for f, _ in FORMS])
def test_every_inflection_and_casing_is_caught(form: str, category: Category, case: object) -> None:
    # Given a sentence about an item that backs nothing, using one form of a guarded word
    word = case(form)  # type: ignore[operator]
    sentence = f"Reviewers {word} that SQLite parity is sufficient."
    # When it is linted
    findings = lint(sentence, [node()])
    # Then that word is flagged with its category, as written
    assert [(f.word, f.category, f.item_id) for f in findings] == [(word, category, SQLITE_ID)]


@pytest.mark.parametrize(
    "sentence",
    [
        "Whether SQLite parity is sufficient remains unsettled.",
        "The evidence that SQLite parity is sufficient is inconclusive.",
        "That SQLite parity is sufficient was not concluded.",
        "That SQLite parity is sufficient has not yet been settled.",
        "That SQLite parity is sufficient was never rejected.",
        "That SQLite parity is sufficient isn't preferred by anyone.",
        "That SQLite parity is sufficient wasn’t set aside.",
        "No branch was preferred; SQLite parity is sufficient remains open.",
        "SQLite parity is sufficient is a non-preferred option for nobody.",
        "Whether SQLite parity is sufficient was left inconclusively open.",
        "SQLite parity is sufficient gets preferential treatment in the briefing.",
    ],
)
def test_negated_and_non_asserting_forms_are_not_flagged(sentence: str) -> None:
    # Given an item that backs nothing
    # When a sentence about it negates the guarded word
    # Then nothing is flagged
    assert lint(sentence, [node()]) == []


def test_words_inside_code_spans_and_quoted_ids_are_ignored() -> None:
    # Given text that only mentions guarded words inside code or as quoted ids
    text = (
        "The field `preferred_version_id` of SQLite parity is sufficient is empty.\n"
        "Run `council settle 3f2a1b9c` when SQLite parity is sufficient.\n\n"
        "```\nstatus = 'settled'  # concluded\n```\n\n"
        'SQLite parity is sufficient sits on branch "settled-3f2a".\n'
    )
    # When it is linted
    # Then nothing is flagged
    assert lint(text, [node()]) == []
    assert guarded_words(text) == []


def test_a_scare_quoted_guarded_word_is_still_a_use() -> None:
    findings = lint('The council "concluded" that SQLite parity is sufficient.', [node()])
    assert [(f.word, f.item_id) for f in findings] == [("concluded", SQLITE_ID)]


def test_a_guarded_sentence_about_no_known_item_is_flagged_with_no_item() -> None:
    # Given items the sentence does not speak about
    items = [node(allowed=frozenset({"settled"}))]
    # When a sentence with a guarded word is about something else
    findings = lint("The previous session concluded that the cache warms up quickly.", items)
    # Then nothing can back it
    assert [(f.item_id, f.category) for f in findings] == [(None, "settled")]
    assert findings[0].reason == "“concluded” about no recognisable item: nothing in the ledger can back it"


def test_mention_by_id_prefix_or_alias_attributes_the_item() -> None:
    # Given a node whose text the sentence does not repeat
    items = [node(aliases=("N-17",))]
    # When the sentence names it by an 8-hex-digit prefix, by its alias, or by too short a prefix
    by_prefix = lint("Node 3F2A1B9C… was rejected.", items)
    by_alias = lint("Node n-17 was rejected.", items)
    too_short = lint("Node 3f2a was rejected.", items)
    # Then the prefix and the alias attribute it, the short prefix does not
    assert [f.item_id for f in by_prefix] == [SQLITE_ID]
    assert [f.item_id for f in by_alias] == [SQLITE_ID]
    assert [f.item_id for f in too_short] == [None]
    # And a named item that is killed passes
    assert lint("Node 3f2a1b9c was rejected.", [node(allowed=frozenset({"rejected"}))]) == []


def test_a_named_item_outranks_text_overlap_and_the_nearest_named_item_wins() -> None:
    # Given branch A merged (preferred) and branch B neither merged nor killed
    a = Item(id="aaaaaaaa-0000", kind="branch", text="SQLite only", allowed=frozenset({"preferred"}))
    b = Item(id="bbbbbbbb-0000", kind="branch", text="PostgreSQL only")
    # When a sentence names both, each guarded word is judged on the item named nearest to it
    assert lint("Branch aaaaaaaa was preferred over branch bbbbbbbb.", [a, b]) == []
    findings = lint("Branch bbbbbbbb was preferred over branch aaaaaaaa.", [a, b])
    # Then a merge of the other item does not excuse the word
    assert [f.item_id for f in findings] == ["bbbbbbbb-0000"]
    # And two words in one sentence may concern different items
    findings = lint("Branch aaaaaaaa was preferred and branch bbbbbbbb was set aside.", [a, b])
    assert [(f.word, f.item_id) for f in findings] == [("set aside", "bbbbbbbb-0000")]


def test_multi_line_markdown_is_split_into_units() -> None:
    # Given markdown with a heading, wrapped list items and a table row
    sqlite = node()
    branch = Item(id=BRANCH_ID, kind="branch", text="PostgreSQL-only deployment")
    postgres = node("PostgreSQL-only deployment is required", id=POSTGRES_ID)
    text = (
        "## Frontier\n"
        "- Node 3f2a1b9c: SQLite parity is sufficient; reviewers\n"
        "  concluded this after one round.\n"
        "- Branch b7c4d2e1 was set\n"
        "  aside by the merge\n"
        "- settled\n"
        "\n"
        "| 9d8e7f6a | preferred |\n"
        "| --- | --- |\n"
    )
    # When it is linted
    findings = lint(text, [sqlite, branch, postgres])
    # Then each list item, wrapped or not, and each table row is its own unit
    assert [(f.sentence, f.word, f.item_id) for f in findings] == [
        ("Node 3f2a1b9c: SQLite parity is sufficient; reviewers concluded this after one round.", "concluded",
         SQLITE_ID),
        ("Branch b7c4d2e1 was set aside by the merge", "set\n  aside", BRANCH_ID),
        ("settled", "settled", None),
        ("9d8e7f6a | preferred |", "preferred", POSTGRES_ID),
    ]  # fmt: skip
    # And the output is in text order
    assert [f.span for f in findings] == sorted(f.span for f in findings)


def test_paragraph_sentences_are_split_and_abbreviations_kept() -> None:
    # Given two sentences, only the second one about the node
    text = "Reviewers rejected the cache plan, e.g. the warmup. SQLite parity is sufficient, they settled."
    # When linted
    findings = lint(text, [node(allowed=frozenset({"settled"}))])
    # Then the first sentence (kept whole across "e.g.") is about nothing known; the second is backed
    assert [(f.sentence, f.item_id) for f in findings] == [
        ("Reviewers rejected the cache plan, e.g. the warmup.", None)
    ]


SAFE_COMPRESSION = (
    "Two active branches disagree over whether SQLite parity is sufficient. The disagreement "
    "concerns operational scope. Neither branch has been merged. A production adapter test would "
    "resolve the open dependency."
)
UNSAFE_COMPRESSION = (
    "The previous session concluded that SQLite parity was sufficient, although PostgreSQL-only "
    "was also considered."
)


def test_seed_safe_compression_produces_no_finding() -> None:
    items = [node(), node("PostgreSQL-only deployment is required", id=POSTGRES_ID)]
    assert lint(SAFE_COMPRESSION, items) == []


def test_seed_unsafe_compression_is_flagged_when_not_consolidated() -> None:
    # Given the SQLite node is not consolidated and a competing PostgreSQL-only node exists
    items = [node(), node("PostgreSQL-only deployment is required", id=POSTGRES_ID)]
    # When the unsafe summary is linted
    findings = lint(UNSAFE_COMPRESSION, items)
    # Then it is flagged against the SQLite node
    assert [(f.word, f.category, f.item_id) for f in findings] == [("concluded", "settled", SQLITE_ID)]
    # And it passes once the ledger holds a live consolidation for that node
    consolidated = [node(allowed=frozenset({"settled"})), items[1]]
    assert lint(UNSAFE_COMPRESSION, consolidated) == []


def test_guarded_categories_and_guarded_words_helper() -> None:
    assert GUARDED_CATEGORIES == {
        "concluded": "settled",
        "settled": "settled",
        "rejected": "rejected",
        "set aside": "rejected",
        "preferred": "preferred",
    }
    text = "It was not settled. Later it was Set-Aside, then `preferred`, then preferred."
    assert guarded_words(text) == [
        ("Set-Aside", "rejected", (33, 42)),
        ("preferred", "preferred", (67, 76)),
    ]


def test_an_item_with_an_unknown_category_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown categories"):
        Item(id="n1", kind="node", text="x", allowed=frozenset({"resolved"}))  # type: ignore[arg-type]


# Content words that are neither stop words, negations, nor parts of a guarded word.
VOCABULARY = [
    "sqlite", "parity", "sufficient", "adapter", "production", "latency", "budget", "cache",
    "schema", "migration", "index", "replica", "throughput", "quorum", "evidence", "benchmark",
]  # fmt: skip
PUNCTUATION = st.sampled_from([" ", " ", " ", ", ", "; ", ". ", "\n", "\n- ", "\n\n"])


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(st.sampled_from(VOCABULARY), min_size=2, max_size=8, unique=True),
    form=st.sampled_from(FORMS),
    position=st.integers(min_value=0, max_value=8),
    named=st.booleans(),
    backed=st.sets(st.sampled_from(sorted(ALL_CATEGORIES))),
)
def test_property_an_unbacked_guarded_word_about_an_item_is_always_flagged(
    words: list[str], form: tuple[str, Category], position: int, named: bool, backed: set[Category]
) -> None:
    # Given an item that lacks the category of the inserted word
    word, category = form
    item = node(" ".join(words), allowed=frozenset(backed - {category}))
    # When a guarded word is inserted anywhere into a sentence about it
    tokens = [*words]
    tokens.insert(min(position, len(tokens)), word)
    sentence = ("Node 3f2a1b9c says " if named else "") + " ".join(tokens) + "."
    findings = lint(sentence, [item, Item(id="other", kind="thread", text="unrelated thread title")])
    # Then it is flagged against that item
    assert [(f.word, f.category, f.item_id) for f in findings] == [(word, category, SQLITE_ID)]


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(
        st.one_of(st.sampled_from(VOCABULARY), st.sampled_from([f for f, _ in FORMS])),
        min_size=1,
        max_size=30,
    ),
    separators=st.lists(PUNCTUATION, min_size=30, max_size=30),
)
def test_property_removing_all_guarded_words_yields_no_findings(
    parts: list[str], separators: list[str]
) -> None:
    # Given any text built from content words and guarded words
    guarded = {f for f, _ in FORMS}
    # When every guarded word is removed
    kept = [p for p in parts if p not in guarded]
    text = "".join(f"{p}{sep}" for p, sep in zip(kept, separators, strict=False))
    # Then nothing is flagged, whatever the items
    assert lint(text, [node(), Item(id="other", kind="thread", text="unrelated thread title")]) == []
    assert guarded_words(text) == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_property_lint_is_total_and_ordered_on_any_text(text: str) -> None:
    findings = lint(text, [node()])
    assert [f.span for f in findings] == sorted(f.span for f in findings)
    for finding in findings:
        assert text[finding.span[0] : finding.span[1]] == finding.word


def test_quoted_propositions_are_data_but_still_name_their_item() -> None:
    # Given a node whose content itself contains a guarded word
    item = Item(
        id="9d1c2b3a-0000-4000-8000-000000000000", kind="node", text="SQLite should be rejected outright"
    )
    # When a text quotes it as a proposition, Then the quoted words are not the writer's
    assert lint("- [open] “SQLite should be rejected outright” (node `9d1c2b3a`)", [item]) == []
    # But a guarded word outside the quotation about that proposition is still checked
    found = lint("The council rejected “SQLite should be rejected outright”.", [item])
    assert [(f.word, f.item_id) for f in found] == [("rejected", item.id)]

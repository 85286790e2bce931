"""Evaluation chains, the pure part (council.domain.manifests): a delta applied to the
manifest it was taken from gives the other one, and a chain rebuilds what was stored directly."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from council.domain import manifests as chain

_ids = st.lists(st.uuids().map(str), max_size=8, unique=True)
_transition = st.one_of(st.none(), st.uuids().map(str))
_states = st.lists(
    st.fixed_dictionaries({"id": st.uuids().map(str), "transition": _transition}),
    max_size=5,
    unique_by=lambda item: item["id"],
)
_hex = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)


@st.composite
def manifests(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "version_id": draw(st.sampled_from(["v1", "v2"])),
        "thread_id": "t1",
        "node_transition": draw(_transition),
        "rule_set_id": draw(st.sampled_from(["council-default-v1", "other-v1"])),
        "grouping_algorithm_id": "indep-v1",
        **{name: draw(_ids) for name in chain.ID_SECTIONS},
        **{name: draw(_states) for name in chain.STATE_SECTIONS},
        # A manifest from before the retraction rule has no "retraction" key; after it,
        # None when there was no retraction: presence must survive a chain.
        **draw(st.sampled_from([{}, {"retraction": None}, {"retraction": "r1"}, {"retraction": "r2"}])),
        # Format v4 (exclusive alternatives): the rivals' row ids as canonical JSON, or absent.
        **draw(st.sampled_from([{}, {"rivals": "[]"}, {"rivals": '[{"claims":["c1"],"node":"n1"}]'}])),
    }


_sections = st.fixed_dictionaries({name: _hex for name in chain.SNAPSHOT_SECTIONS})


@given(manifests(), manifests(), _sections, _sections)
def test_applying_a_delta_gives_the_manifest_it_was_taken_to(
    a: dict[str, Any], b: dict[str, Any], ha: dict[str, str], hb: dict[str, str]
) -> None:
    change = chain.delta(a, b, ha, hb)
    assert chain.apply(change, a) == chain.normal(b)
    rebuilt = chain.apply_sections(change, ha)
    assert rebuilt.keys() == hb.keys() and all(chain.same_section(rebuilt[k], hb[k]) for k in hb)


@given(manifests())
def test_the_delta_of_a_manifest_to_itself_is_empty(a: dict[str, Any]) -> None:
    assert chain.delta(a, a, {"claims": "x"}, {"claims": "x"}) == {}


@given(st.lists(st.tuples(manifests(), _sections), min_size=1, max_size=8))
def test_a_chain_rebuilds_every_manifest_it_was_built_from(
    stored: list[tuple[dict[str, Any], dict[str, str]]],
) -> None:
    rows: list[dict[str, Any]] = []
    for seq, (manifest, sections) in enumerate(stored):  # every row a link but the first
        if seq == 0:
            rows.append({"seq": 0, "manifest": manifest, "section_sha256": sections, "delta": None})
        else:
            before, before_sections = stored[seq - 1]
            change = chain.delta(before, manifest, before_sections, sections)
            rows.append({"seq": seq, "manifest": None, "section_sha256": None, "delta": change})
    walked = chain.walk(rows)
    assert [m for m, _ in walked] == [chain.normal(m) for m, _ in stored]
    for (_, rebuilt), (_, sections) in zip(walked, stored, strict=True):
        assert all(chain.same_section(rebuilt[k], sections[k]) for k in sections)
    links = [r["delta"] for r in rows[1:]]
    assert chain.rebuild(stored[0][0], stored[0][1], links) == walked[-1]
    end = chain.tail(rows)
    assert (end.manifest, end.sections, end.seq, end.links) == (*walked[-1], len(rows) - 1, len(rows) - 1)


def test_a_delta_names_only_what_changed_with_short_keys() -> None:
    a = {
        "version_id": "v",
        "thread_id": "t",
        "node_transition": None,
        "rule_set_id": "r",
        "grouping_algorithm_id": "g",
        "versions": ["v"],
        "claims": ["c1"],
        "runs": ["r1"],
        "exposures": [],
        "citations": [],
        "branches": [{"id": "b", "transition": None}],
        "evidence": [{"id": "e", "transition": None}],
        "pending_actions": [],
    }
    b = {**a, "claims": ["c1", "c2"], "runs": ["r1", "r2"], "evidence": [{"id": "e", "transition": "x"}]}
    assert chain.delta(a, b, {"claims": "1", "node": "n"}, {"claims": "2", "node": "n"}) == {
        "+c": ["c2"],
        "+r": ["r2"],
        "+e": [["e", "x"]],
        "-e": ["e"],
        "#": {"c": "2"},
    }
    # A changed section's hash is kept to LINK_HASH_CHARS digits
    long_a, long_b = "a" * 64, "b" * 64
    assert chain.delta(a, a, {"claims": long_a}, {"claims": long_b}) == {
        "#": {"c": "b" * chain.LINK_HASH_CHARS}
    }
    assert chain.same_section("b" * chain.LINK_HASH_CHARS, long_b) and not chain.same_section(
        "b" * 12, long_a
    )


def test_a_new_root_once_root_every_links_list_as_many_ids_as_the_root() -> None:
    # A small manifest: a root after ROOT_EVERY links
    assert not chain.needs_root(chain.ROOT_EVERY - 1, 5, 500)
    assert chain.needs_root(chain.ROOT_EVERY, 5, chain.ROOT_EVERY)
    # A large one: not before the links list as many ids as the root (geometric roots)
    assert not chain.needs_root(500, 2000, 1999)
    assert chain.needs_root(500, 2000, 2000)


@given(st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=3000))
def test_a_walk_reads_at_most_about_twice_a_manifest_and_roots_stay_linear(grow: list[int]) -> None:
    # Given a node whose manifest grows by a few ids per evaluation, chained by needs_root
    size, root, links, listed, roots, longest = 3, 3, 0, 0, 3, 0
    for step in grow:
        size += step
        if chain.needs_root(links, root, listed):
            root, links, listed, roots = size, 0, 0, roots + size
        else:
            links, listed = links + 1, listed + step
        longest = max(longest, root + listed)
    # Then a walk never reads more than twice a manifest (or ROOT_EVERY small links),
    # and the roots together hold a few times the last manifest, not one per evaluation
    assert longest <= 2 * size + 6 * chain.ROOT_EVERY
    assert roots <= 3 * size + 6 * chain.ROOT_EVERY


def test_a_link_without_the_evaluation_before_it_is_refused() -> None:
    empty: dict[str, Any] = {name: [] for name in (*chain.ID_SECTIONS, *chain.STATE_SECTIONS)}
    empty.update({name: None for name in chain.SCALARS})
    root = {"seq": 0, "manifest": empty, "section_sha256": {}, "delta": None}
    with pytest.raises(ValueError, match="does not follow"):
        chain.walk([{"seq": 1, "manifest": None, "section_sha256": None, "delta": {}}])
    with pytest.raises(ValueError, match="does not follow"):
        chain.walk([root, {"seq": 2, "manifest": None, "section_sha256": None, "delta": {}}])

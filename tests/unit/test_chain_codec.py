"""The compact chain rows of revision 0014 (council.domain.chain_codec): every root and
link decodes to exactly what was encoded (but the runs, which the reader derives from the
claims), and a chain of compact rows rebuilds every manifest it was built from, whether
its ids are UUIDs (the ledger's) or any other text."""

from __future__ import annotations

import random
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from council.domain import chain_codec
from council.domain import manifests as chain
from tests.unit.test_manifest_chains import _sections, manifests

_uuid = st.uuids().map(str)
_id = st.one_of(_uuid, _uuid, st.text(max_size=12))
_transition = st.one_of(st.none(), _id)


@st.composite
def uuid_manifests(draw: st.DrawFn) -> dict[str, Any]:
    """Manifests as the ledger writes them: every id a canonical UUID."""
    ids = st.lists(_uuid, max_size=8, unique=True)
    states = st.lists(
        st.fixed_dictionaries({"id": _uuid, "transition": st.one_of(st.none(), _uuid)}),
        max_size=5,
        unique_by=lambda item: item["id"],
    )
    return {
        "version_id": draw(_uuid),
        "thread_id": draw(_uuid),
        "node_transition": draw(st.one_of(st.none(), _uuid)),
        "rule_set_id": draw(st.sampled_from(["council-default-v1", "strict-v1"])),
        "grouping_algorithm_id": "indep-v1",
        **{name: draw(ids) for name in chain.ID_SECTIONS},
        **{name: draw(states) for name in chain.STATE_SECTIONS},
        **draw(st.sampled_from([{}, {"retraction": None}, {"retraction": str(uuid4())}])),
        **draw(st.sampled_from([{}, {"rivals": "[]"}, {"rivals": f'[{{"node":"{uuid4()}","claims":[]}}]'}])),
    }


_any_manifest = st.one_of(uuid_manifests(), manifests())


def _decoded_root(
    manifest: dict[str, Any], sections: dict[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    root, change = chain_codec.decode(chain_codec.encode_root(manifest, sections))
    assert root
    return chain_codec.root_manifest(change)


def _runs_of(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest with runs derived from its claims, as the ledger's manifests have them,
    and the claim → run map the reader would find in the claim rows."""
    run_of = {c: f"run of {c}"[: 8 + len(c) % 5] for c in manifest["claims"]}
    return {**manifest, "runs": sorted(set(run_of.values())), "_run_of": run_of}


@given(_any_manifest, _sections)
def test_a_root_decodes_to_its_manifest_and_whole_section_hashes(
    manifest: dict[str, Any], sections: dict[str, str]
) -> None:
    decoded, hashes = _decoded_root(manifest, sections)
    assert hashes == sections and decoded == chain_codec.without_runs(manifest)
    # And the reader's runs are the claims' runs
    full = _runs_of(manifest)
    run_of = full.pop("_run_of")
    assert chain_codec.runs_are_derived(full, run_of)
    assert chain_codec.derive_runs(decoded, run_of) == {**decoded, "runs": full["runs"]}
    assert not chain_codec.runs_are_derived({**full, "runs": [*full["runs"], "a run without claims"]}, run_of)


@given(_any_manifest, _any_manifest, _sections, _sections)
def test_a_link_decodes_to_the_delta_it_was_encoded_from(
    a: dict[str, Any], b: dict[str, Any], ha: dict[str, str], hb: dict[str, str]
) -> None:
    change = chain.delta(a, b, ha, hb, 2 * chain_codec.LINK_HASH_BYTES)
    root, decoded = chain_codec.decode(chain_codec.encode_link(change))
    assert not root and decoded == {k: v for k, v in change.items() if k not in ("+r", "-r")}
    applied = chain.apply(decoded, chain_codec.without_runs(a))
    assert applied == chain.normal(chain_codec.without_runs(b))


@given(st.lists(st.tuples(uuid_manifests(), _sections), min_size=1, max_size=8), st.randoms())
def test_a_compact_chain_rebuilds_every_manifest_whatever_order_its_records_are_read(
    stored: list[tuple[dict[str, Any], dict[str, str]]], rng: random.Random
) -> None:
    # Given a chain written as the committer writes it: a root, links, a root again at random
    rows: list[dict[str, Any]] = []
    for seq, (manifest, sections) in enumerate(stored):
        if seq == 0 or rng.random() < 0.2:
            manifest_, sections_ = _decoded_root(manifest, sections)
            rows.append({"seq": seq, "manifest": manifest_, "section_sha256": sections_, "delta": None})
        else:
            before, before_sections = stored[seq - 1]
            change = chain.delta(
                chain_codec.without_runs(before),
                chain_codec.without_runs(manifest),
                before_sections,
                sections,
                2 * chain_codec.LINK_HASH_BYTES,
            )
            _, decoded = chain_codec.decode(chain_codec.encode_link(change))
            rows.append({"seq": seq, "manifest": None, "section_sha256": None, "delta": decoded})
    # Then each evaluation rebuilds from its nearest root alone, read in any order
    order = list(range(len(rows)))
    rng.shuffle(order)
    for seq in order:
        start = max(i for i in range(seq + 1) if rows[i]["manifest"] is not None)
        end = chain.tail(rows[start : seq + 1])
        manifest, sections = stored[seq]
        assert end.manifest == chain.normal(chain_codec.without_runs(manifest)) and end.seq == seq
        assert all(chain.same_section(end.sections[k], sections[k]) for k in sections)


def test_stored_tags_never_move_a_later_key_goes_at_the_end() -> None:
    # The tags of revision 0014 and of format v3, as rows were written with them
    before = ["+v", "-v", "+c", "-c", "+x", "-x", "+t", "-t", "+b", "-b", "+e", "-e", "+p", "-p",
              "i", "h", "n", "s", "g", "z", "-z", "#", "k", "q", "-k", "-q"]  # fmt: skip
    assert chain_codec.KEYS[: len(before)] == before
    assert chain_codec.KEYS[len(before) :] == ["a", "-a"]  # format v4: the rivals


def test_a_link_of_one_claim_is_small() -> None:
    # A typical link on a hot node: a claim, its run (derived: not stored), a citation,
    # three changed sections
    ids = [str(uuid4()) for _ in range(3)]
    hashes = {"c": "ab" * 2, "r": "cd" * 2, "t": "ef" * 2}
    change = {"+c": [ids[0]], "+r": [ids[1]], "+t": [ids[2]], "#": hashes}
    encoded = chain_codec.encode_link(change)
    assert len(encoded) == 1 + 2 * (2 + 16) + 2 + 3 * (1 + chain_codec.LINK_HASH_BYTES)
    assert chain_codec.decode(encoded) == (False, {"+c": [ids[0]], "+t": [ids[2]], "#": hashes})
    # And a hash of another length is refused
    with pytest.raises(ValueError, match="section hash"):
        chain_codec.encode_link({"#": {"c": "ab" * 6}})


@given(st.lists(st.integers(min_value=1, max_value=2**31 - 1), max_size=12))
def test_reason_ids_round_trip_as_varints(ids: list[int]) -> None:
    assert chain_codec.reason_ids(chain_codec.reason_refs(ids)) == ids


def test_small_reason_ids_take_a_byte_each() -> None:
    assert len(chain_codec.reason_refs([1, 2, 127])) == 3
    assert len(chain_codec.reason_refs([128, 16383])) == 4
    assert len(chain_codec.reason_refs([16384])) == 3
    assert chain_codec.reason_refs([]) == b""


def test_what_is_not_a_chain_row_is_refused() -> None:
    with pytest.raises(ValueError, match="not a chain row"):
        chain_codec.decode(b"X")
    with pytest.raises(ValueError, match="unknown chain field"):
        chain_codec.decode(bytes([chain_codec.LINK, 0x7F]))
    with pytest.raises(ValueError, match="ends inside"):
        chain_codec.decode(chain_codec.encode_link({"+c": [str(uuid4())]})[:-1])
    with pytest.raises(ValueError, match="not a chain change"):
        chain_codec.encode_link({"?": 1})

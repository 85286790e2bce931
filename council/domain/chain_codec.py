"""The compact form of an evaluation chain row (revision 0014; pure).

Since revision 0014 a chained evaluation keeps its manifest change in one
``bytea`` (``consolidation_evaluations.link``) instead of JSON: a row id is
16 bytes instead of a 38-character JSON string, a changed section's hash a
4-byte prefix. A *root* holds its whole manifest (a change from the empty
manifest) and every section's hash in full; a *link* holds the change since
the evaluation before it (``council.domain.manifests.delta``). Decoding gives
back exactly the change (or manifest) that was encoded: the same dictionary
shape as a revision 0013 delta, so one walk serves both.

The ``runs`` section is not stored: a manifest's runs are by definition the
distinct runs of its claims (council/sql/snapshot.sql reads both in one
statement), so the reader derives them from the immutable claim rows
(``derive_runs``); the committer checks that they are before it writes one
(``runs_are_derived``).

Layout: one kind byte (``ROOT`` or ``LINK``), then fields, each a tag byte
and its payload, in ``KEYS`` order. Counts and lengths are LEB128 varints.
Row ids are canonical UUID strings in the ledger; a field whose ids are not
all canonical UUIDs is written as text (its tag with the high bit set), so
any string round-trips.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from council.domain.jsonvalue import JsonValue
from council.domain.manifests import (
    ID_SECTIONS,
    OPTIONAL_SCALARS,
    SCALARS,
    SNAPSHOT_SECTIONS,
    STATE_SECTIONS,
    Delta,
    Manifest,
    StateRef,
)

ROOT, LINK = 0x52, 0x4C  # "R", "L"
# A link keeps this many bytes (twice as many hex digits) of each changed section's hash;
# a root keeps every hash whole.
LINK_HASH_BYTES = 2
ROOT_HASH_BYTES = 32
# Derived by the reader from the claims, never stored.
DERIVED = {"runs": ID_SECTIONS["runs"]}
_TEXT = 0x80

_LISTS = [s for s in (*ID_SECTIONS.values(), *STATE_SECTIONS.values()) if s not in DERIVED.values()]
_STATEFUL = set(STATE_SECTIONS.values())
_TEXT_SCALARS = {SCALARS["rule_set_id"], SCALARS["grouping_algorithm_id"]}
_ID_SCALARS = [s for s in (*SCALARS.values(), *OPTIONAL_SCALARS.values()) if s not in _TEXT_SCALARS]
# Tags are numbered in this order and stored: a key added later goes at the end.
_FIRST_OPTIONAL = [OPTIONAL_SCALARS["retraction"]]
_LATER_OPTIONAL = [OPTIONAL_SCALARS["correlations"], OPTIONAL_SCALARS["council"]]  # format v3
_V4_OPTIONAL = [OPTIONAL_SCALARS["rivals"]]  # format v4
KEYS = [
    *(f"{sign}{short}" for short in _LISTS for sign in "+-"),
    *SCALARS.values(),
    *_FIRST_OPTIONAL,
    *(f"-{short}" for short in _FIRST_OPTIONAL),
    "#",
    *_LATER_OPTIONAL,
    *(f"-{short}" for short in _LATER_OPTIONAL),
    *_V4_OPTIONAL,
    *(f"-{short}" for short in _V4_OPTIONAL),
]
_TAGS = {key: n for n, key in enumerate(KEYS, start=1)}
_SECTIONS = list(SNAPSHOT_SECTIONS.values())


def _varint(n: int, out: bytearray) -> None:
    if n < 0:
        raise ValueError("a count is never negative")
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return


def _is_uuid(value: object) -> bool:
    if not isinstance(value, str) or len(value) != 36:
        return False
    try:
        return str(UUID(value)) == value
    except ValueError:
        return False


def _text(value: str, out: bytearray) -> None:
    raw = value.encode()
    _varint(len(raw), out)
    out += raw


def _id(value: str | None, out: bytearray, as_text: bool) -> None:
    """An id (or None): a UUID's 16 bytes, or in text form a flag byte and the string."""
    if as_text:
        if value is None:
            out.append(0)
        else:
            out.append(1)
            _text(value, out)
    else:
        out += UUID(str(value)).bytes


def _optional_uuid(value: str | None, out: bytearray) -> None:
    if value is None:
        out.append(0)
    elif _is_uuid(value):
        out.append(1)
        out += UUID(value).bytes
    else:
        out.append(2)
        _text(value, out)


def _encode(kind: int, change: Mapping[str, JsonValue]) -> bytes:
    change = {k: v for k, v in change.items() if k[1:] not in DERIVED.values() or k[0] not in "+-"}
    unknown = set(change) - set(_TAGS)
    if unknown:
        raise ValueError(f"not a chain change: {sorted(unknown)}")
    out = bytearray([kind])
    for key in KEYS:
        if key not in change:
            continue
        value: Any = change[key]  # its shape is the key's (see KEYS)
        tag, short = _TAGS[key], key[1:]
        if key == "#":
            out.append(tag)
            _varint(len(value), out)
            size = ROOT_HASH_BYTES if kind == ROOT else LINK_HASH_BYTES
            for name in _SECTIONS:
                if name in value:
                    raw = bytes.fromhex(value[name])
                    if len(raw) != size:
                        raise ValueError(f"a section hash of {len(raw)} bytes where {size} are kept")
                    out += bytes([_SECTIONS.index(name)]) + raw
        elif key[0] in "+-" and short in _LISTS:
            stateful = key[0] == "+" and short in _STATEFUL
            ids = [v[0] for v in value] if stateful else list(value)
            refs = [v[1] for v in value] if stateful else []
            as_text = not all(_is_uuid(i) for i in ids) or not all(r is None or _is_uuid(r) for r in refs)
            out.append(tag | (_TEXT if as_text else 0))
            _varint(len(value), out)
            for n, item in enumerate(ids):
                _id(item, out, as_text)
                if stateful:
                    if as_text:
                        _id(refs[n], out, True)
                    elif refs[n] is None:
                        out.append(0)
                    else:
                        out.append(1)
                        out += UUID(refs[n]).bytes
        elif key in _TEXT_SCALARS:
            out.append(tag)
            _text(value, out)
        elif key[0] == "-":  # an optional scalar no longer named
            out.append(tag)
        else:
            out.append(tag)
            _optional_uuid(value, out)
    return bytes(out)


def encode_link(change: Mapping[str, JsonValue]) -> bytes:
    """A link: the change since the evaluation before it (``manifests.delta`` with
    section hashes cut to ``LINK_HASH_BYTES``; its runs are derived, not stored)."""
    return _encode(LINK, change)


def encode_root(manifest: Manifest, sections: Mapping[str, str]) -> bytes:
    """A root: its whole manifest (but its runs, derived) and every section's whole hash."""
    fields: Mapping[str, object] = manifest
    change: dict[str, JsonValue] = {}
    for name, short in (*ID_SECTIONS.items(), *STATE_SECTIONS.items()):
        if name in DERIVED:
            continue
        items = fields[name]
        assert isinstance(items, list)
        if items:
            stateful = name in STATE_SECTIONS
            change["+" + short] = [[i["id"], i["transition"]] if stateful else i for i in items]
    for name, short in (*SCALARS.items(), *OPTIONAL_SCALARS.items()):
        if name in fields:
            value = fields[name]
            assert value is None or isinstance(value, str)
            change[short] = value
    change["#"] = {SNAPSHOT_SECTIONS[name]: digest for name, digest in sections.items()}
    return _encode(ROOT, change)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        value = self.data[self.at]
        self.at += 1
        return value

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise ValueError("a chain row ends inside a field")
        value = self.data[self.at : self.at + n]
        self.at += n
        return value

    def varint(self) -> int:
        n, shift = 0, 0
        while True:
            byte = self.byte()
            n |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return n

    def text(self) -> str:
        return self.take(self.varint()).decode()

    def uuid(self) -> str:
        return str(UUID(bytes=self.take(16)))

    def id(self, as_text: bool) -> str | None:
        if as_text:
            return self.text() if self.byte() else None
        return self.uuid()

    def optional_uuid(self) -> str | None:
        flag = self.byte()
        return None if flag == 0 else self.uuid() if flag == 1 else self.text()


def decode(data: bytes) -> tuple[bool, Delta]:
    """(whether the row is a root, the change it holds): a dictionary in the shape of
    ``manifests.delta`` (no runs: ``derive_runs``), whose "#" holds the hex digits stored."""
    reader = _Reader(bytes(data))
    kind = reader.byte()
    if kind not in (ROOT, LINK):
        raise ValueError(f"not a chain row (kind byte {kind})")
    change: Delta = {}
    while reader.at < len(reader.data):
        raw = reader.byte()
        as_text, tag = bool(raw & _TEXT), raw & ~_TEXT
        if not 1 <= tag <= len(KEYS):
            raise ValueError(f"unknown chain field tag {raw}")
        key = KEYS[tag - 1]
        short = key[1:]
        if key == "#":
            hashes: dict[str, JsonValue] = {}
            size = ROOT_HASH_BYTES if kind == ROOT else LINK_HASH_BYTES
            for _ in range(reader.varint()):
                section = reader.byte()
                if section >= len(_SECTIONS):
                    raise ValueError(f"unknown snapshot section {section}")
                hashes[_SECTIONS[section]] = reader.take(size).hex()
            change[key] = hashes
        elif key[0] in "+-" and short in _LISTS:
            stateful = key[0] == "+" and short in _STATEFUL
            items: list[JsonValue] = []
            for _ in range(reader.varint()):
                item = reader.id(as_text)
                if stateful:
                    ref = reader.id(True) if as_text else (reader.uuid() if reader.byte() else None)
                    items.append([item, ref])
                else:
                    items.append(item)
            change[key] = items
        elif key in _TEXT_SCALARS:
            change[key] = reader.text()
        elif key[0] == "-":
            change[key] = True
        else:
            change[key] = reader.optional_uuid()
    return kind == ROOT, change


def root_manifest(change: Mapping[str, JsonValue]) -> tuple[Manifest, dict[str, str]]:
    """The manifest and section hashes a decoded root holds (lists in stored order; its
    runs empty until ``derive_runs``)."""

    def listed(name: str) -> list[JsonValue]:
        found = change.get("+" + {**ID_SECTIONS, **STATE_SECTIONS}[name], [])
        assert isinstance(found, list)
        return found

    def ids(name: str) -> list[str]:
        return [str(i) for i in listed(name)]

    def refs(name: str) -> list[StateRef]:
        pairs = [i for i in listed(name) if isinstance(i, list)]
        return [{"id": str(i[0]), "transition": None if i[1] is None else str(i[1])} for i in pairs]

    def scalar(name: str) -> str | None:
        value = change[{**SCALARS, **OPTIONAL_SCALARS}[name]]
        return None if value is None else str(value)

    manifest: Manifest = {
        "version_id": str(scalar("version_id")),
        "thread_id": str(scalar("thread_id")),
        "node_transition": scalar("node_transition"),
        "rule_set_id": str(scalar("rule_set_id")),
        "grouping_algorithm_id": str(scalar("grouping_algorithm_id")),
        "versions": ids("versions"),
        "claims": ids("claims"),
        "runs": ids("runs"),
        "exposures": ids("exposures"),
        "citations": ids("citations"),
        "branches": refs("branches"),
        "evidence": refs("evidence"),
        "pending_actions": refs("pending_actions"),
    }
    if OPTIONAL_SCALARS["retraction"] in change:
        manifest["retraction"] = scalar("retraction")
    if OPTIONAL_SCALARS["correlations"] in change:
        manifest["correlations"] = scalar("correlations")
    if OPTIONAL_SCALARS["council"] in change:
        manifest["council"] = scalar("council")
    if OPTIONAL_SCALARS["rivals"] in change:
        manifest["rivals"] = scalar("rivals")
    names = {short: name for name, short in SNAPSHOT_SECTIONS.items()}
    hashes = change.get("#", {})
    assert isinstance(hashes, dict)
    return manifest, {names[short]: str(digest) for short, digest in hashes.items()}


def without_runs(manifest: Manifest) -> Manifest:
    """The manifest as a compact chain holds it: its runs left to ``derive_runs``."""
    return {**manifest, "runs": []}


def derive_runs(manifest: Manifest, run_of: Mapping[str, str]) -> Manifest:
    """The manifest with its runs: the distinct runs of its claims (``run_of``: claim id →
    run id, from the claim rows), sorted as a normal manifest sorts them."""
    return {**manifest, "runs": sorted({run_of[c] for c in manifest["claims"]})}


def runs_are_derived(manifest: Manifest, claim_runs: Mapping[str, str]) -> bool:
    """Whether a manifest's runs are exactly the distinct runs of its claims."""
    return set(manifest["runs"]) == {claim_runs[c] for c in manifest["claims"]}


def reason_refs(ids: list[int]) -> bytes:
    """Reason ids (``decision_reasons.id``) as stored: each a LEB128 varint (as
    ``council_reason_refs_v1`` writes them)."""
    out = bytearray()
    for i in ids:
        _varint(i, out)
    return bytes(out)


def reason_ids(refs: bytes) -> list[int]:
    """The reason ids ``reason_refs`` stored, in order."""
    reader, out = _Reader(bytes(refs)), []
    while reader.at < len(reader.data):
        out.append(reader.varint())
    return out

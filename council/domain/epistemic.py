"""The epistemic-word guard (docs/architecture.md §6): words that adjudicate need a durable transition.

"concluded", "settled", "rejected", "set aside" and "preferred", in any form or
casing, silently adjudicate epistemic status. A text may use one about an item
only when the ledger holds the matching transition; the caller states what it
holds per item in `Item.allowed`:

- settled   (conclude…, settle…): a live consolidation or stable memory;
- rejected  (reject…, set aside): a killed node version or a killed branch;
- preferred (prefer…): an explicit merge chose the item.

Choices (the guard errs toward flagging):
- A negated word asserts nothing: a negating prefix ("unsettled",
  "inconclusive", "non-preferred") or a negation among the two nearest
  preceding tokens, auxiliaries skipped ("not settled", "has not yet been
  concluded", "isn't preferred", "no branch was preferred"). Hypotheticals
  ("would settle") are still flagged.
- "preferential" and snake_case names (`preferred_version_id`) are not uses.
- Code spans and fenced blocks, and a quoted single token ("settled-3f2a"), are
  mentions, not uses: their words are skipped, but ids there still count for
  attribution. A quoted bare guarded word ("concluded") is a scare quote and
  is still a use.
- Sentence units: paragraphs split at . ! ?; each markdown list item (with its
  wrapped lines), heading and table row is a unit of its own.
- Attribution, per guarded word. Candidates are the items the sentence names
  (full id or alias, case-insensitive, or a prefix of the id with 8+ hex digits)
  and the items whose significant words (stop words dropped) are at least 60 %
  contained in the sentence. The best is the named item nearest the word, else
  the highest containment; ties go to the smallest id. The word must be backed
  for that best item only: "A was preferred over B" needs a merge of A, and a
  merge of B does not excuse it. No candidate: nothing can back the word, and
  the finding's item_id is None.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

Category = Literal["settled", "rejected", "preferred"]
ItemKind = Literal["node", "branch", "evidence", "thread"]

# The five words of docs/architecture.md §6 and the transition category each one claims.
GUARDED_CATEGORIES: Final[Mapping[str, Category]] = {
    "concluded": "settled",
    "settled": "settled",
    "rejected": "rejected",
    "set aside": "rejected",
    "preferred": "preferred",
}

_MISSING: Final[Mapping[Category, str]] = {
    "settled": "no live consolidation or stable memory",
    "rejected": "not killed",
    "preferred": "no merge chose it",
}

_FORMS: Final[Mapping[Category, str]] = {
    "settled": r"conclu(?:de[ds]?|ding|sions?|sive(?:ly)?)|settl(?:e[ds]?|ing|ements?)",
    "rejected": r"reject(?:s|ed|ing|ions?)?|(?:set|sets|setting)(?:\s*-\s*|\s+)aside",
    "preferred": r"prefer(?:s|red|ring|ences?|able|ably)?",
}
_WORD: Final = re.compile(
    r"\b(?P<neg>(?:un|in|non)-?)?(?:" + "|".join(f"(?P<{c}>{p})" for c, p in _FORMS.items()) + r")\b",
    re.IGNORECASE,
)
_NEGATIONS: Final = frozenset(
    {"not", "never", "no", "neither", "nor", "none", "nothing", "without", "cannot"}
)
# Skipped when looking for a negation, so "has not yet been concluded" counts as negated.
_AUXILIARIES: Final = frozenset(
    {"is", "are", "was", "were", "be", "been", "being", "has", "have", "had", "do", "does", "did", "yet"}
)
_STOP_WORDS: Final = frozenset({
    "a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "by", "for", "with", "from",
    "into", "onto", "over", "under", "about", "as", "is", "are", "was", "were", "be", "been", "being", "has",
    "have", "had", "do", "does", "did", "this", "that", "these", "those", "it", "its", "we", "they", "he",
    "she", "you", "i", "our", "their", "there", "here", "which", "who", "whom", "what", "when", "where",
    "why", "how", "whether", "not", "no", "nor", "so", "than", "then", "too", "very", "can", "could",
    "would", "should", "may", "might", "must", "will", "shall", "also", "only", "just", "still", "yet",
    "both", "either", "neither", "each", "any", "all", "some", "such", "other", "more", "most", "less",
    "between", "after", "before", "because", "while",
})  # fmt: skip
_CODE: Final = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_QUOTED: Final = re.compile(r"""(?<!\w)(?:"([^"\s]+)"|'([^'\s]+)'|“([^”\s]+)”|‘([^’\s]+)’)(?!\w)""")
# A typographic quotation of several words is a proposition quoted as data (the
# reentry formatter quotes node content this way): its words are not the
# writer's. A single quoted word is still a use (a scare quote).
_PROPOSITION: Final = re.compile(r"“[^”]*\s[^”]*”")
_LIST_ITEM: Final = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+")
_ONE_LINE: Final = re.compile(r"[ \t]{0,3}(?:#{1,6}(?:[ \t]+|$)|\|)")  # heading or table row
_SENTENCE_END: Final = re.compile(r"[.!?]+[\"')\]”’*_]*(?=\s|$)")
_ABBREVIATION: Final = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf)\.$", re.IGNORECASE)
_TOKEN: Final = re.compile(r"[a-z0-9]+")
_PRECEDING: Final = re.compile(r"[\w'’]+")
_HEX_RUN: Final = re.compile(r"(?<![0-9A-Za-z_])[0-9a-fA-F][0-9a-fA-F-]*(?![0-9A-Za-z_])")
_MIN_PREFIX_HEX: Final = 8
_MIN_CONTAINMENT: Final = 0.6


@dataclass(frozen=True)
class Item:
    """Something a text may speak about, with the categories the ledger backs for it."""

    id: str
    kind: ItemKind
    text: str  # content, label or title: what a sentence about it would share
    aliases: tuple[str, ...] = ()
    allowed: frozenset[Category] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if not self.id.strip():
            raise ValueError("an item needs an id")
        unknown = set(self.allowed) - set(get_args(Category))
        if unknown:
            raise ValueError(f"unknown categories for item {self.id}: {sorted(unknown)}")


@dataclass(frozen=True)
class Finding:
    sentence: str  # the sentence unit, whitespace collapsed
    word: str  # the guarded word as written
    category: Category
    item_id: str | None  # None: the sentence is about no recognisable item
    reason: str
    span: tuple[int, int]  # of the word in the linted text


def guarded_words(text: str) -> list[tuple[str, Category, tuple[int, int]]]:
    """Every asserting use of a guarded word (negated and quoted ones skipped), in text order."""
    masked = _mask(text)
    return [
        (text[a:b], category, (a, b))
        for s, e in _sentences(masked)
        for category, a, b in _words(masked, s, e)
    ]


def lint(text: str, items: Sequence[Item]) -> list[Finding]:
    """Flag each guarded word whose best-matching item lacks the matching durable transition."""
    masked = _mask(text)
    prepared = [(item, _significant(item.text), _needles(item)) for item in items]
    findings: list[Finding] = []
    for start, end in _sentences(masked):
        words = list(_words(masked, start, end))
        if not words:
            continue
        candidates = _candidates(text, start, end, prepared)
        for category, a, b in words:
            item = _best(candidates, a, b)
            if item is None or category not in item.allowed:
                findings.append(_finding(text, start, end, category, (a, b), item))
    return findings


_Candidate = tuple[Item, list[tuple[int, int]], float]  # item, where the sentence names it, containment


def _candidates(
    text: str, start: int, end: int, prepared: Sequence[tuple[Item, frozenset[str], re.Pattern[str]]]
) -> list[_Candidate]:
    tokens = _significant(text[start:end])
    runs = ((m.span(), m.group().rstrip("-").lower()) for m in _HEX_RUN.finditer(text, start, end))
    hex_runs = [(span, run) for span, run in runs if len(run.replace("-", "")) >= _MIN_PREFIX_HEX]
    found: list[_Candidate] = []
    for item, significant, needles in prepared:
        ident = item.id.lower()
        spans = [m.span() for m in needles.finditer(text, start, end)]
        spans += [span for span, run in hex_runs if ident.startswith(run)]
        overlap = len(significant & tokens) / len(significant) if significant else 0.0
        if spans or overlap >= _MIN_CONTAINMENT:
            found.append((item, spans, overlap))
    return found


def _best(candidates: Sequence[_Candidate], a: int, b: int) -> Item | None:
    """A named item nearest the word, else the highest containment; ties to the smallest id."""

    def rank(candidate: _Candidate) -> tuple[bool, int, float, str]:
        item, spans, overlap = candidate
        distance = min((max(0, a - e, s - b) for s, e in spans), default=0)
        return (not spans, distance, -overlap, item.id)

    return min(candidates, key=rank)[0] if candidates else None


def _finding(
    text: str, start: int, end: int, category: Category, span: tuple[int, int], item: Item | None
) -> Finding:
    word = text[span[0] : span[1]]
    shown = " ".join(word.split())
    if item is None:
        reason = f"“{shown}” about no recognisable item: nothing in the ledger can back it"
    else:
        short = item.id if len(item.id) <= 12 else item.id[:8] + "…"
        reason = f"“{shown}” about {item.kind} {short}: {_MISSING[category]}"
    return Finding(
        sentence=" ".join(text[start:end].split()),
        word=word,
        category=category,
        item_id=None if item is None else item.id,
        reason=reason,
        span=span,
    )


def _mask(text: str) -> str:
    """Blank out code and quoted tokens (same length, newlines kept) so their words are not uses."""

    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group())

    def blank_quoted(match: re.Match[str]) -> str:
        inner = next(g for g in match.groups() if g is not None)
        return match.group() if _WORD.fullmatch(inner) else blank(match)

    return _QUOTED.sub(blank_quoted, _PROPOSITION.sub(blank, _CODE.sub(blank, text)))


def _units(masked: str) -> Iterator[tuple[int, int]]:
    """Paragraphs, list items (with wrapped lines), headings and table rows; markers excluded."""
    start: int | None = None
    one_line = False
    pos = 0
    for line in masked.splitlines(keepends=True):
        one = _ONE_LINE.match(line)
        marker = one or _LIST_ITEM.match(line)
        blank = not line.strip()
        if start is not None and (blank or marker or one_line):
            yield start, pos
            start = None
        if not blank and start is None:
            start = pos + (marker.end() if marker else 0)
            one_line = one is not None
        pos += len(line)
    if start is not None:
        yield start, pos


def _sentences(masked: str) -> Iterator[tuple[int, int]]:
    for unit_start, unit_end in _units(masked):
        start = unit_start
        bounds: list[int] = []
        for match in _SENTENCE_END.finditer(masked, unit_start, unit_end):
            if not _ABBREVIATION.search(masked, start, match.end()):
                bounds.append(match.end())
        for end in [*bounds, unit_end]:
            piece = masked[start:end]
            stripped = piece.strip()
            if stripped:
                lead = len(piece) - len(piece.lstrip())
                yield start + lead, start + lead + len(stripped)
            start = end


def _words(masked: str, start: int, end: int) -> Iterator[tuple[Category, int, int]]:
    for match in _WORD.finditer(masked, start, end):
        if match.group("neg") or _negated(masked[start : match.start()]):
            continue
        category = next(c for c in get_args(Category) if match.group(c))
        yield category, match.start(), match.end()


def _negated(before: str) -> bool:
    tokens = [t.lower().replace("’", "'") for t in _PRECEDING.findall(before)]
    nearest = [t for t in tokens if t not in _AUXILIARIES][-2:]
    return any(t in _NEGATIONS or t.endswith("n't") for t in nearest)


def _significant(text: str) -> frozenset[str]:
    words = (t for t in _TOKEN.findall(text.lower()) if t not in _STOP_WORDS and not _WORD.fullmatch(t))
    return frozenset(t[:-1] if len(t) > 3 and t.endswith("s") and not t.endswith("ss") else t for t in words)


def _needles(item: Item) -> re.Pattern[str]:
    names = sorted({n for n in (item.id, *item.aliases) if n}, key=lambda n: (-len(n), n))
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, names)) + r")(?!\w)", re.IGNORECASE)

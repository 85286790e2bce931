"""Recorded debates (docs/guide/observe.md): the `council-debate-v1` and `du-debate` formats, read into
one shape that `council import` writes and `council eval` measures. Pure: no I/O.

A record is one question. Its propositions are its options (label → text) or, without
options, its distinct free answers (equal after trimming and case-folding). Each turn is
one agent's answer in one round; ``saw`` lists the turns it had seen (by default every
turn of *another* agent in a *smaller* round). A bad record refuses the whole file:
:class:`BadRecord` names the record and the reason.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal

from council.domain import strict_json
from council.domain.answer_patterns import AnswerPattern, PatternTooSlow
from council.domain.validate import MAX_CONTENT, MAX_NAME, MAX_OBJECTIVE, MAX_RATIONALE

Format = Literal["council-debate-v1", "du-debate"]
FORMATS: tuple[Format, ...] = ("council-debate-v1", "du-debate")
MAX_RECORDS = 200_000
MAX_TURNS = 1_000
MAX_AGENTS = 50
MAX_OPTIONS = 100
MAX_ID = 200
MAX_TAGS = 20


class BadRecord(ValueError):
    """A record that cannot be imported; the whole file is refused."""

    def __init__(self, record: str, reason: str) -> None:
        super().__init__(f"record {record}: {reason}")
        self.record = record
        self.reason = reason


@dataclass(frozen=True)
class Agent:
    name: str
    model: str | None
    provider: str | None


@dataclass(frozen=True)
class Turn:
    index: int
    round: int
    agent: str
    answer: str | None  # the key of a proposition, or None: no answer
    confidence: float | None
    text: str | None
    saw: tuple[int, ...]
    saw_given: bool  # the record listed what it saw (else: the default rule)


@dataclass(frozen=True)
class Record:
    id: str
    question: str
    propositions: tuple[tuple[str, str], ...]  # (key, text), in order
    truth: frozenset[str]  # the keys of the propositions that are true
    agents: tuple[Agent, ...]
    turns: tuple[Turn, ...]
    tags: tuple[str, ...]
    labelled: bool = False  # its propositions are options (label, text), not free answers

    @property
    def resolved(self) -> bool:
        return bool(self.truth)


def answer_key(answer: str) -> str:
    """Free answers equal after trimming and case-folding are one proposition."""
    return " ".join(answer.split()).casefold()


def parse_file(
    data: bytes,
    fmt: Format,
    *,
    answer_pattern: str | None = None,
    numeric: bool = False,
    model: str | None = None,
    provider: str | None = None,
) -> list[Record]:
    """Every record of a file, or BadRecord for the first bad one. ``model`` and ``provider``
    (du-debate only, which names neither) are every agent's."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRecord("(file)", f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    if fmt == "council-debate-v1":
        if model is not None or provider is not None:
            raise BadRecord(
                "(file)", "--model and --provider are for du-debate: council-debate-v1 names its agents'"
            )
        records = parse_council_debate(text.splitlines())
    else:
        records = parse_du_debate(text, answer_pattern, numeric=numeric, model=model, provider=provider)
    if not records:
        raise BadRecord("(file)", "no records")
    if len(records) > MAX_RECORDS:
        raise BadRecord("(file)", f"{len(records)} records (limit {MAX_RECORDS})")
    seen: set[str] = set()
    for record in records:
        if record.id in seen:
            raise BadRecord(record.id, "the id is not unique in the file")
        seen.add(record.id)
    return records


def parse_council_debate(lines: Iterable[str]) -> list[Record]:
    records: list[Record] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if len(records) == MAX_RECORDS:  # while reading: the rest is never parsed
            raise BadRecord("(file)", f"more than {MAX_RECORDS} records")
        try:
            document = strict_json.loads(line)
        except ValueError as exc:
            raise BadRecord(f"at line {number}", f"not JSON as Council takes it: {exc}") from None
        if not isinstance(document, dict):
            raise BadRecord(f"at line {number}", "not a JSON object")
        records.append(_council_record(document, number))
    return records


def _council_record(doc: Mapping[str, object], line: int) -> Record:
    record_id = doc.get("id")
    if not isinstance(record_id, str | int) or isinstance(record_id, bool) or not str(record_id).strip():
        raise BadRecord(f"at line {line}", "id must be a non-empty string")
    rid = _bounded(str(record_id).strip(), MAX_ID, str(record_id)[:40], "id")
    question = _text(doc.get("question"), rid, "question", MAX_OBJECTIVE)
    unknown = set(doc) - {"id", "question", "options", "truth", "agents", "turns", "tags"}
    if unknown:
        raise BadRecord(rid, f"unknown key(s): {', '.join(sorted(unknown))}")
    options = doc.get("options")
    labelled: dict[str, str] | None = None
    if options is not None:
        if not isinstance(options, dict) or not options or len(options) > MAX_OPTIONS:
            raise BadRecord(rid, f"options must be an object of 1 to {MAX_OPTIONS} label: text")
        labelled = {}
        for label, text in options.items():
            label_key = _text(label, rid, "an option label", MAX_NAME)
            labelled[label_key] = _text(text, rid, f"option {label_key}", MAX_CONTENT)
    agents = _agents(doc.get("agents"), rid)
    names = {a.name for a in agents}
    raw_turns = doc.get("turns")
    if not isinstance(raw_turns, list) or not raw_turns or len(raw_turns) > MAX_TURNS:
        raise BadRecord(rid, f"turns must be a list of 1 to {MAX_TURNS} turns")
    drafts = []
    last_round = 0
    for index, raw in enumerate(raw_turns):
        if not isinstance(raw, dict):
            raise BadRecord(rid, f"turn {index} is not an object")
        extra = set(raw) - {"round", "agent", "answer", "confidence", "text", "saw"}
        if extra:
            raise BadRecord(rid, f"turn {index}: unknown key(s): {', '.join(sorted(extra))}")
        round_no = raw.get("round")
        if not isinstance(round_no, int) or isinstance(round_no, bool) or round_no < 0:
            raise BadRecord(rid, f"turn {index}: round must be an integer >= 0")
        if round_no < last_round:
            raise BadRecord(rid, f"turn {index}: rounds must not decrease ({round_no} after {last_round})")
        last_round = round_no
        agent = raw.get("agent")
        if agent not in names:
            raise BadRecord(rid, f"turn {index}: agent {agent!r} is not one of the record's agents")
        answer = raw.get("answer")
        if answer is not None:
            answer = _text(answer, rid, f"turn {index}'s answer", MAX_CONTENT)
            if labelled is not None and answer not in labelled:
                raise BadRecord(rid, f"turn {index}: answer {answer!r} is not an option label")
        confidence = raw.get("confidence")
        if confidence is not None and (
            not isinstance(confidence, int | float)
            or isinstance(confidence, bool)
            or not math.isfinite(confidence)
            or not 0 <= confidence <= 1
        ):
            raise BadRecord(rid, f"turn {index}: confidence must be a number in [0, 1]")
        text = raw.get("text")
        if text is not None:
            text = _bounded(str(text), MAX_RATIONALE * 8, rid, f"turn {index}'s text")
        saw = raw.get("saw")
        if saw is not None:
            if not isinstance(saw, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in saw
            ):
                raise BadRecord(rid, f"turn {index}: saw must be a list of turn indices")
            if any(not 0 <= i < index for i in saw):
                raise BadRecord(rid, f"turn {index}: saw names a turn that is not an earlier one")
        drafts.append((index, round_no, agent, answer, confidence, text, saw))
    turns = []
    for index, round_no, agent, answered, confidence, text, saw in drafts:
        default = tuple(i for i, r, a, *_ in drafts if r < round_no and a != agent)
        key = None if answered is None else (answered if labelled is not None else answer_key(answered))
        given = saw is not None
        turns.append(
            Turn(
                index,
                round_no,
                agent,
                key,
                confidence,
                text,
                tuple(sorted(set(saw))) if saw is not None else default,
                given,
            )
        )
    if labelled is not None:
        propositions = tuple(labelled.items())
    else:
        first: dict[str, str] = {}
        for draft in drafts:
            answer = draft[3]
            if answer is not None:
                first.setdefault(answer_key(answer), answer)
        propositions = tuple(first.items())
    keys = {k for k, _ in propositions}
    truth = _truth(doc.get("truth"), rid, labelled is not None, keys)
    tags = doc.get("tags") or []
    if not isinstance(tags, list) or len(tags) > MAX_TAGS:
        raise BadRecord(rid, f"tags must be a list of at most {MAX_TAGS} strings")
    return Record(
        id=rid,
        question=question,
        propositions=propositions,
        truth=truth,
        agents=agents,
        turns=tuple(turns),
        tags=tuple(_text(t, rid, "a tag", MAX_NAME) for t in tags),
        labelled=labelled is not None,
    )


def _truth(value: object, rid: str, labelled: bool, keys: set[str]) -> frozenset[str]:
    if value is None:
        return frozenset()
    values = value if isinstance(value, list) else [value]
    if not values:
        raise BadRecord(rid, "truth must not be an empty list")
    truth = set()
    for item in values:
        text = _text(item, rid, "truth", MAX_CONTENT)
        key = text if labelled else answer_key(text)
        if labelled and key not in keys:
            raise BadRecord(rid, f"truth {text!r} is not an option label")
        truth.add(key)
    return frozenset(truth)


def _agents(value: object, rid: str) -> tuple[Agent, ...]:
    if not isinstance(value, list) or not value or len(value) > MAX_AGENTS:
        raise BadRecord(rid, f"agents must be a list of 1 to {MAX_AGENTS} agents")
    agents = []
    for item in value:
        if not isinstance(item, dict) or set(item) - {"name", "model", "provider"}:
            raise BadRecord(rid, "each agent is an object with name, and optionally model and provider")
        name = _text(item.get("name"), rid, "an agent's name", MAX_NAME)
        model = item.get("model")
        provider = item.get("provider")
        agents.append(
            Agent(
                name,
                None if model is None else _text(model, rid, f"agent {name}'s model", 200),
                None if provider is None else _text(provider, rid, f"agent {name}'s provider", MAX_NAME),
            )
        )
    if len({a.name for a in agents}) != len(agents):
        raise BadRecord(rid, "agent names must be unique")
    return tuple(agents)


def parse_du_debate(
    text: str,
    answer_pattern: str | None,
    *,
    numeric: bool = False,
    model: str | None = None,
    provider: str | None = None,
) -> list[Record]:
    """The JSON most published debate harnesses write: an object of question →
    ``[agent_contexts, answer]`` (what Du et al.'s ``gen_gsm.py`` and ``gen_mmlu.py`` dump: the
    record's id is then its position in the file), or a list (or an object of id → item) of
    ``{"question", "answer", "agent_contexts": [[{"role", "content"}, ...], ...]}``. Each
    assistant message is a turn (its index among its agent's assistant messages is its round);
    the answer is the last match of ``answer_pattern`` in it (its first group, if it has one),
    the truth the last match in ``answer``. With ``numeric``, an answer that reads as a number
    once ``$``, ``,`` and spaces are dropped is that number (``$1,080.00`` and ``1080`` are one
    answer), as those harnesses' own scorers compare them. Every turn of round r saw every
    other agent's turn of round r - 1, as those harnesses feed them. The format names no model:
    ``model`` and ``provider``, when given, are every agent's (one file is one model's run)."""
    if not answer_pattern:
        raise BadRecord("(file)", "du-debate needs --answer-pattern (the regular expression of an answer)")
    try:
        pattern = AnswerPattern(answer_pattern)
    except ValueError as exc:
        raise BadRecord("(file)", f"--answer-pattern is not a regular expression: {exc}") from None
    keyed = text.lstrip()[:1] == "{"
    if not keyed and text.lstrip()[:1] != "[":
        raise BadRecord("(file)", "du-debate is a JSON list (or object) of debates")
    try:  # read one debate at a time: the record limit holds before the rest is parsed
        debates = strict_json.items(text, limit=MAX_RECORDS, what="records")
        return _du_records(debates, keyed, pattern, numeric, model, provider)
    except strict_json.JsonRefused as exc:
        raise BadRecord("(file)", f"not JSON as Council takes it: {exc}") from None
    except PatternTooSlow as exc:
        raise BadRecord("(file)", str(exc)) from None


def _du_records(items: Iterable[tuple[str, object]], keyed: bool, pattern: AnswerPattern, numeric: bool,
                model: str | None, provider: str | None) -> list[Record]:  # fmt: skip
    def answer_of(found: str | None) -> str | None:
        return _number(found) if numeric and found is not None else found

    records = []
    for position, (key, item) in enumerate(items):
        rid = key
        if isinstance(item, list) and keyed:
            if len(item) != 2:
                raise BadRecord(str(position), "a question's value must be [agent_contexts, answer]")
            rid = str(position)
            item = {"question": key, "agent_contexts": item[0], "answer": item[1]}
        if not isinstance(item, dict):
            raise BadRecord(rid, "not an object")
        question = _text(item.get("question"), rid, "question", MAX_OBJECTIVE)
        contexts = item.get("agent_contexts")
        if not isinstance(contexts, list) or not contexts or len(contexts) > MAX_AGENTS:
            raise BadRecord(rid, f"agent_contexts must be a list of 1 to {MAX_AGENTS} conversations")
        by_round: dict[int, list[tuple[str, str | None, str]]] = {}
        agents = []
        for number, context in enumerate(contexts):
            name = f"agent-{number}"
            agents.append(Agent(name, model, provider))
            if not isinstance(context, list):
                raise BadRecord(rid, f"agent_contexts[{number}] is not a list of messages")
            said = [m for m in context if isinstance(m, dict) and m.get("role") == "assistant"]
            for round_no, message in enumerate(said):
                content = message.get("content")
                if not isinstance(content, str):
                    raise BadRecord(rid, f"{name}'s message {round_no} has no text content")
                found = answer_of(pattern.last(content))
                by_round.setdefault(round_no, []).append((name, found, content))
        drafts = [(r, name, ans, content) for r in sorted(by_round) for name, ans, content in by_round[r]]
        if not drafts:
            raise BadRecord(rid, "no assistant message")
        if len(drafts) > MAX_TURNS:
            raise BadRecord(rid, f"{len(drafts)} turns (limit {MAX_TURNS})")
        turns = []
        for index, (round_no, name, ans, content) in enumerate(drafts):
            saw = tuple(i for i, (r, n, *_) in enumerate(drafts) if r == round_no - 1 and n != name)
            answer = None if ans is None else answer_key(ans)
            turns.append(Turn(index, round_no, name, answer, None, content[: MAX_RATIONALE * 8], saw, False))
        first: dict[str, str] = {}
        for _r, _n, ans, _c in drafts:
            if ans is not None:
                first.setdefault(answer_key(ans), ans)
        truth_text = item.get("answer")
        truth: frozenset[str] = frozenset()
        if truth_text is not None:
            match = answer_of(pattern.last(str(truth_text)) or str(truth_text).strip())
            truth = frozenset({answer_key(match)}) if match else frozenset()
        records.append(
            Record(rid, question, tuple(first.items()), truth, tuple(agents), tuple(turns), ("du-debate",))
        )
    return records


def _number(text: str) -> str:
    """``text`` as a canonical decimal if it reads as a number once ``$``, ``,`` and spaces
    are dropped (``$1,080.00`` → ``1080``), else ``text``."""
    cleaned = re.sub(r"[$,\s]", "", text)
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)", cleaned):
        return text
    try:
        value = Decimal(cleaned).normalize()
    except InvalidOperation:
        return text
    return format(value, "f")


def _text(value: object, rid: str, field: str, limit: int) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise BadRecord(rid, f"{field} must be a string")
    cleaned = str(value).strip()
    if not cleaned:
        raise BadRecord(rid, f"{field} must not be empty")
    if "\x00" in cleaned:
        raise BadRecord(rid, f"{field} contains a NUL character")
    return _bounded(cleaned, limit, rid, field)


def _bounded(value: str, limit: int, rid: str, field: str) -> str:
    if len(value) > limit:
        raise BadRecord(rid, f"{field} is too long: {len(value)} characters (limit {limit})")
    return value


def record_document(record: Record) -> dict[str, object]:
    """The council-debate-v1 document of a record: what `council export --format json` emits.
    Parsing it gives the record back (a truth of one answer is written as a string; a turn's
    ``saw`` only when the record stated it)."""
    label = dict(record.propositions)

    def shown(key: str) -> str:
        return key if record.labelled else label[key]

    document: dict[str, object] = {"id": record.id, "question": record.question}
    if record.labelled:
        document["options"] = dict(record.propositions)
    truth = [shown(k) for k, _ in record.propositions if k in record.truth]
    if truth:
        document["truth"] = truth[0] if len(truth) == 1 else truth
    document["agents"] = [
        {
            "name": a.name,
            **({"model": a.model} if a.model else {}),
            **({"provider": a.provider} if a.provider else {}),
        }
        for a in record.agents
    ]
    turns = []
    for turn in record.turns:
        item: dict[str, object] = {
            "round": turn.round,
            "agent": turn.agent,
            "answer": None if turn.answer is None else shown(turn.answer),
        }
        if turn.confidence is not None:
            item["confidence"] = turn.confidence
        if turn.text is not None:
            item["text"] = turn.text
        if turn.saw_given:
            item["saw"] = list(turn.saw)
        turns.append(item)
    document["turns"] = turns
    if record.tags:
        document["tags"] = list(record.tags)
    return document

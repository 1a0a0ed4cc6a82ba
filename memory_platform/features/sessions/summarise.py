"""What a compaction summary says and whether a model's summary may stand.

Compaction (:mod:`memory_platform.features.sessions.compaction`) replaces older conversation items
by
summaries; this module holds everything about the text of one summary:

* the prompt and the strict JSON schema of a summary call (``{"summary": string}``), for a
  leaf (raw items) and for a condensed summary (consecutive summaries);
* the quality guard a model's answer must pass (non-empty, within about 1.5x the summary
  target, shorter than its input unless the input is tiny, a reasonable share of the input's
  anchors kept: numbers, dates and names, no credential, no JSON or Markdown debris);
* the call loop: one answer, up to ``session_compaction_quality_retries`` re-asks with the
  guard's complaint, then the deterministic summary instead (``produced_by='fallback'``); a
  model error (timeout, malformed answer, unavailable) goes to the fallback at once, so a
  compaction always finishes in time;
* the deterministic summary itself: a dated header (runs, items, event-time span), then one
  line per item, ``role (author): its first sentence(s)``, with the item's remaining anchors
  appended, within the summary target. It is the answer of the offline ``extractive`` model
  (``produced_by='extractive'``) and the fallback of every other model. Linear in the
  input; German and English alike (it copies sentences and understands nothing).

Credentials never enter a summary: a summary becomes a memory row (the write path refuses
secrets) and is replayed into prompts. The deterministic summary leaves out every sentence
that holds one (and a whole item when the secret only shows across its sentences); a model
summary holding one fails the guard.
"""

from __future__ import annotations

import math
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memory_platform.features.sessions.tokens import chars_for_tokens, estimate_tokens
from memory_platform.foundation.language import NAME_STOPWORDS, cut_at_word, split_sentences
from memory_platform.foundation.secrets import find_secret
from memory_platform.foundation.settings import Settings
from memory_platform.shared.llm.base import Completion, JsonRequest, ModelError

SCHEMA_NAME = "session_summary"
SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
    "additionalProperties": False,
}
# A model summary may exceed the target by half before the guard refuses it.
LENGTH_TOLERANCE = 1.5
# Below this many tokens of input a summary need not be shorter than what it covers.
TINY_INPUT_TOKENS = 200
# The anchor check applies when the input has at least this many anchors; then at least
# a third of its most telling ones (up to ANCHORS_CHECKED) must stay.
MIN_ANCHORS = 4
ANCHORS_CHECKED = 12
ANCHOR_SHARE = 1 / 3
MAX_ANCHOR_CHARS = 40
# A run of letters/digits this long is a blob (base64, a hash dump), never summary prose.
MAX_WORD_CHARS = 200
# Deterministic summary: characters per item line (the share of the target, within these).
MIN_LINE_CHARS = 60
MAX_LINE_CHARS = 400
ANCHORS_PER_LINE = 6
CLOSING_CHARS = 160          # room kept for the line naming the items that did not fit
REST_SCAN_CHARS = 50_000     # text of those items read for their anchors
AUTHOR_MAX_CHARS = 40
CREDENTIAL_WITHHELD = "[credential withheld]"

_TRIM = ".,;:!?\"'()[]{}<>«»„“”‚‘’*_`|"


# --- inputs ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class SummaryItem:
    """One raw item as a summary sees it. ``text`` is what the prompt gets: the whole
    content, or head and tail of an item larger than a chunk (``chars`` is the full
    length)."""

    seq: int
    role: str
    author: str | None
    text: str
    chars: int
    when: datetime | None
    run_index: int | None


@dataclass(frozen=True)
class ChildSummary:
    """A summary being condensed into the one above it."""

    first_seq: int
    last_seq: int
    depth: int
    content: str


@dataclass(frozen=True)
class Span:
    """What a summary covers: items (seq), runs, and the event-time span."""

    first_seq: int
    last_seq: int
    first_run: int | None
    last_run: int | None
    start: datetime | None
    end: datetime | None


def _minute(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def span_label(span: Span) -> str:
    """``runs 2–4, items 10–24, 2026-11-30 09:12–10:40 UTC``: the header's facts."""
    parts = []
    if span.first_run is not None and span.last_run is not None:
        parts.append(f"run {span.first_run}" if span.first_run == span.last_run
                     else f"runs {span.first_run}–{span.last_run}")
    parts.append(f"item {span.first_seq}" if span.first_seq == span.last_seq
                 else f"items {span.first_seq}–{span.last_seq}")
    if span.start is not None and span.end is not None:
        start, end = _minute(span.start), _minute(span.end)
        if start == end:
            parts.append(f"{start} UTC")
        elif start[:10] == end[:10]:
            parts.append(f"{start}–{end[11:]} UTC")
        else:
            parts.append(f"{start} – {end} UTC")
    return ", ".join(parts)


def leaf_source(items: Sequence[SummaryItem]) -> str:
    """The text a leaf summary covers (what the guard measures it against)."""
    return "\n".join(item.text for item in items)


def condensed_source(children: Sequence[ChildSummary]) -> str:
    return "\n".join(child.content for child in children)


# --- anchors ---------------------------------------------------------------------------------

def anchors(text: str, limit: int = ANCHORS_CHECKED) -> list[str]:
    """The input's most telling literal tokens, best first: numbers, dates, times, versions
    and ids (anything with a digit, in order of appearance) taking turns with names
    (ACRONYMS and CamelCase first, then capitalised words that do not start a sentence, by
    frequency); single digits last. German capitalises every noun, so frequent nouns count
    as names there: the guard only asks for a share of them. One pass over
    whitespace-split tokens (linear)."""
    numbers: dict[str, str] = {}
    digits: dict[str, str] = {}
    strong: dict[str, str] = {}
    names: dict[str, list[Any]] = {}  # folded -> [token, count, first position]
    sentence_start = True
    for position, raw in enumerate(text.split()):
        token = raw.strip(_TRIM)
        if token and len(token) <= MAX_ANCHOR_CHARS:
            folded = token.casefold()
            if any(c.isdigit() for c in token):
                (numbers if len(token) > 1 else digits).setdefault(folded, token)
            elif token[0].isupper() and len(token) > 1 and folded not in NAME_STOPWORDS:
                if token.isupper() or any(c.isupper() for c in token[1:]):
                    strong.setdefault(folded, token)
                elif not sentence_start:
                    entry = names.setdefault(folded, [token, 0, position])
                    entry[1] += 1
        sentence_start = raw[-1] in ".!?:" or raw in ("-", "*", "•")
    worded = list(strong.values()) + [
        entry[0] for folded, entry in sorted(names.items(), key=lambda e: (-e[1][1], e[1][2]))
        if folded not in strong]
    numbered = list(numbers.values())
    ranked: list[str] = []
    for index in range(max(len(numbered), len(worded))):
        ranked += numbered[index:index + 1] + worded[index:index + 1]
        if len(ranked) >= limit:
            break
    ranked += digits.values()
    return ranked[:limit]


# --- the deterministic summary ---------------------------------------------------------------

def _clean_line(text: str) -> str:
    """One line of plain text: control characters and line breaks become spaces."""
    return " ".join("".join(" " if unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") else c
                            for c in text).split())


def _clean_sentences(text: str) -> tuple[list[str], bool]:
    """The sentences of ``text`` that hold no credential, and whether any was left out.
    A secret that only shows across sentences (a label on one line, the value on the next)
    withholds the whole item."""
    sentences = split_sentences(text)
    if find_secret(text) is None:
        return sentences, False
    clean = [s for s in sentences if find_secret(s) is None]
    if find_secret(" ".join(clean)) is not None:
        return [], True
    return clean, True


def _label(role: str, author: str | None) -> str:
    author = _clean_line(author or "")[:AUTHOR_MAX_CHARS]
    if author and find_secret(author) is None:
        return f"{role} ({author})"
    return role


def _cut(text: str, room: int) -> str:
    """``text`` within ``room`` characters, cut at a word boundary with an ellipsis."""
    if len(text) <= room:
        return text
    if room <= 1:
        return "…"[:room]
    return cut_at_word(text, room - 1)[:room - 1].rstrip() + "…"


def _anchor_tag(anchors_: list[str], body: str, room: int) -> str:
    """`` [a; b; c]``: the anchors ``body`` lacks, as many as fit ``room``."""
    folded = body.casefold()
    kept: list[str] = []
    for anchor in anchors_:
        if anchor.casefold() in folded:
            continue
        if len("; ".join([*kept, anchor])) + 3 > room:
            break
        kept.append(anchor)
        if len(kept) == ANCHORS_PER_LINE:
            break
    return " [" + "; ".join(kept) + "]" if kept else ""


def item_line(item: SummaryItem, limit: int) -> str:
    """``role (author): first sentence(s)… [anchors of the rest]`` in at most ``limit``
    characters. The text that does not fit is represented by its anchors (up to two fifths
    of the line); a long word is cut, so no line is a blob."""
    label = _label(item.role, item.author)
    sentences, withheld = _clean_sentences(item.text)
    note = f" {CREDENTIAL_WITHHELD}" if withheld else ""
    room = max(0, limit - len(label) - 2 - len(note))
    full = _clean_line(" ".join(sentences))
    if len(full) <= room:
        body = full
    else:
        found = anchors(full, ANCHORS_PER_LINE * 2)
        tag = _anchor_tag(found, _cut(full, room * 3 // 5), room * 2 // 5)
        body = _cut(full, room - len(tag))
        body += _anchor_tag(found, body, room - len(body))
    return f"{label}: {(body + note).strip() or '…'}"


def _closing_line(rest: Sequence[SummaryItem], room: int) -> str:
    """``… n more items (items a–b) not listed [anchors]``: what did not fit, represented
    by its anchors (of sentences without credentials; at most REST_SCAN_CHARS read)."""
    line = f"… {len(rest)} more items (items {rest[0].seq}–{rest[-1].seq}) not listed"
    texts: list[str] = []
    scanned = 0
    for item in rest:
        if scanned >= REST_SCAN_CHARS:
            break
        text = item.text[:REST_SCAN_CHARS - scanned]
        scanned += len(text)
        texts.append(" ".join(_clean_sentences(text)[0]))
    tag = _anchor_tag(anchors(_clean_line(" ".join(texts)), ANCHORS_PER_LINE * 2), "",
                      room - len(line) - 1)
    return f"{line}{tag}."


def leaf_summary(items: Sequence[SummaryItem], span: Span, target_tokens: int,
                 max_chars: int | None = None) -> str:
    """The deterministic summary of raw items (see the module docstring). When the items
    do not all fit, the last line counts the rest and names their anchors."""
    budget = chars_for_tokens(target_tokens)
    if max_chars is not None:
        budget = min(budget, max_chars)
    header = f"Conversation summary ({span_label(span)}):"
    lines = [header]
    remaining = budget - len(header) - 1
    per_item = max(MIN_LINE_CHARS, min(MAX_LINE_CHARS,
                                       (remaining - CLOSING_CHARS) // max(1, len(items)) - 1))
    for index, item in enumerate(items):
        line = item_line(item, per_item)
        last = index == len(items) - 1
        if len(line) + 1 > remaining - (0 if last else CLOSING_CHARS):
            lines.append(_closing_line(items[index:], max(CLOSING_CHARS, remaining)))
            break
        lines.append(line)
        remaining -= len(line) + 1
    return "\n".join(lines)


def _body_lines(content: str) -> list[str]:
    """A child summary's lines without its header line."""
    lines = [line.strip() for line in content.split("\n") if line.strip()]
    if lines and lines[0].endswith("):") and "(" in lines[0]:
        lines = lines[1:]
    return lines


def condensed_summary(children: Sequence[ChildSummary], span: Span, target_tokens: int,
                      max_chars: int | None = None) -> str:
    """The deterministic summary of consecutive summaries: a header, then per child its
    range and its first lines, each child getting an equal share of the target."""
    budget = chars_for_tokens(target_tokens)
    if max_chars is not None:
        budget = min(budget, max_chars)
    header = f"Condensed conversation summary ({span_label(span)}):"
    out = [header]
    share = max(MIN_LINE_CHARS * 2, (budget - len(header)) // max(1, len(children)) - 1)
    for child in children:
        head = f"[items {child.first_seq}–{child.last_seq}]"
        used = len(head)
        parts = [head]
        for line in _body_lines(child.content):
            line = _clean_line(line)
            if find_secret(line) is not None:
                continue
            if used + len(line) + 1 > share:
                if used == len(head):
                    parts.append(cut_at_word(line, max(0, share - used - 2)) + "…")
                break
            parts.append(line)
            used += len(line) + 1
        out.append(" ".join(parts))
    return "\n".join(out)


# --- prompts ---------------------------------------------------------------------------------

_LEAF_SYSTEM = """\
You compact the older part of a conversation between users and an AI agent into a summary \
that replaces those items in the agent's context and becomes a searchable memory. Write in \
the language of the conversation (German or English). Keep who said what, every name, \
number, date, decision, commitment, preference and open question; drop greetings, filler and \
tool noise. Do not invent anything and do not answer the conversation. Never write a \
password, API key, token or other credential. Plain text: short sentences or lines starting \
with "- "; no Markdown headings, no code blocks, no JSON inside the summary. At most about \
{target} tokens. Answer with exactly one JSON object: {{"summary": "<the summary>"}}."""

_CONDENSED_SYSTEM = """\
You merge consecutive summaries of one conversation (oldest first) into one shorter summary \
that replaces them in the agent's context. Write in the language of the summaries (German \
or English). Keep who said what, every name, number, date, decision, commitment, preference \
and open question; keep the order of events. Do not invent anything. Never write a \
password, API key, token or other credential. Plain text: short sentences or lines starting \
with "- "; no Markdown headings, no code blocks, no JSON inside the summary. At most about \
{target} tokens. Answer with exactly one JSON object: {{"summary": "<the summary>"}}."""


def _when(value: datetime | None) -> str:
    return _minute(value) if value is not None else "?"


def _retry_note(complaint: str | None) -> str:
    if not complaint:
        return ""
    return (f"\n\nYour previous summary was rejected: {complaint} "
            "Write the summary again and fix that.")


def _max_completion(target_tokens: int) -> int:
    # Room beyond the guard's limit: an over-long answer comes back and gets a complaint
    # instead of failing as 'length'.
    return int(target_tokens * 2) + 100


def leaf_request(items: Sequence[SummaryItem], span: Span, target_tokens: int,
                 complaint: str | None = None) -> JsonRequest:
    lines = [f"[{item.seq} | {_when(item.when)} | {_label(item.role, item.author)}] "
             f"{item.text}" for item in items]
    user = (f"Summarise these conversation items ({span_label(span)}), oldest first. Each "
            "item: [item number | time (UTC) | role (author)] text.\n\n"
            + "\n".join(lines) + _retry_note(complaint))
    return JsonRequest(system=_LEAF_SYSTEM.format(target=target_tokens), user=user,
                       schema=SUMMARY_SCHEMA, schema_name=SCHEMA_NAME,
                       max_completion_tokens=_max_completion(target_tokens))


def condensed_request(children: Sequence[ChildSummary], span: Span, target_tokens: int,
                      complaint: str | None = None) -> JsonRequest:
    parts = [f"[items {child.first_seq}–{child.last_seq}]\n{child.content}"
             for child in children]
    user = (f"Merge these {len(children)} consecutive summaries ({span_label(span)}) into "
            "one, oldest first.\n\n" + "\n\n".join(parts) + _retry_note(complaint))
    return JsonRequest(system=_CONDENSED_SYSTEM.format(target=target_tokens), user=user,
                       schema=SUMMARY_SCHEMA, schema_name=SCHEMA_NAME,
                       max_completion_tokens=_max_completion(target_tokens))


# --- the guard -------------------------------------------------------------------------------

def summary_text(data: Any) -> str | None:
    """The summary of a model answer: exactly ``{"summary": string}``, else None."""
    if not isinstance(data, dict) or set(data) != {"summary"}:
        return None
    value = data["summary"]
    if not isinstance(value, str):
        return None
    text = "".join(c for c in value if unicodedata.category(c) not in ("Cc", "Cs")
                   or c in "\n\t").replace("\t", " ")
    lines = [line.rstrip() for line in text.strip().split("\n")]
    out: list[str] = []
    for line in lines:  # at most one blank line in a row
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def _debris(summary: str) -> str | None:
    head = summary.lstrip()[:1]
    if head in ("{", "["):
        return "it starts like JSON; write plain text"
    if "```" in summary:
        return "it contains a code fence; write plain text"
    if '"summary"' in summary or "\\n" in summary:
        return "it contains JSON syntax; write plain text"
    if any(line.lstrip().startswith(("# ", "## ", "### ")) for line in summary.split("\n")):
        return "it contains Markdown headings; write plain text"
    run = 0
    for c in summary:
        run = run + 1 if c.isalnum() else 0
        if run > MAX_WORD_CHARS:
            return "it contains a blob of characters; write prose"
    return None


def quality_complaint(summary: str | None, source: str, target_tokens: int,
                      max_chars: int | None = None) -> str | None:
    """Why a model's summary may not stand (a sentence for the re-ask), or None."""
    if summary is None:
        return 'the answer must be exactly one JSON object {"summary": "<text>"}.'
    if not summary.strip():
        return "the summary is empty."
    tokens = estimate_tokens(summary)
    limit = int(target_tokens * LENGTH_TOLERANCE)
    if tokens > limit or (max_chars is not None and len(summary) > max_chars):
        return f"it has about {tokens} tokens; stay under {target_tokens}."
    source_tokens = estimate_tokens(source)
    if source_tokens >= TINY_INPUT_TOKENS and tokens >= source_tokens:
        return (f"it is not shorter than the {source_tokens} tokens it summarises; "
                "condense it.")
    if find_secret(summary) is not None:
        return "it contains a credential (a password, key or token); leave it out."
    debris = _debris(summary)
    if debris:
        return debris + "."
    wanted = anchors(source, ANCHORS_CHECKED)
    if len(wanted) >= MIN_ANCHORS:
        folded = summary.casefold()
        missing = [a for a in wanted if a.casefold() not in folded]
        if len(wanted) - len(missing) < math.ceil(len(wanted) * ANCHOR_SHARE):
            return ("it drops the key names, numbers and dates; keep at least these: "
                    + ", ".join(missing[:8]) + ".")
    return None


# --- the call loop ---------------------------------------------------------------------------

@dataclass
class SummaryOutcome:
    """The summary that stands, who produced it, and what it took."""

    text: str
    produced_by: str        # 'model' | 'extractive' | 'fallback'
    retries: int = 0        # re-asks after the guard refused an answer
    fallback: bool = False
    complaints: list[str] | None = None
    error: str | None = None  # the model error that sent it to the fallback


ModelCall = Callable[[JsonRequest, float], Completion]


def summarise(settings: Settings, *, call: ModelCall | None,
              request: Callable[[str | None], JsonRequest], deterministic: Callable[[], str],
              source: str, deadline: float, max_chars: int | None = None) -> SummaryOutcome:
    """One summary: the deterministic one for the offline model (``call`` None), else the
    model's answer if it passes the guard (re-asked up to ``session_compaction_quality_
    retries`` times with the complaint), else the deterministic one as the fallback.
    ``call(request, remaining_seconds)`` may raise :class:`ModelError`; every call gets the
    time left until ``deadline`` (``time.monotonic()``) and none starts after it."""
    if call is None:
        return SummaryOutcome(deterministic(), "extractive")
    target = settings.session_compaction_summary_tokens
    complaint: str | None = None
    complaints: list[str] = []
    error: str | None = None
    attempts = 1 + settings.session_compaction_quality_retries
    retries = 0
    for attempt in range(attempts):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            error = error or "timeout: the compaction deadline passed"
            break
        if attempt:
            retries += 1
        try:
            completion = call(request(complaint), remaining)
        except ModelError as exc:
            error = f"{exc.code}: {exc.reason}"
            break
        text = summary_text(completion.data)
        complaint = quality_complaint(text, source, target, max_chars)
        if complaint is None and text is not None:
            return SummaryOutcome(text, "model", retries, complaints=complaints)
        complaints.append(complaint or "rejected")
    return SummaryOutcome(deterministic(), "fallback", retries, True, complaints, error)

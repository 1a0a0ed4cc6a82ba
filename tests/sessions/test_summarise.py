"""The text of a compaction summary: anchors, the deterministic summary (the offline
model's answer and every model's fallback), the prompt, the quality guard and the call loop
with its retry, fallback and deadline. Pure functions: no database, no HTTP (the loop's
model call is a plain function here; tests/sessions/test_compaction.py drives the real
client against the scripted server)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from memory_platform.features.sessions.summarise import (
    CREDENTIAL_WITHHELD,
    SUMMARY_SCHEMA,
    ChildSummary,
    Span,
    SummaryItem,
    anchors,
    condensed_request,
    condensed_summary,
    item_line,
    leaf_request,
    leaf_source,
    leaf_summary,
    quality_complaint,
    span_label,
    summarise,
    summary_text,
)
from memory_platform.features.sessions.tokens import estimate_tokens
from memory_platform.foundation.secrets import find_secret
from memory_platform.foundation.settings import Settings
from memory_platform.shared.llm.base import Completion, JsonRequest, ModelError
from tests.sessions.conversation import turn

T0 = datetime(2026, 11, 30, 9, 12, tzinfo=UTC)
SETTINGS = Settings(_env_file=None, session_compaction_summary_tokens=150)  # type: ignore[call-arg]


def _items(turns: int = 3) -> list[SummaryItem]:
    items: list[SummaryItem] = []
    for n in range(turns):
        for role, text in turn(n):
            seq = len(items)
            items.append(SummaryItem(seq, role, "alice" if role == "user" else None, text,
                                     len(text), T0 + timedelta(minutes=seq), n))
    return items


def _span(items: list[SummaryItem]) -> Span:
    return Span(items[0].seq, items[-1].seq, items[0].run_index, items[-1].run_index,
                items[0].when, items[-1].when)


# --- anchors ---------------------------------------------------------------------------------

def test_anchors_take_turns_between_numbers_and_names():
    text = ("Alice from Finance says invoice INV-1042 for the Berlin office is due on "
            "2026-12-01 at 14:30. The Hamburg rollout is owned by Bob, said Bob.")
    found = anchors(text, 8)
    assert found[:4] == ["INV-1042", "Bob", "2026-12-01", "Finance"]  # Bob: said twice
    assert {"14:30", "Berlin", "Hamburg"} <= set(anchors(text, 20))
    assert "Alice" not in anchors(text, 20)   # the first word of a sentence is no name


def test_anchors_in_german_put_single_digits_last():
    text = ("Runde 1: Frau Schneider meldet, dass der Vertrag mit der Müller GmbH am 3. März "
            "2027 ausläuft. Das Budget steigt auf 4000 Euro.")
    found = anchors(text, 20)
    assert found[0] == "2027" and {"GmbH", "Schneider", "4000", "Euro"} <= set(found)
    assert found[-2:] == ["1", "3"]


# --- the deterministic summary ---------------------------------------------------------------

def test_leaf_summary_has_a_dated_header_and_one_line_per_item():
    items = _items(2)
    summary = leaf_summary(items, _span(items), 300)

    lines = summary.split("\n")
    assert lines[0] == "Conversation summary (runs 0–1, items 0–3, 2026-11-30 09:12–09:15 UTC):"
    assert lines[1].startswith("user (alice): Turn 0: Alice from Finance says invoice INV-1000")
    assert lines[2].startswith("assistant: Noted for turn 0")
    assert lines[3].startswith("user (alice): Runde 1: Frau Schneider meldet")
    assert len(lines) == 1 + len(items)
    assert estimate_tokens(summary) <= 300


def test_leaf_summary_stays_within_its_target_and_keeps_anchors_of_cut_text():
    items = _items(12)
    summary = leaf_summary(items, _span(items), 150)

    assert len(summary) <= 150 * 4
    assert "INV-1000" in summary and "2027" in summary
    closing = summary.split("\n")[-1]
    listed = len(summary.split("\n")) - 2
    assert closing.startswith(f"… {len(items) - listed} more items (items {listed}–23) not "
                              "listed [")
    assert any(f"INV-{1000 + n}" in closing for n in range(listed // 2, 12))


def test_a_long_item_keeps_its_first_sentence_and_the_anchors_of_the_rest():
    text = ("The release train leaves every second Tuesday. " + "Filler words here. " * 40
            + "Final call: Zeus-7 ships to Frankfurt on 2027-01-15.")
    line = item_line(SummaryItem(0, "user", "bob", text, len(text), None, 0), 160)

    assert len(line) <= 160
    assert line.startswith("user (bob): The release train leaves every second Tuesday.")
    assert "2027-01-15" in line and "Zeus-7" in line


def test_credentials_never_enter_the_deterministic_summary():
    secret = "password: Hunter22!"
    items = [SummaryItem(0, "user", "bob", f"Here is the login. {secret} Deploy Zeus-7 to "
                         "Frankfurt on Friday.", 80, T0, 0),
             SummaryItem(1, "user", "bob", "The key is\nsk-proj-abcdefghijklmnopqrstuv123456", 40,
                         T0, 0)]
    summary = leaf_summary(items, _span(items), 300)

    assert find_secret(summary) is None
    assert "Hunter22" not in summary and "sk-proj" not in summary
    assert CREDENTIAL_WITHHELD in summary and "Zeus-7" in summary


def test_condensed_summary_lists_each_child_within_the_target():
    items = _items(4)
    children = [ChildSummary(0, 3, 0, leaf_summary(items[:4], _span(items[:4]), 150)),
                ChildSummary(4, 7, 0, leaf_summary(items[4:], _span(items[4:]), 150))]
    summary = condensed_summary(children, _span(items), 150)

    lines = summary.split("\n")
    assert lines[0].startswith("Condensed conversation summary (runs 0–3, items 0–7,")
    assert lines[1].startswith("[items 0–3] user (alice): Turn 0")
    assert lines[2].startswith("[items 4–7] user (alice): Turn 2")
    assert len(summary) <= 150 * 4


def test_the_deterministic_summary_is_linear_in_its_input():
    text = "Wort " * 20_000 + "a" * 50_000 + "!" * 50_000  # runs and one huge word
    items = [SummaryItem(i, "tool", "search", text, len(text), None, 0) for i in range(4)]
    summary = leaf_summary(items, _span(items), 900)

    assert estimate_tokens(summary) <= 900
    assert max(len(word) for word in summary.split()) < 400


def test_span_label_forms():
    assert span_label(Span(5, 5, 2, 2, None, None)) == "run 2, item 5"
    assert span_label(Span(0, 9, 0, 3, T0, T0 + timedelta(days=1))) == \
        "runs 0–3, items 0–9, 2026-11-30 09:12 – 2026-12-01 09:12 UTC"


# --- the prompt ------------------------------------------------------------------------------

def test_leaf_request_is_a_strict_json_schema_call_with_every_item():
    items = _items(1)
    request = leaf_request(items, _span(items), 150)

    assert request.schema == SUMMARY_SCHEMA and request.schema["additionalProperties"] is False
    assert '{"summary": "<the summary>"}' in request.system and "150 tokens" in request.system
    assert "German or English" in request.system
    assert "[0 | 2026-11-30 09:12 | user (alice)] Turn 0: Alice" in request.user
    assert "rejected" not in request.user
    retry = leaf_request(items, _span(items), 150, complaint="it is empty.")
    assert retry.user.endswith("Your previous summary was rejected: it is empty. Write the "
                               "summary again and fix that.")


def test_condensed_request_names_the_children_ranges():
    children = [ChildSummary(0, 3, 0, "First part."), ChildSummary(4, 9, 0, "Second part.")]
    request = condensed_request(children, Span(0, 9, 0, 4, None, None), 150)
    assert request.user.startswith("Merge these 2 consecutive summaries (runs 0–4, items 0–9)")
    assert "[items 4–9]\nSecond part." in request.user


# --- the guard -------------------------------------------------------------------------------

SOURCE = leaf_source(_items(3))
GOOD = ("Alice (Finance): invoice INV-1000 for Berlin due 2026-12-01 14:30; Kubernetes 1.0; "
        "Bob owns Hamburg. Frau Schneider: Müller GmbH contract ends 2. März 2027, budget "
        "1000 Euro, Jonas in München. INV-1002 due 2026-12-03, Kubernetes 1.2.")


def test_a_good_summary_passes_the_guard():
    assert quality_complaint(GOOD, SOURCE, 150) is None


@pytest.mark.parametrize("summary, complaint", [
    (None, "exactly one JSON object"),
    ("   ", "empty"),
    (GOOD * 5, "stay under 150"),
    ("Things were discussed about invoices and a rollout.", "keep at least these: INV-1000"),
    (GOOD + " The password: Hunter22! was shared.", "credential"),
    ('{"summary": "' + GOOD + '"}', "starts like JSON"),
    ("```\n" + GOOD + "\n```", "code fence"),
    ("# Summary\n" + GOOD, "Markdown headings"),
    (GOOD + " " + "x" * 300, "blob"),
])
def test_the_guard_names_what_is_wrong(summary, complaint):
    assert complaint in quality_complaint(summary, SOURCE, 150)


def test_a_summary_must_be_shorter_than_a_large_input():
    source = " ".join(f"Item {n} mentions INV-{n}." for n in range(200))
    summary = source.replace("mentions", "mentioned")
    assert "not shorter" in quality_complaint(summary, source, 10_000)
    tiny = "Alice met Bob in Berlin on 2026-12-01."
    assert quality_complaint("Alice met Bob in Berlin on 2026-12-01 (a Tuesday).", tiny,
                             150) is None


def test_summary_text_takes_exactly_the_summary_field():
    assert summary_text({"summary": " Line one.\n\n\n\nLine\x07 two. "}) == \
        "Line one.\n\nLine two."
    assert summary_text({"summary": "x", "extra": 1}) is None
    assert summary_text({"summary": 3}) is None
    assert summary_text(["summary"]) is None


# --- the call loop ---------------------------------------------------------------------------

def _completion(summary: str | dict) -> Completion:
    data = summary if isinstance(summary, dict) else {"summary": summary}
    return Completion(model="m", text=json.dumps(data), data=data, finish_reason="stop",
                      usage={}, duration_seconds=0.0, events=1)


class Script:
    """A model call answering scripted outcomes in order, recording what it was asked."""

    def __init__(self, *outcomes: object) -> None:
        self.outcomes = list(outcomes)
        self.requests: list[JsonRequest] = []
        self.remaining: list[float] = []

    def __call__(self, request: JsonRequest, remaining: float) -> Completion:
        self.requests.append(request)
        self.remaining.append(remaining)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return _completion(outcome)  # type: ignore[arg-type]


def _summarise(call: Script | None, deadline: float | None = None):
    items = _items(3)
    return summarise(
        SETTINGS, call=call, source=leaf_source(items),
        deadline=time.monotonic() + 30 if deadline is None else deadline,
        request=lambda complaint: leaf_request(items, _span(items), 150, complaint),
        deterministic=lambda: leaf_summary(items, _span(items), 150))


def test_the_offline_model_answers_with_the_deterministic_summary():
    outcome = _summarise(None)
    assert outcome.produced_by == "extractive" and not outcome.fallback
    assert outcome.text.startswith("Conversation summary (")


def test_a_good_first_answer_stands():
    call = Script(GOOD)
    outcome = _summarise(call)
    assert (outcome.text, outcome.produced_by, outcome.retries) == (GOOD, "model", 0)
    assert 0 < call.remaining[0] <= 30


def test_one_retry_with_the_complaint_then_the_good_answer():
    call = Script("Stuff happened.", GOOD)
    outcome = _summarise(call)
    assert (outcome.produced_by, outcome.retries, outcome.fallback) == ("model", 1, False)
    assert "keep at least these" in call.requests[1].user


def test_two_failures_fall_back():
    call = Script("Stuff happened.", {"summary": "x", "more": 1})
    outcome = _summarise(call)
    assert (outcome.produced_by, outcome.retries, outcome.fallback) == ("fallback", 1, True)
    assert outcome.text.startswith("Conversation summary (")
    assert len(outcome.complaints or []) == 2


def test_a_model_error_falls_back_at_once():
    call = Script(ModelError("timeout", "the phase timeout of 3s passed"), GOOD)
    outcome = _summarise(call)
    assert (outcome.produced_by, outcome.retries, len(call.requests)) == ("fallback", 0, 1)
    assert outcome.error == "timeout: the phase timeout of 3s passed"


def test_no_call_starts_after_the_deadline():
    call = Script(GOOD)
    outcome = _summarise(call, deadline=time.monotonic() - 1)
    assert call.requests == [] and outcome.produced_by == "fallback"
    assert outcome.error and outcome.error.startswith("timeout")

"""The redaction rule of a kept document (memory_platform/features/maintenance/redaction.py): an
item
that cites a removed row, names the person or quotes them is replaced as a whole; the other
people's items, counts and short codes stay."""

from __future__ import annotations

import pytest

from memory_platform.features.maintenance.redaction import (
    REDACTED_ITEM,
    REDACTED_TEXT,
    Erased,
    redact,
)

GONE = "0b7f3c1e-0000-4000-8000-000000000001"
KEPT = "0b7f3c1e-0000-4000-8000-000000000002"
ERIN_SAID = "Erin decided that the quokkaberry release ships on the first Monday."


@pytest.fixture
def erased() -> Erased:
    return Erased(ids={GONE}, user_id="erin-q7x2", texts=[ERIN_SAID, "short"])


def test_items_citing_naming_or_quoting_the_person_go_and_the_rest_stays(erased):
    stats = {"accepted": 3, "model": "extractive",
             "graph": {"newClaims": [
                 {"claimId": KEPT, "text": "Bob approved the wombatfig budget for May."},
                 {"claimId": KEPT, "sourceMemoryIds": [KEPT, GONE], "text": "paraphrase"},
                 {"excerpt": "the quokkaberry release ships", "memoryId": KEPT},
                 {"text": f"{ERIN_SAID} And more.", "memoryId": KEPT},
                 {"subject": "user (erin-q7x2)", "predicate": "prefers"}]},
             "byUser": {"erin-q7x2": 2, "bob": 1},
             "reasons": ["too_short", ERIN_SAID]}
    out, count = redact(stats, erased)
    assert out == {"accepted": 3, "model": "extractive",
                   "graph": {"newClaims": [
                       {"claimId": KEPT, "text": "Bob approved the wombatfig budget for May."},
                       REDACTED_ITEM, REDACTED_ITEM, REDACTED_ITEM, REDACTED_ITEM]},
                   "byUser": {"bob": 1}, "reasons": ["too_short", REDACTED_TEXT]}
    assert count == 6
    assert stats["graph"]["newClaims"][1]["sourceMemoryIds"] == [KEPT, GONE]   # not changed


def test_short_strings_are_not_quotes_and_nothing_of_hers_changes_nothing(erased):
    document = [{"code": "short", "phase": "validate"}, "no", {"n": 1}, None]
    assert redact(document, erased) == (document, 0)
    assert redact("a text that only Bob wrote, long enough", erased) == (
        "a text that only Bob wrote, long enough", 0)

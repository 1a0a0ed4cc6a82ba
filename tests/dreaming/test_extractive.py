"""The extractive baseline: deterministic, offline, verbatim, within the contract's caps."""

from __future__ import annotations

import json
import re
import time

import jsonschema
import pytest

from memory_platform.features.dreaming.contract import EXCERPT_MAX_CHARS, SLUG_PATTERN, dream_schema
from memory_platform.features.dreaming.extractive import (
    ExtractiveModel,
    classify,
    cut_at_word,
    skip_reason,
    split_sentences,
)
from memory_platform.shared.llm.base import ModelError
from tests.llm.helpers import make_request, make_settings

INPUTS = [
    {"memoryId": "m-de-1", "sourceType": "summary", "createdAt": "2025-03-01T10:00:00Z",
     "content": "Hallo zusammen! Anna bevorzugt kurze Antworten auf Deutsch. Wir haben "
                "beschlossen, PostgreSQL 16 für alle Mandanten zu verwenden. Kannst du das "
                "bitte prüfen?"},
    {"memoryId": "m-en-1", "sourceType": "flush", "createdAt": "2025-03-01T11:00:00Z",
     "content": "- Deployments must never run on Fridays.\n"
                "- First run the migrations, then restart the API.\n"
                "- Today I am fixing the login bug in the portal.\n"
                "- The staging server has 32 GB RAM."},
    {"memoryId": "m-de-2", "sourceType": "fact", "createdAt": "2025-03-02T09:00:00Z",
     "content": "Die Umsatzsteuervoranmeldung für Mandant Nord ist monatlich fällig. "
                "Rechnungen dürfen nicht per Mail verschickt werden. Zuerst die Belege "
                "scannen, dann im DMS ablegen. Deployments must never run on Fridays."},
    {"memoryId": "m-en-2", "sourceType": "summary", "createdAt": "2025-03-02T12:00:00Z",
     "content": "Thanks a lot for your help with this! ok. We are currently working on the "
                "new dashboard for ACME. Gerade schreibe ich die Release Notes für Version "
                "2.3. Should we move the standup to 10:00? Ben prefers dark mode in all "
                "internal tools."},
]


def run(inputs=INPUTS, settings=None, **request):
    settings = settings or make_settings()
    completion = ExtractiveModel(settings).complete_json(
        make_request(settings, inputs=inputs, **request))
    return completion, settings


def by_text(payload):
    return {a["text"]: a for a in payload["assertions"]}


def test_it_is_deterministic_and_answers_as_extractive():
    first, _ = run()
    second, _ = run([dict(row) for row in INPUTS])
    assert first.text == second.text
    assert json.loads(first.text) == first.data
    assert first.model == first.effective_model == "extractive"
    assert first.finish_reason == "stop" and first.events == 0
    assert ExtractiveModel(make_settings()).name == "extractive"


def test_output_validates_against_the_dream_contract():
    completion, settings = run()
    jsonschema.validate(completion.data, dream_schema(settings))
    assert set(completion.data) == {"schemaVersion", "assertions", "wikiProposals"}


def test_english_and_german_cues_give_types():
    assertions = by_text(run()[0].data)
    expected = {
        "Anna bevorzugt kurze Antworten auf Deutsch.": "preference",
        "Ben prefers dark mode in all internal tools.": "preference",
        "Wir haben beschlossen, PostgreSQL 16 für alle Mandanten zu verwenden.": "decision",
        "Deployments must never run on Fridays.": "constraint",
        "Rechnungen dürfen nicht per Mail verschickt werden.": "constraint",
        "First run the migrations, then restart the API.": "procedure",
        "Zuerst die Belege scannen, dann im DMS ablegen.": "procedure",
        "Die Umsatzsteuervoranmeldung für Mandant Nord ist monatlich fällig.": "fact",
        "The staging server has 32 GB RAM.": "fact",
    }
    assert {text: a["type"] for text, a in assertions.items()} == expected
    for assertion in assertions.values():
        assert 0.7 <= assertion["confidence"] <= 0.85
        assert assertion["relation"] == "derives"
        assert assertion["timeBounded"] is False and assertion["transient"] is False
    assert assertions["Anna bevorzugt kurze Antworten auf Deutsch."]["subject"] == "Anna"
    assert assertions["Deployments must never run on Fridays."]["confidence"] == 0.85


def test_every_excerpt_is_verbatim_in_its_cited_input():
    completion, _ = run()
    contents = {row["memoryId"]: row["content"] for row in INPUTS}
    for assertion in completion.data["assertions"]:
        assert assertion["text"] in contents[assertion["evidence"][0]["memoryId"]]
        for evidence in assertion["evidence"]:
            assert evidence["excerpt"] in contents[evidence["memoryId"]]
    for proposal in completion.data["wikiProposals"]:
        for evidence in proposal["evidence"]:
            assert evidence["excerpt"] in contents[evidence["memoryId"]]


def test_questions_greetings_transient_and_duplicate_sentences_are_skipped():
    completion, _ = run()
    texts = " ".join(by_text(completion.data))
    for absent in ("Kannst du", "Hallo", "Thanks", "Today", "currently", "Gerade",
                   "standup", "ok."):
        assert absent not in texts
    repeated = by_text(completion.data)["Deployments must never run on Fridays."]
    assert [e["memoryId"] for e in repeated["evidence"]] == ["m-en-1", "m-de-2"]
    assert len(completion.data["assertions"]) == len(by_text(completion.data))
    skipped = completion.usage["skipped"]
    assert skipped["question"] == 2 and skipped["transient"] == 3
    assert skipped["greeting"] == 1 and skipped["too_short"] == 1  # "Hallo zusammen!"
    assert skipped["duplicate"] == 1


@pytest.mark.parametrize(("sentence", "reason"), [
    ("Was ist der Stand beim Mandanten Nord?", "question"),
    ("Guten Morgen, Anna bevorzugt heute Tee.", "greeting"),
    ("Heute bevorzugt Anna den Besprechungsraum 3.", "transient"),
    ("Right now we must restart the API every hour.", "transient"),
    ("Ich arbeite momentan an der Steuererklärung.", "transient"),
    ("We always deploy.", "too_short"),
    ("The admin password: hunter2 must never be shared.", "secret_like"),
    ("Always " + "very " * 90 + "long.", "too_long"),
])
def test_skip_reasons(sentence, reason):
    assert skip_reason(sentence) == reason


@pytest.mark.parametrize(("sentence", "kind"), [
    ("Wir nehmen Hetzner als Hosting-Anbieter für Kunden.", "decision"),
    ("The team decided to use Dagster for orchestration.", "decision"),
    ("Belege müssen zehn Jahre aufbewahrt werden.", "constraint"),
    ("Backups are always encrypted with age keys.", "constraint"),
    ("Im Team darf niemand direkt auf main pushen.", None),  # no cue the baseline knows
    ("Lisa möchte Berichte als PDF bekommen.", "preference"),
    ("Jonas mag keine Meetings vor zehn Uhr.", "preference"),
    ("Step 3 of the release is tagging the commit.", "procedure"),
    ("Die Kanzlei hat 14 Mitarbeiter in Hamburg.", "fact"),
    ("The weather was nice and warm.", None),
])
def test_cue_classification(sentence, kind):
    result = classify(sentence)
    assert (result[0] if result else None) == kind


def test_sentences_split_into_exact_substrings():
    text = "- Erste Zeile, z.B. mit Abkürzung. Zweiter Satz!\n* Dritter Satz? 4. Vierter.\n"
    sentences = split_sentences(text)
    assert sentences == ["Erste Zeile, z.B. mit Abkürzung.", "Zweiter Satz!",
                         "Dritter Satz?", "Vierter."]
    assert all(s in text for s in sentences)


def test_long_sentences_are_cited_with_a_verbatim_word_boundary_excerpt():
    sentence = ("The quarterly reconciliation for client Nord must always include "
                + " ".join(f"ledger{i} account" for i in range(18)) + " before the close.")
    assert EXCERPT_MAX_CHARS < len(sentence) <= 400
    completion, settings = run([{"memoryId": "m1", "content": sentence}])
    [assertion] = completion.data["assertions"]
    excerpt = assertion["evidence"][0]["excerpt"]
    assert len(excerpt) <= EXCERPT_MAX_CHARS and sentence.startswith(excerpt)
    assert sentence[len(excerpt)] == " "  # cut at a word boundary
    assert assertion["text"] == sentence
    jsonschema.validate(completion.data, dream_schema(settings))
    assert cut_at_word("alpha beta gamma", 8) == "alpha"
    assert cut_at_word("alpha beta", 10) == "alpha beta"


def many_inputs(count: int) -> list[dict]:
    cues = ["prefers", "must never", "decided to keep", "always uses"]
    return [{"memoryId": f"m{i}",
             "content": f"Team{i} {cues[i % 4]} the Service{i} setup for Client{i}. "
                        f"Team{i} has {i + 10} open tickets in Jira."}
            for i in range(count)]


@pytest.mark.parametrize(("max_assertions", "max_evidence"), [(12, 3), (5, 1)])
def test_caps_are_obeyed(max_assertions, max_evidence):
    settings = make_settings(dream_max_assertions=max_assertions,
                             dream_max_evidence_per_assertion=max_evidence)
    duplicated = many_inputs(40) + [{"memoryId": f"dup{i}", "content": "Team1 must never "
                                     "touch the Service1 setup for Client1."} for i in range(5)]
    completion, _ = run(duplicated, settings)
    payload = completion.data
    assert len(payload["assertions"]) == max_assertions
    assert all(len(a["evidence"]) <= max_evidence for a in payload["assertions"])
    assert len(payload["wikiProposals"]) == 1
    [wiki] = payload["wikiProposals"]
    assert len(wiki["evidence"]) <= max_evidence
    assert wiki["assertionRefs"] == list(range(max_assertions))
    assert completion.usage["skipped"]["over_cap"] > 0
    jsonschema.validate(payload, dream_schema(settings))
    # ranked: the strongest cues first, spread over the inputs
    confidences = [a["confidence"] for a in payload["assertions"]]
    assert confidences == sorted(confidences, reverse=True)
    cited = [a["evidence"][0]["memoryId"] for a in payload["assertions"]]
    assert len(set(cited)) == len(cited)


def test_the_wiki_draft_summarises_the_assertions_with_a_topic_slug():
    completion, settings = run(topic="Mandant Nord / Steuern")
    [wiki] = completion.data["wikiProposals"]
    assert wiki["slug"] == "mandant-nord-steuern"
    assert wiki["title"] == "Notes: Mandant Nord / Steuern"
    assert wiki["bodyMarkdown"].startswith("# Notes: Mandant Nord / Steuern\n\n- ")
    for index in wiki["assertionRefs"]:
        assert f"- {completion.data['assertions'][index]['text']} (assertion {index};" in (
            wiki["bodyMarkdown"])
    assert re.fullmatch(SLUG_PATTERN, wiki["slug"])
    untitled, _ = run([{**row, "topic": "Team Chat Süd"} for row in INPUTS])
    assert untitled.data["wikiProposals"][0]["slug"] == "team-chat-sued"


def test_no_wiki_proposal_below_three_assertions_or_when_disabled():
    few, _ = run(INPUTS[:1])
    assert len(few.data["assertions"]) == 2 and few.data["wikiProposals"] == []
    off, settings = run(settings=make_settings(dream_max_wiki_proposals=0))
    assert off.data["wikiProposals"] == [] and len(off.data["assertions"]) >= 3
    jsonschema.validate(off.data, dream_schema(settings))


def test_nothing_durable_gives_an_empty_but_valid_payload():
    completion, settings = run([{"memoryId": "m1", "content": "Hallo! Wie geht es dir heute?"},
                                {"memoryId": "m2", "content": ""}])
    assert completion.data == {"schemaVersion": 1, "assertions": [], "wikiProposals": []}
    jsonschema.validate(completion.data, dream_schema(settings))


def test_it_needs_structured_inputs():
    settings = make_settings()
    with pytest.raises(ModelError) as caught:
        ExtractiveModel(settings).complete_json(make_request(settings))
    assert caught.value.code == "unavailable"


@pytest.mark.parametrize("unit", ["!", "first ", "a. ", "Zuerst x "])
def test_sentence_splitting_and_cues_stay_linear_on_hostile_text(unit):
    """A stored memory of 16,000 characters of punctuation or cue words costs a Dream
    milliseconds: 4x the text costs far less than 16x the time (quadratic patterns did not)."""
    def cpu(size: int) -> float:
        text = unit * (size // len(unit))
        started = time.process_time()
        for sentence in split_sentences(text):
            classify(sentence)
        return time.process_time() - started

    small, large = min(cpu(4000) for _ in range(3)), min(cpu(16000) for _ in range(3))
    assert large < 1.0
    assert large < 8 * max(small, 0.005)  # a floor: tiny timings are noise


def test_a_procedure_needs_first_and_then_on_one_line():
    assert classify("First build the image, then deploy it.")[0] == "procedure"
    assert (classify("First build the image.\nThen deploy it.") or ("none",))[0] != "procedure"

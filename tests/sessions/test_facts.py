"""Fact extraction from turn items: remember intent, the offline extractor, the strict model
contract and its per-fact validation, trust and privacy. The model answers come from the
scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import json

import pytest

from memory_platform.features.sessions.facts import (
    ASSISTANT_INFERENCE,
    HUMAN_DIRECT,
    SCHEMA_NAME,
    TurnItem,
    extract_facts,
    extract_offline,
    has_remember_intent,
    strip_cues,
    validate_answer,
)
from memory_platform.features.sessions.model import SessionModel
from memory_platform.shared.llm.base import ModelError
from tests.sessions.facts_conversation import (
    ALICE_RUN,
    DECISION,
    GERMAN_DECISION,
    GERMAN_RUN,
    PREFERENCE,
    PRIVATE,
    PRIVATE_RUN,
    REMEMBERED,
    Item,
    answer,
    fact,
    http_model,
    http_settings,
)
from tests.support import openai_server as scripted
from tests.support.environment import clean_environment  # noqa: F401

# The scripted OpenAI-compatible server (its fixtures, used by name).
openai_server_session = scripted.openai_server_session
openai_server = scripted.openai_server

OFFLINE = SessionModel("extractive", None)
BUDGET = 24_000


def turn_items(items: list[Item], run_user: str | None = "alice",
               run_id: str = "run-1") -> list[TurnItem]:
    return [TurnItem(message_id=f"m{index}", run_id=run_id, role=item[0], content=item[1],
                     user_id=item[2] if len(item) > 2 else run_user,  # type: ignore[misc]
                     run_user_id=run_user, seq=index)
            for index, item in enumerate(items)]


def validate(data: object, items: list[TurnItem], max_facts: int = 8):
    return validate_answer(data, items, {i.message_id: i.content for i in items},
                           max_facts=max_facts, model_name="fact-model")


# --- remember intent and cues ----------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "Please remember that the office moved to Hamburg.", "Don't forget: invoices go out on "
    "Mondays.", "Don\u2019t forget the keys", "do not forget the release notes",
    "Note that the API is versioned.", "Keep in mind we ship on Tuesdays.",
    "Merk dir: Herr Krause ist unser Steuerberater.", "Merke dir das bitte.",
    "Vergiss nicht, dass wir freitags deployen.", "Notier dir die Kundennummer 4711.",
    "Notiere: Lieferung am Montag.", "Denk daran, die Rechnung zu prüfen.",
    "Denke daran: Staging ist Hetzner.", "REMEMBER this"])
def test_remember_intent_is_recognised_in_english_and_german(text):
    assert has_remember_intent(text)


@pytest.mark.parametrize("text", [
    "I remembered the meeting.", "We decided to use PostgreSQL.", "Notes are in the wiki.",
    "Das Merkblatt liegt im Ordner.", "Denkmal in Kiel", "", "forgetful remembering"])
def test_ordinary_text_states_no_remember_intent(text):
    assert not has_remember_intent(text)


def test_an_opening_cue_is_cut_and_the_statement_stays_verbatim():
    cases = {
        "Remember that our office moved to Hamburg.": "our office moved to Hamburg.",
        "Merk dir bitte, dass der Server in Kiel steht.": "der Server in Kiel steht.",
        "Bitte merk dir, nur für mich: Der Code ist 12.": "Der Code ist 12.",
        "Privately: I am allergic to nuts.": "I am allergic to nuts.",
        "We ship on Tuesdays.": "We ship on Tuesdays.",
    }
    for sentence, statement in cases.items():
        assert strip_cues(sentence) == statement
        assert sentence.endswith(statement)


# --- the offline extractor -------------------------------------------------------------------


def test_offline_keeps_the_durable_sentences_of_user_turns_only():
    items = turn_items(ALICE_RUN)
    result = extract_facts(OFFLINE, items, max_facts=8, max_input_chars=BUDGET)
    assert [f.text for f in result.facts] == [DECISION, PREFERENCE]
    assert [f.assertion_type for f in result.facts] == ["decision", "preference"]
    assert all(f.trust_class == HUMAN_DIRECT and not f.private for f in result.facts)
    assert all(f.excerpt in f.item.content and f.item.role == "user" for f in result.facts)
    # The question, the greeting and today's task state are left, with their reasons.
    assert result.skipped["question"] == 1 and result.skipped["transient"] == 1
    assert result.model == "extractive"


def test_offline_reads_german_and_keeps_what_a_person_asked_to_remember():
    result = extract_facts(OFFLINE, turn_items(GERMAN_RUN), max_facts=8,
                           max_input_chars=BUDGET)
    texts = {f.text: f for f in result.facts}
    assert set(texts) == {GERMAN_DECISION, REMEMBERED}
    assert texts[GERMAN_DECISION].assertion_type == "decision"
    # "Der Steuerberater heißt Herr Krause." has no durable cue: it is kept because it was
    # said after "Merk dir:", without the cue, and it is what the person said.
    assert texts[REMEMBERED].trust_class == HUMAN_DIRECT
    assert texts[REMEMBERED].excerpt == REMEMBERED


def test_offline_marks_a_statement_after_a_private_cue_private():
    result = extract_facts(OFFLINE, turn_items(PRIVATE_RUN), max_facts=8,
                           max_input_chars=BUDGET)
    assert [(f.text, f.private) for f in result.facts] == [(PRIVATE, True)]


CONFIRMED = "I booked the review for Friday at 14:00."
CONVERSATION = ("user", "assistant")


def test_offline_reads_assistant_turns_only_when_asked_and_only_what_is_settled():
    items = turn_items([
        ("user", "Can you find a slot for the design review?"),
        ("assistant", f"{CONFIRMED} I will send the invitation with a checklist of steps. "
                      "Maybe we should always invite Ben too."),
        ("assistant", "Remember: the room is Elbe. Gebucht: Raum Elbe für Freitag 14 Uhr.")])
    assert extract_facts(OFFLINE, items, max_facts=8, max_input_chars=BUDGET).facts == []
    result = extract_facts(OFFLINE, items, max_facts=8, max_input_chars=BUDGET,
                           roles=CONVERSATION)
    # The confirmed actions, as the assistant's inference; the offer ("I will ...") and the
    # suggestion ("Maybe ...") are not settled, and an assistant's "Remember:" asks nobody.
    assert [(f.text, f.assertion_type, f.trust_class, f.item.role) for f in result.facts] == [
        (CONFIRMED, "fact", ASSISTANT_INFERENCE, "assistant"),
        ("Gebucht: Raum Elbe für Freitag 14 Uhr.", "fact", ASSISTANT_INFERENCE, "assistant")]
    # "the room is Elbe." would be kept after a person's "Remember:"; of the assistant it is
    # only a sentence too short to keep.
    assert result.skipped["tentative"] == 2 and result.skipped["too_short"] == 1
    # The default reads the people's turns only, as the shared facts do.
    assert [f.text for f in extract_offline(items, max_facts=8, max_chars=BUDGET,
                                            model_name="extractive").facts] == []


def test_an_assistants_statement_in_a_run_asked_to_be_private_is_private():
    items = turn_items([("user", f"Only for me: {PRIVATE}"),
                        ("assistant", "I booked your doctor's appointment for Friday at 8.")])
    items += turn_items([("user", "Thanks."),
                         ("assistant", CONFIRMED)], run_id="run-2")
    result = extract_facts(OFFLINE, items, max_facts=8, max_input_chars=BUDGET,
                           roles=CONVERSATION)
    assert [(f.text, f.private) for f in result.facts] == [
        (PRIVATE, True), ("I booked your doctor's appointment for Friday at 8.", True),
        (CONFIRMED, False)]


def test_the_assistant_repeating_the_users_sentence_keeps_the_users_item():
    items = turn_items([("user", DECISION), ("assistant", DECISION)])
    result = extract_facts(OFFLINE, items, max_facts=8, max_input_chars=BUDGET,
                           roles=CONVERSATION)
    assert [(f.text, f.trust_class, f.item.role) for f in result.facts] == [
        (DECISION, HUMAN_DIRECT, "user")]
    assert result.skipped["duplicate"] == 1


def test_nothing_of_a_run_an_agent_wrote_is_the_persons_own_word():
    items = [TurnItem(message_id=f"m{n}", run_id="run-1", role=role, content=text,
                      user_id="alice", run_user_id="alice", seq=n, run_agent_written=True)
             for n, (role, text) in enumerate(ALICE_RUN)]
    assert not any(item.said_by_run_human for item in items)
    result = extract_facts(OFFLINE, items, max_facts=8, max_input_chars=BUDGET)
    assert [(f.text, f.trust_class) for f in result.facts] == [
        (DECISION, ASSISTANT_INFERENCE), (PREFERENCE, ASSISTANT_INFERENCE)]
    shown = {i.message_id: i.content for i in items}
    facts, _ = validate_answer({"facts": [fact(PREFERENCE, kind="preference")]}, items, shown,
                               max_facts=8, model_name="fact-model")
    assert [(f.text, f.trust_class) for f in facts] == [(PREFERENCE, ASSISTANT_INFERENCE)]


def test_a_sentence_of_another_participant_is_not_the_run_humans_word():
    items = turn_items([("user", PREFERENCE, "bob")], run_user="alice")
    result = extract_facts(OFFLINE, items, max_facts=8, max_input_chars=BUDGET)
    assert [(f.text, f.trust_class) for f in result.facts] == [
        (PREFERENCE, ASSISTANT_INFERENCE)]


def test_offline_caps_the_facts_and_keeps_remembered_ones_first():
    items = turn_items([("user", f"{DECISION} {PREFERENCE} Remember: Gate 7 is ours.")])
    result = extract_offline(items, max_facts=1, max_chars=BUDGET, model_name="extractive")
    assert [f.text for f in result.facts] == ["Gate 7 is ours."]
    assert result.skipped["over_cap"] == 2 and result.proposed == 3


def test_offline_never_extracts_a_credential():
    items = turn_items([("user", "Remember: the staging password is Hunter22! "
                                 "We decided to deploy on Tuesdays.")])
    result = extract_facts(OFFLINE, items, max_facts=8, max_input_chars=BUDGET)
    assert [f.text for f in result.facts] == ["We decided to deploy on Tuesdays."]


def test_the_input_budget_keeps_the_newest_items():
    old = [("user", "We decided to use MySQL for the archive service.")]
    new = [("user", DECISION)]
    items = turn_items(old + new)
    result = extract_facts(OFFLINE, items, max_facts=8, max_input_chars=len(DECISION) + 5)
    assert [f.text for f in result.facts] == [DECISION]


# --- validation of a model answer ------------------------------------------------------------


def test_a_fact_that_repeats_the_users_sentence_is_human_direct_a_paraphrase_is_not():
    items = turn_items(ALICE_RUN)
    facts, rejected = validate(json.loads(answer(
        fact(DECISION, kind="decision"),
        fact("Alice likes brief answers in bullet points.", excerpt=PREFERENCE,
             kind="preference"),
        fact("the billing service will move to postgresql 18",
             excerpt="The billing service will move to PostgreSQL 18"))), items)
    assert rejected == []
    trust = {f.text: (f.trust_class, f.item.message_id) for f in facts}
    assert trust[DECISION] == (HUMAN_DIRECT, "m0")
    assert trust["Alice likes brief answers in bullet points."] == (ASSISTANT_INFERENCE, "m2")
    # The assistant's sentence: its source is the assistant's item, and it is no human's word.
    assert trust["the billing service will move to postgresql 18"] == (ASSISTANT_INFERENCE,
                                                                       "m1")


def test_each_bad_fact_is_rejected_with_its_reason_and_the_others_stand():
    items = turn_items(ALICE_RUN + [("user", "The staging password is Hunter22! for now.")])
    facts, rejected = validate({"facts": [
        fact(DECISION, kind="decision"),
        fact("Alice prefers short answers.", excerpt="I prefer short answers in bullets."),
        fact(PREFERENCE, kind="preference", confidence=0.9),
        fact("The staging password is Hunter22!"),
        fact("", excerpt=DECISION),
        fact("x" * 601, excerpt=DECISION),
        fact(DECISION, kind="opinion"),
        fact(DECISION, private="yes"),
        {"text": DECISION, "excerpt": DECISION},
        "We decided.",
        fact("Bananas are yellow fruit.", excerpt=DECISION),
        fact(DECISION, kind="decision"),
    ]}, items, max_facts=20)
    assert [f.text for f in facts] == [DECISION]
    assert [(r.index, r.reason) for r in rejected] == [
        (1, "excerpt_not_found"), (2, "unknown_field"), (3, "credential"), (4, "empty_text"),
        (5, "text_too_long"), (6, "invalid_assertion_type"), (7, "invalid_private"),
        (8, "missing_field"), (9, "not_an_object"), (10, "ungrounded"), (11, "duplicate")]


def test_facts_over_the_cap_are_rejected():
    items = turn_items(ALICE_RUN)
    facts, rejected = validate(json.loads(answer(fact(DECISION), fact(PREFERENCE))), items,
                               max_facts=1)
    assert [f.text for f in facts] == [DECISION]
    assert [(r.index, r.reason) for r in rejected] == [(1, "over_cap")]


@pytest.mark.parametrize("data", [
    [], {"facts": {}}, {"facts": [], "schemaVersion": 1}, {"items": []}, "facts"])
def test_an_answer_that_is_not_the_contract_is_a_model_error(data):
    with pytest.raises(ModelError) as caught:
        validate(data, turn_items(ALICE_RUN))
    assert caught.value.code == "malformed_output"


def test_a_fact_marked_private_or_said_after_a_private_cue_is_private():
    items = turn_items(PRIVATE_RUN + [("user", f"{DECISION} Keep that only for me.")])
    facts, _ = validate(json.loads(answer(
        fact(PRIVATE), fact(DECISION, kind="decision"),
        fact("The assistant keeps it to itself.", excerpt="I will keep that to myself",
             private=True))), items)
    assert [(f.text, f.private) for f in facts] == [
        (PRIVATE, True), (DECISION, True), ("The assistant keeps it to itself.", True)]


# --- through HTTP ----------------------------------------------------------------------------


def test_the_model_gets_the_strict_contract_and_the_conversation(openai_server, tmp_path):
    settings = http_settings("postgresql://unused/db", openai_server.base_url)
    openai_server.script_chat(content=answer(fact(DECISION, kind="decision")))
    result = extract_facts(http_model(settings), turn_items(ALICE_RUN), max_facts=3,
                           max_input_chars=BUDGET)
    assert [(f.text, f.trust_class) for f in result.facts] == [(DECISION, HUMAN_DIRECT)]
    assert result.proposed == 1 and result.model == "fact-model"
    body = openai_server.requests("chat/completions")[-1].json
    schema = body["response_format"]["json_schema"]
    assert schema["name"] == SCHEMA_NAME and schema["strict"] is True
    fact_schema = schema["schema"]["properties"]["facts"]
    assert fact_schema["maxItems"] == 3
    assert fact_schema["items"]["additionalProperties"] is False
    user = body["messages"][1]["content"]
    assert "ITEM 1 · user" in user and DECISION in user and "ITEM 2 · assistant" in user


def test_malformed_model_output_raises_for_the_caller(openai_server):
    settings = http_settings("postgresql://unused/db", openai_server.base_url)
    openai_server.script_chat(content="Here are the facts: none.")
    with pytest.raises(ModelError) as caught:
        extract_facts(http_model(settings), turn_items(ALICE_RUN), max_facts=3,
                      max_input_chars=BUDGET)
    assert caught.value.code == "malformed_output"


def test_without_conversation_items_the_model_is_not_called(openai_server):
    settings = http_settings("postgresql://unused/db", openai_server.base_url)
    items = turn_items([("tool", '{"rows": 3}'), ("system", "You are helpful.")])
    result = extract_facts(http_model(settings), items, max_facts=3, max_input_chars=BUDGET)
    assert result.facts == [] and openai_server.requests("chat/completions") == []

"""Retrieval feedback: the ranking multiplier, the cited sensor, and the event recorders."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memory_platform.errors import InvalidInput
from memory_platform.retrieval.feedback import (
    FeedbackTargetNotFound,
    feedback_multiplier,
    informative_tokens,
    is_cited,
    multiplier_sql,
    record_corrections,
    record_explicit,
    record_injection,
    record_response,
)
from memory_platform.settings import Settings

INSTANCE = "acme"
OTHER_INSTANCE = "globex"
TEXT = "The quarterly VAT filing for Mandant Nord is due on the tenth of each month."
CITING_RESPONSE = "Reminder: Nord's quarterly VAT filing is due on the 10th, as every month."
UNRELATED_RESPONSE = "The office kitchen gets a new coffee machine on Monday."


@pytest.fixture
def defaults() -> Settings:
    """The shipped defaults, for tests that need no database."""
    return Settings(_env_file=None)  # type: ignore[call-arg]


def _assertion(conn: Any, text: str = TEXT, instance: str = INSTANCE) -> uuid.UUID:
    """A minimal active assertion row."""
    return conn.execute(
        """
        INSERT INTO agent_memory_assertions
               (instance_key, audience_kind, audience_key, identity_hash, assertion_type,
                assertion_text, status, origin)
        VALUES (%s, 'workspace', %s, %s, 'fact', %s, 'active', 'explicit')
        RETURNING id
        """,
        (instance, instance, uuid.uuid4().hex, text),
    ).fetchone()[0]


def _memory(conn: Any, instance: str = INSTANCE) -> uuid.UUID:
    """A minimal workspace memory row."""
    return conn.execute(
        """
        INSERT INTO agent_memories
               (instance_key, memory_scope, visibility_scope, audience_key, source_type,
                content, content_hash)
        VALUES (%s, 'workspace', 'workspace', %s, 'manual', 'Some memory.', %s)
        RETURNING id
        """,
        (instance, instance, uuid.uuid4().hex),
    ).fetchone()[0]


def _counts(conn: Any, assertion_id: uuid.UUID) -> tuple[int, int, int]:
    return conn.execute(
        """
        SELECT injected_count, cited_count, corrected_count
          FROM agent_memory_assertions
         WHERE id = %s
        """,
        (assertion_id,),
    ).fetchone()


def _events(conn: Any, event_type: str, assertion_id: uuid.UUID | None = None) -> list[dict]:
    rows = conn.execute(
        """
        SELECT assertion_id, memory_id, run_id, user_id, session_key, details
          FROM agent_memory_retrieval_feedback
         WHERE event_type = %s
           AND (%s::uuid IS NULL OR assertion_id = %s)
         ORDER BY id
        """,
        (event_type, assertion_id, assertion_id),
    ).fetchall()
    keys = ("assertion_id", "memory_id", "run_id", "user_id", "session_key", "details")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def _injected_hours_ago(conn: Any, assertion_id: uuid.UUID, hours: int) -> None:
    conn.execute(
        """
        UPDATE agent_memory_assertions
           SET injected_count = injected_count + 1,
               last_injected_at = now() - make_interval(hours => %s)
         WHERE id = %s
        """,
        (hours, assertion_id),
    )


# --- the multiplier ----------------------------------------------------------------------


def test_an_assertion_without_feedback_keeps_its_score(defaults):
    assert feedback_multiplier(0, 0, 0, defaults) == pytest.approx(1.0)


def test_citing_every_injection_earns_the_full_boost(defaults):
    assert feedback_multiplier(3, 3, 0, defaults) == pytest.approx(1.3)


def test_the_boost_follows_the_citation_rate_not_the_citation_count(defaults):
    assert feedback_multiplier(10, 1, 0, defaults) == pytest.approx(1.03)


def test_the_rate_floor_keeps_one_early_citation_from_earning_the_full_boost(defaults):
    assert feedback_multiplier(1, 1, 0, defaults) == pytest.approx(1.1)


def test_one_correction_applies_the_penalty_once(defaults):
    assert feedback_multiplier(0, 0, 1, defaults) == pytest.approx(0.7)


def test_many_corrections_bottom_out_at_the_minimum_multiplier(defaults):
    # 0.7 ** min(5, 3) = 0.343, clamped up to 0.4
    assert feedback_multiplier(0, 0, 5, defaults) == pytest.approx(0.4)


def test_a_correction_damps_a_cited_assertion(defaults):
    assert feedback_multiplier(3, 3, 1, defaults) == pytest.approx(1.3 * 0.7)


def test_the_multiplier_never_exceeds_the_maximum_boost(defaults):
    assert feedback_multiplier(3, 7, 0, defaults) == pytest.approx(1.3)


def test_the_multiplier_reads_its_parameters_from_settings(defaults):
    custom = defaults.model_copy(update={
        "feedback_boost_max": 2.0, "feedback_rate_floor": 1,
        "feedback_correction_penalty": 0.5, "feedback_min_multiplier": 0.1})
    assert feedback_multiplier(2, 1, 0, custom) == pytest.approx(1.5)
    assert feedback_multiplier(0, 0, 2, custom) == pytest.approx(0.25)


def test_disabled_feedback_ranking_is_neutral(conn, defaults):
    disabled = defaults.model_copy(update={"feedback_ranking_enabled": False})
    assert feedback_multiplier(3, 3, 0, disabled) == 1.0
    expression = multiplier_sql("a", disabled)
    assert conn.execute(
        b"SELECT " + expression.as_bytes(conn)
        + b" FROM (SELECT 3 AS injected_count, 3 AS cited_count, 0 AS corrected_count) AS a"
    ).fetchone()[0] == 1.0


@pytest.mark.parametrize("overrides", [
    {},
    {"feedback_boost_max": 1.75, "feedback_correction_penalty": 0.55,
     "feedback_min_multiplier": 0.2, "feedback_rate_floor": 5},
], ids=["defaults", "custom"])
def test_the_sql_multiplier_agrees_with_python_on_a_grid(conn, defaults, overrides):
    settings = defaults.model_copy(update=overrides)
    grid = [(injected, cited, corrected)
            for injected in (0, 1, 2, 3, 4, 7, 10, 50)
            for cited in sorted({0, 1, injected // 2, injected, injected + 2})
            for corrected in range(6)]
    query = b"".join([
        b"SELECT g.injected_count, g.cited_count, g.corrected_count, ",
        multiplier_sql("g", settings).as_bytes(conn),
        b" FROM unnest(%s::int[], %s::int[], %s::int[])"
        b" AS g(injected_count, cited_count, corrected_count)",
    ])
    columns = [list(column) for column in zip(*grid, strict=True)]
    rows = conn.execute(query, columns).fetchall()
    assert len(rows) == len(grid)
    for injected, cited, corrected, in_sql in rows:
        expected = feedback_multiplier(injected, cited, corrected, settings)
        assert in_sql == pytest.approx(expected, abs=1e-12), (injected, cited, corrected)


def test_the_sql_multiplier_reads_the_counters_of_the_assertion_row(conn, settings):
    assertion = _assertion(conn)
    for run in ("run-1", "run-2"):
        record_injection(conn, INSTANCE, [assertion], run_id=run)
    record_response(conn, INSTANCE, run_id="run-1", response_text=CITING_RESPONSE,
                    settings=settings)
    query = b"".join([
        b"SELECT ", multiplier_sql("assertion", settings).as_bytes(conn),
        b" FROM agent_memory_assertions AS assertion WHERE assertion.id = %s",
    ])
    in_sql = conn.execute(query, (assertion,)).fetchone()[0]
    assert in_sql == pytest.approx(feedback_multiplier(2, 1, 0, settings)) == pytest.approx(1.1)


# --- text normalisation ------------------------------------------------------------------


def test_informative_tokens_strip_markdown_and_keep_link_and_code_text():
    text = ("## Deployment\n\n- Run **`helm upgrade`** via the [release runbook]"
            "(https://wiki.example.com/runbook)\n```bash\nkubectl rollout\n```")
    assert informative_tokens(text) == [
        "deployment", "run", "helm", "upgrade", "release", "runbook", "kubectl", "rollout"]


def test_informative_tokens_drop_german_and_english_stopwords():
    assert informative_tokens("Die Rechnung wird von uns immer erst geschickt") == [
        "rechnung", "erst", "geschickt"]
    assert informative_tokens("It would have been sent to them by the accountant") == [
        "sent", "accountant"]


def test_informative_tokens_fold_umlauts_and_case():
    assert informative_tokens("Grüße an Frau MÜLLER aus der Straße") == [
        "gruesse", "frau", "mueller", "strasse"]


def test_informative_tokens_drop_very_short_tokens_but_keep_numbers():
    assert informative_tokens("Go to DB 7 at 19 o'clock") == ["19", "oclock"]


# --- the cited sensor --------------------------------------------------------------------


def test_an_english_response_restating_the_assertion_cites_it(defaults):
    assert is_cited(TEXT, CITING_RESPONSE, defaults)


def test_an_unrelated_english_response_does_not_cite(defaults):
    assert not is_cited(TEXT, UNRELATED_RESPONSE, defaults)


def test_a_german_response_cites_across_inflection_and_umlaut_spelling(defaults):
    assertion = "Die Umsatzsteuervoranmeldung für Mandant Müller wird monatlich eingereicht."
    response = "Für den Mandanten Mueller reichen wir die Umsatzsteuervoranmeldung monatlich ein."
    assert is_cited(assertion, response, defaults)


def test_an_unrelated_german_response_does_not_cite(defaults):
    assertion = "Die Umsatzsteuervoranmeldung für Mandant Müller wird monatlich eingereicht."
    response = "Das Teammeeting am Montag wurde auf Dienstag verschoben, bitte Kalender prüfen."
    assert not is_cited(assertion, response, defaults)


def test_a_markdown_heavy_response_cites_through_its_markup(defaults):
    response = (
        "### Reminder\n\n"
        "> **Mandant _Nord_**: the [quarterly](https://wiki/vat) `VAT` *filing*\n"
        "1. is ~~late~~ **due** on the 10th\n"
        "```\nfiling: monthly\n```"
    )
    assert is_cited(TEXT, response, defaults)


def test_overlap_made_only_of_stopwords_is_no_citation(defaults):
    assertion = "Alice will always be there for the standup after lunch."
    response = "They will always be there for us after that, as it should be."
    assert not is_cited(assertion, response, defaults)


def test_fewer_than_three_shared_informative_tokens_are_no_citation(defaults):
    # both informative tokens of the assertion occur: containment 1.0, overlap only 2
    assert not is_cited("Deadline: Friday.", "The deadline is Friday, right?", defaults)


def test_a_few_shared_tokens_of_a_long_assertion_are_no_citation(defaults):
    assertion = ("Mandant Nord files quarterly VAT returns through Datev, reviewed by Petra "
                 "before the accountant signs them.")
    response = "Mandant Nord needs its quarterly numbers."
    assert not is_cited(assertion, response, defaults)


def test_the_containment_threshold_comes_from_settings(defaults):
    assertion = ("Mandant Nord files quarterly VAT returns through Datev, reviewed by Petra "
                 "before the accountant signs them.")
    response = "Mandant Nord needs its quarterly numbers."
    # 3 of 11 informative assertion tokens occur: 0.27 is below 0.5 but above 0.25
    lenient = defaults.model_copy(update={"cited_containment_threshold": 0.25})
    assert is_cited(assertion, response, lenient)


# --- recording injections ----------------------------------------------------------------


def test_injection_counts_each_assertion_and_stamps_the_time(conn):
    first, second = _assertion(conn), _assertion(conn)
    assert record_injection(conn, INSTANCE, [first, second], run_id="run-1") == 2
    assert _counts(conn, first) == (1, 0, 0) and _counts(conn, second) == (1, 0, 0)
    stamped = conn.execute(
        """
        SELECT count(*)
          FROM agent_memory_assertions
         WHERE last_injected_at > now() - interval '1 minute'
        """
    ).fetchone()[0]
    assert stamped == 2


def test_injection_events_carry_run_user_and_session(conn):
    assertion = _assertion(conn)
    record_injection(conn, INSTANCE, [assertion], run_id="run-1", user_id="alice",
                     session_key="web:1")
    [event] = _events(conn, "injected", assertion)
    assert (event["run_id"], event["user_id"], event["session_key"]) == (
        "run-1", "alice", "web:1")


def test_injection_is_recorded_once_per_run(conn):
    first, second = _assertion(conn), _assertion(conn)
    record_injection(conn, INSTANCE, [first], run_id="run-1")
    assert record_injection(conn, INSTANCE, [first, second, first], run_id="run-1") == 1
    assert _counts(conn, first) == (1, 0, 0) and _counts(conn, second) == (1, 0, 0)
    assert len(_events(conn, "injected", first)) == 1


def test_a_later_run_counts_the_injection_again(conn):
    assertion = _assertion(conn)
    record_injection(conn, INSTANCE, [assertion], run_id="run-1")
    assert record_injection(conn, INSTANCE, [assertion], run_id="run-2") == 1
    assert _counts(conn, assertion) == (2, 0, 0)


def test_injection_ignores_assertions_of_another_instance(conn):
    ours, theirs = _assertion(conn), _assertion(conn, instance=OTHER_INSTANCE)
    assert record_injection(conn, INSTANCE, [ours, theirs, uuid.uuid4()], run_id="run-1") == 1
    assert _counts(conn, theirs) == (0, 0, 0)
    assert _events(conn, "injected", theirs) == []


def test_injection_needs_a_run_id(conn):
    with pytest.raises(InvalidInput, match="run_id"):
        record_injection(conn, INSTANCE, [_assertion(conn)], run_id="")


# --- recording responses -----------------------------------------------------------------


def test_a_response_records_citations_of_the_injected_assertions(conn, settings):
    cited, ignored = _assertion(conn), _assertion(conn, text=UNRELATED_RESPONSE)
    record_injection(conn, INSTANCE, [cited, ignored], run_id="run-1", user_id="alice")
    assert record_response(conn, INSTANCE, run_id="run-1", response_text=CITING_RESPONSE,
                           settings=settings) == [cited]
    assert _counts(conn, cited) == (1, 1, 0) and _counts(conn, ignored) == (1, 0, 0)
    [event] = _events(conn, "cited", cited)
    assert (event["run_id"], event["user_id"]) == ("run-1", "alice")


def test_a_response_only_cites_assertions_injected_in_its_run(conn, settings):
    elsewhere = _assertion(conn)
    record_injection(conn, INSTANCE, [elsewhere], run_id="run-1")
    assert record_response(conn, INSTANCE, run_id="run-2", response_text=CITING_RESPONSE,
                           settings=settings) == []
    assert _counts(conn, elsewhere) == (1, 0, 0)


def test_a_response_is_recorded_once_per_run(conn, settings):
    assertion = _assertion(conn)
    record_injection(conn, INSTANCE, [assertion], run_id="run-1")
    for _ in range(2):
        assert record_response(conn, INSTANCE, run_id="run-1", response_text=CITING_RESPONSE,
                               settings=settings) == [assertion]
    assert _counts(conn, assertion) == (1, 1, 0)
    assert len(_events(conn, "cited", assertion)) == 1


def test_a_response_does_not_see_runs_of_another_instance(conn, settings):
    theirs = _assertion(conn, instance=OTHER_INSTANCE)
    record_injection(conn, OTHER_INSTANCE, [theirs], run_id="run-1")
    assert record_response(conn, INSTANCE, run_id="run-1", response_text=CITING_RESPONSE,
                           settings=settings) == []
    assert _counts(conn, theirs) == (1, 0, 0)


# --- recording corrections ---------------------------------------------------------------


def test_corrections_count_only_recently_injected_assertions(conn, settings):
    recent, stale, never = _assertion(conn), _assertion(conn), _assertion(conn)
    record_injection(conn, INSTANCE, [recent], run_id="run-1")
    _injected_hours_ago(conn, stale, settings.feedback_correction_window_hours + 1)
    assert record_corrections(conn, INSTANCE, [recent, stale, never], reason="superseded",
                              settings=settings) == 1
    assert _counts(conn, recent) == (1, 0, 1)
    assert _counts(conn, stale) == (1, 0, 0) and _counts(conn, never) == (0, 0, 0)


def test_a_correction_event_records_the_ledger_reason(conn, settings):
    assertion = _assertion(conn)
    record_injection(conn, INSTANCE, [assertion], run_id="run-1")
    record_corrections(conn, INSTANCE, [assertion], reason="conflict", settings=settings)
    [event] = _events(conn, "corrected", assertion)
    assert event["details"] == {"reason": "conflict"}


def test_the_correction_window_comes_from_settings(conn, settings):
    assertion = _assertion(conn)
    _injected_hours_ago(conn, assertion, 100)
    wide = settings.model_copy(update={"feedback_correction_window_hours": 120})
    assert record_corrections(conn, INSTANCE, [assertion], reason="superseded",
                              settings=settings) == 0
    assert record_corrections(conn, INSTANCE, [assertion], reason="superseded",
                              settings=wide) == 1


def test_an_explicit_correction_window_overrides_the_setting(conn, settings):
    assertion = _assertion(conn)
    _injected_hours_ago(conn, assertion, 2)
    assert record_corrections(conn, INSTANCE, [assertion], reason="superseded",
                              window_hours=1, settings=settings) == 0


def test_each_ledger_event_is_one_correction(conn, settings):
    assertion = _assertion(conn)
    record_injection(conn, INSTANCE, [assertion], run_id="run-1")
    record_corrections(conn, INSTANCE, [assertion], reason="conflict", settings=settings)
    record_corrections(conn, INSTANCE, [assertion], reason="superseded", settings=settings)
    assert _counts(conn, assertion) == (1, 0, 2)


def test_a_repeated_ledger_event_key_is_recorded_once(conn, settings):
    assertion = _assertion(conn)
    record_injection(conn, INSTANCE, [assertion], run_id="run-1")
    for _ in range(2):
        record_corrections(conn, INSTANCE, [assertion], reason="conflict",
                           event_key="conflict:42", settings=settings)
    assert _counts(conn, assertion) == (1, 0, 1)


def test_corrections_ignore_assertions_of_another_instance(conn, settings):
    theirs = _assertion(conn, instance=OTHER_INSTANCE)
    record_injection(conn, OTHER_INSTANCE, [theirs], run_id="run-1")
    assert record_corrections(conn, INSTANCE, [theirs], reason="conflict",
                              settings=settings) == 0
    assert _counts(conn, theirs) == (1, 0, 0)


# --- explicit feedback -------------------------------------------------------------------


def test_explicit_feedback_is_stored_without_moving_the_ranking_counters(conn):
    assertion = _assertion(conn)
    assert record_explicit(conn, INSTANCE, "helpful", assertion_id=assertion, user_id="alice",
                           details={"note": "spot on"})
    [event] = _events(conn, "helpful", assertion)
    assert (event["user_id"], event["details"]) == ("alice", {"note": "spot on"})
    assert _counts(conn, assertion) == (0, 0, 0)


def test_explicit_feedback_can_name_a_memory(conn):
    memory = _memory(conn)
    assert record_explicit(conn, INSTANCE, "unhelpful", memory_id=memory)
    [event] = _events(conn, "unhelpful")
    assert (event["memory_id"], event["assertion_id"]) == (memory, None)


def test_explicit_feedback_with_a_run_id_is_recorded_once(conn):
    assertion, memory = _assertion(conn), _memory(conn)
    for target in ({"assertion_id": assertion}, {"memory_id": memory}):
        assert record_explicit(conn, INSTANCE, "retrieved", run_id="run-1", **target)
        assert not record_explicit(conn, INSTANCE, "retrieved", run_id="run-1", **target)
    assert len(_events(conn, "retrieved")) == 2


def test_explicit_feedback_on_another_instance_is_not_found(conn):
    theirs, their_memory = _assertion(conn, instance=OTHER_INSTANCE), _memory(conn, OTHER_INSTANCE)
    with pytest.raises(FeedbackTargetNotFound):
        record_explicit(conn, INSTANCE, "helpful", assertion_id=theirs)
    with pytest.raises(FeedbackTargetNotFound):
        record_explicit(conn, INSTANCE, "helpful", memory_id=their_memory)
    assert _events(conn, "helpful") == []


def test_explicit_feedback_cannot_forge_sensor_events(conn):
    with pytest.raises(InvalidInput, match="event_type"):
        record_explicit(conn, INSTANCE, "cited", assertion_id=_assertion(conn))  # type: ignore[arg-type]

"""The cited sensor's text rule: informative tokens, and whether a response cites an
assertion."""

from __future__ import annotations

import time

import pytest

from memory_platform.features.retrieval.feedback.citation import (
    citation_keys,
    cites,
    informative_tokens,
)
from memory_platform.foundation.settings import Settings

TEXT = "The quarterly VAT filing for Mandant Nord is due on the tenth of each month."
CITING_RESPONSE = "Reminder: Nord's quarterly VAT filing is due on the 10th, as every month."
UNRELATED_RESPONSE = "The office kitchen gets a new coffee machine on Monday."


@pytest.fixture
def defaults() -> Settings:
    """The shipped defaults."""
    return Settings(_env_file=None)  # type: ignore[call-arg]


def _is_cited(assertion_text: str, response_text: str, settings: Settings) -> bool:
    """The sensor's decision for one assertion, as record_response takes it."""
    return cites(citation_keys(assertion_text), citation_keys(response_text), settings)


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
    assert _is_cited(TEXT, CITING_RESPONSE, defaults)


def test_an_unrelated_english_response_does_not_cite(defaults):
    assert not _is_cited(TEXT, UNRELATED_RESPONSE, defaults)


def test_a_german_response_cites_across_inflection_and_umlaut_spelling(defaults):
    assertion = "Die Umsatzsteuervoranmeldung für Mandant Müller wird monatlich eingereicht."
    response = "Für den Mandanten Mueller reichen wir die Umsatzsteuervoranmeldung monatlich ein."
    assert _is_cited(assertion, response, defaults)


def test_an_unrelated_german_response_does_not_cite(defaults):
    assertion = "Die Umsatzsteuervoranmeldung für Mandant Müller wird monatlich eingereicht."
    response = "Das Teammeeting am Montag wurde auf Dienstag verschoben, bitte Kalender prüfen."
    assert not _is_cited(assertion, response, defaults)


def test_a_markdown_heavy_response_cites_through_its_markup(defaults):
    response = (
        "### Reminder\n\n"
        "> **Mandant _Nord_**: the [quarterly](https://wiki/vat) `VAT` *filing*\n"
        "1. is ~~late~~ **due** on the 10th\n"
        "```\nfiling: monthly\n```"
    )
    assert _is_cited(TEXT, response, defaults)


def test_overlap_made_only_of_stopwords_is_no_citation(defaults):
    assertion = "Alice will always be there for the standup after lunch."
    response = "They will always be there for us after that, as it should be."
    assert not _is_cited(assertion, response, defaults)


def test_fewer_than_three_shared_informative_tokens_are_no_citation(defaults):
    # both informative tokens of the assertion occur: containment 1.0, overlap only 2
    assert not _is_cited("Deadline: Friday.", "The deadline is Friday, right?", defaults)


def test_a_few_shared_tokens_of_a_long_assertion_are_no_citation(defaults):
    assertion = ("Mandant Nord files quarterly VAT returns through Datev, reviewed by Petra "
                 "before the accountant signs them.")
    response = "Mandant Nord needs its quarterly numbers."
    assert not _is_cited(assertion, response, defaults)


def test_the_containment_threshold_comes_from_settings(defaults):
    assertion = ("Mandant Nord files quarterly VAT returns through Datev, reviewed by Petra "
                 "before the accountant signs them.")
    response = "Mandant Nord needs its quarterly numbers."
    # 3 of 11 informative assertion tokens occur: 0.27 is below 0.5 but above 0.25
    lenient = defaults.model_copy(update={"cited_containment_threshold": 0.25})
    assert _is_cited(assertion, response, lenient)




# --- F3: linear time on hostile text -----------------------------------------------------

HOSTILE_UNITS = ["[", "![", "[a](", "\n[", "[a][", "](", "<", "\n    ", "1.", "s"]


def _cpu_seconds(text: str) -> float:
    started = time.process_time()
    citation_keys(text)
    return time.process_time() - started


def test_f3_sixty_thousand_brackets_take_well_under_a_second():
    """Review A6: the body that kept a worker busy for 37 s."""
    assert _cpu_seconds("[" * 60_000) < 2.0


@pytest.mark.parametrize("unit", HOSTILE_UNITS)
def test_f3_the_sensor_grows_linearly_with_hostile_input(unit):
    """Four times the text costs about four times the CPU (a quadratic pattern: sixteen)."""
    def text(n: int) -> str:
        return (unit * (n // len(unit) + 1))[:n]

    small = min(_cpu_seconds(text(10_000)) for _ in range(3))
    large = min(_cpu_seconds(text(40_000)) for _ in range(3))
    assert large < 2.0
    assert large / max(small, 5e-3) < 8  # a floor: tiny timings are noise


def test_f3_bounded_link_patterns_still_keep_link_and_image_texts():
    assert informative_tokens("see [the runbook](https://x.example/a) and ![diagram](d.png)"
                              ) == ["runbook", "diagram"]
    assert informative_tokens("[Rechnung][ref]\n[ref]: https://x.example/r") == ["rechnung"]

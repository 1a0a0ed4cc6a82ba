"""The feedback multiplier of an assertion's ranking score."""

from __future__ import annotations

import pytest

from memory_platform.features.retrieval.feedback.ranking import feedback_multiplier
from memory_platform.foundation.settings import Settings


@pytest.fixture
def defaults() -> Settings:
    """The shipped defaults."""
    return Settings(_env_file=None)  # type: ignore[call-arg]


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


def test_disabled_feedback_ranking_is_neutral(defaults):
    disabled = defaults.model_copy(update={"feedback_ranking_enabled": False})
    assert feedback_multiplier(3, 3, 0, disabled) == 1.0

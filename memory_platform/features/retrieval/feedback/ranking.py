"""The feedback multiplier of an assertion's ranking score.

It rewards the citation *rate*, not a count, so an assertion injected everywhere but rarely
used does not get richer by being injected; corrections damp it geometrically. It reorders
results that already passed the score gates: apply it after filtering.
"""

from __future__ import annotations

from memory_platform.foundation.settings import Settings

# The formula caps the correction exponent at three corrections (part of the formula, not a
# tunable): beyond that the multiplier sits at the floor anyway with default settings.
CORRECTION_EXPONENT_CAP = 3


def feedback_multiplier(injected: int, cited: int, corrected: int, settings: Settings) -> float:
    """The ranking multiplier of one assertion from its denormalised counters (the search
    statements pass ``cited`` as citations plus explicit ``helpful`` feedback and
    ``corrected`` as corrections plus ``unhelpful`` feedback: a person's word counts like
    the sensor's).

    ``clamp((1 + (boostMax - 1) * cited / max(rateFloor, injected))
    * correctionPenalty ** min(corrected, 3), minMultiplier, boostMax)``; 1.0 when feedback
    ranking is disabled."""
    if not settings.feedback_ranking_enabled:
        return 1.0
    boost_max = settings.feedback_boost_max
    rate = cited / max(settings.feedback_rate_floor, injected)
    damping = settings.feedback_correction_penalty ** min(corrected, CORRECTION_EXPONENT_CAP)
    raw = (1 + (boost_max - 1) * rate) * damping
    return min(max(raw, settings.feedback_min_multiplier), boost_max)

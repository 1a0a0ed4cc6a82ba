"""What a feature declares for the Dagster code location.

A feature's Dagster definitions live in ``assets/<feature>.py`` (``DEFINITIONS``: a
:class:`FeatureDefinitions` of its assets, checks and jobs) and its automations in
``sensors/<feature>.py`` (``automations(settings)``: its sensors and schedules, built from the
settings when Dagster loads the code location). A module that only declares chain steps
(``STEPS``: graph) has no DEFINITIONS: the Dream feature's chain makes their assets and
checks (``assets/dreaming.py``). ``definitions.build_definitions`` collects
both over ``memory_platform.foundation.features.FEATURES``; a new feature is its modules and its
name
there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FeatureDefinitions:
    """What one feature adds to the code location (assets, asset checks, jobs)."""

    assets: Sequence[Any] = ()
    asset_checks: Sequence[Any] = ()
    jobs: Sequence[Any] = ()


@dataclass(frozen=True)
class FeatureAutomations:
    """What one feature starts on its own (sensors, schedules)."""

    sensors: Sequence[Any] = ()
    schedules: Sequence[Any] = ()

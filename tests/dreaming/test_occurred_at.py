"""Dream inputs carry the event time of their rows (``occurred_at``): the selection keeps it,
the model sees it (``occurredAt`` in the structured inputs, ``OCCURRED_AT`` in the prompt,
apart from the write date), rows without one are unchanged, and the extractive Dream still
runs over them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory_platform.features.dreaming import prompt
from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.inputs import select_inputs
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.shared.access import AccessContext
from tests.dreaming.support import HUMAN_FACT, TEAM_SESSIONS, ScriptedModel, payload, remember

EVENT = datetime(2024, 11, 4, 14, 0, tzinfo=UTC)


def team(instance):
    return Partition(instance, "team", instance)


def seed(db, settings, instance):
    """The team sessions, the first summary of each session dated (a day apart), and a human
    fact without an event time. Answers content -> event time (None: not given)."""
    times = {}
    for day, (session, texts) in enumerate(TEAM_SESSIONS.items()):
        ctx = AccessContext(instance, user_id="ada", session_key=session)
        for position, text in enumerate(texts):
            when = EVENT + timedelta(days=day) if position == 0 else None
            remember(db, settings, ctx, text, visibility="team", occurred_at=when)
            times[text] = when
    remember(db, settings, AccessContext(instance, user_id="bob"), HUMAN_FACT,
             source_type="fact", visibility="team")
    times[HUMAN_FACT] = None
    return times


def test_selected_inputs_keep_the_event_time_and_the_model_sees_it(db, settings, instance):
    times = seed(db, settings, instance)

    inputs = select_inputs(db, settings, team(instance))

    assert {row.content: row.occurred_at for row in inputs.rows} == times
    shapes = {shape["content"]: shape for shape in prompt.model_inputs(settings, inputs)}
    for text, when in times.items():
        if when is None:
            assert "occurredAt" not in shapes[text]
        else:
            assert shapes[text]["occurredAt"] == when.isoformat()
            assert shapes[text]["createdAt"] != shapes[text]["occurredAt"]

    user = prompt.user_prompt(settings, inputs)
    blocks = {block.split("CONTENT:\n", 1)[1].strip(): block
              for block in user.split("MEMORY_ID: ")[1:]}
    for text, when in times.items():
        if when is None:
            assert "OCCURRED_AT" not in blocks[text]
        else:
            assert f"OCCURRED_AT: {when.isoformat()}" in blocks[text]
            assert "DATE: " in blocks[text]  # the write date stays, apart from it
    assert "OCCURRED_AT" in prompt.system_prompt(settings)


def test_a_model_is_called_with_the_event_times(db, settings, instance):
    times = seed(db, settings, instance)
    model = ScriptedModel(payload())

    run_dream_partition(db, settings, team(instance), model=model)

    (request,) = model.requests
    sent = {row["content"]: row.get("occurredAt") for row in request.inputs or []}
    assert sent == {text: when.isoformat() if when else None for text, when in times.items()}
    assert f"OCCURRED_AT: {EVENT.isoformat()}" in request.user


def test_the_extractive_dream_runs_over_dated_inputs(db, settings, instance):
    seed(db, settings, instance)

    result = run_dream_partition(db, settings, team(instance), model="extractive")

    assert result.status == "completed", result.diagnostics
    assert result.stats["inputs"]["activity"] == 4
    assert result.stats["activated"] >= 1

"""Consolidation on Dagster, the data engineer's view: after `demo seed` (which plants a
duplicate and a contradiction among the team's facts) one daily run (`dream_batch`, trigger
`scheduled`) materialises `consolidation` for the team partition with its decisions, its
audit check passes, the superseded texts leave `context_search`, and `corrected` feedback is
recorded for what had been injected. With the offline model only the duplicate is found;
with a scripted judge over real HTTP the contradiction is superseded as well."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from dagster import MarkdownMetadataValue

from memory_platform.assets.dreaming import batch_run_config
from memory_platform.definitions import build_definitions
from memory_platform.features.context import context_search
from memory_platform.features.demo import seed_demo
from memory_platform.features.retrieval.feedback.events import record_visible_injection
from memory_platform.foundation.settings import get_settings
from memory_platform.shared.access import AccessContext
from tests.dagster.conftest import new_instance_key
from tests.support.openai_server import ScriptedOpenAIServer, answer_chat

SUNDAY = "The staging database is restored from the nightly backup every Sunday at 23:00."
SATURDAY = "The staging database is restored from the nightly backup every Saturday at 23:00."
REVIEWS_BEN = "Code reviews must be finished within one working day."
REVIEWS_CHIARA = "Code reviews must be finished within one working day"


def assertion_ids(db, instance: str) -> dict[str, uuid.UUID]:
    return {text: ident for ident, text in db.execute(
        "SELECT id, assertion_text FROM agent_memory_assertions WHERE instance_key = %s"
        " AND assertion_text = ANY(%s)", (instance, [SUNDAY, SATURDAY, REVIEWS_BEN,
                                                      REVIEWS_CHIARA])).fetchall()}


def status(db, assertion_id) -> str:
    return db.execute("SELECT status FROM agent_memory_assertions WHERE id = %s",
                      (assertion_id,)).fetchone()[0]


def corrected(db, assertion_id) -> int:
    return db.execute("SELECT count(*) FROM agent_memory_retrieval_feedback"
                      " WHERE assertion_id = %s AND event_type = 'corrected'",
                      (assertion_id,)).fetchone()[0]


def seeded(db, settings) -> tuple[str, dict[str, uuid.UUID]]:
    """The demo workspace in a fresh instance; the planted facts injected into a run (so a
    correction of them counts)."""
    instance = new_instance_key()
    seed_demo(db, settings, instance_key=instance)
    ids = assertion_ids(db, instance)
    assert len(ids) == 4, ids
    record_visible_injection(db, AccessContext(instance, user_id="anna"), list(ids.values()),
                             run_id=f"run-{uuid.uuid4().hex[:8]}")
    return instance, ids


def daily_run(instance_key: str, resources, dagster_instance):
    job = build_definitions(resources).resolve_job_def("dream_batch")
    partition = f"{instance_key}/team/{instance_key}"
    result = job.execute_in_process(
        run_config=batch_run_config([partition], trigger="scheduled",
                                    dream_date="2026-12-01"),
        instance=dagster_instance, raise_on_error=False)
    events = [e for e in result.get_asset_materialization_events()
              if e.asset_key.to_user_string() == "consolidation"]
    checks = [e.event_specific_data for e in result.all_events
              if e.event_type_value == "ASSET_CHECK_EVALUATION"
              and e.event_specific_data.check_name == "consolidation_mutations_audited"]
    return result, events, checks


def recalled(db, settings, instance: str, query: str) -> list[str]:
    items = context_search(db, settings, AccessContext(instance, user_id="anna"), query,
                           limit=20)
    return [item.content for item in items]


def test_a_daily_run_folds_the_planted_duplicate_offline(db, settings, resources, instance):
    key, ids = seeded(db, settings)

    result, events, checks = daily_run(key, resources, instance)

    assert result.success
    (event,) = events
    meta = event.materialization.metadata
    assert meta["duplicates"].value == 1 and meta["superseded"].value == 0
    assert meta["audit_rows"].value >= 1
    assert isinstance(meta["decisions"], MarkdownMetadataValue)
    assert "duplicate" in meta["decisions"].value and "working day" not in meta["decisions"].value
    assert str(ids[REVIEWS_BEN]) in meta["decisions"].value
    assert checks and all(c.passed for c in checks)
    # The newer statement survives at equal trust; the older one is folded into it.
    assert status(db, ids[REVIEWS_BEN]) == "superseded"
    assert status(db, ids[REVIEWS_CHIARA]) == "active"
    assert corrected(db, ids[REVIEWS_BEN]) == 1
    texts = recalled(db, settings, key, "code reviews finished working day")
    assert REVIEWS_BEN not in texts and REVIEWS_CHIARA in texts
    # Offline the judge never calls a contradiction: both staging statements stand.
    assert status(db, ids[SUNDAY]) == status(db, ids[SATURDAY]) == "active"
    stats = db.execute("SELECT stats_json -> 'consolidation' FROM agent_memory_dreams"
                       " WHERE instance_key = %s AND audience_kind = 'team'",
                       (key,)).fetchone()[0]
    assert stats["duplicates"] == 1 and "sweep" in stats


@pytest.fixture
def judge():
    """A scripted provider on loopback that extracts no graph and judges pairs: the two
    staging statements contradict each other (the newer one survives), identical-looking
    statements are duplicates, anything else unrelated."""
    server = ScriptedOpenAIServer().start()

    def respond(request):
        body = request.json
        name = body.get("response_format", {}).get("json_schema", {}).get("name")
        if name != "assertion_pair_judgment":
            return answer_chat(request, json.dumps(
                {"schemaVersion": 1, "entities": [], "claims": [], "edges": []}))
        user = body["messages"][-1]["content"]
        decisions = []
        for block in user.split("\n\n"):
            pair = re.search(r"PAIR_ID: (\S+)", block).group(1)
            sides = re.findall(r"ASSERTION_ID: (\S+)\nCREATED_AT: (\S+)\nTEXT: (.+)", block)
            texts = [json.loads(text) for _, _, text in sides]
            if {SUNDAY, SATURDAY} == set(texts):
                newer = max(sides, key=lambda s: s[1])[0]
                decisions.append({"pairId": pair, "relation": "contradiction",
                                  "survivor": newer, "reason": "Saturday replaced Sunday"})
            elif texts[0].rstrip(".") == texts[1].rstrip("."):
                decisions.append({"pairId": pair, "relation": "duplicate", "survivor": None,
                                  "reason": "the same rule"})
            else:
                decisions.append({"pairId": pair, "relation": "unrelated", "survivor": None,
                                  "reason": "different topics"})
        return answer_chat(request, json.dumps({"schemaVersion": 1, "decisions": decisions}))

    server.add_route("chat/completions", respond)
    try:
        yield server
    finally:
        server.stop()


def test_a_daily_run_with_a_judge_supersedes_the_planted_contradiction(
        db, settings, resources, instance, judge, monkeypatch):
    monkeypatch.setenv("MEMORY_GRAPH_MODEL", "judge-model")
    monkeypatch.setenv("MEMORY_MAINTENANCE_BASE_URL", judge.base_url)
    get_settings.cache_clear()
    key, ids = seeded(db, settings)

    result, (event,), checks = daily_run(key, resources, instance)

    assert result.success
    meta = event.materialization.metadata
    assert meta["superseded"].value == 1 and meta["duplicates"].value == 1
    assert "contradiction" in meta["decisions"].value
    assert "Saturday" not in meta["decisions"].value and str(ids[SUNDAY]) in meta[
        "decisions"].value
    assert checks and all(c.passed for c in checks)
    assert status(db, ids[SUNDAY]) == "superseded" and status(db, ids[SATURDAY]) == "active"
    superseded_by, = db.execute("SELECT superseded_by FROM agent_memory_assertions"
                                " WHERE id = %s", (ids[SUNDAY],)).fetchone()
    assert superseded_by == ids[SATURDAY]
    assert corrected(db, ids[SUNDAY]) == 1
    texts = recalled(db, settings, key, "staging database restored nightly backup")
    assert SUNDAY not in texts and SATURDAY in texts
    audit = db.execute("SELECT operation FROM agent_memory_v2_cleanup_audit"
                       " WHERE instance_key = %s AND target_id = %s",
                       (key, str(ids[SUNDAY]))).fetchall()
    assert ("assertion_supersede",) in audit

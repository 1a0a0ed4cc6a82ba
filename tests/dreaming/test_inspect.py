"""dream_detail, `dream show`, the detail route's response model and `settings`: one Dream in
full for a data engineer (real database, scripted model)."""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from api.routes.dreaming import DreamDetailResponse
from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.inspect import dream_detail
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.rollback import rollback_dream
from memory_platform.foundation.errors import NotFound
from memory_platform.shared.access import AccessContext
from memory_platform.shared.ledger.assertions import record_decision
from memory_platform.shared.llm.selection import read_dreaming_model
from tests.dreaming.support import ScriptedModel, assertion, payload, remember

LINES = ["The customer portal uses Keycloak for single sign-on.",
         "Invoices are archived for ten years in the DMS.",
         "Payroll runs on the 25th of each month."]


def seed(db, settings, instance):
    ctx = AccessContext(instance, user_id="ada", session_key="teamchat:room-1")
    return [remember(db, settings, ctx, text, visibility="team").id for text in LINES]


def dream(db, settings, instance, ids, *, dry_run=False):
    items = [assertion(text, memory_id) for text, memory_id in zip(LINES, ids, strict=True)]
    items.append(assertion("Nobody said this.", ids[0], excerpt="an excerpt nowhere"))
    return run_dream_partition(db, settings, Partition(instance, "team", instance),
                               model=ScriptedModel(payload(*items)), dry_run=dry_run)


def test_detail_of_a_real_run_shows_accepted_rejected_and_the_model(db, settings, instance):
    ids = seed(db, settings, instance)
    result = dream(db, settings, instance, ids)

    detail = dream_detail(db, instance, result.dream_id)

    assert detail["id"] == str(result.dream_id) and not detail["dryRun"]
    assert detail["effectiveModel"] == {"model": "scripted-model", "source": "explicit"}
    assert len(detail["proposals"]["assertions"]) == 3
    assert {a["text"] for a in detail["accepted"]} == set(LINES)
    assert all(a["created"] and a["reasonCode"] for a in detail["accepted"])
    (rejected,) = [r for r in detail["rejected"] if r["stage"] == "validation"]
    assert rejected["kind"] == "assertion" and rejected["reasonCode"]
    assert detail["dryRunProposals"] == []
    assert detail["rollback"]["rolledBack"] is False
    DreamDetailResponse.model_validate(detail)


def test_detail_of_a_dry_run_shows_its_proposals_with_the_policy_preview(
        db, settings, instance):
    ids = seed(db, settings, instance)
    result = dream(db, settings, instance, ids, dry_run=True)

    detail = dream_detail(db, instance, result.dream_id)

    assert detail["dryRun"] and detail["accepted"] == []
    rows = detail["dryRunProposals"]
    assert [r["text"] for r in rows] == LINES
    assert all(r["decision"] and r["reasonCode"] for r in rows)
    assert rows[0]["evidence"] == [LINES[0]]
    assert len(detail["policyPreview"]) == 3
    DreamDetailResponse.model_validate(detail)


def test_detail_shows_the_rollback_and_what_a_person_kept(db, settings, instance):
    ids = seed(db, settings, instance)
    result = dream(db, settings, instance, ids)
    kept = result.assertion_ids[0]
    record_decision(db, instance_key=instance, assertion_id=kept, decision="approve",
                    reviewer_kind="human", reviewer_id="ada", reason_code="confirmed")
    rollback_dream(db, result.dream_id, settings=settings)

    detail = dream_detail(db, instance, result.dream_id)

    assert detail["status"] == "rolled_back"
    assert detail["rollback"]["rolledBack"] and detail["rollback"]["rolledBackAt"]
    assert detail["rollback"]["reverted"] == 2 and detail["rollback"]["keptByPerson"] == 1
    states = {a["assertionId"]: a["status"] for a in detail["accepted"]}
    assert states[str(kept)] == "active"
    assert sorted(s for a, s in states.items() if a != str(kept)) == ["tombstoned"] * 2


def test_another_instances_dream_and_an_unknown_id_are_not_found(db, settings, instance):
    ids = seed(db, settings, instance)
    result = dream(db, settings, instance, ids)
    with pytest.raises(NotFound):
        dream_detail(db, "someone-else", result.dream_id)
    with pytest.raises(NotFound):
        dream_detail(db, instance, uuid.uuid4())


@pytest.fixture
def cli_env(module_database_url, monkeypatch):
    from memory_platform.foundation.settings import get_settings

    monkeypatch.setenv("MEMORY_DATABASE_URL", module_database_url)
    monkeypatch.setenv("MEMORY_EMBEDDING_PROVIDER", "hash")
    monkeypatch.setenv("MEMORY_HASH_EMBEDDING_DIMENSIONS", "64")
    monkeypatch.setenv("MEMORY_MAINTENANCE_DEFAULT_MODEL", "extractive")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_dream_show_prints_the_detail(db, settings, instance, cli_env):
    from memory_platform.cli.dreaming import dream as dream_group

    ids = seed(db, settings, instance)
    result = dream(db, settings, instance, ids, dry_run=True)

    shown = CliRunner().invoke(dream_group, ["show", str(result.dream_id)])
    assert shown.exit_code == 0, shown.output
    assert f"dream {result.dream_id}" in shown.output
    assert "model:   scripted-model (source: explicit)" in shown.output
    assert "dry-run proposals (3):" in shown.output and LINES[1] in shown.output
    assert "would: " in shown.output and "validation: assertion" in shown.output

    as_json = CliRunner().invoke(dream_group, ["show", str(result.dream_id), "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["dryRunProposals"][0]["text"] == LINES[0]

    other = CliRunner().invoke(dream_group, ["show", str(result.dream_id),
                                             "--instance", "someone-else"])
    assert other.exit_code != 0 and "no dream" in other.output
    bad = CliRunner().invoke(dream_group, ["show", "not-a-uuid"])
    assert bad.exit_code != 0 and "not a dream id" in bad.output


def test_settings_set_and_show_the_maintenance_model(db, settings, instance, cli_env):
    from memory_platform.cli.settings_cmd import settings_group

    shown = CliRunner().invoke(settings_group, ["show", "--instance", instance, "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output) == {"instance": instance, "maintenanceModel": None,
                                        "effectiveModel": "extractive", "source": "default"}

    done = CliRunner().invoke(settings_group, ["set", "maintenance-model", "gpt-4.1-mini",
                                               "--instance", instance])
    assert done.exit_code == 0, done.output
    assert read_dreaming_model(db, settings, instance) == "gpt-4.1-mini"
    shown = CliRunner().invoke(settings_group, ["show", "--instance", instance])
    assert "effective model:   gpt-4.1-mini (from app_settings)" in shown.output

    bad = CliRunner().invoke(settings_group, ["set", "maintenance-model", "two words",
                                              "--instance", instance])
    assert bad.exit_code != 0
    assert CliRunner().invoke(settings_group, ["set", "maintenance-model", "auto",
                                               "--instance", instance]).exit_code == 0
    assert read_dreaming_model(db, settings, instance) == ""

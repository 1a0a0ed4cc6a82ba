"""The README's demo walkthrough (step 5) over the HTTP API: a key made in the demo's
instance, as ``demo seed`` and the README say, recalls what a Dream of the team partition
learned; a key of the default instance sees none of it."""

from __future__ import annotations

import json

from starlette.testclient import TestClient

from api.app import create_app
from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.partitions import Partition
from tests.demo.test_demo_cli import invoke

README_QUERY = "PagerDuty paging tool"


def _token(cli_env: dict[str, str], *instance: str) -> str:
    created = invoke(cli_env, "keys", "create", *instance, "--user", "anna",
                     "--scopes", "memory:read", "--json").output
    return json.loads(created)["token"]


def test_a_team_members_key_of_the_demo_instance_recalls_the_dreams_assertions(
        cli_env, db, settings, instance):
    seeded = invoke(cli_env, "demo", "seed", "--instance", instance).output
    assert f"keys create --instance '{instance}' --user anna" in seeded
    dream = run_dream_partition(db, settings, Partition.from_partition_key(
        f"{instance}/team/{instance}"), model="extractive")
    assert dream.status == "completed", dream.diagnostics

    with TestClient(create_app(settings)) as client:
        def search(token: str) -> list[dict]:
            answer = client.get("/api/v1/memory", params={"query": README_QUERY},
                                headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code == 200, answer.text
            return answer.json()["results"]

        in_demo = search(_token(cli_env, "--instance", instance))
        in_default = search(_token(cli_env))

    learned = [r for r in in_demo if r["sourceType"] == "dream"]
    assert learned and all(r["assertionId"] for r in learned), in_demo
    assert any("PagerDuty" in r["content"] for r in learned), in_demo
    assert in_default == []


def test_after_demo_seed_and_one_dream_the_graph_answers_over_the_api(cli_env, db, settings,
                                                                       instance, monkeypatch):
    """The data engineer's walkthrough: demo seed, one Dream of the team partition through
    Dagster (dream_audience_job: the Dream assets, then knowledge_graph), then the graph over
    HTTP: an entity found by knowledge_search, its neighbours, a claim explained."""
    from dagster import DagsterInstance

    from memory_platform.definitions import build_definitions
    from memory_platform.foundation.settings import get_settings
    from memory_platform.orchestration.partitions import AUDIENCES

    invoke(cli_env, "demo", "seed", "--instance", instance)
    partition = f"{instance}/team/{instance}"
    with DagsterInstance.ephemeral() as dagster:
        dagster.add_dynamic_partitions(AUDIENCES, [partition])
        for name, value in cli_env.items():   # the code location's settings, as Dagster's
            monkeypatch.setenv(name, value)
        get_settings.cache_clear()
        try:
            job = build_definitions().resolve_job_def("dream_audience_job")
            result = job.execute_in_process(instance=dagster, partition_key=partition)
        finally:
            get_settings.cache_clear()
        assert result.success
        graph = [e for e in result.get_asset_materialization_events()
                 if e.asset_key.to_user_string() == "knowledge_graph"]
    assert len(graph) == 1 and graph[0].partition == partition
    assert graph[0].materialization.metadata["claims_added"].value > 0

    token = _token(cli_env, "--instance", instance)
    with TestClient(create_app(settings)) as client:
        auth = {"Authorization": f"Bearer {token}"}
        def search(query: str) -> dict:
            found = client.post("/api/v1/knowledge/search", json={"query": query},
                                headers=auth)
            assert found.status_code == 200, found.text
            return found.json()

        paging = search("Which paging tool do we use?")
        assert any("PagerDuty" in c["text"] for c in paging["claims"]), paging
        assert paging["block"].startswith("Structured knowledge graph")
        versioning = search("How is the public API versioned?")
        api = [e for e in versioning["entities"] if e["label"] == "API"]
        assert api, versioning["entities"]
        around = client.get(f"/api/v1/knowledge/entities/{api[0]['id']}/neighbors",
                            headers=auth)
        assert around.status_code == 200, around.text
        labels = {n["label"] for n in around.json()["neighbors"]}
        assert {"URL", "api/v1", "api/v2"} <= labels, around.json()
        claim = paging["claims"][0]["id"]
        explained = client.get(f"/api/v1/knowledge/claims/{claim}/explain", headers=auth)
        assert explained.status_code == 200 and explained.json()["evidence"]

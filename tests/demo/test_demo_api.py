"""The README's demo walkthrough (step 5) over the HTTP API: a key made in the demo's
instance, as ``demo seed`` and the README say, recalls what a Dream of the team partition
learned; a key of the default instance sees none of it."""

from __future__ import annotations

import json

from starlette.testclient import TestClient

from api.app import create_app
from memory_platform.dreaming.engine import run_dream_partition
from memory_platform.dreaming.partitions import Partition
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

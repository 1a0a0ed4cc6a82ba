"""The asset specs of the loaded code location, against a checked-in snapshot: every asset
(key, group, partitions, deps, kinds, pools) and asset check (asset, blocking, partitions),
and the metadata names each materialisation and check evaluation reports in a real run of
``dream_audience_job`` (extractive model, one seeded team partition).

Any drift fails. When the change is intended, regenerate and review the diff:

    MEMORY_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/dagster/test_asset_specs.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memory_platform.definitions import build_definitions
from tests.dagster.conftest import add_partitions, new_instance_key, seed_team

SNAPSHOT = Path(__file__).parent / "snapshots" / "asset_specs.json"
UPDATE = "MEMORY_UPDATE_SNAPSHOTS"
UPDATING = bool(os.environ.get(UPDATE))      # read at import: the fixtures clear MEMORY_*


def _specs(definitions) -> dict[str, Any]:
    graph = definitions.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        assets[key.to_user_string()] = {
            "group": node.group_name,
            "partitions": node.partitions_def.name if node.partitions_def else None,
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "kinds": sorted(node.kinds),
            "pools": sorted(node.pools or ()),
            "checks": sorted(k.name for k in node.check_keys),
            "materialisation_metadata": [],
        }
    checks = {}
    for check_key in sorted(graph.asset_check_keys, key=lambda k: k.to_user_string()):
        spec = graph.get_check_spec(check_key)
        checks[check_key.name] = {
            "asset": check_key.asset_key.to_user_string(),
            "blocking": spec.blocking,
            "partitions": spec.partitions_def.name if spec.partitions_def else None,
            "evaluation_metadata": [],
        }
    return {"assets": assets, "checks": checks}


def _observed(definitions, instance, partition_key: str, snapshot: dict[str, Any]) -> None:
    """Fill in the metadata names of a real run of the Dream asset job."""
    result = definitions.resolve_job_def("dream_audience_job").execute_in_process(
        instance=instance, partition_key=partition_key)
    assert result.success
    for event in result.get_asset_materialization_events():
        asset = snapshot["assets"][event.asset_key.to_user_string()]
        asset["materialisation_metadata"] = sorted(event.materialization.metadata)
    for event in result.all_events:
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            evaluation = event.event_specific_data
            snapshot["checks"][evaluation.check_name]["evaluation_metadata"] = sorted(
                evaluation.metadata)


def test_asset_specs_match_the_snapshot(db, settings, resources, instance):
    definitions = build_definitions(resources)
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)

    current = _specs(definitions)
    _observed(definitions, instance, partition.partition_key, current)

    text = json.dumps(current, indent=2, sort_keys=True) + "\n"
    if UPDATING:
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(text)
    assert SNAPSHOT.exists(), f"no snapshot yet: run with {UPDATE}=1 to write {SNAPSHOT}"
    expected = json.loads(SNAPSHOT.read_text())
    assert current == expected, (
        f"the asset specs drifted from {SNAPSHOT.name}; if intended, regenerate with "
        f"{UPDATE}=1 and review the diff")

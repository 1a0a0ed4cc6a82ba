"""A Dream run killed mid-way (SIGKILL while its model call is in flight): its row stays
``running`` and the ledger has nothing of it; the reconciler marks it failed once its
heartbeat is stale; a re-run of the partition completes. The run is a real separate process
holding the Dream lock on its own connection, as a Dagster run worker does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.runs import reconcile_stale_dreams
from memory_platform.foundation.settings import PROJECT_ROOT
from tests.dreaming.support import counts
from tests.dreaming.test_engine import dream_row, seed_team, team

# The run worker: the test's settings, a model that never answers (it says when it is called).
WORKER = textwrap.dedent("""
    import sys, time
    import psycopg
    from memory_platform.features.dreaming.engine import run_dream_partition
    from memory_platform.features.dreaming.partitions import Partition
    from tests.support.settings import hash_embedding_settings

    class Hanging:
        name = "hanging-model"
        def complete_json(self, request):
            print("inside", flush=True)
            time.sleep(600)

    url, instance = sys.argv[1], sys.argv[2]
    settings = hash_embedding_settings(url, hash_embedding_dimensions=64)
    with psycopg.connect(url, autocommit=True) as conn:
        run_dream_partition(conn, settings, Partition(instance, "team", instance),
                            model=Hanging())
""")


def test_a_killed_dream_leaves_no_ledger_rows_is_reconciled_and_reruns(
        db, settings, instance, module_database_url):
    seed_team(db, settings, instance)
    before = counts(db, instance)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "OPENAI_"))}
    worker = subprocess.Popen([sys.executable, "-c", WORKER, module_database_url, instance],
                              cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = worker.stdout.readline()
        assert line.strip() == "inside", worker.stderr.read()[-2000:]
        (dream_id,) = db.execute(
            "SELECT id FROM agent_memory_dreams WHERE instance_key = %s AND status = 'running'",
            (instance,)).fetchone()
        os.kill(worker.pid, signal.SIGKILL)
    finally:
        worker.kill()
        worker.wait(10)

    assert counts(db, instance) == before                  # nothing of the killed run
    assert db.execute("SELECT count(*) FROM agent_memory_assertions WHERE dream_id = %s",
                      (dream_id,)).fetchone()[0] == 0
    assert dream_row(db, dream_id)["status"] == "running"
    assert reconcile_stale_dreams(db, settings) == 0       # its heartbeat is still fresh
    db.execute("UPDATE agent_memory_dreams SET heartbeat_at = now() - interval '3 hours'"
               " WHERE id = %s", (dream_id,))                # time passes
    assert reconcile_stale_dreams(db, settings) == 1
    assert dream_row(db, dream_id)["status"] == "failed"

    again = run_dream_partition(db, settings, team(instance), model="extractive")
    assert again.status == "completed" and again.dream_id != dream_id
    assert counts(db, instance)["agent_memory_assertions"] > before["agent_memory_assertions"]

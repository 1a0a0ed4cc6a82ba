"""An outbox worker killed mid-job (SIGKILL while the projection handler's transaction is
open): nothing of the job's effects survives, the job stays ``processing`` until its lease
runs out, is then claimed again and done once, with exactly one projection row. (A kill after
the handler's commit changes nothing: the handler marks its job done in the same
transaction as its effects, ``outbox.mark_done``.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from memory_platform.features.projection.outbox import process_outbox
from memory_platform.foundation.settings import PROJECT_ROOT
from tests.projection.test_outbox import dreamed, enqueue, projection

WORKER = textwrap.dedent("""
    import sys, time
    import psycopg
    from pgvector.psycopg import register_vector
    from memory_platform.features.projection import outbox
    from tests.support.settings import hash_embedding_settings

    real = outbox.HANDLERS[outbox.ASSERTION_PROJECTION]

    def crashing(conn, settings, job, embedder):
        with conn.transaction():             # the handler's work, not yet committed...
            real(conn, settings, job, embedder)
            print("inside", flush=True)
            time.sleep(600)                  # ...when the worker dies

    outbox.HANDLERS[outbox.ASSERTION_PROJECTION] = crashing
    url, job = sys.argv[1], int(sys.argv[2])
    settings = hash_embedding_settings(url, hash_embedding_dimensions=64)
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        outbox.process_outbox(conn, settings, limit=1, job_ids=[job])
""")


def _job(db, job):
    return db.execute("SELECT status, attempts FROM agent_memory_ingestion_outbox"
                      " WHERE id = %s", (job,)).fetchone()


def _projections(db, assertion_id) -> int:
    return db.execute("SELECT count(*) FROM agent_memories"
                      " WHERE assertion_id = %s AND source_id IS NULL",
                      (assertion_id,)).fetchone()[0]


def test_a_worker_killed_mid_job_is_retried_without_a_duplicate_projection(
        db, settings, instance, module_database_url):
    _, assertion_id = dreamed(db, settings, instance)
    db.execute("DELETE FROM agent_memories WHERE assertion_id = %s AND source_id IS NULL",
               (assertion_id,))
    job = enqueue(db, instance, "assertion_projection", assertion_id, "crash-me")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "OPENAI_"))}
    worker = subprocess.Popen([sys.executable, "-c", WORKER, module_database_url, str(job)],
                              cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert worker.stdout.readline().strip() == "inside", worker.stderr.read()[-2000:]
        os.kill(worker.pid, signal.SIGKILL)
    finally:
        worker.kill()
        worker.wait(10)

    assert _job(db, job) == ("processing", 1)
    assert _projections(db, assertion_id) == 0             # rolled back with the worker
    assert process_outbox(db, settings, limit=5, job_ids=[job]).claimed == 0   # leased
    db.execute("UPDATE agent_memory_ingestion_outbox SET locked_at = now() - make_interval("
               "secs => %s + 1) WHERE id = %s",
               (settings.outbox_processing_timeout_seconds, job))   # the lease runs out

    again = process_outbox(db, settings, limit=5, job_ids=[job])

    assert (again.claimed, again.done) == (1, 1)
    assert _job(db, job) == ("done", 2)
    assert _projections(db, assertion_id) == 1              # still exactly one
    assert projection(db, assertion_id)[1] == "active"
    assert process_outbox(db, settings, limit=5, job_ids=[job]).claimed == 0

"""What Dagster costs per Dream partition, against the engine alone (extractive model).

Seeds audience partitions of a fresh database through the real write path, then Dreams
fresh partitions in each of these ways and reports wall time per partition and the overhead
(wall time minus the engine's own ``durations.total`` on the dream row):

* ``engine``: ``run_dream_partition`` called directly;
* ``asset_ephemeral``: one run of ``dream_audience_job`` per partition (the Dream and the
  daily chain after it), in-process, with an ephemeral (in-memory) Dagster instance, tagged
  as a backfill's runs are;
* ``asset_postgres``: the same against the platform's PostgreSQL instance storage: what a
  backfill of ``dream_audience_job`` from the UI runs per partition, less the run worker's
  process start (``--daemon`` measures that);
* ``batch_postgres``: one ``dream_batch`` run for all of its partitions (PostgreSQL storage);
* ``cli_subprocess``: ``memory-platform dream run --partition KEY`` as a new process (Python
  start-up, imports, code location, instance, run);
* ``daemon`` (``--daemon``): ``dagster dev`` (webserver + daemon); runs submitted to the
  QueuedRunCoordinator, launched as run-worker processes by the DefaultRunLauncher: one run
  per partition, then one batch run.

    .venv/bin/python bench/dream_overhead.py --partitions 8 [--daemon]

Prints and writes bench/results/dream_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from pgvector.psycopg import register_vector

from bench.common import fresh_database, machine_info, write_result
from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.foundation.settings import PROJECT_ROOT, get_settings
from memory_platform.shared.access import AccessContext

SENTENCES = (
    "We decided to move the payroll run of {c} to DATEV.",
    "{p} prefers weekly status mails about the VAT return.",
    "Invoices of {c} must never leave the EU region.",
    "To close the month for {c}, first reconcile the bank, then export to Lexware.",
    "Wir haben beschlossen, SAP für {c} zu nutzen.",
    "The annual report of {c} is always reviewed by {p} before filing.",
)
COMPANIES = ("Nordlicht GmbH", "Alpen Logistik AG", "Elbtal Software", "Isar Energie")
PEOPLE = ("Anna", "Jonas", "Lea", "Paul")


def seed(conn, settings, count: int, inputs: int) -> list[Partition]:
    partitions = []
    for n in range(count):
        instance = f"bench-{n:03d}"
        for i in range(inputs):
            text = SENTENCES[i % len(SENTENCES)].format(c=COMPANIES[(n + i) % 4],
                                                        p=PEOPLE[i % 4]) + f" (note {i})"
            ctx = AccessContext(instance, user_id=PEOPLE[i % 4],
                                session_key=f"teamchat:room-{i % 4}")
            kind = "fact" if i % 5 == 0 else "summary"
            store_memory(conn, settings, ctx, MemoryWrite(text, source_type=kind,
                                                          visibility="team"))
        partitions.append(Partition(instance, "team", instance))
    return partitions


def engine_seconds(conn, run_id: str | None = None, partition: str | None = None) -> float:
    row = conn.execute(
        "SELECT sum((stats_json->'durations'->>'total')::float) FROM agent_memory_dreams"
        " WHERE (%s::text IS NULL OR dagster_run_id = %s)"
        "   AND (%s::text IS NULL OR partition_key = %s)",
        (run_id, run_id, partition, partition)).fetchone()
    return float(row[0] or 0.0)


def summarise(name: str, walls: list[float], engines: list[float], partitions: int) -> dict:
    overheads = [w - e for w, e in zip(walls, engines, strict=True)]
    result = {"method": name, "runs": len(walls), "partitions": partitions,
              "wall_per_partition_s": round(sum(walls) / partitions, 3),
              "engine_per_partition_s": round(sum(engines) / partitions, 3),
              "overhead_per_partition_s": round(sum(overheads) / partitions, 3),
              "median_wall_per_run_s": round(statistics.median(walls), 3)}
    print(f"{name:>16}: {result['wall_per_partition_s']:7.3f} s/partition wall, "
          f"{result['engine_per_partition_s']:6.3f} engine, "
          f"{result['overhead_per_partition_s']:7.3f} overhead "
          f"({len(walls)} run(s), {partitions} partition(s))")
    return result


def wait_for_run(instance, run_id: str, timeout: float = 300):
    from dagster import DagsterRunStatus

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = instance.get_run_record_by_id(run_id)
        if record and record.dagster_run.status in (DagsterRunStatus.SUCCESS,
                                                   DagsterRunStatus.FAILURE,
                                                   DagsterRunStatus.CANCELED):
            return record
        time.sleep(0.2)
    raise TimeoutError(run_id)


def daemon_measurements(settings, env, conn, singles, batch) -> list[dict]:
    from memory_platform.launch import launch_dream_run
    from memory_platform.orchestration.home import dagster_instance

    out = []
    bin_dir = Path(sys.executable).parent
    workspace = str(PROJECT_ROOT / "workspace.yaml")
    # Keep the partitions sensor from dreaming the seeded partitions on its own.
    subprocess.run([str(bin_dir / "dagster"), "sensor", "stop", "audience_partitions_sensor",
                    "-w", workspace], env=env, check=True, capture_output=True)
    proc = subprocess.Popen([str(bin_dir / "dagster"), "dev", "-w", workspace, "-h",
                             "127.0.0.1", "-p", str(settings.dagster_port)], env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(
                        f"http://127.0.0.1:{settings.dagster_port}/server_info", timeout=1):
                    break
            except OSError:
                time.sleep(0.5)
        instance = dagster_instance(settings)
        walls, engines, launch = [], [], []
        for partition in singles:
            started = time.perf_counter()
            launched = launch_dream_run(settings, [partition.partition_key], mode="queued")
            record = wait_for_run(instance, launched.run_id)
            walls.append(time.perf_counter() - started)
            engines.append(engine_seconds(conn, launched.run_id))
            launch.append(record.start_time - record.create_timestamp.timestamp())
        result = summarise("daemon_per_run", walls, engines, len(singles))
        result["queue_and_launch_s_median"] = round(statistics.median(launch), 3)
        out.append(result)
        started = time.perf_counter()
        launched = launch_dream_run(settings, [p.partition_key for p in batch], mode="queued")
        record = wait_for_run(instance, launched.run_id)
        out.append(summarise("daemon_batch", [time.perf_counter() - started],
                             [engine_seconds(conn, launched.run_id)], len(batch)))
        print(f"{'':>16}  batch run status {record.dagster_run.status.value}")
        instance.dispose()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=8, help="per method")
    parser.add_argument("--inputs", type=int, default=20, help="inputs per partition")
    parser.add_argument("--daemon", action="store_true", help="also measure dagster dev")
    parser.add_argument("--database-url", default=os.environ.get("MEMORY_TEST_DATABASE_URL"))
    args = parser.parse_args()
    n = args.partitions
    methods = 5 + (2 if args.daemon else 0)
    with fresh_database(args.database_url) as url, \
            tempfile.TemporaryDirectory(prefix="memory-overhead-") as tmp:
        env = {**os.environ, "MEMORY_DATABASE_URL": url, "MEMORY_DATA_DIR": tmp,
               "MEMORY_EMBEDDING_PROVIDER": "hash", "MEMORY_MAINTENANCE_DEFAULT_MODEL":
               "extractive", "MEMORY_DAGSTER_DATABASE_NAME": f"dagster_{Path(tmp).name[-8:]}",
               "MEMORY_DAGSTER_PORT": "3917"}
        os.environ.update(env)
        get_settings.cache_clear()
        settings = get_settings()
        env["DAGSTER_HOME"] = str(settings.dagster_home)
        from dagster import DagsterInstance

        from memory_platform.assets.dreaming import batch_run_config
        from memory_platform.definitions import defs
        from memory_platform.orchestration.home import dagster_instance, prepare_dagster_home

        prepare_dagster_home(settings)
        with psycopg.connect(url, autocommit=True) as conn:
            register_vector(conn)
            t0 = time.perf_counter()
            parts = seed(conn, settings, n * methods, args.inputs)
            print(f"seeded {len(parts)} partitions x {args.inputs} inputs in "
                  f"{time.perf_counter() - t0:.1f}s")
            groups = [parts[i * n:(i + 1) * n] for i in range(methods)]
            results = []

            walls, engines = [], []
            for p in groups[0]:
                started = time.perf_counter()
                result = run_dream_partition(conn, settings, p, model="extractive")
                walls.append(time.perf_counter() - started)
                engines.append(result.stats["durations"]["total"])
            results.append(summarise("engine", walls, engines, n))

            job = defs().resolve_job_def("dream_audience_job")
            quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
            for name, group, make in (
                    ("asset_ephemeral", groups[1], DagsterInstance.ephemeral),
                    ("asset_postgres", groups[2], lambda: dagster_instance(settings))):
                instance = make()
                walls, engines = [], []
                for p in group:
                    instance.add_dynamic_partitions("audiences", [p.partition_key])
                    started = time.perf_counter()
                    run = job.execute_in_process(run_config=quiet, instance=instance,
                                                 partition_key=p.partition_key,
                                                 tags={"dagster/backfill": "bench"})
                    walls.append(time.perf_counter() - started)
                    engines.append(engine_seconds(conn, run.run_id))
                results.append(summarise(name, walls, engines, n))
                instance.dispose()

            instance = dagster_instance(settings)
            batch_job = defs().resolve_job_def("dream_batch")
            started = time.perf_counter()
            run = batch_job.execute_in_process(
                run_config={**batch_run_config([p.partition_key for p in groups[3]]),
                            **quiet}, instance=instance)
            results.append(summarise("batch_postgres", [time.perf_counter() - started],
                                     [engine_seconds(conn, run.run_id)], n))
            instance.dispose()

            walls, engines = [], []
            cli = str(Path(sys.executable).parent / "memory-platform")
            for p in groups[4][:max(2, n // 2)]:
                started = time.perf_counter()
                out = subprocess.run([cli, "dream", "run", "--partition", p.partition_key,
                                      "--json"], env=env, check=True, capture_output=True,
                                     text=True)
                walls.append(time.perf_counter() - started)
                run_id = json.loads(out.stdout)["runs"][0]["runId"]
                engines.append(engine_seconds(conn, run_id))
            results.append(summarise("cli_subprocess", walls, engines, len(walls)))

            if args.daemon:
                results += daemon_measurements(settings, env, conn, groups[5][:max(2, n // 2)],
                                               groups[6])
            info = machine_info(conn)
        path = write_result("dream_overhead", {"machine": info, "partitions_per_method": n,
                                               "inputs_per_partition": args.inputs,
                                               "results": results})
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

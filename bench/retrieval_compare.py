"""Search latency of an earlier commit and of this working tree, side by side on ONE database.

A latency figure on a shared, noisy machine says as much about the neighbours as about the
code, so "before vs after" is measured as a ratio: ``--rounds`` runs of each side, alternating
(old, new, old, new ...), each a fresh ``bench/retrieval_latency.py --reuse URL`` subprocess of
its own tree (the old one from a detached git worktree of ``--before``, removed at the end),
over the same corpus and the same questions (same ``--seed``). Prints every round, the
medians of p50/p95/p99 per side and the ratios new/old; writes
bench/results/retrieval_compare.json.

    .venv/bin/python -m bench.retrieval_compare --reuse URL --before b2f30a7 \\
        --rounds 6 --queries 400 --warmup 50

``--reuse URL``: a database with a corpus made by THIS tree's code (e.g. what
``python -m bench.load --n 100000 --pgdata DIR --keep --import-only`` left), on a running
server; ``--pgdata DIR`` starts that embedded server if it is down and holds it for the run.

The old tree gets one local, never committed change: this tree's migration files it does not
know are copied into its ``migrations/``. retrieval_latency.py migrates before it measures,
and the migration runner refuses a database that holds an applied migration without a file
(``missing-file``); with the file present and its checksum equal, nothing is applied, and the
old search simply never reads the newer columns.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import PROJECT_ROOT, machine_info, write_result

SIDES = ("old", "new")
FIGURES = ("p50_ms", "p95_ms", "p99_ms", "mean_ms")


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(PROJECT_ROOT), *args], check=True,
                          capture_output=True, text=True).stdout.strip()


@contextmanager
def old_tree(ref: str) -> Iterator[Path]:
    """A detached worktree of ``ref`` in a temporary directory, with this tree's newer
    migration files copied in (see the module docstring); removed afterwards."""
    parent = Path(tempfile.mkdtemp(prefix="retrieval-compare-"))
    tree = parent / "old"
    _git("worktree", "add", "--detach", str(tree), ref)
    try:
        known = {path.name for path in (tree / "migrations").glob("*.sql")}
        for path in sorted((PROJECT_ROOT / "migrations").glob("*.sql")):
            if path.name not in known:
                shutil.copy2(path, tree / "migrations" / path.name)
        yield tree
    finally:
        _git("worktree", "remove", "--force", str(tree))
        shutil.rmtree(parent, ignore_errors=True)


@contextmanager
def held_server(pgdata: Path | None) -> Iterator[None]:
    """Start (or find) the embedded server of ``pgdata`` and keep it up until the end."""
    if pgdata is None:
        yield
        return
    from memory_platform.foundation.db import embedded
    from memory_platform.foundation.db.connection import start_embedded
    from memory_platform.foundation.settings import Settings

    start_embedded(Settings(_env_file=None, embedded_pgdata=pgdata))  # type: ignore[call-arg]
    try:
        yield
    finally:
        embedded.release_server(pgdata)


def _tree_env(tree: Path) -> dict[str, str]:
    """The environment of a run in ``tree``: its own package first on the path (the venv's
    editable install points at this tree)."""
    return {**os.environ, "PYTHONPATH": str(tree)}


def check_imports_from(tree: Path) -> None:
    """SystemExit unless ``memory_platform`` imports from ``tree`` there: otherwise both
    sides would measure the same code."""
    found = subprocess.run([sys.executable, "-c",
                            "import memory_platform; print(memory_platform.__file__)"],
                           cwd=tree, env=_tree_env(tree), check=True, capture_output=True,
                           text=True).stdout.strip()
    if not Path(found).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"memory_platform imports from {found}, not from {tree}")


def run_round(tree: Path, results_dir: Path | None, args: argparse.Namespace) -> dict:
    """One retrieval_latency.py run of ``tree``; its JSON result. ``results_dir`` None: the
    tree's default (bench/results, fine in a throwaway worktree whose script may predate
    ``--results-dir``)."""
    command = [sys.executable, "bench/retrieval_latency.py", "--reuse", args.reuse,
               "--queries", str(args.queries), "--warmup", str(args.warmup),
               "--seed", str(args.seed)]
    if results_dir is not None:
        command += ["--results-dir", str(results_dir)]
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=_tree_env(tree), capture_output=True,
                          text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} (in {tree}) failed:\n{done.stderr[-3000:]}")
    target = (results_dir or tree / "bench" / "results") / "retrieval_latency.json"
    result = json.loads(target.read_text())
    return {**{figure: result[figure] for figure in FIGURES},
            "corpus_memories": result["corpus_memories"], "queries": result["queries"],
            "mean_hits": result["mean_hits"], "uses_hnsw": result["uses_hnsw"],
            "uses_gin": result["uses_gin"], "load_average_1m_before": round(load_before, 2),
            "load_average_1m_after": result["machine"]["load_average_1m"],
            "seconds": round(time.perf_counter() - started, 1)}


def summary(rounds: list[dict]) -> dict:
    """Per side the median of each figure over its rounds; the ratios new/old of those
    medians, and the median of the per-pair p95 ratios (each old run with the new run
    right after it)."""
    medians = {side: {figure: round(statistics.median(r[figure] for r in rounds
                                                      if r["side"] == side), 2)
                      for figure in FIGURES} for side in SIDES}
    ratios = {figure: round(medians["new"][figure] / medians["old"][figure], 3)
              for figure in FIGURES}
    olds = [r for r in rounds if r["side"] == "old"]
    news = [r for r in rounds if r["side"] == "new"]
    pair_p95 = [round(new["p95_ms"] / old["p95_ms"], 3) for old, new in zip(olds, news,
                                                                              strict=True)]
    return {"median": medians, "ratio_new_over_old": ratios,
            "pair_p95_ratios": pair_p95,
            "median_pair_p95_ratio": round(statistics.median(pair_p95), 3)}


def print_table(rounds: list[dict], result: dict) -> None:
    print(f"{'round':>5} {'side':>4} {'p50':>7} {'p95':>7} {'p99':>7} {'mean':>7} "
          f"{'load1':>6} {'s':>6}")
    for r in rounds:
        print(f"{r['round']:>5} {r['side']:>4} {r['p50_ms']:>7.2f} {r['p95_ms']:>7.2f} "
              f"{r['p99_ms']:>7.2f} {r['mean_ms']:>7.2f} {r['load_average_1m_before']:>6.2f} "
              f"{r['seconds']:>6.1f}")
    for side in SIDES:
        m = result["median"][side]
        print(f"median {side}: p50 {m['p50_ms']} ms, p95 {m['p95_ms']} ms, "
              f"p99 {m['p99_ms']} ms, mean {m['mean_ms']} ms")
    ratio = result["ratio_new_over_old"]
    print(f"new/old: p50 {ratio['p50_ms']}x, p95 {ratio['p95_ms']}x, p99 {ratio['p99_ms']}x "
          f"(median of per-pair p95 ratios {result['median_pair_p95_ratio']}x)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.retrieval_compare",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--reuse", required=True, metavar="URL",
                        help="database holding the corpus (made by this tree's code)")
    parser.add_argument("--before", required=True, metavar="REF",
                        help="the commit to compare with, e.g. b2f30a7")
    parser.add_argument("--rounds", type=int, default=6, help="runs of EACH side")
    parser.add_argument("--queries", type=int, default=400, help="measured queries per run")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured queries per run")
    parser.add_argument("--seed", type=int, default=11, help="the questions (both sides)")
    parser.add_argument("--pgdata", type=Path, default=None,
                        help="embedded server's data directory: started if down, held")
    args = parser.parse_args(argv)

    before = _git("rev-parse", "--verify", f"{args.before}^{{commit}}")
    rounds: list[dict] = []
    with held_server(args.pgdata), old_tree(before) as old, \
            tempfile.TemporaryDirectory(prefix="retrieval-compare-new-") as new_results:
        trees = {"old": old, "new": PROJECT_ROOT}
        for tree in trees.values():
            check_imports_from(tree)
        for number in range(1, args.rounds + 1):
            for side in SIDES:
                results_dir = Path(new_results) if side == "new" else None
                print(f"round {number} {side} ...", file=sys.stderr, flush=True)
                rounds.append({"round": number, "side": side,
                               **run_round(trees[side], results_dir, args)})

    result = summary(rounds)
    print_table(rounds, result)
    payload = {
        "command": " ".join(["python -m bench.retrieval_compare", *(argv or sys.argv[1:])]),
        "before": before, "after": _git("rev-parse", "HEAD"),
        "after_uncommitted_files": len(_git("--no-optional-locks", "status",
                                            "--porcelain").splitlines()),
        "corpus_memories": rounds[0]["corpus_memories"], "queries_per_round": args.queries,
        "warmup_per_round": args.warmup, "seed": args.seed, **result, "rounds": rounds,
        "machine": machine_info(),
    }
    print(f"wrote {write_result('retrieval_compare', payload)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

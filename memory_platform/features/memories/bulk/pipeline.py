"""The load of a bulk import: stage 1 of the next batches overlaps stage 2 of the current one,
and loader connections write their shares of each batch at once.

Checks, chunking and embedding (:mod:`.rows`) run in a worker thread, or for a large import
with a pure-Python provider in worker processes. The importing connection resolves each batch
(:meth:`Importer.resolve`) and hands every row to the loader its dedup key hashes to
(:func:`loader_of`), so repeats of a memory and the facts of one assertion identity meet in
one loader, which writes its shares in batch order: the result is that of a sequential import.
Results and progress are merged in batch order. On a failure the shares already handed out
still commit, as the batches before a failing one do, and then the failure is raised.
"""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
import pickle
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from typing import Any

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from memory_platform.features.memories.bulk.reader import MalformedLine, NumberedRow
from memory_platform.features.memories.bulk.results import ImportStats, Outcome, Rejection
from memory_platform.features.memories.bulk.rows import ImportRow, attach, check_and_embed, prepare
from memory_platform.features.memories.bulk.statements import TEMP_TABLES
from memory_platform.features.memories.bulk.writer import BatchFailed, Importer
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.embeddings.generations import Generation

log = logging.getLogger(__name__)

# Worker processes prepare an import of at least this many batches (or of unknown size).
PROCESS_MIN_BATCHES = 8


@contextmanager
def open_loaders(conn: psycopg.Connection, count: int) -> Iterator[list[psycopg.Connection]]:
    """``count`` connections to the database of ``conn`` for the loaders, with the import's
    temporary tables (none when ``count`` is 1: the caller's connection writes). If a
    connection cannot be opened, fewer loaders write."""
    opened: list[psycopg.Connection] = []
    try:
        if count > 1:
            params = conn.info.get_parameters()
            if conn.info.password:
                params["password"] = conn.info.password
            for _ in range(count):
                try:
                    other = psycopg.connect(**params, autocommit=True)  # type: ignore[arg-type]
                except psycopg.OperationalError as exc:
                    log.warning("importing with %d loader(s): %s", len(opened) or 1, exc)
                    break
                opened.append(other)
                with other.transaction():
                    other.execute(TEMP_TABLES)
            if len(opened) < 2:
                for other in opened:
                    other.close()
                opened = []
        yield opened
    finally:
        for other in opened:
            other.close()


def loader_of(row: ImportRow, count: int) -> int:
    """The loader that writes ``row``: by instance, audience and normalised content, so
    repeats of a memory (its dedup key adds the subject) and every fact of one assertion
    identity (a hash of the same normalised content) are written by the same loader, in
    line order."""
    assert row.ctx is not None and row.audience is not None
    slot = f"{row.ctx.instance_key}\x1f{row.audience.kind}\x1f{row.audience.key}\x1f{row.digest}"
    return int.from_bytes(hashlib.blake2b(slot.encode(), digest_size=8).digest()) % count


@dataclass
class _Pending:
    """One input batch in flight: its row count, the rows resolution rejected, and the
    writes of its loader shares."""

    count: int
    rejected: list[Rejection]
    error: str | None
    writes: list[Future]


def batches(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in lists of ``size`` (the last one shorter)."""
    while batch := list(islice(items, size)):
        yield batch


@contextmanager
def _preparer(importer: Importer, processes: int) -> Iterator[Callable[[list[Any]], Future]]:
    """Submits a batch's checks and embedding: to a worker thread, or (``processes``) to
    worker processes, which answer :func:`prepare`'s result (vectors not yet packed)."""
    if processes:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:
            yield lambda batch: pool.submit(prepare, batch, importer.settings,
                                            importer.provider)
    else:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-import") as pool:
            yield lambda batch: pool.submit(check_and_embed, batch, importer.settings,
                                            importer.provider)


def prepare_processes(settings: Settings, provider: EmbeddingProvider, known: int | None,
                      size: int) -> int:
    """Worker processes for the checks and embedding of a large import: only for a provider
    that computes in Python (the hash model holds the GIL; a network or native model releases
    it, so a thread overlaps it already) and that can be sent to another process."""
    count = settings.import_prepare_processes
    if not count or getattr(provider, "provider", None) != "hash":
        return 0
    if known is not None and known < PROCESS_MIN_BATCHES * size:
        return 0  # starting a process costs about a second
    try:
        pickle.dumps((settings, provider))
    except Exception:  # anything unpicklable: stay in a thread
        return 0
    return count


def run(importer: Importer, connections: list[psycopg.Connection],
        items: Iterator[NumberedRow | MalformedLine], size: int,
        progress: Callable[[ImportStats], None] | None, processes: int = 0) -> None:
    """Checks and embedding of the next batches run in a worker thread (or process) while
    batch n is resolved (audience, dedup within the batch) and handed to the loaders. Each
    loader writes its share of each batch, in batch order, on its own connection; the
    caller's connection only resolves (and analyses). Results are merged, and progress
    reported, in batch order."""
    stats = importer.stats
    writers = [importer.using(c) for c in connections] or [importer]
    pools = [ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"memory-import-load-{i}")
             for i in range(len(connections))]
    statistics = _Statistics(importer.conn)
    in_flight: deque[_Pending] = deque()
    max_in_flight = 2

    def finish(pending: _Pending) -> None:
        outcomes: list[Outcome] = []
        rejected = pending.rejected
        for write in pending.writes:
            done, failed = write.result()
            outcomes.extend(done)
            rejected.extend(failed)
        if pending.error and pending.error not in stats.embedding_errors:
            stats.embedding_errors.append(pending.error)
        stats.rows += pending.count
        for outcome in outcomes:
            stats.merge(outcome)
        stats.rejected.extend(sorted(rejected, key=lambda r: r.line))
        stats.batches += 1
        statistics.wrote(sum(outcome.accepted for outcome in outcomes))
        if progress:
            progress(stats)

    with _preparer(importer, processes) as submit:
        try:
            queued = batches(items, size)
            prepared: deque[Future] = deque()
            for batch in islice(queued, 2):
                prepared.append(submit(batch))
            while prepared:
                result = prepared.popleft().result()
                for batch in islice(queued, 1):
                    prepared.append(submit(batch))
                count, rows, rejected, error = attach(result) if processes else result
                rows, unreachable, repeats = importer.resolve(rows)
                rejected.extend(unreachable)
                generations = importer.generations_for(rows)
                if importer.conn.info.transaction_status == TransactionStatus.INTRANS:
                    importer.conn.commit()  # the loaders must see a new generation row
                if not pools:
                    done = Future()
                    done.set_result(_write_share(importer, rows, repeats, generations))
                    finish(_Pending(count, rejected, error, [done]))
                    continue
                shares: list[list[ImportRow]] = [[] for _ in pools]
                for row in rows:
                    shares[loader_of(row, len(pools))].append(row)
                writes = [
                    loader.submit(_write_share, writer, share,
                                  {r.line: repeats[r.line] for r in share if r.line in repeats},
                                  generations)
                    for loader, writer, share in zip(pools, writers, shares, strict=True)
                    if share
                ]
                in_flight.append(_Pending(count, rejected, error, writes))
                while len(in_flight) > max_in_flight or (
                        in_flight and all(w.done() for w in in_flight[0].writes)):
                    finish(in_flight.popleft())
            while in_flight:
                finish(in_flight.popleft())
        finally:
            # A failure (here or in a loader): what was handed to the loaders still commits,
            # as the batches before a failing one do in a sequential import.
            for loader in pools:
                loader.shutdown(wait=True)
            while in_flight:
                head = in_flight.popleft()
                if all(w.exception() is None for w in head.writes):
                    finish(head)


def _write_share(importer: Importer, rows: list[ImportRow], repeats: dict[int, list[ImportRow]],
                 generations: dict[str, Generation]) -> tuple[list[Outcome], list[Rejection]]:
    """Write rows in one transaction; if the database refuses the batch, row by row to find
    the row(s) it refuses. Answers the committed outcomes and the rows refused."""
    rejected: list[Rejection] = []
    if not rows:
        return [], rejected
    try:
        return [importer.write(rows, repeats, generations)], rejected
    except BatchFailed as exc:
        log.warning("batch rejected by the database (%s); retrying row by row", exc)
    outcomes = []
    for row in rows:
        try:
            own = {row.line: repeats[row.line]} if row.line in repeats else {}
            outcomes.append(importer.write([row], own, generations))
        except BatchFailed as single:
            diag = single.error.diag.message_primary or str(single.error)
            rejected.append(Rejection(row.line, f"database rejected the row: {diag}",
                                      "database_error"))
    return outcomes, rejected


# The tables whose statistics plan the dedup lookup and the assertion joins.
_ANALYZED_TABLES = ("agent_memories", "agent_memory_assertions")


class _Statistics:
    """Keeps the planner statistics of the tables an import fills up to date: planned from an
    empty (or much smaller) table, the dedup lookup and the assertion joins pick a sequential
    scan or the audience index (one audience holds thousands of rows), and each batch gets
    slower. The import analyses them after the first batch and whenever it has doubled them
    since the last analysis."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        before = conn.execute(
            "SELECT greatest(reltuples, 0)::bigint FROM pg_class"
            " WHERE oid = 'agent_memories'::regclass").fetchone()[0]
        self.rows = before  # what the statistics describe
        self.written = 0

    def wrote(self, accepted: int) -> None:
        self.written += accepted
        if self.written and self.written >= max(self.rows, 1):
            t0 = time.perf_counter()
            with self.conn.transaction():
                for table in _ANALYZED_TABLES:
                    self.conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
            log.debug("analysed %s in %.2f s", ", ".join(_ANALYZED_TABLES),
                      time.perf_counter() - t0)
            self.rows += self.written
            self.written = 0

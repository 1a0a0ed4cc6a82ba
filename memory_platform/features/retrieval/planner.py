"""How the vector searches of chunks and assertions are planned: the exact-or-HNSW gate, and
the settings their statements run under.

The gate: a bounded count of the rows the caller may see (:func:`bounded_count`, a CTE named
``visible_count``) decides which of two arms runs (:func:`gate`): an exact scan of a small
visible set (a filtered HNSW scan can return fewer rows than asked for), or the HNSW index
with pgvector's iterative scan.

The settings (:func:`planner_settings`): indexes only (a scan of a searched table is never
cheaper than its btree, GIN or HNSW index here), the prepared generic plan, no parallel
fan-out, and an HNSW scan that keeps going until enough rows pass the statement's filter
(pgvector's iterative scan, relaxed order: the statements sort their candidates by the
full-precision distance afterwards).

The settings are transaction-local. Inside a caller's open transaction the search runs in a
savepoint, whose release would keep them, so the block hands the caller its own values back.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

EF_SEARCH_MAX = 1000  # pgvector's limit of hnsw.ef_search
_NAMES = ("enable_seqscan", "plan_cache_mode", "max_parallel_workers_per_gather",
          "hnsw.iterative_scan", "hnsw.ef_search")
_SET = """
    SELECT name, current_setting(name, true), set_config(name, value, true)
      FROM unnest(%s::text[], %s::text[]) AS s(name, value)
"""
# An extension's setting read before the extension was loaded in this session is an empty
# placeholder; once the search loaded pgvector it only takes its own values, so the caller
# gets the setting's default back instead.
_RESTORE = """
    SELECT set_config(s.name, CASE WHEN s.value = '' THEN coalesce(p.reset_val, '')
                                   ELSE s.value END, true)
      FROM unnest(%s::text[], %s::text[]) AS s(name, value)
      LEFT JOIN pg_settings p ON p.name = s.name
     WHERE s.value IS NOT NULL
"""


def bounded_count(branches: Sequence[sql.Composable], bound: int) -> sql.Composable:
    """The body of the ``visible_count`` CTE: how many rows the ``branches`` (one query per
    branch of the visibility rule, each a short index-only scan) find together, counted no
    further than ``bound`` (an OR of the branches would need the heap)."""
    return sql.SQL("SELECT count(*) AS n FROM ({} LIMIT {}) visible").format(
        sql.SQL(" UNION ALL ").join(branches), sql.Literal(bound))


def gate(exact: bool, exact_max: int) -> sql.Composable:
    """The one-time condition of an arm: the exact one runs for at most ``exact_max``
    visible rows, the HNSW one above."""
    return sql.SQL("(SELECT n FROM visible_count) {} {}").format(
        sql.SQL("<=" if exact else ">"), sql.Literal(exact_max))


@contextmanager
def planner_settings(conn: psycopg.Connection, ef_search: int) -> Iterator[None]:
    """Run the block in a transaction (a savepoint in the caller's) under the search
    settings, with ``ef_search`` HNSW candidates per scan step (at most pgvector's maximum:
    the iterative scan goes on past it when a caller asks for more rows). A failing block
    rolls the settings back with it; a caller's still-open transaction gets its values back."""
    inside_callers_transaction = conn.info.transaction_status != TransactionStatus.IDLE
    values = ["off", "force_generic_plan", "0", "relaxed_order",
              str(min(ef_search, EF_SEARCH_MAX))]
    with conn.transaction():
        replaced = conn.execute(_SET, (list(_NAMES), values)).fetchall()
        yield
        if inside_callers_transaction:
            conn.execute(_RESTORE, ([r[0] for r in replaced], [r[1] for r in replaced]))

"""The one transaction convention of the domain.

A function that commits its own units of work (a Dream, an import, the outbox worker, a
rollback) needs a connection outside any transaction (:func:`require_idle`) and commits
each unit with :func:`committed_unit` (or :func:`commit_if_idle` after a read), so it works
the same on an autocommit connection (Dagster, the CLI) and a transactional one (the API's
pool). Every other domain function runs inside its caller's transaction and commits nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg.pq import TransactionStatus


def in_transaction(conn: psycopg.Connection) -> bool:
    return conn.info.transaction_status != TransactionStatus.IDLE


def require_idle(conn: psycopg.Connection, who: str) -> None:
    """Refuse to start a self-committing function inside the caller's transaction."""
    if in_transaction(conn):
        raise RuntimeError(f"{who} commits its own units of work: "
                           "call it on a connection outside a transaction")


def commit_if_idle(conn: psycopg.Connection) -> None:
    """End the implicit transaction a read opened on a non-autocommit connection."""
    if not conn.autocommit and conn.info.transaction_status == TransactionStatus.INTRANS:
        conn.commit()


def rollback_if_open(conn: psycopg.Connection) -> None:
    """Abandon whatever the connection has open (after a failed unit)."""
    if not conn.autocommit and in_transaction(conn):
        conn.rollback()


@contextmanager
def committed_unit(conn: psycopg.Connection) -> Iterator[None]:
    """One committed unit of work, whether or not the connection autocommits."""
    with conn.transaction():
        yield
    commit_if_idle(conn)

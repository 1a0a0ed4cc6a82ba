"""Where a string is stored: every text-like column of every table of a database, scanned.

An erasure promises that nothing of a person is left; a test of that promise must not list
the places to look (a list goes stale as soon as a migration adds a column). This helper
asks ``information_schema`` for every column whose type can hold a person's words or id
(``text``, ``varchar``, ``char``, ``json``, ``jsonb``, ``name`` and arrays of these) and
counts, per column, the rows whose value (cast to text) contains the needle,
case-insensitively. The platform's erasure tests scan the platform database with it; the
Dagster erasure tests reuse it for Dagster's storage database.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

# udt names (information_schema.columns.udt_name) of the types scanned; arrays start "_".
TEXT_TYPES = ("text", "varchar", "bpchar", "json", "jsonb", "name", "citext")


def text_columns(conn: psycopg.Connection, *, schema: str = "public"
                 ) -> list[tuple[str, str]]:
    """(table, column) of every text-like column of the base tables of ``schema``."""
    types = list(TEXT_TYPES) + [f"_{t}" for t in TEXT_TYPES]
    return [(r[0], r[1]) for r in conn.execute(
        """SELECT c.table_name, c.column_name
             FROM information_schema.columns c
             JOIN information_schema.tables t
               ON t.table_schema = c.table_schema AND t.table_name = c.table_name
            WHERE c.table_schema = %s AND t.table_type = 'BASE TABLE'
              AND c.udt_name = ANY(%s)
            ORDER BY c.table_name, c.ordinal_position""", (schema, types)).fetchall()]


def find_text(conn: psycopg.Connection, needle: str, *, schema: str = "public"
              ) -> list[tuple[str, str, int]]:
    """(table, column, rows) of every column of ``schema`` holding ``needle`` in at least one
    row (case-insensitive substring of the value as text; JSON escapes apart, so use an ASCII
    needle). Empty: the needle is stored nowhere."""
    if not needle:
        raise ValueError("an empty needle is found everywhere")
    found = []
    for table, column in text_columns(conn, schema=schema):
        query = sql.SQL("SELECT count(*) FROM {}.{} WHERE strpos(lower({}::text), %s) > 0"
                        ).format(sql.Identifier(schema), sql.Identifier(table),
                                 sql.Identifier(column))
        count = conn.execute(query, (needle.lower(),)).fetchone()[0]
        if count:
            found.append((table, column, count))
    return found

"""Statements that embed caller values as literals and also take parameters.

When a statement is executed with parameters, psycopg reads its whole text for placeholders,
the insides of quoted literals included: a user id or channel key holding ``%s`` or
``%(qv)s`` would be taken for a placeholder (an error, or a value bound where it does not
belong). :func:`parameter_safe` doubles every ``%`` inside the literals and identifiers of a
composed statement, which psycopg turns back into one ``%`` when it binds the parameters.
Use it on every composed statement executed WITH parameters; a statement executed without
any is sent as it is and must not be escaped.
"""

from __future__ import annotations

from psycopg import sql


def parameter_safe(statement: sql.Composable) -> sql.Composable:
    """``statement`` with each ``%`` of its literals and identifiers doubled; its SQL text and
    placeholders unchanged."""
    if isinstance(statement, sql.Composed):
        return sql.Composed([parameter_safe(part) for part in statement])
    if isinstance(statement, sql.SQL | sql.Placeholder):
        return statement
    return sql.SQL(statement.as_string(None).replace("%", "%%"))

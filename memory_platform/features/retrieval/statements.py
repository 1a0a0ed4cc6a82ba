"""Statements that embed caller values as literals and also take parameters, and statements
composed once per shape.

When a statement is executed with parameters, psycopg reads its whole text for placeholders,
the insides of quoted literals included: a user id or channel key holding ``%s`` or
``%(qv)s`` would be taken for a placeholder (an error, or a value bound where it does not
belong). :func:`parameter_safe` doubles every ``%`` inside the literals and identifiers of a
composed statement, which psycopg turns back into one ``%`` when it binds the parameters.
Use it on every composed statement executed WITH parameters; a statement executed without
any is sent as it is and must not be escaped.

The hot searches compose their statement from the caller's context *shape* only (every value
is a placeholder named by its role), so one text serves every caller of a shape:
:class:`ShapeCache` keeps the text composed once per shape and process, numbered (``$n``) for
a ``RawCursor``, which spares composing and parsing kilobytes of SQL on every search.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from psycopg import sql

_PLACEHOLDER = re.compile(rb"%\((\w+)\)s|%%")


def parameter_safe(statement: sql.Composable) -> sql.Composable:
    """``statement`` with each ``%`` of its literals and identifiers doubled; its SQL text and
    placeholders unchanged."""
    if isinstance(statement, sql.Composed):
        return sql.Composed([parameter_safe(part) for part in statement])
    if isinstance(statement, sql.SQL | sql.Placeholder):
        return statement
    return sql.SQL(statement.as_string(None).replace("%", "%%"))


@dataclass(frozen=True)
class Numbered:
    """A statement's text with ``$1..$n`` placeholders, and the value role of each ``$n``."""

    text: bytes
    roles: tuple[str, ...]

    def params(self, values: Mapping[str, Any]) -> list[Any]:
        return [values[role] for role in self.roles]


def numbered(statement: sql.Composable) -> Numbered:
    """The text of ``statement`` with ``%(role)s`` -> ``$n`` (one number per role) and
    ``%%`` -> ``%``, rewritten in its SQL text and placeholders only: a literal (or an
    identifier) is rendered as it is, whatever it contains."""
    roles: list[str] = []

    def number(match: re.Match[bytes]) -> bytes:
        if match.group(0) == b"%%":
            return b"%"
        role = match.group(1).decode()
        if role not in roles:
            roles.append(role)
        return b"$%d" % (roles.index(role) + 1)

    def render(part: sql.Composable) -> bytes:
        if isinstance(part, sql.Composed):
            return b"".join(render(child) for child in part)
        if isinstance(part, sql.SQL | sql.Placeholder):
            return _PLACEHOLDER.sub(number, part.as_bytes(None))
        return part.as_bytes(None)

    return Numbered(render(statement), tuple(roles))


class ShapeCache:
    """Numbered statements by shape (a hashable of everything the text depends on), composed
    on first use; at most ``size`` kept (all dropped when full: shapes are few)."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self.statements: dict[Hashable, Numbered] = {}

    def get(self, shape: Hashable, compose: Callable[[], sql.Composable]) -> Numbered:
        statement = self.statements.get(shape)
        if statement is None:
            if len(self.statements) >= self.size:
                self.statements.clear()
            statement = self.statements[shape] = numbered(compose())
        return statement

    def values(self):
        return self.statements.values()

    def clear(self) -> None:
        self.statements.clear()

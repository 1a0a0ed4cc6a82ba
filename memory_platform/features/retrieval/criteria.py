"""Search criteria: a small filter language over memories, compiled into SQL.

A search may be narrowed by

* ``where``: a boolean tree over a memory's ``metadata`` and ``subject_refs``::

      {"and": [{"metadata.project": {"eq": "apollo"}},
               {"metadata.tags": {"in": ["a", "b"]}},
               {"not": {"metadata.draft": {"exists": true}}},
               {"or": [{"subjectRefs.taskId": {"eq": "T-1"}},
                       {"subjectRefs.documentId": {"exists": true}}]}]}

  A node is ``{"and": [...]}``, ``{"or": [...]}``, ``{"not": node}`` or a leaf
  ``{field: {operator: value}}`` with field ``metadata.<seg>[.<seg>...]`` or
  ``subjectRefs.<key>`` and operator ``eq`` (a JSON scalar), ``in`` (a list of scalars) or
  ``exists`` (true/false). ``eq``/``in`` on an array value match when an element matches.
* ``occurred_after`` / ``occurred_before``: the event time (``occurred_at``; a memory
  without one never matches a range on it); ``created_after`` / ``created_before``: the write
  time. After is inclusive, before exclusive.
* ``source_types``: the memory's ``source_type`` is one of these.

Validation is strict and bounded (:data:`MAX_DEPTH`, :data:`MAX_LEAVES`,
:data:`MAX_IN_VALUES`, key grammar, string length) and every problem is an
:class:`~memory_platform.foundation.errors.InvalidInput` naming the field.

:func:`memory_condition` compiles criteria into one SQL condition over an
``agent_memories`` alias. It contains placeholders only (named ``crit_<n>`` in a fixed
traversal order), never a value: each leaf is one ``jsonb @@ jsonpath`` / ``jsonb @? jsonpath``
test whose jsonpath is a bound parameter (operators a ``jsonb_path_ops`` GIN index serves).
The text depends only on the criteria's :attr:`Criteria.shape`, so a search statement
composed for one shape serves every criteria of that shape. The search ANDs the condition
into every candidate arm and into its final visibility check (retrieval/search.py): a filter
only narrows, it can never widen what the caller sees.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg import sql

from memory_platform.features.memories.validation import parse_occurred_at
from memory_platform.features.memories.write_rules import STORED_SOURCE_TYPES
from memory_platform.foundation.errors import InvalidInput

MAX_DEPTH = 4  # nesting of and/or/not above a leaf (a bare leaf is depth 0)
MAX_LEAVES = 32
MAX_IN_VALUES = 32
MAX_STRING = 256
MAX_PATH_SEGMENTS = 4
MAX_INTEGER = 2**53  # exactly representable as a JSON number everywhere
_SEGMENT = re.compile(r"[A-Za-z0-9_-]{1,64}")
_COLUMNS = {"metadata": "metadata", "subjectRefs": "subject_refs"}
_OPERATORS = ("eq", "in", "exists")

Scalar = str | int | float | bool | None


@dataclass(frozen=True)
class Leaf:
    column: str  # "metadata" | "subject_refs"
    path: tuple[str, ...]
    operator: str  # "eq" | "in" | "exists"
    values: tuple[Scalar, ...]  # eq: one; in: several; exists: (True,) or (False,)


@dataclass(frozen=True)
class Node:
    operator: str  # "and" | "or" | "not"
    children: tuple[Node | Leaf, ...]


@dataclass(frozen=True)
class Criteria:
    where: Node | Leaf | None = None
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    source_types: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return self.where is None and not self.source_types and not any(
            (self.occurred_after, self.occurred_before, self.created_after,
             self.created_before))

    @property
    def shape(self) -> Hashable:
        """Everything :func:`memory_condition`'s text depends on (no value)."""
        return (_tree_shape(self.where),
                tuple(v is not None for v in (self.occurred_after, self.occurred_before,
                                              self.created_after, self.created_before)),
                bool(self.source_types))


def _tree_shape(node: Node | Leaf | None) -> Hashable:
    if node is None:
        return None
    if isinstance(node, Leaf):
        # exists:false compiles to a negation; the path and values are in the parameter.
        return (node.column, node.operator, node.operator == "exists" and not node.values[0])
    return (node.operator, tuple(_tree_shape(child) for child in node.children))


# --- parsing -------------------------------------------------------------------------------


def parse_criteria(
    where: Any = None,
    *,
    occurred_after: Any = None,
    occurred_before: Any = None,
    created_after: Any = None,
    created_before: Any = None,
    source_types: Any = None,
) -> Criteria | None:
    """Validated criteria, or None when nothing narrows. ``where`` is the filter tree (a
    mapping, or its JSON text); the times are timezone-aware datetimes or ISO-8601 strings
    with an offset; ``source_types`` a sequence of source types (or one comma-separated
    string). Raises InvalidInput naming the offending field."""
    if isinstance(where, str):
        if len(where) > 8192:
            raise _invalid("filter", "is longer than 8192 characters")
        try:
            where = json.loads(where)
        except ValueError:
            raise _invalid("filter", "is not valid JSON") from None
    counter = [0]
    tree = None if where is None else _node(where, "filter", 0, counter)
    times = {name: _time(value, field) for name, value, field in (
        ("occurred_after", occurred_after, "occurredAfter"),
        ("occurred_before", occurred_before, "occurredBefore"),
        ("created_after", created_after, "createdAfter"),
        ("created_before", created_before, "createdBefore"))}
    for after, before, field in (("occurred_after", "occurred_before", "occurredAfter"),
                                 ("created_after", "created_before", "createdAfter")):
        if times[after] and times[before] and times[after] >= times[before]:
            raise _invalid(field, f"must be earlier than {field.replace('After', 'Before')}")
    criteria = Criteria(tree, source_types=_source_types(source_types), **times)
    return None if criteria.empty else criteria


def _invalid(field: str, problem: str) -> InvalidInput:
    return InvalidInput(f"{field} {problem}", details={"field": field})


def _node(value: Any, field: str, depth: int, leaves: list[int]) -> Node | Leaf:
    if not isinstance(value, Mapping) or len(value) != 1:
        raise _invalid(field, "must be an object with exactly one key "
                       "(and, or, not, or a field such as metadata.project)")
    (key, body), = value.items()
    if not isinstance(key, str):
        raise _invalid(field, "has a key that is not a string")
    if key in ("and", "or", "not"):
        if depth >= MAX_DEPTH:
            raise _invalid(field, f"nests and/or/not deeper than {MAX_DEPTH}")
        here = f"{field}.{key}"
        if key == "not":
            return Node("not", (_node(body, here, depth + 1, leaves),))
        if not isinstance(body, list) or not body:
            raise _invalid(here, "must be a non-empty list")
        return Node(key, tuple(_node(child, f"{here}.{i}", depth + 1, leaves)
                               for i, child in enumerate(body)))
    leaves[0] += 1
    if leaves[0] > MAX_LEAVES:
        raise _invalid(field, f"has more than {MAX_LEAVES} conditions")
    return _leaf(key, body, f"{field}.{key}")


def _leaf(key: str, body: Any, field: str) -> Leaf:
    head, _, rest = key.partition(".")
    if head not in _COLUMNS or not rest:
        raise _invalid(field, "is neither and/or/not nor a field metadata.<key> or "
                       "subjectRefs.<key>")
    path = tuple(rest.split("."))
    limit = MAX_PATH_SEGMENTS if head == "metadata" else 1
    if len(path) > limit or not all(_SEGMENT.fullmatch(p) for p in path):
        raise _invalid(field, f"names a key outside the grammar: at most {limit} segment(s) "
                       "of 1-64 letters, digits, '_' or '-'")
    if not isinstance(body, Mapping) or len(body) != 1:
        raise _invalid(field, "must be an object with exactly one operator (eq, in, exists)")
    (operator, operand), = body.items()
    here = f"{field}.{operator}"
    if operator == "eq":
        values: tuple[Scalar, ...] = (_scalar(operand, here),)
    elif operator == "in":
        if not isinstance(operand, list) or not 1 <= len(operand) <= MAX_IN_VALUES:
            raise _invalid(here, f"must be a list of 1 to {MAX_IN_VALUES} values")
        values = tuple(_scalar(v, f"{here}.{i}") for i, v in enumerate(operand))
    elif operator == "exists":
        if not isinstance(operand, bool):
            raise _invalid(here, "must be true or false")
        values = (operand,)
    else:
        raise _invalid(here, f"is not an operator (one of {', '.join(_OPERATORS)})")
    if head == "subjectRefs" and operator != "exists":
        # Subject refs are stored as text (memories/write_rules.clean_subject_refs).
        values = tuple(_ref_text(v) for v in values)
    return Leaf(_COLUMNS[head], path, operator, values)


def _ref_text(value: Scalar) -> Scalar:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if isinstance(value, int | float) else value


def _scalar(value: Any, field: str) -> Scalar:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            raise _invalid(field, f"is longer than {MAX_STRING} characters")
        if "\x00" in value:
            raise _invalid(field, "contains a NUL character")
        return value
    if isinstance(value, int):
        if abs(value) > MAX_INTEGER:
            raise _invalid(field, "is outside +-2^53")
        return value
    if isinstance(value, float):
        if not math.isfinite(value) or abs(value) > 1e15:
            raise _invalid(field, "must be a finite number of at most 1e15")
        return value
    raise _invalid(field, "must be a string, number, boolean or null")


def _time(value: Any, field: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise _invalid(field, "must be timezone-aware")
        return value
    return parse_occurred_at(value, field=field)


def _source_types(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",")] if value.strip() else []
    if not isinstance(value, Sequence) or isinstance(value, bytes | str) or not value:
        raise _invalid("sourceTypes", "must be a non-empty list of source types")
    if len(value) > len(STORED_SOURCE_TYPES) * 2:
        raise _invalid("sourceTypes", "lists too many values")
    for item in value:
        if item not in STORED_SOURCE_TYPES:
            raise _invalid("sourceTypes", f"must be among {', '.join(STORED_SOURCE_TYPES)}")
    return tuple(sorted(set(value)))


# --- compiling -----------------------------------------------------------------------------


def memory_condition(criteria: Criteria, alias: str) -> sql.Composable:
    """The condition ``criteria`` put on the ``agent_memories`` row ``alias``: placeholders
    only (:func:`criteria_params` gives their values), its text fixed by the shape."""
    counter = [0]
    conditions: list[sql.Composable] = []
    if criteria.where is not None:
        conditions.append(_compile(criteria.where, alias, counter))
    for column, operator, value in (("occurred_at", ">=", criteria.occurred_after),
                                    ("occurred_at", "<", criteria.occurred_before),
                                    ("created_at", ">=", criteria.created_after),
                                    ("created_at", "<", criteria.created_before)):
        if value is not None:
            conditions.append(sql.SQL("{} {} {}").format(
                sql.Identifier(alias, column), sql.SQL(operator), _next(counter)))
    if criteria.source_types:
        conditions.append(sql.SQL("{} = ANY({}::text[])").format(
            sql.Identifier(alias, "source_type"), _next(counter)))
    return sql.SQL("({})").format(sql.SQL(" AND ").join(conditions))


def criteria_params(criteria: Criteria) -> dict[str, Any]:
    """The values of :func:`memory_condition`'s placeholders, by name."""
    values: list[Any] = []
    if criteria.where is not None:
        _leaf_values(criteria.where, values)
    values += [v for v in (criteria.occurred_after, criteria.occurred_before,
                           criteria.created_after, criteria.created_before) if v is not None]
    if criteria.source_types:
        values.append(list(criteria.source_types))
    return {f"crit_{i}": value for i, value in enumerate(values)}


def _next(counter: list[int]) -> sql.Placeholder:
    placeholder = sql.Placeholder(f"crit_{counter[0]}")
    counter[0] += 1
    return placeholder


def _compile(node: Node | Leaf, alias: str, counter: list[int]) -> sql.Composable:
    if isinstance(node, Leaf):
        column = sql.Identifier(alias, node.column)
        if node.operator == "exists":
            test = sql.SQL("{} @? {}::jsonpath").format(column, _next(counter))
            return test if node.values[0] else sql.SQL("({}) IS NOT TRUE").format(test)
        return sql.SQL("{} @@ {}::jsonpath").format(column, _next(counter))
    if node.operator == "not":
        # IS NOT TRUE: a leaf that is unknown (a type mismatch in the jsonpath) is not true.
        return sql.SQL("({}) IS NOT TRUE").format(_compile(node.children[0], alias, counter))
    joiner = sql.SQL(" AND " if node.operator == "and" else " OR ")
    return sql.SQL("({})").format(joiner.join(_compile(c, alias, counter)
                                              for c in node.children))


def _leaf_values(node: Node | Leaf, out: list[Any]) -> None:
    if isinstance(node, Node):
        for child in node.children:
            _leaf_values(child, out)
        return
    path = "$" + "".join(f".{json.dumps(segment)}" for segment in node.path)
    if node.operator == "exists":
        out.append(path)
    else:
        out.append(" || ".join(f"{path} == {_json_literal(v)}" for v in node.values))


def _json_literal(value: Scalar) -> str:
    """A jsonpath literal: JSON's own spelling (strings escaped, ASCII only)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, ensure_ascii=True)

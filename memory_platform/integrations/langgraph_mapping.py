"""How a LangGraph item lives in a memory (the rule :mod:`.langgraph` documents): the audience
a namespace names, the content (the value's text), the metadata that holds the item (its
strings escaped where the API's identifier rule refuses them) and the filters that find it
again, and what of LangGraph's filters the API cannot evaluate.

Pure functions over JSON and strings: no HTTP here.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.store.base import Item, MatchCondition, SearchItem, get_text_at_path

VISIBILITIES = ("private", "team", "workspace", "channel")
TEXT_FIELDS = ("content", "text", "memory")
ROOT = "langgraph"                 # the one metadata key the store writes
ITEM_REF = "documentId"            # the subject ref that keeps items of one text apart
STRING_MAX = 256                   # the filter language's longest string
METADATA_MAX = 16 * 1024 - 512     # the API's metadata bound, less the platform's own keys
PUSHED_MAX = 16                    # value conditions sent to the server per filter
FILTER_MAX = 8000                  # the filter's JSON text (the API takes 8,192)
_REFUSED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_SEGMENT = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SPACE = re.compile(r"\s+")
# Metadata strings are identifiers to the API: no control, format (Cf) or line/paragraph
# separator character (nor a lone surrogate). A string with one, or with the mark, is kept
# as the mark and its ASCII JSON.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
MARK = "~json:"


@dataclass(frozen=True)
class Record:
    """One memory of an item: its current version, or a tombstone (``value`` None)."""

    memory_id: str
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any] | None
    content: str
    created_at: str                    # the first version's time
    written_at: str                    # this version's (the memory's created_at)

    @property
    def deleted(self) -> bool:
        return self.value is None

    def item(self, score: float | None = None, searched: bool = False) -> Item:
        created, updated = (datetime.fromisoformat(t) for t in (self.created_at,
                                                                 self.written_at))
        if searched:
            return SearchItem(self.namespace, self.key, self.value, created, updated, score)
        return Item(value=self.value, key=self.key, namespace=self.namespace,
                    created_at=created, updated_at=updated)


def visibility_of(namespace: Sequence[str], default: str, from_namespace: bool) -> str:
    """The audience of a namespace: its first label when it names one, else ``default``."""
    if from_namespace and namespace and namespace[0] in VISIBILITIES:
        return namespace[0]
    return default


def escape(text: str) -> str:
    """``text`` as a metadata string (reversed by :func:`unescape`)."""
    if text.startswith(MARK) or any(unicodedata.category(c) in _HIDDEN for c in text):
        return MARK + json.dumps(text)
    return text


def unescape(text: str) -> str:
    return json.loads(text[len(MARK):]) if text.startswith(MARK) else text


def _each_string(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, Mapping):
        return {change(k): _each_string(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_each_string(v, change) for v in value]
    return value


def _fit(text: str, what: str) -> str:
    if len(text) > STRING_MAX:
        raise ValueError(f"the memory platform filters by a {what} of at most {STRING_MAX} "
                         f"characters (got {len(text)}: {text[:40]!r}...)")
    return text


def _joined(labels: Sequence[str]) -> str:
    return ".".join(map(escape, labels))


class Layout:
    """The metadata and filters of one store ``name`` (other names never see its items)."""

    def __init__(self, name: str) -> None:
        self.name = _fit(escape(name), "store name")

    def _ident(self, namespace: Sequence[str], key: str) -> dict[str, Any]:
        return {"store": self.name, "namespace": _fit(_joined(namespace), "namespace"),
                "key": _fit(escape(key), "key")}

    def metadata(self, namespace: Sequence[str], key: str, value: Mapping[str, Any] | None,
                 created_at: str | None = None) -> dict[str, Any]:
        """``{"langgraph": {store, namespace, prefixes, key, value, createdAt}}``; a tombstone
        (value None) has no prefixes, so no listing or search finds it."""
        body = self._ident(namespace, key)
        if value is not None:
            body["prefixes"] = [_joined(namespace[:i]) for i in range(1, len(namespace) + 1)]
        body["value"] = None if value is None else _each_string(value, escape)
        if created_at:
            body["createdAt"] = created_at
        metadata = {ROOT: body}
        size = len(json.dumps(metadata, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if size > METADATA_MAX:
            raise ValueError(f"{'/'.join(namespace)}/{key}: the item takes {size} bytes of "
                             f"metadata; the memory platform holds at most {METADATA_MAX}")
        return metadata

    def item_refs(self, namespace: Sequence[str], key: str) -> dict[str, str]:
        """``documentId`` names the item (its path, then a hash), so that two items of one
        text stay two memories: the API deduplicates a write of the same text with the same
        identifying subject refs in one audience."""
        path = "".join(" " if unicodedata.category(c) in _HIDDEN else c
                       for c in "/".join((*namespace, key)))
        ident = json.dumps([self.name, list(namespace), key], ensure_ascii=True).encode()
        return {ITEM_REF: f"langgraph:{path[:160]}#{hashlib.sha256(ident).hexdigest()[:16]}"}

    def item_filter(self, namespace: Sequence[str], key: str) -> dict[str, Any]:
        return {"and": [{f"metadata.{ROOT}.{k}": {"eq": v}}
                        for k, v in self._ident(namespace, key).items()]}

    def prefix_filter(self, prefix: Sequence[str],
                      where: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The live items under a namespace prefix (and, as far as the server can tell, that
        meet LangGraph's value filter ``where``: :func:`matches` decides)."""
        under = {"eq": _fit(_joined(prefix), "namespace")} if prefix else {"exists": True}
        found = {"and": [{f"metadata.{ROOT}.store": {"eq": self.name}},
                         {f"metadata.{ROOT}.prefixes": under}]}
        for condition in value_conditions(where):
            if len(json.dumps(found)) + len(json.dumps(condition)) > FILTER_MAX:
                break
            found["and"].append(condition)
        return found

    def decode(self, memory: Any) -> Record | None:
        """The record of a listed memory (``MemoryOut`` with metadata); None: not this
        store's."""
        body = (getattr(memory, "metadata", None) or {}).get(ROOT)
        if not isinstance(body, dict) or body.get("store") != self.name:
            return None
        namespace, key, value = body.get("namespace"), body.get("key"), body.get("value")
        if not isinstance(namespace, str) or not isinstance(key, str) \
                or not isinstance(value, dict | None):
            return None
        created = body.get("createdAt")
        return Record(memory.id, tuple(map(unescape, namespace.split("."))), unescape(key),
                      _each_string(value, unescape), memory.content,
                      created if isinstance(created, str) else memory.created_at,
                      memory.created_at)


def value_conditions(where: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The server's part of a value filter: equality of scalars at most two fields deep (the
    language's four path segments). Never narrower than LangGraph's rule (an array matches
    its element, ``1`` matches ``true``), so :func:`matches` still checks each item."""
    found: list[dict[str, Any]] = []

    def walk(path: tuple[str, ...], want: Any) -> None:
        if isinstance(want, Mapping):
            if any(str(k).startswith("$") for k in want):
                if "$eq" in want:
                    walk(path, want["$eq"])
                return
            for k, w in want.items():
                walk((*path, k), w)
            return
        if len(path) > 2 or not all(isinstance(p, str) and _SEGMENT.fullmatch(p)
                                    for p in path):
            return
        if isinstance(want, str) and len(escape(want)) <= STRING_MAX:
            condition = {"eq": escape(want)}
        elif isinstance(want, bool) or want in (0, 1):
            condition = {"in": [bool(want), int(want)]}
        elif isinstance(want, int | float) and abs(want) <= 1e15:
            condition = {"eq": want}
        else:
            return                  # None matches an absent field too; big numbers: here
        found.append({f"metadata.{ROOT}.value.{'.'.join(path)}": condition})

    for k, w in (where or {}).items():
        walk((k,), w)
    return found[:PUSHED_MAX]


def clean_text(text: str) -> str:
    """The text as the API stores it: refused characters become spaces, trimmed."""
    return _REFUSED.sub(" ", text).strip()


def same_text(a: str, b: str) -> bool:
    """Whether the API takes two contents for one (its dedup rule: NFKC, case, spaces), so
    the one cannot correct the other."""
    def norm(t: str) -> str:
        return _SPACE.sub(" ", unicodedata.normalize("NFKC", t).casefold()).strip()
    return norm(a) == norm(b)


def content_of(namespace: Sequence[str], key: str, value: Mapping[str, Any],
               index: Sequence[str] | bool | None, fields: Sequence[str] | None) -> str:
    """The memory's content, the value's searchable text: the put's ``index`` paths, else the
    first of the store's ``fields`` the value has (``None``: none), else the value's JSON;
    ``index=False`` (or no text at the paths): the item's path ``a/b/key``."""
    text = ""
    if index:
        text = "\n".join(t for path in index for t in get_text_at_path(value, path))
    elif index is None:
        texts = next((t for f in fields or () if (t := get_text_at_path(value, f))), None)
        text = "\n".join(texts) if texts else json.dumps(value, ensure_ascii=False)
    return clean_text(text) or clean_text("/".join((*namespace, key)))


def normalised(value: Mapping[str, Any]) -> dict[str, Any]:
    """The value as it comes back from the metadata (tuples become lists, and so on)."""
    return json.loads(json.dumps(dict(value), allow_nan=False))


# --- what the API cannot evaluate: LangGraph's value filters and namespace conditions -------


def matches(value: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter over a value: a field equals, or meets each ``$eq``, ``$ne``,
    ``$gt``, ``$gte``, ``$lt``, ``$lte``; a nested mapping matches a nested object."""
    return all(_match(value.get(k), want) for k, want in (where or {}).items())


def _match(have: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        if any(str(k).startswith("$") for k in want):
            return all(_operator(have, op, operand) for op, operand in want.items())
        return isinstance(have, Mapping) and all(_match(have.get(k), w)
                                                 for k, w in want.items())
    return have == want


def _operator(have: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return have == operand
    if op == "$ne":
        return have != operand
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"unsupported filter operator {op!r}")
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool)
                  for x in (have, operand))
    if not numbers and not (isinstance(have, str) and isinstance(operand, str)):
        return False
    return {"$gt": have > operand, "$gte": have >= operand,
            "$lt": have < operand, "$lte": have <= operand}[op]


def meets(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    """A namespace meets a prefix or suffix condition (``*`` is any one label)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        part = namespace[:len(path)]
    elif condition.match_type == "suffix":
        part = namespace[len(namespace) - len(path):]
    else:
        raise ValueError(f"unsupported match type {condition.match_type!r}")
    return all(p == "*" or p == n for n, p in zip(part, path, strict=True))


def literal_prefix(conditions: Iterable[MatchCondition]) -> tuple[str, ...]:
    """The longest wildcard-free start the prefix conditions fix (what the API filters by)."""
    best: tuple[str, ...] = ()
    for condition in conditions:
        if condition.match_type == "prefix":
            labels = tuple(condition.path)
            cut = labels.index("*") if "*" in labels else len(labels)
            best = max(best, labels[:cut], key=len)
    return best

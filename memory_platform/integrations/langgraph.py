"""LangGraph long-term memory on the memory platform: :class:`MemoryStore`, a
``langgraph.store.base.BaseStore`` over the platform's Python client.

    from memory_platform.integrations.langgraph import MemoryStore

    store = MemoryStore.connect("http://127.0.0.1:8080", api_key="mp_...")
    graph = builder.compile(store=store)         # nodes get it as ``runtime.store``
    store.put(("users", "ada"), "drink", {"content": "Ada prefers tea"})
    store.search(("users", "ada"), query="what does Ada drink?")

``batch`` runs over :class:`~memory_platform.client.MemoryClient`, ``abatch`` over
:class:`~memory_platform.client.AsyncMemoryClient` (``connect`` makes both; the async one on
first use). As LangGraph's own stores do, a batch reads before it writes, and of several puts
to one key the last wins.

The rule: one item is one memory of the platform.

* **Audience.** A namespace whose first label is ``private``, ``team``, ``workspace`` or
  ``channel`` is written with that visibility (the label stays part of the namespace), any
  other with ``default_visibility`` (``private``; ``visibility_from_namespace=False``: always).
  Reads see what the API lets the key see: another user's private items do not exist for it.
* **Content** is only the value's searchable text, what every reader of the platform sees
  (search, the inspector, Dreaming): the put's ``index`` paths, else the first of
  ``text_fields`` the value has, else the value's JSON (``index=False``: the path ``a/b/key``).
* **Metadata** holds the item: ``{"langgraph": {"store": name, "namespace": "a.b",
  "prefixes": ["a", "a.b"], "key": key, "value": value, "createdAt": first version's time}}``
  (LangGraph forbids "." in labels). The API takes no control or invisible character in a
  metadata string: a label, key or string of the value with one (or starting ``~json:``) is
  kept as ``~json:`` and its ASCII JSON. ``get`` is one listing (``GET /memories``) filtered
  on store, namespace and key, and answers the value as put (after a JSON round trip); a
  search without ``query`` and ``list_namespaces`` page through the listing filtered on a
  prefix (``prefixes`` eq ``"a.b"``): exact and complete. The subject ref ``documentId``
  (``langgraph:a/b/key#<hash>``) keeps items of one text apart: the API deduplicates a write
  of the same text and identifying subject refs in one audience.
* **Versions.** A new value with new text corrects the memory: the old version is superseded
  and stays in the ledger's history. A new value with the same text (as the API compares:
  case and spacing aside) forgets the old memory and stores a new one: that version is NOT
  kept in the history (with a key that may not forget: through a tombstone, below, and
  kept). ``created_at`` is the first version's time, ``updated_at`` the
  current one's. Putting the value an item already has writes nothing.
* **Delete** forgets the memory. A key that may not forget (agent and runtime keys: 403
  ``person_required``) corrects it to a tombstone instead (content ``(deleted) a/b/key``,
  ``value`` null, no ``prefixes``), which reads as absent here but is still recalled by the
  platform's own search.

Limits:

* **Value filters** (``filter={"kind": "fact"}``): equality of scalars at most two fields
  deep runs on the server too (``metadata.langgraph.value.<field>``); the rest (``$ne``,
  ``$gt`` ..., deeper fields, lists) is checked here on each listed item.
* **A search with ``query``** ranks by the platform's hybrid score among the prefix's items
  (``min_score``: 0 here) and reaches the best 50 (the API's largest ``limit``): ``offset +
  limit`` past 50, or a value filter checked here that few of them meet, answers fewer.
* **list_namespaces** reads every item under the conditions' literal prefix (a request per
  200 items): no route answers the distinct values of a metadata key.
* **Writes need a person's trust.** An agent key's writes wait for review (the store warns)
  and its corrections are only proposed: use a user key, or a runtime key with
  ``context={"user_id": ...}``. Only the writer updates or deletes an item (another team
  member's put or delete is a PermissionError).
* **Size**: the text has the API's content limit (16,000 characters); the store name, the
  joined namespace and the key at most 256 characters (the filter's string bound) and the
  item's metadata about 15.5 KiB (the API's 16 KiB less its own keys), else a ValueError
  before anything is written; a value of more than about 1,990 JSON values or 28 levels is
  refused by the API (400). A value that looks like a credential is refused (422), as any
  memory is. No TTL (``supports_ttl`` is False).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from langgraph.store.base import (
    BaseStore,
    GetOp,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
    validate_op_namespace,
)

from memory_platform.client import (
    AsyncMemoryClient,
    CallerContext,
    Forbidden,
    MemoryApiError,
    MemoryClient,
    NotFound,
)
from memory_platform.integrations.langgraph_mapping import (
    TEXT_FIELDS,
    VISIBILITIES,
    Layout,
    Record,
    clean_text,
    content_of,
    literal_prefix,
    matches,
    meets,
    normalised,
    same_text,
    visibility_of,
)

PAGE = 50              # the API's largest search limit (and ids of one listing)
LIST_PAGE = 200        # the API's largest listing limit
QUERY_MAX = 2000       # the API's longest question


class _Call(NamedTuple):
    """One client method call a plan asks its driver to make."""

    name: str
    args: tuple
    kwargs: dict[str, Any]


Plan = Generator[_Call, Any, Any]
Keep = Callable[[Record], bool] | None        # the value filter checked here


class MemoryStore(BaseStore):
    """A LangGraph store whose items are memories of the platform (module doc: the rule).

    ``client`` serves ``batch``, ``aclient`` ``abatch`` (without one, ``abatch`` runs
    ``batch`` in a thread); ``name`` keeps stores of one instance apart;
    ``default_visibility`` is the audience of a namespace that names none (or of every
    namespace, ``visibility_from_namespace=False``); ``text_fields`` the value paths whose
    text is searched (None: the whole value); ``min_score`` the least score of a ``query``
    search's hit; ``context`` the conversation context every request claims (a runtime key:
    ``{"user_id": ...}``); ``concurrency`` the requests one ``abatch`` has in flight."""

    supports_ttl = False

    def __init__(self, client: MemoryClient | None = None, *,
                 aclient: AsyncMemoryClient | None = None, name: str = "langgraph",
                 default_visibility: str = "private", visibility_from_namespace: bool = True,
                 text_fields: Sequence[str] | None = TEXT_FIELDS, min_score: float = 0.0,
                 context: CallerContext | dict[str, Any] | None = None,
                 concurrency: int = 8) -> None:
        if client is None and aclient is None:
            raise ValueError("MemoryStore needs a MemoryClient or an AsyncMemoryClient")
        if default_visibility not in VISIBILITIES:
            raise ValueError(f"default_visibility must be one of {', '.join(VISIBILITIES)}")
        self._client, self._aclient, self._connect = client, aclient, None
        self._aloop: asyncio.AbstractEventLoop | None = None
        self._layout = Layout(name)
        self._default = default_visibility
        self._from_namespace = visibility_from_namespace
        self._fields = text_fields
        self._min_score = min_score
        self._context = context
        self._concurrency = concurrency

    @classmethod
    def connect(cls, base_url: str, api_key: str | None = None, *, timeout: float = 30.0,
                **options: Any) -> MemoryStore:
        """A store over a sync client now and an async one on first ``abatch`` (in each
        event loop it runs in)."""
        store = cls(MemoryClient(base_url, api_key, timeout=timeout), **options)
        store._connect = (base_url, api_key, timeout)
        return store

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    async def aclose(self) -> None:
        """Close both clients (one ``connect`` made in another, finished loop is dropped)."""
        self.close()
        if self._aclient is not None and self._aloop in (None, asyncio.get_running_loop()):
            await self._aclient.aclose()
        if self._connect is not None:
            self._aclient = self._aloop = None

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- batches ---------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self._client is None:
            raise RuntimeError("this MemoryStore has only an async client: use abatch")
        ops, reads, puts = _schedule(ops)
        results: list[Result] = [None] * len(ops)
        for i, op in reads:
            results[i] = _drive(self._client, self._read(op))
        for op in puts:
            _drive(self._client, self._put(op))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        loop = asyncio.get_running_loop()
        if self._connect is not None and (self._aclient is None or self._aloop is not loop):
            url, key, timeout = self._connect        # an httpx pool serves one event loop
            self._aclient, self._aloop = AsyncMemoryClient(url, key, timeout=timeout), loop
        if self._aclient is None:
            return await asyncio.to_thread(self.batch, list(ops))
        ops, reads, puts = _schedule(ops)
        limit = asyncio.Semaphore(self._concurrency)

        async def run(plan: Plan) -> Any:
            async with limit:
                return await _adrive(self._aclient, plan)

        results: list[Result] = [None] * len(ops)
        found = await asyncio.gather(*(run(self._read(op)) for _, op in reads))
        for (i, _), result in zip(reads, found, strict=True):
            results[i] = result
        await asyncio.gather(*(run(self._put(op)) for op in puts))
        return results

    # -- plans: what one op asks of the API (driven by _drive or _adrive) ---------------------

    def _ask(self, name: str, *args: Any, **kwargs: Any) -> _Call:
        return _Call(name, args, {**kwargs, "context": self._context})

    def _read(self, op: Op) -> Plan:
        if isinstance(op, GetOp):
            record = yield from self._find(tuple(op.namespace), str(op.key))
            return None if record is None or record.deleted else record.item()
        if isinstance(op, SearchOp):
            return (yield from self._search(op))
        conditions = tuple(op.match_conditions or ())
        where = self._layout.prefix_filter(literal_prefix(conditions))
        records = yield from self._list(where, None, None)
        found = {r.namespace for r in records if all(meets(r.namespace, c) for c in conditions)}
        if op.max_depth is not None:
            found = {ns[:op.max_depth] for ns in found}
        return sorted(found)[op.offset:op.offset + op.limit]

    def _find(self, namespace: tuple[str, ...], key: str) -> Plan:
        """The item's current memory (the newest, should two writers have raced)."""
        page = yield self._ask("list_memories", limit=1,
                               filter=self._layout.item_filter(namespace, key))
        return next(filter(None, map(self._layout.decode, page.memories)), None)

    def _list(self, where: dict[str, Any], want: int | None, keep: Keep) -> Plan:
        """The items the filter lists, newest first: the first ``want`` (None: all)."""
        found: list[Record] = []
        seen: set = set()
        size = LIST_PAGE if want is None or keep else min(LIST_PAGE, want)
        cursor = None
        while want is None or len(found) < want:
            page = yield self._ask("list_memories", filter=where, limit=size, cursor=cursor)
            found += _fresh(map(self._layout.decode, page.memories), seen, keep)
            if not (cursor := page.next_cursor):
                break
        return found[:want]

    def _search(self, op: SearchOp) -> Plan:
        if op.limit <= 0:
            return []
        where = self._layout.prefix_filter(tuple(op.namespace_prefix), op.filter)
        want = op.offset + op.limit
        keep = (lambda r: matches(r.value, op.filter)) if op.filter else None
        if not op.query:
            records = yield from self._list(where, want, keep)
            return [r.item(searched=True) for r in records[op.offset:]]
        hits = (yield self._ask("search", op.query[:QUERY_MAX], filter=where,
                                limit=PAGE if keep else min(PAGE, want),
                                min_score=self._min_score)).results
        ids = list(dict.fromkeys(hit.id for hit in hits))        # rank order
        if not ids:
            return []
        listed = yield self._ask("list_memories", ids=ids, limit=len(ids))
        records = {m.id: self._layout.decode(m) for m in listed.memories}
        scores = {hit.id: hit.score for hit in reversed(hits)}   # each memory's best
        ranked = _fresh((records.get(i) for i in ids), set(), keep)
        return [r.item(scores[r.memory_id], searched=True) for r in ranked[op.offset:want]]

    def _put(self, op: PutOp) -> Plan:
        if op.ttl is not None:
            raise NotImplementedError("MemoryStore does not support TTL")
        namespace, key = tuple(op.namespace), str(op.key)
        current = yield from self._find(namespace, key)
        live = current is not None and not current.deleted
        if op.value is None:
            if live:
                yield from self._delete(current)
            return None
        value = normalised(op.value)
        if live and current.value == value:
            return None                                  # unchanged: nothing to write
        content = content_of(namespace, key, value, op.index, self._fields)
        metadata = self._layout.metadata(namespace, key, value,
                                         current.created_at if live else None)
        if live and same_text(current.content, content):   # a correction must say anew
            current = yield from self._delete(current)
        if current is not None:
            yield from self._correct(current, content, metadata)
            return None
        stored = yield self._ask(
            "store", content, metadata=metadata,
            visibility=visibility_of(namespace, self._default, self._from_namespace),
            subject_refs=self._layout.item_refs(namespace, key))
        if stored.assertion_status not in (None, "active"):
            warnings.warn(f"the memory of {namespace}/{key} is {stored.assertion_status}: "
                          "it waits for review and is not recalled until approved (an "
                          "agent key's writes); use a user or runtime key", stacklevel=2)
        return None

    def _correct(self, current: Record, content: str, metadata: dict[str, Any]) -> Plan:
        try:
            corrected = yield self._ask("correct", current.memory_id, content,
                                        metadata=metadata)
        except NotFound:
            raise PermissionError(f"{current.namespace}/{current.key} was written by "
                                  "another user: only its writer changes it") from None
        if corrected.status != "corrected":
            warnings.warn(f"the change of {current.namespace}/{current.key} is "
                          f"{corrected.status}: it waits for a person's review (an agent "
                          "key's correction)", stacklevel=2)
        return corrected

    def _delete(self, current: Record) -> Plan:
        """Forget the item's memory (None), or correct it to a tombstone (returned) when
        the key may not forget."""
        try:
            yield _Call("forget", (current.memory_id,), {})
            return None
        except NotFound:
            raise PermissionError(f"{current.namespace}/{current.key} was written by "
                                  "another user: only its writer deletes it") from None
        except Forbidden:                       # an agent or runtime key: a tombstone instead
            text = "(deleted) " + clean_text("/".join((*current.namespace, current.key)))
            corrected = yield from self._correct(current, text, self._layout.metadata(
                current.namespace, current.key, None, current.created_at))
            return replace(current, memory_id=corrected.id, value=None, content=text)


def _fresh(records: Iterable[Record | None], seen: set, keep: Keep) -> list[Record]:
    """The live records that ``keep`` accepts, each item once (its first, newest record)."""
    found = []
    for record in records:
        if record is None or record.deleted or (record.namespace, record.key) in seen:
            continue
        seen.add((record.namespace, record.key))
        if keep is None or keep(record):
            found.append(record)
    return found


def _schedule(ops: Iterable[Op]) -> tuple[list[Op], list[tuple[int, Op]], list[PutOp]]:
    """The batch's reads (with their places) and its puts, the last put of a key winning."""
    ops = list(ops)
    reads, puts = [], {}
    for i, op in enumerate(ops):
        if not isinstance(op, GetOp | SearchOp | ListNamespacesOp | PutOp):
            raise ValueError(f"unknown operation {type(op).__name__}")
        validate_op_namespace(op)
        if isinstance(op, PutOp):
            puts.pop((tuple(op.namespace), op.key), None)
            puts[(tuple(op.namespace), op.key)] = op
        else:
            reads.append((i, op))
    return ops, reads, list(puts.values())


def _drive(client: MemoryClient, plan: Plan) -> Any:
    """Run a plan with the sync client: each call's answer (or API error) goes back in."""
    answer, error = None, None
    while True:
        try:
            call = plan.throw(error) if error else plan.send(answer)
        except StopIteration as done:
            return done.value
        try:
            answer, error = getattr(client, call.name)(*call.args, **call.kwargs), None
        except MemoryApiError as exc:
            answer, error = None, exc


async def _adrive(client: AsyncMemoryClient, plan: Plan) -> Any:
    answer, error = None, None
    while True:
        try:
            call = plan.throw(error) if error else plan.send(answer)
        except StopIteration as done:
            return done.value
        try:
            answer, error = await getattr(client, call.name)(*call.args, **call.kwargs), None
        except MemoryApiError as exc:
            answer, error = None, exc

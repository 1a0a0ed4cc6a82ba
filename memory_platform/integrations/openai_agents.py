"""An OpenAI Agents SDK ``Session`` over the platform's sessions API: an agent's conversation
is stored losslessly by the platform, which compacts it and turns it into memory.

    from agents import Agent, Runner
    from memory_platform.client import AsyncMemoryClient
    from memory_platform.integrations.openai_agents import MemorySession

    async with AsyncMemoryClient("http://localhost:8080", api_key="mpk_...") as memory:
        session = MemorySession("support:ada-42", memory)
        await Runner.run(agent, "Hi, I'm Ada.", session=session)
        await Runner.run(agent, "What is my name?", session=session)   # sees the first turn

How the SDK's history maps onto the platform (``pip install 'memory-platform[agents]'``):

* ``session_id`` is the platform's session key. With a runtime key, name the user the agent
  acts for (``user_id``); with a user key the session is that user's.
* :meth:`MemorySession.add_items` appends each item as a turn item: ``raw`` is the item
  exactly (read back by :meth:`get_items`), ``content`` the text the platform searches,
  summarises and draws memories from, ``role`` the platform's (a function call and
  reasoning are the assistant's, a tool's output is ``tool``, ``developer`` is ``system``),
  ``metadata`` the tool name and call id. Each item's ``clientItemId`` is a hash of the item
  and of the id of the item before it, so a retried add (the client's retry of a lost
  answer, or calling ``add_items`` again on the same session object after it raised) adds
  nothing twice, while the same message said again later is a new item (the chain is this
  object's: two writers of one session should not add the same item after the same one).
  An item holding a credential is refused (``MemoryApiError`` 422; nothing of its append
  is stored).
* :meth:`get_items` reads the items back in order (the newest ``limit`` in one request);
  items another client wrote without a raw form come back as ``{"role", "content"}``.
* :meth:`pop_item` removes the newest item this user wrote, with what the platform derived
  from it; an item a summary covers already cannot be popped (``Conflict`` 409
  ``item_compacted``). :meth:`clear_session` removes every item of this user in the session
  and what was derived from them. An agent key can do neither (403 ``person_required``).
* Runs: by default every ``add_items`` is a run of its own, completed at once (the platform
  then considers compaction and memory). :meth:`start_run` groups the adds of one turn into
  one run until :meth:`complete_run`.

Imports only the platform's client (and the SDK): it runs beside an agent without the
server's dependencies.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from typing import Any

from agents.memory.session_settings import (
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)

from memory_platform.client import AsyncMemoryClient, NotFound, models

ITEM_ID_PREFIX = "oai:"
APPEND_BATCH = 100          # items per append request (the API takes 500 by default)
PAGE_SIZE = 200             # items per read (the API's most)
CONTENT_MAX_CHARS = 100_000  # the API's default MEMORY_SESSION_ITEM_MAX_CHARS
_UNKNOWN = object()

_ROLES = {"user": "user", "assistant": "assistant", "system": "system",
          "developer": "system"}
_TEXT_PARTS = ("text", "refusal", "transcript")


def item_role(item: dict[str, Any]) -> str:
    """The platform's role of an SDK item."""
    role = item.get("role")
    if isinstance(role, str) and role in _ROLES:
        return _ROLES[role]
    kind = str(item.get("type") or "")
    return "tool" if kind.endswith("_output") else "assistant"


def _parts_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for part in value:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                texts += [part[k] for k in _TEXT_PARTS if isinstance(part.get(k), str)]
        return "\n".join(t for t in texts if t)
    return ""


def item_text(item: dict[str, Any], max_chars: int = CONTENT_MAX_CHARS) -> str:
    """The text of an SDK item the platform searches and remembers (never empty)."""
    kind = str(item.get("type") or "")
    arguments = item.get("arguments", item.get("input"))
    if kind.endswith("_call") and isinstance(arguments, str):
        text = f"{item.get('name') or kind}({arguments})"
    elif kind.endswith("_output"):
        text = _parts_text(item.get("output"))
    elif kind == "reasoning":
        text = _parts_text(item.get("summary")) or _parts_text(item.get("content"))
    else:
        text = _parts_text(item.get("content"))
    return text[:max_chars] if text.strip() else f"[{kind or item_role(item)}]"


def _metadata(item: dict[str, Any]) -> dict[str, str] | None:
    tool = item.get("name") if isinstance(item.get("name"), str) else None
    call = item.get("call_id") if isinstance(item.get("call_id"), str) else None
    found = {"tool": tool, "toolCallId": call}
    return {k: v[:200] for k, v in found.items() if v} or None


def plain_item(item: Any) -> dict[str, Any]:
    """The item as JSON has it, in its own key order (a model dumped, tuples as lists): what
    is stored and read back."""
    if hasattr(item, "model_dump"):
        item = item.model_dump(mode="json", exclude_unset=True, by_alias=True)
    plain = json.loads(json.dumps(item, ensure_ascii=False, allow_nan=False))
    if not isinstance(plain, dict):
        raise TypeError(f"a session item is a JSON object, not {type(item).__name__}")
    return plain


def _canonical(item: Any) -> str:
    return json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def client_item_id(item: dict[str, Any], previous: str | None) -> str:
    """The item's ``clientItemId``: a hash of the item and of the id of the item before it
    (the same add repeated is the same id; the same item said again later is not)."""
    digest = hashlib.sha256(f"{previous or ''}\0{_canonical(item)}".encode()).hexdigest()
    return ITEM_ID_PREFIX + digest[:48]


def _item_of(stored: models.SessionItemOut) -> dict[str, Any]:
    if stored.raw is not None:
        return stored.raw
    role = stored.role if stored.role in ("user", "assistant", "system") else "assistant"
    return {"role": role, "content": stored.content}


def _id_of(stored: models.SessionItemOut) -> str:
    return stored.client_item_id or stored.id


class MemorySession:
    """The Agents SDK's ``Session`` protocol over :class:`AsyncMemoryClient` (see the
    module docstring). The client is the caller's: closing it is theirs too."""

    session_settings: SessionSettings | None = None

    def __init__(self, session_id: str, client: AsyncMemoryClient, *,
                 user_id: str | None = None,
                 context: models.CallerContext | dict[str, Any] | None = None,
                 run_id: str | None = None,
                 session_settings: SessionSettings | dict[str, Any] | None = None,
                 content_max_chars: int = CONTENT_MAX_CHARS) -> None:
        self.session_id = session_id
        self.client = client
        self.run_id = run_id
        self.session_settings = (coerce_session_settings(session_settings)
                                 if session_settings is not None else SessionSettings())
        ctx = (context.model_dump(exclude_none=True)
               if isinstance(context, models.CallerContext) else dict(context or {}))
        if user_id is not None:
            ctx["user_id"] = user_id
        self._context = ctx or None
        self._content_max_chars = content_max_chars
        # The id of the newest item as this object last wrote it (or read it before its
        # first add); changed only by its own writes, so an add retried after it raised
        # chains its ids off the same item and adds nothing twice, whatever was read between.
        self._newest: Any = _UNKNOWN
        self._lock = asyncio.Lock()

    # -- the Session protocol --------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The session's items in order, exactly as added; the newest ``limit`` (default:
        ``session_settings.limit``; None: all)."""
        limit = resolve_session_limit(limit, self.session_settings)
        if limit is not None and limit <= 0:
            return []
        stored: list[models.SessionItemOut] = []
        if limit is None:
            async for item in self.client.iter_items(self.session_id, page_size=PAGE_SIZE,
                                                     context=self._context):
                stored.append(item)
        else:
            before = None       # the first page is the newest, then back from there
            while len(stored) < limit:
                page = await self.client.items(
                    self.session_id, limit=min(limit - len(stored), PAGE_SIZE),
                    before_seq=before, context=self._context)
                stored[:0] = page.items
                if page.next_before_seq is None:
                    break
                before = page.next_before_seq
        return [_item_of(s) for s in stored]

    async def add_items(self, items: list[Any]) -> None:
        """Append ``items`` (each once, whatever is retried), in order."""
        if not items:
            return
        async with self._lock:
            previous = await self._newest_id()
            turns = []
            for item in items:
                plain = plain_item(item)
                ident = client_item_id(plain, previous)
                turns.append(models.SessionItemIn(
                    role=item_role(plain), content=item_text(plain, self._content_max_chars),
                    client_item_id=ident, metadata=_metadata(plain), raw=plain))
                previous = ident
            for start in range(0, len(turns), APPEND_BATCH):
                await self.client.append(self.session_id, turns[start:start + APPEND_BATCH],
                                         run_id=self.run_id, context=self._context)
            self._newest = previous

    async def pop_item(self) -> Any | None:
        """Remove and answer the newest item this user added (None: there is none)."""
        async with self._lock:
            try:
                popped = await self.client.pop_item(self.session_id, context=self._context)
            except NotFound:
                return None
            self._newest = _UNKNOWN
            return _item_of(popped.item)

    async def clear_session(self) -> None:
        """Remove every item this user added to the session (and what the platform derived
        from them)."""
        async with self._lock:
            await self.client.clear_items(self.session_id, context=self._context)
            self._newest = _UNKNOWN

    # -- runs ------------------------------------------------------------------------------
    def start_run(self, run_id: str | None = None) -> str:
        """Group the following adds into one run (a turn) until :meth:`complete_run`."""
        self.run_id = run_id or f"run:{uuid.uuid4()}"
        return self.run_id

    async def complete_run(self, *, prompt_tokens: int | None = None,
                           context_budget_tokens: int | None = None
                           ) -> models.RunCompletionResponse | None:
        """Complete the current run (the platform then compacts and remembers when due);
        None when no run is open or nothing was added to it."""
        run_id, self.run_id = self.run_id, None
        if run_id is None:
            return None
        try:
            return await self.client.complete(
                self.session_id, run_id, prompt_tokens=prompt_tokens,
                context_budget_tokens=context_budget_tokens, context=self._context)
        except NotFound:           # nothing was added in it: no run to complete
            return None

    # -- helpers ---------------------------------------------------------------------------
    async def _newest_id(self) -> str | None:
        if self._newest is _UNKNOWN:
            page = await self.client.items(self.session_id, limit=1, context=self._context)
            self._newest = _id_of(page.items[-1]) if page.items else None
        return self._newest


"""The sync and the async client: one HTTP call per method, the answer as its model.

    from memory_platform.client import MemoryClient

    with MemoryClient("http://localhost:8080", api_key="mp_...") as memory:
        memory.store("Ada prefers tea", subject_refs={"taskId": "onboarding"})
        for hit in memory.search("what does Ada drink?").results:
            print(hit.score, hit.content)

Every call has a timeout (``timeout``, seconds; default 30), is retried by the rule of
:mod:`memory_platform.client.retrying`, and raises :class:`MemoryApiError` (a subclass per
status) with the API's code and message when the API refuses it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from itertools import count
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from memory_platform.client import models as m
from memory_platform.client.errors import MemoryConnectionError, api_error, retry_after_seconds
from memory_platform.client.methods import Context, Methods
from memory_platform.client.operations import OPERATIONS, PROBES, Operation, body_of, is_safe
from memory_platform.client.retrying import RetryPolicy, should_retry

DEFAULT_TIMEOUT = 30.0
USER_AGENT = "memory-platform-client/1"


@dataclass(frozen=True)
class _Call:
    operation: Operation
    url: str
    params: dict[str, str] | None
    json: Any
    safe: bool


class _Base(Methods):
    def __init__(self, base_url: str, api_key: str | None, timeout: float,
                 retry: RetryPolicy | None) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self._headers = {"User-Agent": USER_AGENT}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._timeout = timeout

    @staticmethod
    def _call(name: str, path: dict[str, Any] | None, query: dict[str, str] | None,
              body: BaseModel | None) -> _Call:
        op = OPERATIONS[name]
        url = op.path.format(**{k: quote(str(v), safe="") for k, v in (path or {}).items()})
        return _Call(op, url, query or None, body_of(body) if body is not None else None,
                     is_safe(op, body))

    def _wait_after(self, call: _Call, attempt: int, response: httpx.Response) -> float | None:
        """Seconds to wait before trying ``call`` again, or None: its answer stands."""
        if not should_retry(self.retry, attempt, call.safe, response):
            return None
        return self.retry.delay(attempt, retry_after_seconds(response))

    def _wait_after_failure(self, call: _Call, attempt: int, exc: httpx.TransportError) -> float:
        """Seconds to wait before trying ``call`` again after no answer; raises when it is
        not tried again."""
        if not should_retry(self.retry, attempt, call.safe, None):
            raise MemoryConnectionError(f"{call.operation.method} {call.url}: "
                                        f"{type(exc).__name__}: {exc}") from exc
        return self.retry.delay(attempt, None)

    @staticmethod
    def _answer(call: _Call, response: httpx.Response) -> Any:
        if response.is_error:
            raise api_error(response)
        return call.operation.response.model_validate(response.json())


class MemoryClient(_Base):
    """The API over HTTP, one blocking call per method (see :mod:`.methods` for them)."""

    def __init__(self, base_url: str, api_key: str | None = None, *,
                 timeout: float = DEFAULT_TIMEOUT, retry: RetryPolicy | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        super().__init__(base_url, api_key, timeout, retry)
        self._http = httpx.Client(base_url=self.base_url, headers=self._headers,
                                  timeout=timeout, transport=transport)

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, name: str, *, path: dict[str, Any] | None = None,
              query: dict[str, str] | None = None, body: BaseModel | None = None) -> Any:
        call = self._call(name, path, query, body)
        for attempt in count(1):
            try:
                response = self._http.request(call.operation.method, call.url,
                                              params=call.params, json=call.json)
            except httpx.TransportError as exc:
                time.sleep(self._wait_after_failure(call, attempt, exc))
                continue
            wait = self._wait_after(call, attempt, response)
            if wait is None:
                return self._answer(call, response)
            time.sleep(wait)

    def healthz(self) -> dict[str, Any]:
        return self._probe("healthz")

    def readyz(self) -> dict[str, Any]:
        return self._probe("readyz")

    def _probe(self, name: str) -> dict[str, Any]:
        response = self._http.get(PROBES[name])
        if response.is_error:
            raise api_error(response)
        return response.json()

    # -- pagination ------------------------------------------------------------------------

    def iter_events(self, *, after: str | None = None, page_size: int | None = None,
                    kinds: list[str] | str | None = None,
                    context: Context = None) -> Iterator[m.EventOut]:
        """Every event after ``after``, page by page, until the newest."""
        while True:
            page = self.events(after=after, limit=page_size, kinds=kinds, context=context)
            yield from page.events
            if not page.events:
                return
            after = page.next_cursor

    def iter_memories(self, *, page_size: int | None = None,
                      **filters: Any) -> Iterator[m.MemoryOut]:
        """Every memory the caller may recall (the filters of :meth:`list_memories`)."""
        cursor = None
        while True:
            page = self.list_memories(limit=page_size, cursor=cursor, **filters)
            yield from page.memories
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def iter_review_queue(self, *, page_size: int | None = None,
                          **filters: Any) -> Iterator[dict[str, Any]]:
        """Every item of the review queue (the filters of :meth:`review_queue`)."""
        cursor = None
        while True:
            page = self.review_queue(limit=page_size, cursor=cursor, **filters)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def iter_items(self, session_key: str, *, page_size: int | None = None,
                   context: Context = None) -> Iterator[m.SessionItemOut]:
        """Every item of the session the caller may read, oldest first."""
        after = -1
        while True:
            page = self.items(session_key, limit=page_size, after_seq=after, context=context)
            yield from page.items
            if page.next_after_seq is None:
                return
            after = page.next_after_seq

    def iter_grep(self, pattern: str, *, page_size: int | None = None,
                  **options: Any) -> Iterator[m.GrepHitOut]:
        """Every message matching ``pattern`` (the options of :meth:`grep`), newest first."""
        before = None
        while True:
            page = self.grep(pattern, limit=page_size, before=before, **options)
            yield from page.results
            if not page.next_before:
                return
            before = page.next_before


class AsyncMemoryClient(_Base):
    """The async twin of :class:`MemoryClient`: every method is awaited."""

    def __init__(self, base_url: str, api_key: str | None = None, *,
                 timeout: float = DEFAULT_TIMEOUT, retry: RetryPolicy | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        super().__init__(base_url, api_key, timeout, retry)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self._headers,
                                       timeout=timeout, transport=transport)

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, name: str, *, path: dict[str, Any] | None = None,
                    query: dict[str, str] | None = None, body: BaseModel | None = None) -> Any:
        call = self._call(name, path, query, body)
        for attempt in count(1):
            try:
                response = await self._http.request(call.operation.method, call.url,
                                                    params=call.params, json=call.json)
            except httpx.TransportError as exc:
                await asyncio.sleep(self._wait_after_failure(call, attempt, exc))
                continue
            wait = self._wait_after(call, attempt, response)
            if wait is None:
                return self._answer(call, response)
            await asyncio.sleep(wait)

    async def healthz(self) -> dict[str, Any]:
        return await self._probe("healthz")

    async def readyz(self) -> dict[str, Any]:
        return await self._probe("readyz")

    async def _probe(self, name: str) -> dict[str, Any]:
        response = await self._http.get(PROBES[name])
        if response.is_error:
            raise api_error(response)
        return response.json()

    async def iter_events(self, *, after: str | None = None, page_size: int | None = None,
                          kinds: list[str] | str | None = None,
                          context: Context = None) -> AsyncIterator[m.EventOut]:
        while True:
            page = await self.events(after=after, limit=page_size, kinds=kinds,
                                     context=context)
            for event in page.events:
                yield event
            if not page.events:
                return
            after = page.next_cursor

    async def iter_memories(self, *, page_size: int | None = None,
                            **filters: Any) -> AsyncIterator[m.MemoryOut]:
        cursor = None
        while True:
            page = await self.list_memories(limit=page_size, cursor=cursor, **filters)
            for memory in page.memories:
                yield memory
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def iter_review_queue(self, *, page_size: int | None = None,
                                **filters: Any) -> AsyncIterator[dict[str, Any]]:
        cursor = None
        while True:
            page = await self.review_queue(limit=page_size, cursor=cursor, **filters)
            for item in page.items:
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def iter_items(self, session_key: str, *, page_size: int | None = None,
                         context: Context = None) -> AsyncIterator[m.SessionItemOut]:
        after = -1
        while True:
            page = await self.items(session_key, limit=page_size, after_seq=after,
                                    context=context)
            for item in page.items:
                yield item
            if page.next_after_seq is None:
                return
            after = page.next_after_seq

    async def iter_grep(self, pattern: str, *, page_size: int | None = None,
                        **options: Any) -> AsyncIterator[m.GrepHitOut]:
        before = None
        while True:
            page = await self.grep(pattern, limit=page_size, before=before, **options)
            for hit in page.results:
                yield hit
            if not page.next_before:
                return
            before = page.next_before

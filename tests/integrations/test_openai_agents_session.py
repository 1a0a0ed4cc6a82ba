"""The OpenAI Agents SDK session (memory_platform/integrations/openai_agents.py) against the
real API on loopback, and the SDK's own ``Runner`` with a model served by the project's
scripted OpenAI-compatible server (also on loopback). No mocks: a retried add meets a real
lost answer (a loopback proxy that forwards the request and hangs up before the answer)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import pytest
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
from openai import AsyncOpenAI

from memory_platform.client import (
    NO_RETRY,
    AsyncMemoryClient,
    Forbidden,
    MemoryConnectionError,
)
from memory_platform.foundation.settings import PROJECT_ROOT
from memory_platform.integrations.openai_agents import MemorySession
from tests.client.conftest import READ, WRITE
from tests.support import openai_server as scripted
from tests.support.openai_server import RecordedRequest, ScriptedOpenAIServer, answer_chat

openai_server_session = scripted.openai_server_session
openai_server = scripted.openai_server

EXAMPLE = PROJECT_ROOT / "examples" / "openai_agents_session.py"

# Items of every kind a run produces, as the SDK hands them over (Responses input items).
ITEMS: list[dict[str, Any]] = [
    {"role": "developer", "content": "Answer in German."},
    {"role": "user", "content": "Wie spät ist es in Zürich?\nBitte kurz."},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text",
                                                     "text": "Call the clock tool."}]},
    {"type": "function_call", "call_id": "call_7", "name": "clock",
     "arguments": "{\"city\": \"Zürich\"}", "id": "fc_1", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_7", "output": "09:41"},
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Es ist 09:41.", "annotations": [],
                  "logprobs": []}]},
    {"role": "user", "content": [{"type": "input_text", "text": "Danke 🙏"}]},
]


def run(coroutine_function, *args: Any) -> Any:
    return anyio.run(coroutine_function, *args)


def tag() -> str:
    return uuid.uuid4().hex[:8]


class LosingProxy:
    """A loopback TCP proxy in front of the API. Once armed, it forwards the next request
    whose head holds ``marker`` and hangs up instead of passing its answer on: the server
    did the work, the client got no answer (a real lost answer, as after a network cut)."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname, parts.port)
        self.marker: bytes | None = None
        self.lost = 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: asyncio.base_events.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    def arm(self, marker: str) -> None:
        self.marker = marker.encode()

    def __enter__(self) -> LosingProxy:
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._connection, "127.0.0.1", 0), self.loop).result(10)
        return self

    def __exit__(self, *_: object) -> None:
        async def stop() -> None:
            assert self.server is not None
            self.server.close()
        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        losing = asyncio.Event()

        async def requests() -> None:
            while data := await reader.read(65536):
                if self.marker is not None and self.marker in data:
                    self.marker = None
                    losing.set()
                up_writer.write(data)
                await up_writer.drain()
            up_writer.close()

        async def answers() -> None:
            while data := await up_reader.read(65536):
                if losing.is_set():
                    self.lost += 1
                    writer.close()
                    up_writer.close()
                    return
                writer.write(data)
                await writer.drain()
            writer.close()

        try:
            await asyncio.gather(requests(), answers())
        except (ConnectionError, OSError):
            writer.close()


@pytest.fixture
def proxy(live_api) -> Iterator[LosingProxy]:
    with LosingProxy(live_api.url) as losing:
        yield losing


# --- the Session protocol ---------------------------------------------------------------------
def test_items_of_every_kind_come_back_exactly_in_order(live_api, keys):
    user, session_id = f"ada-{tag()}", f"agents:{tag()}"

    async def main() -> None:
        async with AsyncMemoryClient(live_api.url, keys(user, (READ, WRITE))) as memory:
            session = MemorySession(session_id, memory)
            await session.add_items(ITEMS[:3])
            await session.add_items(ITEMS[3:])
            assert await session.get_items() == ITEMS
            assert await MemorySession(session_id, memory).get_items() == ITEMS
            stored = (await memory.items(session_id)).items
            assert [s.role for s in stored] == ["system", "user", "assistant", "assistant",
                                                "tool", "assistant", "user"]
            assert [s.content for s in stored] == [
                "Answer in German.", "Wie spät ist es in Zürich?\nBitte kurz.",
                "Call the clock tool.", 'clock({"city": "Zürich"})', "09:41",
                "Es ist 09:41.", "Danke 🙏"]
            assert stored[3].metadata == {"tool": "clock", "toolCallId": "call_7"}
            assert stored[4].metadata == {"toolCallId": "call_7"}
            assert len({s.client_item_id for s in stored}) == len(ITEMS)

    run(main)


def test_get_items_limit_pop_item_and_clear_session(live_api, keys):
    user, session_id = f"ada-{tag()}", f"agents:{tag()}"
    turns = [{"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n}"}
             for n in range(5)]

    async def main() -> None:
        async with AsyncMemoryClient(live_api.url, keys(user, (READ, WRITE))) as memory:
            session = MemorySession(session_id, memory)
            assert await session.get_items() == [] and await session.pop_item() is None
            await session.add_items(turns)
            assert await session.get_items(limit=2) == turns[-2:]
            assert await session.get_items(limit=50) == turns
            assert await session.get_items(limit=0) == []
            limited = MemorySession(session_id, memory, session_settings={"limit": 3})
            assert await limited.get_items() == turns[-3:]

            assert await session.pop_item() == turns[-1]
            assert await session.get_items() == turns[:-1]
            # The same item added again after a pop is a new item (its id is free again).
            await session.add_items([turns[-1]])
            assert await session.get_items() == turns

            await session.clear_session()
            assert await session.get_items() == []
            assert (await memory.items(session_id)).items == []
            await session.add_items(turns[:1])
            assert await session.get_items() == turns[:1]

    run(main)


def test_an_add_repeated_after_a_lost_answer_stores_each_item_once(live_api, keys, proxy):
    user, session_id = f"ada-{tag()}", f"agents:{tag()}"
    first = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}]
    second = [{"role": "user", "content": "Hello"}]      # the same words, said again

    append = f"POST /api/v1/sessions/{quote(session_id, safe='')}/items"

    async def main() -> None:
        token = keys(user, (READ, WRITE))
        async with AsyncMemoryClient(proxy.url, token) as retrying, \
                AsyncMemoryClient(proxy.url, token, retry=NO_RETRY) as once:
            # The client's own retry: the answer is lost, the append is sent again.
            proxy.arm(append)
            await MemorySession(session_id, retrying).add_items(first)
            assert proxy.lost == 1
            # The caller's retry: add_items raised, and is called again with the same items.
            session = MemorySession(session_id, once)
            await session.get_items()
            proxy.arm(append)
            with pytest.raises(MemoryConnectionError):
                await session.add_items(second)
            assert proxy.lost == 2
            assert await session.get_items() == first + second    # it was stored
            await session.add_items(second)
            assert await session.get_items() == first + second
            # Said once more, on purpose: a new item.
            await session.add_items(second)
            assert await session.get_items() == first + second + second

    run(main)


def test_other_users_get_nothing_and_remove_nothing(live_api, keys):
    ada, bob, session_id = f"ada-{tag()}", f"bob-{tag()}", f"agents:{tag()}"
    runtime = keys(None, (READ, WRITE), runtime=True)

    async def main() -> None:
        async with AsyncMemoryClient(live_api.url, keys(ada, (READ, WRITE))) as mine, \
                AsyncMemoryClient(live_api.url, keys(bob, (READ, WRITE))) as theirs, \
                AsyncMemoryClient(live_api.url, keys(ada, (READ, WRITE), agent=True)) as agent, \
                AsyncMemoryClient(live_api.url, runtime) as trusted:
            await MemorySession(session_id, mine).add_items(ITEMS[:2])
            foreign = MemorySession(session_id, theirs)
            for call in (foreign.get_items, foreign.pop_item, foreign.clear_session,
                         lambda: foreign.add_items(ITEMS[2:3])):
                with pytest.raises(Forbidden) as refused:
                    await call()
                assert refused.value.code == "foreign_session"
            # The runtime reads for the user it acts for, and for nobody else.
            assert await MemorySession(session_id, trusted, user_id=ada).get_items() == \
                ITEMS[:2]
            assert await MemorySession(session_id, trusted, user_id=bob).get_items() == []
            with pytest.raises(Forbidden) as refused:
                await MemorySession(session_id, agent).pop_item()
            assert refused.value.code == "person_required"
            assert await MemorySession(session_id, mine).get_items() == ITEMS[:2]
            # The runtime removes for the author it names.
            assert await MemorySession(session_id, trusted, user_id=ada).pop_item() == \
                ITEMS[1]

    run(main)


# --- the SDK's Runner ---------------------------------------------------------------------------
def recalling(request: RecordedRequest):
    """A model that answers with every user message it was sent (what the session gave it)."""
    heard = [m["content"] for m in request.json["messages"] if m["role"] == "user"]
    return answer_chat(request, "I heard: " + " | ".join(str(h) for h in heard))


def test_the_sdks_runner_keeps_its_conversation_in_the_session(
        live_api, keys, openai_server: ScriptedOpenAIServer):
    user, session_id = f"ada-{tag()}", f"agents:{tag()}"
    openai_server.add_route("chat/completions", recalling)
    model = OpenAIChatCompletionsModel(
        model="scripted", openai_client=AsyncOpenAI(base_url=openai_server.base_url,
                                                    api_key="test", max_retries=0))
    agent = Agent(name="Assistant", instructions="Be brief.", model=model)
    config = RunConfig(tracing_disabled=True)

    async def main() -> None:
        async with AsyncMemoryClient(live_api.url, keys(user, (READ, WRITE))) as memory:
            session = MemorySession(session_id, memory)
            session.start_run()
            first = await Runner.run(agent, "My name is Ada.", session=session,
                                     run_config=config)
            done = await session.complete_run()
            assert done is not None and done.status == "completed"
            second = await Runner.run(agent, "What is my name?", session=session,
                                      run_config=config)
            assert first.final_output == "I heard: My name is Ada."
            assert second.final_output == "I heard: My name is Ada. | What is my name?"
            sent = openai_server.requests("chat/completions")[-1].json["messages"]
            assert {"role": "assistant", "content": first.final_output} in [
                {k: m.get(k) for k in ("role", "content")} for m in sent]
            items = await session.get_items()
            assert [i.get("role") for i in items] == ["user", "assistant"] * 2
            assert items[0] == {"content": "My name is Ada.", "role": "user"}
            assert items[1]["content"][0]["text"] == first.final_output
            stored = (await memory.items(session_id)).items
            assert stored[0].run_id == stored[1].run_id == done.run_id
            assert stored[2].run_id != done.run_id      # a run of its own, completed at once

    run(main)


def test_the_example_runs_two_turns_in_one_session(live_api, keys,
                                                   openai_server: ScriptedOpenAIServer):
    openai_server.add_route("chat/completions", recalling)
    session_id = f"agents-example:{tag()}"
    env = {**os.environ, "MEMORY_API_URL": live_api.url,
           "MEMORY_API_KEY": keys(f"ada-{tag()}", (READ, WRITE)),
           "OPENAI_BASE_URL": openai_server.base_url, "OPENAI_API_KEY": "test",
           "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    done = subprocess.run([sys.executable, str(EXAMPLE), "--session", session_id, "--clear"],
                          env=env, capture_output=True, text=True, timeout=120,
                          cwd=PROJECT_ROOT)
    assert done.returncode == 0, (done.stdout, done.stderr)
    lines = done.stdout.splitlines()
    assert "-> I heard: Hi! I'm Ada, and I take my tea with lemon. | What is my name" in \
        lines[3], done.stdout
    assert f"session {session_id!r} holds 4 items" in done.stdout
    assert "cleared; 0 items left" in done.stdout
    assert len(openai_server.requests("chat/completions")) == 2
    helped = subprocess.run([sys.executable, str(EXAMPLE), "--help"], capture_output=True,
                            text=True, timeout=60, cwd=PROJECT_ROOT)
    assert helped.returncode == 0 and "MEMORY_API_KEY" in helped.stdout

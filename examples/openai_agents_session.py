"""An OpenAI Agents SDK agent whose conversation lives in a memory-platform session.

Two ``Runner.run`` turns in one session (``MemorySession``): the second turn is given the
first from the platform (its items read back exactly), so the agent can answer from it.
The platform keeps the conversation losslessly, and compacts it and draws memories from it
in the background. The model is any OpenAI-compatible Chat Completions endpoint
(``OPENAI_BASE_URL``); tracing is off, so nothing else is contacted.

    export MEMORY_API_URL=http://127.0.0.1:8080
    export MEMORY_API_KEY=$(memory-platform keys create --user ada \\
        --scopes memory:read,memory:write --json | jq -r .token)
    export OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_API_KEY=unused
    python examples/openai_agents_session.py --model llama3.2

Needs ``pip install 'memory-platform[agents]'``. With a runtime key, name the user the
agent acts for (``--user``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

from memory_platform.client import AsyncMemoryClient
from memory_platform.integrations.openai_agents import MemorySession

INSTRUCTIONS = "You are a concise assistant. Answer from the conversation so far."


async def converse(args: argparse.Namespace, memory_url: str, memory_key: str,
                   model_url: str, model_key: str) -> int:
    model = OpenAIChatCompletionsModel(
        model=args.model, openai_client=AsyncOpenAI(base_url=model_url, api_key=model_key))
    agent = Agent(name="Assistant", instructions=INSTRUCTIONS, model=model)
    async with AsyncMemoryClient(memory_url, memory_key) as memory:
        session = MemorySession(args.session, memory, user_id=args.user)
        for number, text in enumerate((args.first, args.second), start=1):
            session.start_run()                 # one run per turn: the platform's unit
            result = await Runner.run(agent, text, session=session)
            await session.complete_run()
            print(f"turn {number}: {text}\n  -> {result.final_output}")
        items = await session.get_items()
        print(f"session {args.session!r} holds {len(items)} items")
        if args.clear:
            await session.clear_session()
            print(f"cleared; {len(await session.get_items())} items left")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Environment: MEMORY_API_URL (default http://127.0.0.1:8080), MEMORY_API_KEY "
               "(a user key with memory:read and memory:write, or a runtime key with --user), "
               "OPENAI_BASE_URL (an OpenAI-compatible endpoint, required) and OPENAI_API_KEY.")
    parser.add_argument("--session", default=f"agents-demo:{uuid.uuid4().hex[:8]}",
                        help="the session key (default: a new one)")
    parser.add_argument("--user", help="the user a runtime key acts for")
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
                        help="the chat model (default: $OPENAI_MODEL or gpt-4o-mini)")
    parser.add_argument("--first", default="Hi! I'm Ada, and I take my tea with lemon.",
                        help="what the user says in turn 1")
    parser.add_argument("--second", default="What is my name, and how do I take my tea?",
                        help="what the user asks in turn 2")
    parser.add_argument("--clear", action="store_true",
                        help="remove the session's items at the end")
    args = parser.parse_args(argv)
    memory_key, model_url = os.environ.get("MEMORY_API_KEY"), os.environ.get("OPENAI_BASE_URL")
    if not memory_key:
        parser.error("MEMORY_API_KEY is not set (a key of the memory platform)")
    if not model_url:
        parser.error("OPENAI_BASE_URL is not set (the OpenAI-compatible model endpoint)")
    set_tracing_disabled(True)
    return asyncio.run(converse(args, os.environ.get("MEMORY_API_URL", "http://127.0.0.1:8080"),
                                memory_key, model_url,
                                os.environ.get("OPENAI_API_KEY") or "unused"))


if __name__ == "__main__":
    sys.exit(main())

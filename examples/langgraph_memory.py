"""A LangGraph agent that remembers a user across threads, on the memory platform.

One StateGraph compiled with ``store=MemoryStore(...)`` and an in-memory checkpointer: each
thread has its own short-term state, the store is the long-term memory they share. Thread 1
is told a fact and stores it in the user's namespace; thread 2, a new thread_id, is asked a
question and recalls the fact by searching that namespace. Deterministic: no model is called.

    export MEMORY_API_URL=http://127.0.0.1:8080
    export MEMORY_API_KEY=$(memory-platform keys create --user ada \\
        --scopes memory:read,memory:write --json | jq -r .token)
    python examples/langgraph_memory.py --user ada

Needs ``pip install 'memory-platform[langgraph]'`` and a user key (an agent key's writes wait
for review, so thread 2 would recall nothing until a person approved them).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import uuid
from dataclasses import dataclass
from typing import TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from memory_platform.integrations.langgraph import MemoryStore

REMEMBER = "remember:"


class State(TypedDict, total=False):
    said: list[str]        # this thread's turns (short-term memory, per thread)
    reply: str
    recalled: list[str]


@dataclass
class Context:
    user_id: str


def respond(state: State, runtime: Runtime[Context]) -> State:
    """Store what the user asks to be remembered; otherwise answer from their memories."""
    namespace = ("memories", runtime.context.user_id)
    text = state["said"][-1]
    if text.lower().startswith(REMEMBER):
        fact = text[len(REMEMBER):].strip()
        key = "fact-" + hashlib.sha256(fact.encode()).hexdigest()[:12]
        runtime.store.put(namespace, key, {"content": fact, "kind": "fact"})
        return {"reply": f"Noted ({'/'.join(namespace)}/{key}).", "recalled": []}
    hits = runtime.store.search(namespace, query=text, filter={"kind": "fact"}, limit=3)
    recalled = [hit.value["content"] for hit in hits]
    reply = ("You told me: " + "; ".join(recalled)) if recalled else "I know nothing yet."
    return {"reply": reply, "recalled": recalled}


def build(store: MemoryStore):
    graph = StateGraph(State, context_schema=Context)
    graph.add_node("respond", respond)
    graph.add_edge(START, "respond")
    graph.add_edge("respond", END)
    return graph.compile(checkpointer=InMemorySaver(), store=store)


def turn(app, thread: str, user: str, text: str) -> State:
    config = {"configurable": {"thread_id": thread}}
    said = app.get_state(config).values.get("said", [])
    return app.invoke({"said": [*said, text]}, config, context=Context(user_id=user))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Environment: MEMORY_API_URL (default http://127.0.0.1:8080) and "
               "MEMORY_API_KEY (a user key with memory:read and memory:write).")
    parser.add_argument("--user", default="ada", help="the user the graph runs for "
                        "(namespace memories/<user>; default: ada)")
    parser.add_argument("--fact", default="Ada drinks green tea, never coffee.",
                        help="what thread 1 is told to remember")
    parser.add_argument("--question", default="What does Ada drink?",
                        help="what thread 2 asks")
    parser.add_argument("--forget", action="store_true",
                        help="delete the stored fact at the end")
    args = parser.parse_args(argv)
    url = os.environ.get("MEMORY_API_URL", "http://127.0.0.1:8080")
    key = os.environ.get("MEMORY_API_KEY")
    if not key:
        parser.error("MEMORY_API_KEY is not set (a user key of the memory platform)")

    with MemoryStore.connect(url, key) as store:
        app = build(store)
        first, second = f"thread-{uuid.uuid4().hex[:8]}", f"thread-{uuid.uuid4().hex[:8]}"
        told = turn(app, first, args.user, f"{REMEMBER} {args.fact}")
        print(f"thread 1 ({first}): told {args.fact!r} -> {told['reply']}")
        asked = turn(app, second, args.user, args.question)
        print(f"thread 2 ({second}): asked {args.question!r} -> {asked['reply']}")
        print(f"thread 2 recalled {len(asked['recalled'])} memory(ies) from thread 1; its own "
              f"turns: {asked['said']}")
        if args.forget:
            for item in store.search(("memories", args.user), filter={"kind": "fact"},
                                     limit=100):
                if item.value.get("content") == args.fact:
                    store.delete(item.namespace, item.key)
                    print(f"forgot {'/'.join(item.namespace)}/{item.key}")
    return 0 if args.fact in asked["recalled"] else 1


if __name__ == "__main__":
    sys.exit(main())

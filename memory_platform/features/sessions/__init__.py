"""Sessions: conversations in, memory out (docs/sessions.md).

An agent runtime (or a user) appends a session's turn items; they are stored verbatim in the
lossless context graph and recalled at once as conversation turns. Background maintenance,
never on the request path, then turns conversations into durable memory:

* ``items``        append turn items (idempotent by client item id), runs, run completion;
* ``turn_recall``  each new user and assistant item as a conversation turn of its author
                   (a ``source_type='message'`` memory with the item's id), after the append;
* ``reads``        ``memory_grep`` / ``memory_describe`` / ``memory_expand`` over the graph;
* ``state``        ``agent_session_state``: its JSON sections and the maintenance queue
                   (request, claim, the one trailing pass);
* ``runs``         the conversation context a run was said in, rebuilt for background writes;
* ``tokens``       the token estimate budgets are counted in;
* ``model``        which maintenance model a session task uses, and the call with a deadline;
* ``summarise``    the summary prompt, its quality guard, the deterministic summary (the
                   offline ``extractive`` model's answer and the fallback);
* ``assembly``     the ordered ``agent_context_items`` list, read and rewritten;
* ``compaction``   older items into leaf and condensed summaries, checkpointed per chunk;
* ``facts``        durable facts of turn items (model or offline), remember intent, trust;
* ``flush``        durable facts of recent turns into ``source_type='flush'`` memories;
* ``shared_facts`` facts of a completed run into ``source_type='fact'`` memories;
* ``maintenance``  one session's pass (shared facts, flush, compaction), the batch over the
                   due sessions, backoff, one event row per operation;
* ``metrics``      aggregates of those events (``/metrics``, the operator status).
"""

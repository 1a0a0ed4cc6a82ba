"""Retrieval feedback: how injected assertions fared, and the ranking multiplier computed from it.

Three signals feed ranking, each kept as an event row in ``agent_memory_retrieval_feedback``
and as a denormalised counter on the assertion, so retrieval reads three integers instead of
aggregating events per search:

- ``injected``: the runtime put the assertion into a prompt;
- ``cited``: the final response reuses enough of its informative tokens (:mod:`.citation`);
- ``corrected``: the ledger put a recently injected assertion into conflict or superseded it.
  Only the ledger says so; no NLP guesses at corrections.

:mod:`.events` records them, :mod:`.ranking` turns the counters into a multiplier.
"""

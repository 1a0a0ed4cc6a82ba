"""The Dagster names, written once: the Dream asset keys in lineage order, which asset each
invariant check (:data:`memory_platform.features.dreaming.checks.CHECKS`) guards, and the session
maintenance assets."""

DREAM_INPUTS = "dream_inputs"
DREAM_PROPOSALS = "dream_proposals"
DREAM_ASSERTIONS = "dream_assertions"
ASSERTION_PROJECTIONS = "assertion_projections"
WIKI_PROPOSALS = "wiki_proposals"
KNOWLEDGE_GRAPH = "knowledge_graph"      # downstream of assertion_projections, own op
CONSOLIDATION = "consolidation"          # downstream of knowledge_graph, own op
CONSOLIDATION_SWEEP = "consolidation_sweep"   # not partitioned: the quiet partitions
# The end of the daily chain, per partition, in this order after consolidation.
USER_PROFILES = "user_profiles"
RETENTION = "retention"
REEMBEDDING = "reembedding"
CHAIN_ASSETS = (USER_PROFILES, RETENTION, REEMBEDDING)

DREAM_ASSETS = (DREAM_INPUTS, DREAM_PROPOSALS, DREAM_ASSERTIONS, ASSERTION_PROJECTIONS,
                WIKI_PROPOSALS)

# check name -> the Dream asset it guards (a failing check blocks what is downstream of it)
CHECK_GUARDS = {
    "active_assertions_cite_verbatim_evidence": DREAM_ASSERTIONS,
    "evidence_stays_in_audience": DREAM_ASSERTIONS,
    "no_projection_of_inactive_assertion": ASSERTION_PROJECTIONS,
}

# Session maintenance (memory_platform.features.sessions.maintenance): one asset per operation of a
# pass, in the pass's order, and which event-table operation each stands for.
SHARED_FACTS = "shared_facts"
FLUSH_MEMORIES = "flush_memories"
SESSION_SUMMARIES = "session_summaries"

SESSION_ASSETS = (SHARED_FACTS, FLUSH_MEMORIES, SESSION_SUMMARIES)

SESSION_OPERATION_ASSETS = {
    "shared_facts": SHARED_FACTS,
    "memory_flush": FLUSH_MEMORIES,
    "history_compaction": SESSION_SUMMARIES,
}

# Ledger tables the asset graph draws (assets/ledger.py declares them as external assets).
OUTBOX_TABLE = "agent_memory_ingestion_outbox"
# What Dream input selection reads (drawn upstream of dream_inputs).
DREAM_READS = ("agent_memories", "agent_memory_sources", "agent_memory_assertions",
               "agent_memory_assertion_evidence")

# Jobs a feature's sensor launches, by name (the sensor names its job; the job lives with
# its feature's assets).
REEMBED_BACKLOG_JOB = "reembed_backlog_job"
WORKSPACE_SYNC_JOB = "workspace_sync_job"

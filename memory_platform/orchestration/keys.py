"""The Dagster names of Dreaming, written once: the Dream asset keys in lineage order, and
which asset each invariant check (:data:`memory_platform.dreaming.checks.CHECKS`) guards."""

DREAM_INPUTS = "dream_inputs"
DREAM_PROPOSALS = "dream_proposals"
DREAM_ASSERTIONS = "dream_assertions"
ASSERTION_PROJECTIONS = "assertion_projections"
WIKI_PROPOSALS = "wiki_proposals"

DREAM_ASSETS = (DREAM_INPUTS, DREAM_PROPOSALS, DREAM_ASSERTIONS, ASSERTION_PROJECTIONS,
                WIKI_PROPOSALS)

# check name -> the Dream asset it guards (a failing check blocks what is downstream of it)
CHECK_GUARDS = {
    "active_assertions_cite_verbatim_evidence": DREAM_ASSERTIONS,
    "evidence_stays_in_audience": DREAM_ASSERTIONS,
    "no_projection_of_inactive_assertion": ASSERTION_PROJECTIONS,
}

"""Memory v2 ledger: sources, assertions, evidence, reviews, conflicts, outbox."""

"""The ledger's life cycle and consolidation (specification, "Consolidation")."""

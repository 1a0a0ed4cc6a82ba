"""Shared lower modules: the visibility rule and membership, users, trust, the embedding and
model clients, the ledger."""

"""Embedding providers (contract in ``base``, choice in ``factory``) and generations."""

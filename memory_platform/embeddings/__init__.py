"""Embedding providers, generations and re-embedding."""

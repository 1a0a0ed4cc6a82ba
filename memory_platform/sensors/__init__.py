"""Dagster sensors and schedules: thin adapters over orchestration/ and the domain."""

"""Dagster sensors and schedules: thin adapters over the domain packages."""

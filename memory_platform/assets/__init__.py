"""Dagster assets: thin adapters over the domain packages."""

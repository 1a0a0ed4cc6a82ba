"""The Dagster side of the platform that is not an asset: jobs, run planning (which
partitions are due), per-partition reporting and launching runs from the CLI or API."""

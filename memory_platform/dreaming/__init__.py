"""Dreaming v2: background curation of episodic memory into cited canonical assertions.

One module per job: ``partitions`` (the audience partition and its Dagster key), ``inputs``
(selection and balancing), ``prompt`` and ``contract`` (what the model is asked and must
answer), ``validate`` (strict, fail closed), ``promote`` (ledger), ``safety`` (the targeted
policy pass), ``wiki`` (draft proposals), ``runs`` (dream rows, stale reconciliation),
``lock`` (the advisory lock), ``rollback`` and ``engine`` (``run_dream_partition``).
Projection work goes through ``memory_platform.projection.outbox``.
"""

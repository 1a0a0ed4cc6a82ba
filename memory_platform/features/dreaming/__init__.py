"""Dreaming v2: background curation of episodic memory into cited canonical assertions.

One module per job: ``partitions`` (the audience partition and its Dagster key), ``inputs``
(selection and balancing), ``prompt`` and ``contract`` (what the model is asked and must
answer), ``validate`` (strict, fail closed), ``promote`` (ledger), ``safety`` (the targeted
policy pass), ``wiki`` (draft proposals), ``runs`` (dream rows, stale reconciliation),
``lock`` (the advisory lock), ``rollback`` and ``engine`` (``run_dream_partition``);
``model`` (which model a Dream uses) and ``extractive`` (the offline model), ``summary``
(``DreamStats``: a Dream's key numbers), ``targets`` (which partitions may be dreamed) and
``schedule`` (when an audience is due, and why one is skipped).
Projection work goes through ``memory_platform.features.projection.outbox``.
"""

"""Load benchmark of the HTTP API (``python -m bench.load``): the API as a subprocess, a load
generator in this process, the CPU of both and of PostgreSQL metered per run."""

INSTANCE = "bench-api"
CORPUS_SEED = 7  # synthetic_corpus's default seed: the workload's channel threads depend on it

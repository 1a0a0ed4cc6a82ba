"""The write path: validation, sharing preference, chunking, dedup, store."""

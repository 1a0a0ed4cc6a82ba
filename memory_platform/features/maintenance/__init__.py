"""Maintenance: retention, user profiles, erasure, workspace sync, legacy import."""

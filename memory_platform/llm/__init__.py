"""Maintenance-model clients: OpenAI-compatible (streamed, strict JSON) and extractive."""

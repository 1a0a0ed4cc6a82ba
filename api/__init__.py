"""The Starlette API of memory-platform (the hot path for agents)."""

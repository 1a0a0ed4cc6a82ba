"""Route modules; each exposes a ``routes`` list."""

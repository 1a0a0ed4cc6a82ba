"""Test infrastructure shared across test packages (real servers, never mocks)."""

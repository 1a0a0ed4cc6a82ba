"""Dreaming v2: background curation of episodic memory into cited canonical assertions."""

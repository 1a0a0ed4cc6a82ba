"""White-box tests of the bulk import: they pin an implementation and plan shape (which
loader a row goes to, when worker processes prepare), not behaviour a caller sees. Change
them with the implementation."""

from __future__ import annotations

from typing import Any

import pytest
from pgvector.psycopg import register_vector

from memory_platform.features.memories.bulk import importing
from memory_platform.features.memories.bulk.pipeline import loader_of
from memory_platform.features.memories.bulk.reader import MalformedLine, NumberedRow
from memory_platform.features.memories.bulk.rows import ImportRow
from memory_platform.foundation.settings import Settings
from memory_platform.foundation.text import content_hash
from memory_platform.shared.access import AccessContext, Audience
from tests.memories.bulk_support import LOADER_ROWS, run, snapshot


def test_repeats_and_assertion_identities_meet_in_one_loader():
    def row(content: str, subject: str = "") -> ImportRow:
        r = ImportRow(1, {}, content, {}, "fact", "imported", "fact", None, {},
                      content_hash(content), [])
        r.ctx, r.audience, r.subject = AccessContext("i"), Audience("team", "i"), subject
        return r

    for count in (2, 3, 5):
        for i in range(50):
            text = f"Fakt {i} über Nordlicht."
            loader = loader_of(row(text), count)
            assert loader_of(row(f"  FAKT {i} über   nordlicht. "), count) == loader
            assert loader_of(row(text, subject="mandantid=M-1"), count) == loader
    assert len({loader_of(row(f"Fakt {i}."), 2) for i in range(50)}) == 2


def test_worker_processes_prepare_what_a_thread_prepares(db, module_database_url, instance,
                                                        monkeypatch):
    def settings(processes: int) -> Settings:
        return Settings(database_url=module_database_url, import_prepare_processes=processes,
                        _env_file=None)  # type: ignore[call-arg]

    used: list[int] = []
    decide = importing.prepare_processes
    monkeypatch.setattr(importing, "prepare_processes",
                        lambda *args: used.append(decide(*args)) or used[-1])
    rows: list[Any] = [NumberedRow(i + 1, row) for i, row in enumerate(LOADER_ROWS)]
    rows[5] = MalformedLine(6, "malformed JSON: test")
    rows[9] = NumberedRow(10, {"content": "token: ghp_" + "a" * 36, "visibility": "workspace"})
    threaded = run(db, settings(0), instance, rows, batch_size=2, loaders=1)
    in_processes = run(db, settings(1), f"{instance}-p", iter(rows), batch_size=2, loaders=2)
    assert used == [0, 1]
    timing = {"load_seconds": 0, "seconds": 0, "rows_per_second": 0,
              "load_rows_per_second": 0}
    assert in_processes.as_dict() | timing == threaded.as_dict() | timing
    assert [r.line for r in in_processes.rejected] == [6, 10]
    assert snapshot(db, f"{instance}-p") == snapshot(db, instance)
    # a short stream stays in a thread
    run(db, settings(1), f"{instance}-s", iter(rows[:3]), batch_size=2)
    assert used[-1] == 0


@pytest.fixture(autouse=True)
def _vector_types(db):
    register_vector(db)

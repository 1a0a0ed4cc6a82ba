"""The async twin against the real API on loopback: the same methods awaited, the same
models, the same typed errors and audience rules, the async pagination helpers."""

from __future__ import annotations

import uuid

import anyio
import pytest

from memory_platform.client import AsyncMemoryClient, BadRequest, Forbidden, NotFound
from tests.client.conftest import READ, WRITE


def test_the_async_client_writes_reads_and_pages_like_the_sync_one(live_api, keys):
    ada, bob = f"ada-{uuid.uuid4().hex[:8]}", f"bob-{uuid.uuid4().hex[:8]}"
    session = f"s-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        async with AsyncMemoryClient(live_api.url, keys(ada, (READ, WRITE))) as mine, \
                AsyncMemoryClient(live_api.url, keys(bob, (READ, WRITE))) as theirs:
            stored = await mine.store("Ada's flight to Lisbon leaves at 07:40.",
                                      visibility="private")
            hits = (await mine.search("when does Ada's flight leave")).results
            assert hits[0].id == stored.id
            assert (await mine.get_memory(stored.id)).content.endswith("07:40.")
            with pytest.raises(NotFound):
                await theirs.get_memory(stored.id)
            assert (await theirs.search("Lisbon flight", min_score=0)).results == []

            await mine.append(session, [{"role": "user", "content": f"Lisbon note {i}",
                                         "client_item_id": f"n{i}"} for i in range(3)])
            grepped = [h async for h in mine.iter_grep("Lisbon note", page_size=2,
                                                       context={"session_key": session})]
            assert len(grepped) == 3
            with pytest.raises(Forbidden):
                await theirs.replay(session)
            events = [e async for e in mine.iter_events(page_size=2)]
            assert {"memory.written"} <= {e.kind for e in events}
            with pytest.raises(BadRequest):
                await mine.store("Ada's seat is 14C.", predicate="seat")
            corrected = await mine.correct(stored.id, "Ada's flight to Lisbon leaves at 08:10.")
            assert corrected.status == "corrected"
            assert (await mine.forget(corrected.id)).total_removed > 0
            assert (await mine.healthz()) == {"status": "ok"}

    anyio.run(main)

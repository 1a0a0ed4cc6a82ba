"""The inspector's Dreams tab lists as many Dreams as every other listing: the
``dream_list_limit`` setting (MEMORY_DREAM_LIST_LIMIT), not a number of its own."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from memory_platform.foundation.settings import Settings
from tests.api.conftest import ADMIN, READ, REVIEW, make_settings
from tests.db import rows
from tests.inspector.support import sign_in


@pytest.fixture
def api_settings(database_url: str, tmp_path: Path) -> Settings:
    return make_settings(database_url, tmp_path / "state", dream_list_limit=2)


def test_the_dreams_tab_lists_the_dream_list_limit(client, make_key, database_url):
    with psycopg.connect(database_url, autocommit=True) as conn:
        for _ in range(3):
            rows.dream(conn, "default", status="completed", audience_kind="team",
                       audience_key="default")
    sign_in(client, make_key("anna", (READ, REVIEW, ADMIN)))
    body = client.get("/inspector/api/dreams")
    assert body.status_code == 200, body.text
    assert len(body.json()["dreams"]) == 2

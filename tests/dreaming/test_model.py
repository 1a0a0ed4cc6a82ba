"""Model resolution order (explicit, app_settings row through its cache, MEMORY_MAINTENANCE_MODEL,
automatic default) and exact model clients without fallback, on the real database."""

from __future__ import annotations

import time
from types import SimpleNamespace

import psycopg
import pytest

from memory_platform.features.dreaming.extractive import ExtractiveModel
from memory_platform.features.dreaming.model import (
    SETTING_KEY,
    model_client,
    read_dreaming_model,
    resolve_model_name,
    set_dreaming_model,
)
from memory_platform.foundation.db.connection import with_database
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.llm import selection
from memory_platform.shared.llm.base import ModelError
from memory_platform.shared.llm.openai_compatible import OpenAICompatibleModel
from tests.conftest import create_database, drop_database
from tests.llm.helpers import API_KEY, PAYLOAD_TEXT, make_request, make_settings

INSTANCE = "acme"


def test_each_level_of_the_resolution_order(conn):
    settings = make_settings(maintenance_model="env-model")
    set_dreaming_model(conn, INSTANCE, "row-model")
    assert resolve_model_name(conn, settings, INSTANCE, "manual-model") == (
        "manual-model", "explicit")
    assert resolve_model_name(conn, settings, INSTANCE, None) == ("row-model", "app_settings")
    set_dreaming_model(conn, INSTANCE, "")  # empty value = automatic
    assert resolve_model_name(conn, settings, INSTANCE, "  ") == ("env-model", "settings")
    assert resolve_model_name(conn, make_settings(), INSTANCE, None) == (
        "extractive", "default")
    assert resolve_model_name(conn, make_settings(maintenance_default_model="house-model"),
                              INSTANCE, None) == ("house-model", "default")


def test_the_setting_belongs_to_its_instance(conn):
    settings = make_settings(maintenance_model="env-model")
    set_dreaming_model(conn, "other", "other-model")
    assert resolve_model_name(conn, settings, INSTANCE, None) == ("env-model", "settings")
    assert resolve_model_name(conn, settings, "other", None) == ("other-model", "app_settings")
    row = conn.execute("SELECT value FROM app_settings WHERE instance_key = 'other' AND key = %s",
                       (SETTING_KEY,)).fetchone()
    assert row == ("other-model",)


def test_a_changed_row_is_seen_after_the_cache_expires(conn, monkeypatch):
    # The cache's clock is set, not waited on: time.monotonic of llm/selection.py only.
    clock = [time.monotonic()]
    monkeypatch.setattr(selection, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    settings = make_settings(settings_cache_seconds=0.4)
    set_dreaming_model(conn, INSTANCE, "model-a")
    assert resolve_model_name(conn, settings, INSTANCE, None) == ("model-a", "app_settings")
    # Another process (the UI) saves a new value: this process keeps its cached value ...
    conn.execute("UPDATE app_settings SET value = 'model-b' WHERE instance_key = %s "
                 "AND key = %s", (INSTANCE, SETTING_KEY))
    assert resolve_model_name(conn, settings, INSTANCE, None) == ("model-a", "app_settings")
    # ... until the cache expires, without a restart.
    clock[0] += 0.45
    assert resolve_model_name(conn, settings, INSTANCE, None) == ("model-b", "app_settings")
    conn.execute("UPDATE app_settings SET value = '' WHERE instance_key = %s AND key = %s",
                 (INSTANCE, SETTING_KEY))
    clock[0] += 0.45
    assert resolve_model_name(conn, settings, INSTANCE, None) == ("extractive", "default")


def test_the_default_cache_is_five_seconds_and_zero_disables_it(conn):
    assert make_settings().settings_cache_seconds == 5.0
    settings = make_settings(settings_cache_seconds=0)
    set_dreaming_model(conn, INSTANCE, "model-a")
    assert read_dreaming_model(conn, settings, INSTANCE) == "model-a"
    conn.execute("UPDATE app_settings SET value = 'model-b' WHERE instance_key = %s "
                 "AND key = %s", (INSTANCE, SETTING_KEY))
    assert read_dreaming_model(conn, settings, INSTANCE) == "model-b"


def test_the_cache_is_per_database(conn, server_url, template_database):
    settings = make_settings()
    set_dreaming_model(conn, INSTANCE, "model-a")
    assert read_dreaming_model(conn, settings, INSTANCE) == "model-a"
    other_name = create_database(server_url, template=template_database)
    try:
        with psycopg.connect(with_database(server_url, other_name), autocommit=True) as other:
            assert read_dreaming_model(other, settings, INSTANCE) == ""
    finally:
        drop_database(server_url, other_name)


@pytest.mark.parametrize("bad", ["two words", "tab\tmodel", "x" * 201, "ctl\x00"])
def test_invalid_model_references_are_rejected(conn, bad):
    with pytest.raises(InvalidInput):          # a stored settings value: a clear 400
        set_dreaming_model(conn, INSTANCE, bad)
    with pytest.raises(ValueError):
        resolve_model_name(conn, make_settings(), INSTANCE, bad)


# --- clients ---------------------------------------------------------------------------------


def test_extractive_is_chosen_only_by_its_name():
    assert isinstance(model_client(make_settings(), "extractive"), ExtractiveModel)


def test_an_unconfigured_openai_compatible_model_is_unavailable_not_replaced():
    with pytest.raises(ModelError) as caught:
        model_client(make_settings(), "gpt-4o-mini")
    error = caught.value
    assert error.code == "unavailable"
    assert "MEMORY_MAINTENANCE_BASE_URL" in error.reason
    assert "MEMORY_MAINTENANCE_API_KEY" in error.reason
    assert error.diagnostic["model"] == "gpt-4o-mini"


def test_maintenance_settings_win_over_the_openai_ones(openai_server):
    settings = make_settings(maintenance_base_url=openai_server.base_url,
                             maintenance_api_key=API_KEY,
                             openai_base_url="http://127.0.0.1:9/v1",
                             openai_api_key="sk-embeddings-only-key")
    client = model_client(settings, "gpt-4o-mini")
    assert isinstance(client, OpenAICompatibleModel) and client.name == "gpt-4o-mini"
    openai_server.script_chat(content=PAYLOAD_TEXT)
    client.complete_json(make_request(settings))
    [request] = openai_server.requests("chat/completions")
    assert request.headers["authorization"] == f"Bearer {API_KEY}"


def test_the_openai_settings_are_the_fallback_configuration(openai_server):
    settings = make_settings(openai_base_url=openai_server.base_url, openai_api_key=API_KEY)
    client = model_client(settings, "local-llama")
    openai_server.script_chat(content=PAYLOAD_TEXT)
    assert client.complete_json(make_request(settings)).model == "local-llama"


def test_a_keyless_local_server_needs_only_a_base_url(openai_server):
    settings = make_settings(maintenance_base_url=openai_server.base_url)
    openai_server.script_chat(content=PAYLOAD_TEXT)
    model_client(settings, "llama3.1:8b").complete_json(make_request(settings))
    [request] = openai_server.requests("chat/completions")
    assert request.json["model"] == "llama3.1:8b"


def test_the_resolved_model_is_requested_exactly(conn, openai_server):
    settings = make_settings(maintenance_base_url=openai_server.base_url,
                             maintenance_api_key=API_KEY)
    set_dreaming_model(conn, INSTANCE, "qwen2.5-32b-instruct")
    name, source = resolve_model_name(conn, settings, INSTANCE, None)
    openai_server.script_chat(content=PAYLOAD_TEXT)
    completion = model_client(settings, name).complete_json(make_request(settings))
    assert (completion.model, source) == ("qwen2.5-32b-instruct", "app_settings")
    assert openai_server.requests("chat/completions")[0].json["model"] == name

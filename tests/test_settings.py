"""Defaults live once in memory_platform/foundation/settings/ and match DESIGN.md; secrets never
print."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memory_platform.cli import main
from memory_platform.foundation.settings import Settings, redact_url


def _defaults() -> Settings:
    return Settings(_env_file=None)  # type: ignore[call-arg]


def test_retrieval_defaults_match_the_design():
    s = _defaults()
    assert (s.retrieval_top_k, s.retrieval_min_score) == (6, 0.12)
    assert (s.retrieval_vector_weight, s.retrieval_keyword_weight) == (0.8, 0.2)


def test_embedding_and_chunking_defaults_match_the_design():
    s = _defaults()
    assert s.embedding_provider == "auto"
    assert (s.openai_embedding_model, s.openai_embedding_dimensions) == (
        "text-embedding-3-small", 1536)
    assert s.hash_embedding_dimensions == 1536
    assert s.chunk_target_chars == 1000 and 0 < s.chunk_overlap_chars < 1000


def test_feedback_and_shared_fact_defaults_match_the_design():
    s = _defaults()
    assert (s.feedback_boost_max, s.feedback_correction_penalty) == (1.3, 0.7)
    assert (s.feedback_min_multiplier, s.feedback_rate_floor) == (0.4, 3)
    assert s.cited_min_overlap_tokens == 3
    assert s.shared_fact_min_chars == 16


def test_dreaming_and_maintenance_defaults_match_the_design():
    s = _defaults()
    assert (s.dream_max_assertions, s.dream_max_wiki_proposals) == (12, 1)
    assert (s.dream_phase_timeout_minutes, s.dream_completion_tokens) == (10, 12_000)
    assert (s.dream_stale_minutes, s.dream_reconcile_interval_seconds) == (90, 30)
    assert s.outbox_poll_seconds == 30
    assert (s.graph_decay_half_life_days, s.graph_decay_floor) == (180.0, 0.5)
    assert s.consolidation_max_pairs_per_batch == 8
    assert s.settings_cache_seconds == 5.0


def test_environment_overrides_with_the_memory_prefix(monkeypatch):
    monkeypatch.setenv("MEMORY_RETRIEVAL_TOP_K", "9")
    assert _defaults().retrieval_top_k == 9


def test_the_dream_phase_timeout_stays_between_1_and_30_minutes(monkeypatch):
    import pydantic
    import pytest

    monkeypatch.setenv("MEMORY_DREAM_PHASE_TIMEOUT_MINUTES", "31")
    with pytest.raises(pydantic.ValidationError):
        _defaults()


def test_redaction_masks_url_passwords_only():
    assert redact_url("postgresql://app:s3cret@db:5432/memory") == (
        "postgresql://app:**********@db:5432/memory")
    assert redact_url("postgresql://app@db/memory") == "postgresql://app@db/memory"


def _config_show_json(monkeypatch, **environment: str):
    """`config show --json` under ``environment`` (MEMORY_ variables), settings re-read."""
    from memory_platform.foundation.settings import get_settings

    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(main, ["config", "show", "--json"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    return result


def test_config_show_prints_every_setting_without_secrets(monkeypatch):
    result = _config_show_json(
        monkeypatch, MEMORY_DATABASE_URL="postgresql://app:hunter2-db@db:5432/memory",
        MEMORY_OPENAI_API_KEY="sk-live-hunter2")
    assert "hunter2" not in result.output
    shown = json.loads(result.output)
    assert set(shown) == set(Settings.model_fields)
    assert shown["database_url"] == "postgresql://app:**********@db:5432/memory"
    assert shown["openai_api_key"] == "**********"


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://memory@db/memory?password=s3cret",
     "postgresql://memory@db/memory?password=**********"),
    ("postgresql://memory@db/memory?sslmode=require&password=s3cret&connect_timeout=5",
     "postgresql://memory@db/memory?sslmode=require&password=**********&connect_timeout=5"),
    ("postgresql://memory@db/memory?sslpassword=s3cret",
     "postgresql://memory@db/memory?sslpassword=**********"),
    ("host=db user=memory password=s3cret dbname=memory",
     "host=db user=memory password=********** dbname=memory"),
    ("host=db password = 's3 cret' dbname=memory",
     "host=db password=********** dbname=memory"),
    ("postgresql://u:s3cret@h/d?password=s3cret",
     "postgresql://u:**********@h/d?password=**********"),
    ("postgresql://postgres@/memory?host=/tmp/sock&port=5432",
     "postgresql://postgres@/memory?host=/tmp/sock&port=5432"),
    ("https://user:s3cret@llm.example/v1", "https://user:**********@llm.example/v1"),
    ("https://s3cret@llm.example/v1", "https://**********@llm.example/v1"),
    ("https://llm.example/v1?api-key=s3cret", "https://llm.example/v1?api-key=**********"),
])
def test_f18_redaction_masks_query_string_and_dsn_passwords(url, shown):
    assert redact_url(url) == shown


def test_f18_config_show_masks_credentials_in_every_url(monkeypatch):
    result = _config_show_json(
        monkeypatch, MEMORY_DATABASE_URL="postgresql://memory@db/memory?password=s3cret",
        MEMORY_OPENAI_BASE_URL="https://proxy:hunter2@llm.example/v1",
        MEMORY_MAINTENANCE_BASE_URL="https://llm.example/v1?token=hunter3")
    assert "s3cret" not in result.output and "hunter" not in result.output
    shown = json.loads(result.output)
    assert shown["database_url"] == "postgresql://memory@db/memory?password=**********"
    assert shown["openai_base_url"] == "https://proxy:**********@llm.example/v1"
    assert shown["maintenance_base_url"] == "https://llm.example/v1?token=**********"

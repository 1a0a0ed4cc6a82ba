"""The settings grouped by feature (issue 30): every ``MEMORY_*`` name still names the same
field with the same default, and each module of ``memory_platform/foundation/settings/`` holds only
its
own feature's fields."""

from __future__ import annotations

import annotated_types
import pydantic
import pytest

from memory_platform.foundation.settings import FEATURES, PROJECT_ROOT, Settings

# Every setting, by name (the variable is MEMORY_ + the name in capitals): none lost, none new
# without a line here.
NAMES = set("""
    api_admission_control api_admission_max_in_flight api_admission_wait_ms
    api_body_read_timeout_seconds api_body_readers_max api_body_readers_per_client
    api_connection_wait_seconds api_dagster_eraser api_dream_launcher api_host
    api_key_cache_seconds api_key_lookup_concurrency api_key_unknown_cache_seconds
    api_key_unknown_cache_size api_lock_timeout_ms api_max_body_bytes api_port api_public_url
    api_rollback_recorder api_sign_in_max_in_flight api_statement_timeout_ms api_trusted_hosts
    automation_session_prefixes chunk_overlap_chars chunk_target_chars
    cited_containment_threshold cited_max_candidates cited_min_overlap_tokens
    cited_response_max_chars consolidation_entity_similarity_threshold
    consolidation_max_entity_pairs consolidation_max_pairs consolidation_max_pairs_per_batch
    consolidation_similarity_threshold consolidation_stale_days consolidation_sweep_partitions
    dagster_database_name dagster_port dagster_writer_pool_limit data_dir database_name
    database_url dream_activation_confidence dream_batch_size dream_candidate_limit
    dream_completion_tokens dream_fact_quota_ratio dream_input_max_chars dream_list_limit
    dream_lock_wait_seconds dream_max_assertions dream_max_evidence_per_assertion
    dream_max_field_chars dream_max_inputs dream_max_wiki_proposals dream_min_excerpt_chars
    dream_min_excerpt_words dream_min_inputs dream_min_interval_hours dream_min_text_support
    dream_per_session_activity_cap dream_phase_timeout_minutes dream_reconcile_interval_seconds
    dream_schedule_cron dream_sensor_max_partitions dream_stale_minutes dream_update_confidence
    embedded_pgdata embedded_shared_buffers embedding_max_retries embedding_provider
    embedding_retry_backoff_seconds embedding_timeout_seconds feedback_boost_max
    feedback_correction_penalty feedback_correction_window_hours feedback_min_multiplier
    feedback_ranking_enabled feedback_rate_floor graph_batch_max_chars graph_batch_max_sources
    graph_decay_enabled graph_decay_floor graph_decay_half_life_days graph_embed_batch
    graph_expand_entities graph_jobs_per_pass graph_max_attempts graph_max_claims
    graph_max_edges graph_max_entities graph_model graph_rrf_k graph_search_candidates
    graph_search_limit hash_embedding_dimensions import_batch_size import_loaders
    import_prepare_processes import_rebuild_fulltext import_rebuild_index_min_rows
    index_build_maintenance_work_mem index_build_parallel_workers inspector_session_hours
    instance_key local_embedding_model maintenance_api_key maintenance_base_url
    maintenance_default_model maintenance_idle_timeout_seconds maintenance_max_completion_tokens
    maintenance_max_retries maintenance_model maintenance_phase_timeout_seconds_override
    maintenance_retry_backoff_seconds memory_dedup_window_hours memory_max_chars migrations_dir
    model_prices openai_api_key openai_base_url openai_embedding_batch_size
    openai_embedding_dimensions openai_embedding_model outbox_max_attempts outbox_poll_seconds
    outbox_processing_timeout_seconds outbox_retry_backoff_seconds outbox_retry_max_seconds
    pool_max_size pool_max_waiting pool_min_size pool_timeout_seconds quota_instance_bytes
    quota_user_bytes reembed_batch_size reembed_chain_batches reembed_run_limit retention_days
    retention_evidence_cap retrieval_common_terms_fallback retrieval_context_deep_limit
    retrieval_context_keyword_weight retrieval_context_limit retrieval_exact_scan_max
    retrieval_hnsw_ef_search retrieval_keyword_common_share retrieval_keyword_idf
    retrieval_keyword_match_cap retrieval_keyword_weight retrieval_lexical_scan_cap
    retrieval_min_score retrieval_neighbour_weight retrieval_similarity_scale
    retrieval_time_prior retrieval_top_k retrieval_turn_content_prior
    retrieval_turn_context_extra_candidates retrieval_turn_coverage_weight
    retrieval_turn_session_spread retrieval_turn_session_weight
    retrieval_turn_context_vector_weight retrieval_turn_keyword_weight
    retrieval_turn_neighbour_vector_weight retrieval_turn_speaker_prior
    retrieval_turn_list_spread retrieval_turn_spread_margin
    retrieval_turn_vector_weight retrieval_vector_extra_candidates retrieval_vector_weight
    retrieval_when_prior session_append_max_body_bytes session_append_max_items
    session_budget_pressure_ratio session_compaction_chunk_tokens
    session_compaction_max_history_share session_compaction_min_new_turns
    session_compaction_quality_retries session_compaction_recent_turns
    session_compaction_summary_tokens session_compaction_timeout_seconds
    session_compaction_transcript_bytes session_condense_fanout session_context_budget_tokens
    session_facts_input_tokens session_facts_timeout_seconds session_flush_max_facts
    session_flush_min_new_turns session_flush_recent_runs session_flush_transcript_bytes
    session_grep_max_sessions session_grep_scan_cap session_item_max_chars
    session_item_metadata_max_bytes session_item_raw_max_bytes session_turn_recall
    session_maintenance_max_sessions
    session_maintenance_retry_max_seconds session_maintenance_retry_seconds
    session_maintenance_sensor_interval_seconds session_shared_facts_max_facts
    settings_cache_seconds shared_fact_min_chars turn_context_vectors
    webhook_allow_private_targets webhook_timeout_seconds workspace_dir write_vectors
""".split())

# Each feature module and the names it owns: a field belongs to the module whose prefix is
# the longest that starts its name (a whole name is a prefix of itself).
OWNERS: dict[str, tuple[str, ...]] = {
    "database": ("database_", "dagster_database_", "embedded_", "pool_", "data_dir",
                 "migrations_dir", "instance_key"),
    "api": ("api_", "inspector_"),
    "retrieval": ("retrieval_",),
    "feedback": ("feedback_", "cited_"),
    "embeddings": ("embedding_", "openai_", "hash_embedding_", "local_embedding_", "reembed_",
                   "index_build_"),
    "memories": ("memory_", "quota_", "write_vectors", "turn_context_vectors", "chunk_"),
    "imports": ("import_",),
    "sessions": ("session_", "shared_fact_"),
    "llm": ("maintenance_", "model_prices", "settings_cache_"),
    "dreaming": ("dream_", "automation_session_"),
    "orchestration": ("dream_batch_", "dream_sensor_", "dream_schedule_", "dream_min_interval_",
                      "dream_lock_", "dagster_writer_", "dagster_port"),
    "outbox": ("outbox_", "webhook_"),
    "graph": ("graph_",),
    "consolidation": ("consolidation_",),
    "maintenance": ("retention_", "workspace_"),
}

# Spot checks: (name, default, bounds) as they were before the split.
SPOTS = [
    ("database_name", "memory", {}),
    ("pool_min_size", 1, {"ge": 0}),
    ("migrations_dir", PROJECT_ROOT / "migrations", {}),
    ("instance_key", "default", {}),
    ("api_port", 8080, {"ge": 1, "le": 65535}),
    ("api_dream_launcher", "memory_platform.launch:launch_for_api", {}),
    ("api_admission_wait_ms", 500, {"ge": 0, "le": 60_000}),
    ("retrieval_top_k", 6, {"ge": 1, "le": 100}),
    ("retrieval_min_score", 0.12, {"ge": 0.0, "le": 1.0}),
    ("retrieval_turn_context_vector_weight", 0.7, {"ge": 0.0, "le": 1.0}),
    ("retrieval_similarity_scale", None, {}),
    ("feedback_boost_max", 1.3, {"ge": 1.0}),
    ("embedding_provider", "auto", {}),
    ("openai_embedding_dimensions", 1536, {"ge": 1, "le": 2000}),
    ("memory_max_chars", 16_000, {"ge": 100}),
    ("write_vectors", "sync", {}),
    ("import_batch_size", 500, {"ge": 1, "le": 5000}),
    ("session_compaction_timeout_seconds", 50.0, {"gt": 0.0}),
    ("maintenance_default_model", "extractive", {"min_length": 1}),
    ("dream_phase_timeout_minutes", 10, {"ge": 1, "le": 30}),
    ("dream_schedule_cron", "0 3 * * *", {}),
    ("outbox_max_attempts", 5, {"ge": 1}),
    ("graph_max_attempts", 48, {"ge": 1}),
    ("consolidation_similarity_threshold", 0.85, {"ge": 0.0, "le": 1.0}),
    ("retention_days", 30, {"ge": 1}),
]

# One field of each feature read from the environment: (variable, its text, the value).
FROM_ENVIRONMENT = {
    "database": ("MEMORY_DATABASE_NAME", "other", "other"),
    "api": ("MEMORY_API_TRUSTED_HOSTS", '["memory.example.com"]', ["memory.example.com"]),
    "retrieval": ("MEMORY_RETRIEVAL_SIMILARITY_SCALE", "[0.7, 0.8]", (0.7, 0.8)),
    "feedback": ("MEMORY_CITED_MAX_CANDIDATES", "12", 12),
    "embeddings": ("MEMORY_EMBEDDING_PROVIDER", "hash", "hash"),
    "memories": ("MEMORY_WRITE_VECTORS", "deferred", "deferred"),
    "imports": ("MEMORY_IMPORT_LOADERS", "3", 3),
    "sessions": ("MEMORY_SESSION_FLUSH_MAX_FACTS", "9", 9),
    "llm": ("MEMORY_SETTINGS_CACHE_SECONDS", "0.5", 0.5),
    "dreaming": ("MEMORY_DREAM_MIN_INPUTS", "4", 4),
    "orchestration": ("MEMORY_DAGSTER_PORT", "3001", 3001),
    "outbox": ("MEMORY_WEBHOOK_ALLOW_PRIVATE_TARGETS", "true", True),
    "graph": ("MEMORY_GRAPH_RRF_K", "61", 61),
    "consolidation": ("MEMORY_CONSOLIDATION_STALE_DAYS", "91", 91.0),
    "maintenance": ("MEMORY_RETENTION_DAYS", "31", 31),
}


def _module(feature: type) -> str:
    return feature.__module__.rpartition(".")[2]


def _owner(name: str) -> str | None:
    matches = [(len(prefix), module) for module, prefixes in OWNERS.items()
               for prefix in prefixes if name.startswith(prefix)]
    return max(matches)[1] if matches else None


def _bounds(name: str) -> dict[str, object]:
    kinds = {annotated_types.Ge: "ge", annotated_types.Le: "le", annotated_types.Gt: "gt",
             annotated_types.Lt: "lt", annotated_types.MinLen: "min_length"}
    found = {}
    for item in Settings.model_fields[name].metadata:
        for kind, key in kinds.items():
            if isinstance(item, kind):
                found[key] = getattr(item, key)
    return found


def test_no_setting_lost_or_renamed():
    assert len(Settings.model_fields) == len(NAMES) == 208
    assert set(Settings.model_fields) == NAMES


def test_every_variable_is_the_prefix_and_the_field_name():
    assert Settings.model_config["env_prefix"] == "MEMORY_"
    assert not Settings.model_config.get("case_sensitive")
    for name, info in Settings.model_fields.items():
        assert info.alias is None and info.validation_alias is None, name


@pytest.mark.parametrize(("name", "default", "bounds"), SPOTS, ids=[s[0] for s in SPOTS])
def test_defaults_and_bounds_are_the_ones_before_the_split(name, default, bounds):
    info = Settings.model_fields[name]
    assert info.get_default(call_default_factory=True) == default
    assert _bounds(name) == bounds


def test_the_computed_defaults_and_the_validator_survive():
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.pool_max_size >= 2 and s.model_prices == {} and s.api_trusted_hosts == ["*"]
    assert s.pgdata == (s.data_dir / "pgdata").resolve()
    assert "system:" in s.automation_session_prefixes
    with pytest.raises(pydantic.ValidationError, match="similarity scale"):
        Settings(_env_file=None, retrieval_similarity_scale=(0.9, 0.8))  # type: ignore[call-arg]


def test_each_feature_module_holds_only_its_own_fields():
    assert {_module(feature) for feature in FEATURES} == set(OWNERS)
    seen: set[str] = set()
    for feature in FEATURES:
        own = set(feature.model_fields)
        assert own and not own & seen, (feature.__name__, own & seen)
        seen |= own
        strays = {name for name in own if _owner(name) != _module(feature)}
        assert not strays, f"{_module(feature)}.py holds other features' fields: {strays}"
    assert seen == set(Settings.model_fields)


def test_the_fields_are_listed_feature_by_feature():
    assert list(Settings.model_fields) == [
        name for feature in FEATURES for name in feature.model_fields]


@pytest.mark.parametrize("module", sorted(FROM_ENVIRONMENT))
def test_each_feature_reads_the_environment(module, monkeypatch):
    variable, text, value = FROM_ENVIRONMENT[module]
    name = variable.removeprefix("MEMORY_").lower()
    assert _owner(name) == module
    monkeypatch.setenv(variable, text)
    assert getattr(Settings(_env_file=None), name) == value  # type: ignore[call-arg]


def test_an_env_file_sets_fields_of_every_feature(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("".join(f"{variable}={text}\n"
                                for variable, text, _ in FROM_ENVIRONMENT.values()))
    s = Settings(_env_file=env_file)  # type: ignore[call-arg]
    for variable, _, value in FROM_ENVIRONMENT.values():
        assert getattr(s, variable.removeprefix("MEMORY_").lower()) == value, variable

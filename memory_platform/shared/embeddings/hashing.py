"""Deterministic feature-hash embedding: the provider that needs no model and no network.

It keeps vector recall useful when neither an OpenAI key nor the local model is available:
German and English words are folded (``ä`` -> ``ae``, ``ß`` -> ``ss``), lightly stemmed and
split into character 4-grams, so inflections, plurals and the parts of German compounds
overlap ("Umsatzsteuervoranmeldung" shares most of its features with "Umsatzsteuer" and
"Voranmeldung"). Without a corpus there is no IDF; stopwords and very short tokens are
damped and longer tokens lifted instead. Features land in signed buckets (the sign from a
second hash bit cancels collisions on average) and the vector is L2-normalised.

Hashes come from ``blake2b``, never Python's salted ``hash()``, so every process and
machine produces the same vector for the same text (the vectors are stored).
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from memory_platform.shared.embeddings.base import PREPROCESSING, prepare_text

MODEL = "feature-hash-v1"

_TOKEN = re.compile(r"[^\W_]+")
_FOLD = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", "æ": "ae", "œ": "oe"})
# Longest first; a suffix is only removed when at least _MIN_STEM characters remain.
_SUFFIXES = (
    "ungen", "heiten", "keiten", "ingen", "innen", "ing", "ies", "ern", "en", "er", "es",
    "ed", "e", "n", "s",
)
_MIN_STEM = 4
_GRAM = 4
_EMPTY_FEATURE = "\x00empty"
_ROWS_PER_BLOCK = 64

# Weights of the three feature families of one token (before tf and token weighting).
_WORD_WEIGHT = 1.0
_STEM_WEIGHT = 0.7
_GRAMS_WEIGHT = 1.6  # total L2 mass of a token's n-grams, spread over them
_STOPWORD_WEIGHT = 0.08

# Combined German and English function words (folded spelling, as the tokens are).
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves
    ab aber alle allem allen aller alles als also am an ander andere anderem anderen
    anderer anderes anderm andern anders auch auf aus bei bin bis bist da damit dann das
    dass dasselbe dazu dein deine deinem deinen deiner deines dem demselben den denn
    denselben der derer derselbe derselben des desselben dessen dich die dies diese
    dieselbe dieselben diesem diesen dieser dieses dir doch dort du durch ein eine einem
    einen einer eines einig einige einigem einigen einiger einiges einmal er es etwas
    euch euer eure eurem euren eurer eures fuer gegen gewesen hab habe haben hat hatte
    hatten hier hin hinter ich ihm ihn ihnen ihr ihre ihrem ihren ihrer ihres im in
    indem ins ist jede jedem jeden jeder jedes jene jenem jenen jener jenes jetzt kann
    kein keine keinem keinen keiner keines koennen koennte machen man manche manchem
    manchen mancher manches mein meine meinem meinen meiner meines mich mir mit muss
    musste nach nicht nichts noch nun nur ob oder ohne sehr sein seine seinem seinen
    seiner seines selbst sich sie sind so solche solchem solchen solcher solches soll
    sollte sondern sonst ueber um und uns unser unsere unserem unseren unserer unseres
    unter viel vom von vor waehrend war waren warst was weg weil weiter welche welchem
    welchen welcher welches wenn werde werden wie wieder will wir wird wirst wo wollen
    wollte wuerde wuerden zu zum zur zwar zwischen
    """.split()
)


def fold(text: str) -> str:
    """Lowercase, umlauts and ß spelled out, other accents dropped ("Café" -> "cafe").

    "Müller", "Mueller" and "MÜLLER" must meet, whichever way a user typed them."""
    folded = text.casefold().translate(_FOLD)
    decomposed = unicodedata.normalize("NFKD", folded)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(fold(prepare_text(text)))


def stem(token: str) -> str:
    """Strip one inflection suffix, German or English, keeping a stem of 4+ characters.

    Crude on purpose: it only has to make "Mandanten"/"Mandant" and "filings"/"filing"
    share a feature; the character n-grams catch what it misses."""
    for suffix in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= _MIN_STEM:
            return token[: -len(suffix)]
    return token


def token_weight(token: str) -> float:
    """Corpus-free stand-in for IDF: function words and short tokens say little."""
    if token in STOPWORDS:
        return _STOPWORD_WEIGHT
    length = len(token)
    if length <= 2:
        return 0.3
    return min(1.6, 0.55 + 0.12 * length)


def _bucket(feature: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return (value >> 1) % dimensions, (1.0 if value & 1 else -1.0)


@lru_cache(maxsize=1 << 17)
def _token_features(token: str, dimensions: int) -> tuple[np.ndarray, np.ndarray]:
    """Buckets and signed weights of one token, cached: tokens repeat (Zipf), hashes don't
    need recomputing, and this is what makes the provider fast."""
    weight = token_weight(token)
    features: list[tuple[str, float]] = [("w:" + token, _WORD_WEIGHT)]
    if not token.isdigit():
        root = stem(token)
        features.append(("s:" + root, _STEM_WEIGHT))
        padded = f"<{root}>"
        grams = [padded[i : i + _GRAM] for i in range(max(1, len(padded) - _GRAM + 1))]
        share = _GRAMS_WEIGHT / math.sqrt(len(grams))
        features.extend(("g:" + gram, share) for gram in grams)
    indices = np.empty(len(features), dtype=np.int64)
    values = np.empty(len(features), dtype=np.float32)
    for position, (feature, feature_weight) in enumerate(features):
        bucket, sign = _bucket(feature, dimensions)
        indices[position] = bucket
        values[position] = sign * feature_weight * weight
    return indices, values


def _sparse_features(text: str, dimensions: int) -> tuple[np.ndarray, np.ndarray]:
    counts = Counter(tokens(text))
    if not counts:
        # An empty text still needs a unit vector (pgvector's cosine of a zero vector is NaN).
        return _token_features(_EMPTY_FEATURE, dimensions)
    parts = [_token_features(token, dimensions) for token in counts]
    tf = np.repeat(
        np.fromiter((1.0 + math.log(n) for n in counts.values()), np.float32, len(counts)),
        [len(indices) for indices, _ in parts],
    )
    indices = np.concatenate([indices for indices, _ in parts])
    values = np.concatenate([values for _, values in parts]) * tf
    return indices, values


class HashEmbeddingProvider:
    """Signed feature hashing of words, stems and character 4-grams (see the module doc)."""

    provider = "hash"
    model = MODEL
    preprocessing = PREPROCESSING
    strategy = "hash"
    similarity_floor = 0.1
    similarity_scale = None  # word overlap, not meaning: scores stay relative

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        for start in range(0, len(texts), _ROWS_PER_BLOCK):
            block = texts[start : start + _ROWS_PER_BLOCK]
            out[start : start + len(block)] = self._dense(
                [_sparse_features(text, self.dimensions) for text in block]
            )
        return out

    def _dense(self, rows: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """Scatter a block of sparse rows with one ``bincount`` (blocks keep it cache-sized)."""
        offsets = np.repeat(
            np.arange(len(rows), dtype=np.int64) * self.dimensions,
            [len(indices) for indices, _ in rows],
        )
        flat = np.concatenate([indices for indices, _ in rows]) + offsets
        weights = np.concatenate([values for _, values in rows])
        matrix = np.bincount(flat, weights=weights, minlength=len(rows) * self.dimensions)
        matrix = matrix.reshape(len(rows), self.dimensions)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        # Colliding features can cancel out exactly; an all-zero row is still not allowed.
        matrix[norms[:, 0] == 0.0, 0] = 1.0
        norms[norms == 0.0] = 1.0
        return matrix / norms

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

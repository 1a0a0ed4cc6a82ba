"""German and English stopwords (``memory_platform.foundation.language``): dropped from a
question's terms
(retrieval/terms.py) and from the texts the ``cited`` sensor compares
(retrieval/feedback/citation.py).

Memories of one workspace mix both languages, so both drop the union of both lists instead
of guessing a language per text. The lists hold function words, auxiliaries and
conversational filler: words that two texts share without one citing the other. Spellings are
the natural ones (umlauts, ``ß``): a question's words are compared as written (lowercased);
the sensor folds the lists exactly like the texts it compares.
"""

from __future__ import annotations

# The lists live in memory_platform/foundation/language.py (one home for every text rule); these
# names
# stay as retrieval has always read them.
from memory_platform.foundation.language import ENGLISH, GERMAN
from memory_platform.foundation.language import STOPWORDS as ALL

__all__ = ["ALL", "ENGLISH", "GERMAN"]

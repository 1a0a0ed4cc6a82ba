"""The two corpora the secret detector is measured on (finding 6 of the review of 7c85f33):

* ``credentials.jsonl``: credential forms, one JSON object a line (``form``, ``text``),
  English and German, structured and free text. Token bodies are written as placeholders
  (``{A:36}`` letters and digits, ``{S:n}`` URL-safe, ``{B:n}`` base64, ``{H:n}`` hex,
  ``{U:n}`` upper-case letters and digits, ``{D:n}`` digits, ``{AWS}`` an AWS-style secret
  access key), filled from a seeded generator, so the repository holds no key-shaped string
  and every run sees the same texts;
* ``prose_*.txt``: ordinary sentences, one a line: talk about passwords, keys and tokens
  that holds none, everyday German and English, and code-ish text, ids, hashes and dates.

Both are our own text. ``tests/test_secrets.py``, ``tests/api/test_secret_fields.py`` and
``bench/secret_detectors.py`` read them.
"""

from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path

HERE = Path(__file__).resolve().parent
_ALPHABETS = {
    "A": string.ascii_letters + string.digits,
    "S": string.ascii_letters + string.digits + "-_",
    "B": string.ascii_letters + string.digits + "+/",
    "H": "0123456789abcdef",
    "U": string.ascii_uppercase + string.digits,
    "D": string.digits,
}
_PLACEHOLDER = re.compile(r"\{([ASBHUD]):(\d+)\}|\{AWS\}")


def _filled(text: str, rng: random.Random) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(0) == "{AWS}":
            while True:
                key = "".join(rng.choice(_ALPHABETS["B"]) for _ in range(40))
                if (any(c.isupper() for c in key) and any(c.islower() for c in key)
                        and any(c.isdigit() for c in key)):
                    return key
        alphabet, size = _ALPHABETS[match.group(1)], int(match.group(2))
        return "".join(rng.choice(alphabet) for _ in range(size))

    return _PLACEHOLDER.sub(one, text)


def credentials() -> list[tuple[str, str]]:
    """(form, text) of every credential of the corpus."""
    rng = random.Random(6)
    rows = [json.loads(line) for line in (HERE / "credentials.jsonl").read_text().splitlines()
            if line.strip()]
    return [(row["form"], _filled(row["text"], rng)) for row in rows]


def prose() -> list[str]:
    """Every sentence of the prose corpus."""
    return [line for path in sorted(HERE.glob("prose_*.txt"))
            for line in path.read_text().splitlines() if line.strip()]

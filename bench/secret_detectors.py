"""Secret detectors measured on our two corpora (finding 6 of the review of 7c85f33).

    .venv/bin/python -m bench.secret_detectors [--json out.json]

``memory_platform.foundation.secrets.find_secret`` (the platform's own filter) against Yelp's
``detect-secrets`` (PyPI), default plugins and without its entropy and keyword plugins
(which take ordinary words of free text for keys), and the combination "ours or
detect-secrets without entropy". detect-secrets is no dependency of the platform: install it
beside the checkout for this bench (``pip install --target /tmp/ds detect-secrets==1.5.0``
and ``DETECT_SECRETS_PATH=/tmp/ds``); without it only our filter is measured.

For each detector: recall on ``tests/secrets_corpus/credentials.jsonl`` (the credential
forms, which ones it misses), false positives on ``tests/secrets_corpus/prose_*.txt``
(ordinary German and English sentences), mean time per text, and the worst case on
adversarial inputs: each unit of ``ADVERSARIAL`` repeated to 25,000 and to 100,000
characters; the time of the longer (the worst over the units) and its ratio to the shorter
(about 4 when the detector is linear, 16 when quadratic; the worst ratio over the units,
with a 2 ms floor under the shorter time). A write is refused on the request
path, so the worst case is what one request can hold a worker for.

Prints a table, then the JSON of every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_platform.foundation.secrets import find_secret  # noqa: E402
from tests.secrets_corpus import credentials, prose  # noqa: E402

# Inputs built to make a backtracking pattern work hard: runs of the characters a rule
# expects, each almost completing a match, repeated.
ADVERSARIAL = [
    "a.", "eyJ", "sk-", "PASSWORD_", "password ", "password=", '"password":', "a://",
    "a://x:", "mpk_0", "Bearer ", "Zugangsdaten: a/", "-----BEGIN ", "---- BEGIN ", "key is ",
    "1234567890:AA", "A_", "x" * 63 + " ", "pin 1", "PIN der ", "\u200b", "ä", "a-",
    "Kennwort für den ", "ist immer noch ", "wie immer ", "-u a:", "--password ", "-p",
    "mysql -p", "a=b;", "?pass=", "&token=", "Ab1/", "A" * 39 + " ", "a_b_c_d_", "р",
]
Detector = Callable[[str], bool]


def _ours(text: str) -> bool:
    return find_secret(text) is not None


def _detect_secrets() -> dict[str, Detector]:
    """detect-secrets' two configurations, or nothing when it is not installed."""
    extra = os.environ.get("DETECT_SECRETS_PATH")
    if extra:
        sys.path.insert(0, extra)
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import transient_settings
    except ImportError:
        return {}
    every = [cls.__name__ for cls in get_mapping_from_secret_type_to_class().values()]
    noisy = {"Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector"}

    def detector(plugins: list[str]) -> Detector:
        config = {"plugins_used": [{"name": name} for name in plugins]}

        def found(text: str) -> bool:
            with transient_settings(config):
                return any(True for line in text.splitlines() or [text]
                           for _ in scan_line(line))
        return found

    return {"detect-secrets (default plugins)": detector(every),
            "detect-secrets (no entropy, no keyword)":
                detector([p for p in every if p not in noisy])}


def _seconds(detector: Detector, text: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        detector(text)
        best = min(best, time.perf_counter() - started)
    return best


def measure(name: str, detector: Detector) -> dict:
    creds, sentences = credentials(), prose()
    missed = [form for form, text in creds if not detector(text)]
    flagged = [text for text in sentences if detector(text)]
    started = time.perf_counter()
    for _, text in creds:
        detector(text)
    for text in sentences:
        detector(text)
    per_text_ms = (time.perf_counter() - started) * 1000 / (len(creds) + len(sentences))
    worst = {"unit": None, "ms_100k": 0.0}
    worst_ratio = 0.0
    for unit in ADVERSARIAL:
        small = (unit * (25_000 // len(unit) + 1))[:25_000]
        large = (unit * (100_000 // len(unit) + 1))[:100_000]
        t_small, t_large = _seconds(detector, small), _seconds(detector, large)
        # a floor of 2 ms: below it the ratio of two timings is noise
        worst_ratio = max(worst_ratio, t_large / max(t_small, 2e-3))
        if t_large * 1000 > worst["ms_100k"]:
            worst = {"unit": unit, "ms_100k": round(t_large * 1000, 2)}
    return {"detector": name, "credentials": len(creds), "found": len(creds) - len(missed),
            "recall": round((len(creds) - len(missed)) / len(creds), 4), "missed": missed,
            "prose": len(sentences), "false_positives": len(flagged),
            "false_positive_rate": round(len(flagged) / len(sentences), 4),
            "flagged": flagged[:20], "mean_ms_per_text": round(per_text_ms, 3),
            "worst_adversarial": worst, "worst_ratio_100k_to_25k": round(worst_ratio, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    detectors: dict[str, Detector] = {"memory_platform.foundation.secrets": _ours,
                                      **_detect_secrets()}
    quiet = detectors.get("detect-secrets (no entropy, no keyword)")
    if quiet is not None:
        detectors["ours or detect-secrets (no entropy)"] = (
            lambda text: _ours(text) or quiet(text))
    rows = [measure(name, detector) for name, detector in detectors.items()]
    print(f"{'detector':42} {'recall':>12} {'false pos.':>12} {'ms/text':>8} "
          f"{'worst 100k ms':>14} {'ratio':>6}")
    for r in rows:
        print(f"{r['detector']:42} {r['found']:>4}/{r['credentials']:<3} "
              f"{r['recall']:>4.0%} {r['false_positives']:>4}/{r['prose']:<4} "
              f"{r['false_positive_rate']:>3.0%} {r['mean_ms_per_text']:>8.3f} "
              f"{r['worst_adversarial']['ms_100k']:>14.1f} "
              f"{r['worst_ratio_100k_to_25k']:>6.1f}")
    for r in rows:
        if r["missed"]:
            print(f"\n{r['detector']} misses: " + "; ".join(r["missed"]))
    answer = json.dumps(rows, indent=2, ensure_ascii=False)
    print("\n" + answer)
    if args.json:
        args.json.write_text(answer + "\n")


if __name__ == "__main__":
    main()

"""/openapi.json reads as words: every field's title is its JSON name split into words
("explicitPrivate" is "Explicit private", never pydantic's "Explicitprivate"), as /docs
shows them. Built from the route table itself: no app, no database."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from api.openapi import build_document, readable_title
from api.table import TABLE

# Words a title spells in capitals (or as a name), as a person writes them.
SPELLED = {"ID", "IDs", "URL", "URI", "USD", "Dagster"}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return build_document(TABLE)


def _titled(node: Any, where: str = "") -> Iterator[tuple[str, str, str]]:
    """(where, field name, title) of every titled property and query parameter."""
    if isinstance(node, dict):
        for name, field in (node.get("properties") or {}).items():
            if isinstance(field, dict) and "title" in field:
                yield where, name, field["title"]
        if node.get("in") == "query" and "title" in node.get("schema", {}):
            yield where, node["name"], node["schema"]["title"]
        for key, value in node.items():
            yield from _titled(value, f"{where}/{key}")
    elif isinstance(node, list):
        for number, value in enumerate(node):
            yield from _titled(value, f"{where}/{number}")


def _humps(name: str) -> int:
    """How many words a JSON name has: its snake_case parts and camelCase humps."""
    return 1 + sum(char.isupper() for char in name) + name.count("_")


def test_every_field_title_is_its_name_in_words(document):
    titled = list(_titled(document))
    assert len(titled) > 300  # every schema's properties and the query parameters

    wrong = []
    for where, name, title in titled:
        words = title.split(" ")
        ok = (title.replace(" ", "").lower() == name.replace("_", "").lower()
              and (any(char.isdigit() for char in name) or len(words) == _humps(name))
              and words[0][:1].isupper()
              and all(word in SPELLED or word == word.lower() for word in words[1:])
              and title == readable_title(name))
        if not ok:
            wrong.append(f"{where}: {name} -> {title!r}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(("name", "title"), [
    ("explicitPrivate", "Explicit private"),
    ("userId", "User ID"),
    ("occurredAfter", "Occurred after"),
    ("estimatedCostUsd", "Estimated cost USD"),
    ("dagsterRunId", "Dagster run ID"),
    ("assertionIds", "Assertion IDs"),
    ("assertions_embedded", "Assertions embedded"),
    ("last24h", "Last 24h"),
    ("content", "Content"),
])
def test_a_title_reads_as_a_person_writes_it(name: str, title: str):
    assert readable_title(name) == title


def test_the_document_titles_explicit_private_and_says_what_it_does(document):
    field = document["components"]["schemas"]["MemoryCreate"]["properties"]["explicitPrivate"]
    assert field["title"] == "Explicit private"
    assert "private" in field["description"]


def test_every_operation_is_under_its_features_tag_with_a_description(document):
    from api.openapi import TAGS
    from memory_platform.foundation.features import modules

    declared = {m.__name__.rsplit(".", 1)[-1] for m in modules("api.routes")}
    assert declared <= set(TAGS), f"features without a tag (openapi.TAGS): {declared - set(TAGS)}"
    tags = {t["name"]: t for t in document["tags"]}
    assert all(t.get("description") for t in tags.values())
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            assert len(operation.get("tags", [])) == 1, (method, path)
            assert operation["tags"][0] in tags, (method, path)
    sessions = document["paths"]["/api/v1/sessions/{session_key}/items"]["post"]
    assert sessions["tags"] == ["Sessions"]

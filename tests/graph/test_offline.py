"""The offline graph extractor: verbatim labels from English and German assertions, one
claim per assertion, and an answer that passes the same strict validation with no repair."""

from __future__ import annotations

import uuid

from memory_platform.features.graph import offline
from memory_platform.features.graph.types import GraphBatch, GraphSource
from memory_platform.features.graph.validate import grounded, validate_extraction
from memory_platform.foundation.settings import Settings

SETTINGS = Settings(_env_file=None)  # type: ignore[call-arg]

ENGLISH = [
    ("The VAT filing for Mandant Nord is due on the tenth of each month.", "fact",
     {"mandantId": "nord", "userId": "ada"}),
    ("Ada prefers concise answers with code examples.", "preference", {"userId": "ada"}),
    ("We decided to use PostgreSQL 18 with pgvector for the memory ledger.", "decision", {}),
    ("Release builds must never skip the migration check.", "constraint", {}),
    ("Dr. Schmidt works with Steuerbüro Weber GmbH on task T-1234 since the 10th.", "fact",
     {"taskId": "T-1234"}),
]
GERMAN = [
    ("Die Umsatzsteuer-Voranmeldung für Mandant Nord ist bis zum Zehnten fällig.",
     "constraint", {"mandantId": "nord"}),
    ("Anna bevorzugt kurze Antworten.", "preference", {}),
    ("Wir nutzen ab sofort DATEV für die Buchhaltung bei Siemens.", "decision", {}),
    ("Anna arbeitet mit Steuerbüro Weber zusammen.", "fact", {}),
]


def batch_of(rows, *, kind: str = "team") -> GraphBatch:
    sources = tuple(GraphSource("inst-o", uuid.uuid4(), uuid.uuid4(), text, kind_, 0.85, kind,
                                "inst-o", None, dict(refs)) for text, kind_, refs in rows)
    return GraphBatch("inst-o", kind, "inst-o", sources)


def entities(data):
    return {e["label"]: e for e in data["entities"]}


def test_every_label_and_alias_is_verbatim_and_the_answer_needs_no_repair():
    for rows in (ENGLISH, GERMAN, ENGLISH + GERMAN):
        batch = batch_of(rows)
        data = offline.extract(batch, SETTINGS)
        by_memory = batch.by_memory
        for entity in data["entities"]:
            cited = [by_memory[uuid.UUID(m)] for m in entity["sourceMemoryIds"]]
            texts = " ".join(s.text for s in cited)
            refs = {v for s in cited for v in s.subject_refs.values()}
            assert entity["label"] in texts or entity["label"] in refs, entity
            assert all(grounded(alias, cited) for alias in entity["aliases"])
        extraction = validate_extraction(data, batch, SETTINGS)
        assert sum(extraction.repairs.values()) == 0, extraction.repairs
        assert len(extraction.entities) == len(data["entities"])
        for claim in extraction.claims:
            assert claim.assertion_text == by_memory[claim.source_memory_ids[0]].text


def test_english_names_refs_claims_and_edges():
    batch = batch_of(ENGLISH)
    data = offline.extract(batch)
    found = entities(data)
    nord = found["Mandant Nord"]                       # the verbatim name beats the raw ref
    assert (nord["entityType"], nord["linkedRecordType"], nord["linkedRecordId"],
            nord["aliases"], nord["subjectRefs"]["mandantId"]) == (
        "mandant", "mandantId", "nord", ["nord"], "nord")
    assert found["Ada"]["entityType"] == "user" and found["Ada"]["linkedRecordId"] == "ada"
    assert len(found["Ada"]["sourceMemoryIds"]) == 2   # one entity across the batch
    assert {"VAT", "PostgreSQL 18", "Dr. Schmidt", "Steuerbüro Weber GmbH", "T-1234"} <= set(found)
    assert found["Dr. Schmidt"]["entityType"] == "person"
    assert found["Steuerbüro Weber GmbH"]["entityType"] == "organization"
    assert found["T-1234"]["linkedRecordType"] == "taskId"
    # not names: sentence-initial common words, cue words, ordinals, lower-case words
    assert not {"Release", "The", "We", "10th", "pgvector"} & set(found)
    claims = {c["assertionText"]: c for c in data["claims"]}
    assert "Release builds must never skip the migration check." not in claims   # no entity
    vat = claims[ENGLISH[0][0]]
    refs = {e["ref"]: e["label"] for e in data["entities"]}
    assert (refs[vat["subject"]], vat["predicate"], refs[vat["object"]]) == (
        "Mandant Nord", "states", "VAT")
    pref = claims[ENGLISH[1][0]]
    assert (refs[pref["subject"]], pref["predicate"], pref["object"], pref["value"]) == (
        "Ada", "prefers", None, "prefers concise answers with code examples.")
    edges = {(refs[e["source"]], e["relationType"], refs[e["target"]]) for e in data["edges"]}
    assert ("Mandant Nord", "stated_by", "Ada") in edges          # the author of a team fact
    assert ("Mandant Nord", "related_to", "VAT") in edges
    # the task ref is the subject; "works with" joins two other names, so it is not borrowed
    assert ("T-1234", "related_to", "Dr. Schmidt") in edges
    assert ("T-1234", "related_to", "Steuerbüro Weber GmbH") in edges


def test_german_nouns_are_not_names_but_names_are():
    data = offline.extract(batch_of(GERMAN))
    found = entities(data)
    assert {"Mandant Nord", "Anna", "DATEV", "Siemens", "Steuerbüro Weber"} <= set(found)
    assert not {"Umsatzsteuer-Voranmeldung", "Zehnten", "Antworten", "Buchhaltung", "Die",
                "Wir"} & set(found)
    assert found["Anna"]["entityType"] == "person"
    refs = {e["ref"]: e["label"] for e in data["entities"]}
    edges = {(refs[e["source"]], e["relationType"], refs[e["target"]]) for e in data["edges"]}
    assert ("Anna", "works_with", "Steuerbüro Weber") in edges
    claims = {c["assertionText"]: c for c in data["claims"]}
    due = claims[GERMAN[0][0]]
    assert (refs[due["subject"]], due["predicate"], due["value"]) == (
        "Mandant Nord", "must", "ist bis zum Zehnten fällig.")


def test_deterministic_and_within_the_caps():
    rows = [(f"Projekt Apollo{i} nutzt DATEV{i} und Siemens{i}.", "fact", {}) for i in range(30)]
    batch = batch_of(rows)
    assert offline.extract(batch, SETTINGS) == offline.extract(batch, SETTINGS)
    small = Settings(_env_file=None, graph_max_entities=5, graph_max_claims=3,
                     graph_max_edges=4)  # type: ignore[call-arg]
    data = offline.extract(batch, small)
    # 3 entities of the first row, 2 of the second (the third name is over the cap), and
    # the claims and edges that only need entities within the cap
    assert (len(data["entities"]), len(data["claims"]), len(data["edges"])) == (5, 2, 3)
    assert sum(validate_extraction(data, batch, small).repairs.values()) == 0
    tight = Settings(_env_file=None, graph_max_claims=1, graph_max_edges=1)  # type: ignore[call-arg]
    data = offline.extract(batch, tight)
    assert (len(data["claims"]), len(data["edges"])) == (1, 1)
    assert sum(validate_extraction(data, batch, tight).repairs.values()) == 0


def test_a_name_seen_first_in_text_gets_its_record_later():
    rows = [("Mandant Nord pays on time.", "fact", {}),
            ("Mandant Nord files VAT monthly.", "fact", {"mandantId": "nord"})]
    batch = batch_of(rows)
    data = offline.extract(batch)
    nord = entities(data)["Mandant Nord"]
    assert (nord["linkedRecordType"], nord["linkedRecordId"]) == ("mandantId", "nord")
    assert sum(validate_extraction(data, batch, SETTINGS).repairs.values()) == 0


def test_find_names_offsets_are_exact():
    text = "Ada's team met Dr. Schmidt and the ACME GmbH team; Berlin is the office."
    for name in offline.find_names(text):
        assert text[name.start: name.end] == name.label
    assert [n.label for n in offline.find_names(text)] == ["Ada", "Dr. Schmidt", "ACME GmbH"]

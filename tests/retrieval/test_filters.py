"""Search filters (retrieval/criteria.py): the language's validation, the compiler, and every
operator against a real search, inside the one statement (top-k after filtering, on the exact,
HNSW and keyword-only paths), and that a filter never widens what the caller sees."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from memory_platform.features.context import context_search
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval import search
from memory_platform.features.retrieval.criteria import (
    MAX_DEPTH,
    MAX_LEAVES,
    criteria_params,
    memory_condition,
    parse_criteria,
)
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AccessContext, chunk_branches, placeholder
from tests.memories.support import OutageEmbedder
from tests.support.settings import hash_embedding_settings

QUERY = "review meeting notes"
JAN, MAR, MAY = (datetime(2024, m, 10, 12, tzinfo=UTC) for m in (1, 3, 5))

# --- validation and compiling (no database) ---------------------------------------------


def _field_of(where=None, **kwargs) -> str:
    with pytest.raises(InvalidInput) as caught:
        parse_criteria(where, **kwargs)
    return caught.value.details["field"]


def _nested(depth: int) -> dict:
    node: dict = {"metadata.a": {"eq": 1}}
    for _ in range(depth):
        node = {"not": node}
    return node


@pytest.mark.parametrize(("where", "field"), [
    ({"metadata.a": {"like": "x"}}, "filter.metadata.a.like"),  # unknown operator
    ({"xor": [{"metadata.a": {"eq": 1}}]}, "filter.xor"),  # unknown combinator / field
    ({"content": {"eq": "x"}}, "filter.content"),  # not a filterable field
    ({"metadata.a b": {"eq": 1}}, "filter.metadata.a b"),  # key grammar
    ({"metadata.": {"eq": 1}}, "filter.metadata."),
    ({"metadata.a.b.c.d.e": {"eq": 1}}, "filter.metadata.a.b.c.d.e"),  # too many segments
    ({"subjectRefs.a.b": {"eq": 1}}, "filter.subjectRefs.a.b"),  # subject refs are flat
    ({"metadata.a": {"eq": [1]}}, "filter.metadata.a.eq"),  # not a scalar
    ({"metadata.a": {"eq": {"b": 1}}}, "filter.metadata.a.eq"),
    ({"metadata.a": {"eq": "x" * 257}}, "filter.metadata.a.eq"),
    ({"metadata.a": {"eq": "a\x00b"}}, "filter.metadata.a.eq"),
    ({"metadata.a": {"eq": 2**60}}, "filter.metadata.a.eq"),
    ({"metadata.a": {"eq": float("nan")}}, "filter.metadata.a.eq"),
    ({"metadata.a": {"in": "x"}}, "filter.metadata.a.in"),
    ({"metadata.a": {"in": []}}, "filter.metadata.a.in"),
    ({"metadata.a": {"in": list(range(33))}}, "filter.metadata.a.in"),
    ({"metadata.a": {"in": [1, {"b": 2}]}}, "filter.metadata.a.in.1"),
    ({"metadata.a": {"exists": "yes"}}, "filter.metadata.a.exists"),
    ({"metadata.a": {"eq": 1, "in": [1]}}, "filter.metadata.a"),  # two operators
    ({"and": []}, "filter.and"),
    ({"and": {"metadata.a": {"eq": 1}}}, "filter.and"),
    ({"and": [{"metadata.a": {"eq": 1}}, "x"]}, "filter.and.1"),
    ({"metadata.a": {"eq": 1}, "metadata.b": {"eq": 2}}, "filter"),  # two keys in one node
    ([{"metadata.a": {"eq": 1}}], "filter"),
    ("{not json", "filter"),
    (_nested(MAX_DEPTH + 1), "filter" + ".not" * MAX_DEPTH),
    ({"or": [{f"metadata.k{i}": {"exists": True}} for i in range(MAX_LEAVES + 1)]},
     f"filter.or.{MAX_LEAVES}"),
])
def test_a_bad_filter_is_refused_naming_the_field(where, field):
    assert _field_of(where) == field


def test_the_bounds_themselves_are_accepted():
    assert parse_criteria(_nested(MAX_DEPTH)) is not None
    assert parse_criteria({"and": [{f"metadata.k{i}": {"exists": True}}
                                   for i in range(MAX_LEAVES)]}) is not None


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"occurred_after": "2024-01-01"}, "occurredAfter"),  # no offset
    ({"occurred_before": "yesterday"}, "occurredBefore"),
    ({"created_after": datetime(2024, 1, 1)}, "createdAfter"),  # naive
    ({"created_before": 17}, "createdBefore"),
    ({"occurred_after": "2024-05-01T00:00:00Z", "occurred_before": "2024-01-01T00:00:00Z"},
     "occurredAfter"),
    ({"created_after": "2024-05-01T00:00:00Z", "created_before": "2024-05-01T00:00:00Z"},
     "createdAfter"),
    ({"source_types": ["fact", "poem"]}, "sourceTypes"),
    ({"source_types": []}, "sourceTypes"),
    ({"source_types": "fact,,manual"}, "sourceTypes"),
    ({"source_types": 3}, "sourceTypes"),
])
def test_bad_time_ranges_and_source_types_are_refused(kwargs, field):
    assert _field_of(**kwargs) == field


def test_nothing_to_filter_is_no_criteria():
    assert parse_criteria() is None
    assert parse_criteria(None, source_types=None) is None


def test_the_compiled_text_holds_placeholders_only_and_depends_on_the_shape_alone():
    hostile = "x'); DROP TABLE agent_memories; --\" || $"
    one = parse_criteria({"and": [{"metadata.p": {"eq": hostile}},
                                  {"subjectRefs.taskId": {"in": ["T-1", 2]}},
                                  {"not": {"metadata.draft": {"exists": True}}}]},
                         occurred_after="2024-01-01T00:00:00+02:00", source_types="fact")
    two = parse_criteria({"and": [{"metadata.q.r": {"eq": 5}},
                                  {"subjectRefs.documentId": {"in": ["D"]}},
                                  {"not": {"metadata.x": {"exists": True}}}]},
                         occurred_after="2020-01-01T00:00:00Z", source_types=["manual", "dream"])
    assert one.shape == two.shape
    text = memory_condition(one, "fm").as_string(None)
    assert text == memory_condition(two, "fm").as_string(None)
    assert "DROP" not in text and "apollo" not in text
    params = criteria_params(one)
    assert params["crit_0"] == '$."p" == ' + '"x\'); DROP TABLE agent_memories; --\\" || $"'
    assert params["crit_1"] == '$."taskId" == "T-1" || $."taskId" == "2"'  # refs are text
    assert params["crit_2"] == '$."draft"'
    assert params["crit_4"] == ["fact"]
    other = parse_criteria({"or": [{"metadata.p": {"eq": 1}}, {"metadata.q": {"eq": 2}}]})
    assert other.shape != one.shape


def test_every_arm_and_the_final_check_carry_the_filter():
    ctx = AccessContext("i", user_id="ada")
    criteria = parse_criteria({"metadata.p": {"eq": 1}})
    shape = search._Shape(user=True, team=False, channels=False, scoped=False,
                          keyword_arm=True, scored_terms=True, key="k", dims=3,
                          vector_cap=8, context_cap=8, match_cap=100, scan_cap=1000, exact_max=10,
                          criteria=criteria.shape)
    text = search._compose(shape, ctx, None, criteria).as_string(None)
    # keyword arm + exact arm + HNSW arm + each branch of the bounded count
    branches = len(chunk_branches(ctx, "c", placeholder))
    assert text.count("FROM agent_memories fm WHERE fm.instance_key") == 3 + branches
    assert text.count('"m"."metadata" @@') == 1  # the final recall check


# --- against a database -----------------------------------------------------------------


@pytest.fixture(scope="module")
def world(db, module_database_url, tmp_path_factory):
    """One instance: ada's private memories, bob's private ones, a workspace one."""
    settings = hash_embedding_settings(module_database_url,
                                       data_dir=tmp_path_factory.mktemp("filters"))
    instance = f"filters-{uuid.uuid4().hex[:10]}"
    ada, bob = AccessContext(instance, user_id="ada"), AccessContext(instance, user_id="bob")
    workspace = AccessContext(instance)
    ids: dict[str, uuid.UUID] = {}

    def put(name, ctx, content, **kwargs):
        kwargs.setdefault("source_type", "manual")
        ids[name] = store_memory(db, settings, ctx, MemoryWrite(content, **kwargs)).id

    put("apollo_launch", ada, "Apollo launch checklist review meeting notes",
        metadata={"project": "apollo", "tags": ["a", "x"], "priority": 1},
        subject_refs={"taskId": "T-1"}, occurred_at=JAN)
    put("apollo_budget", ada, "Apollo budget review meeting notes",
        metadata={"project": "apollo", "draft": True, "tags": ["b"], "priority": 2.5},
        occurred_at=MAR)
    put("zeus", ada, "Zeus launch review meeting notes", source_type="fact",
        metadata={"project": "zeus", "nested": {"level": "deep"}},
        subject_refs={"documentId": "D-9"})
    put("hermes", ada, "Hermes review meeting notes", source_type="prompt_file",
        metadata={"project": "hermes", "draft": None}, occurred_at=MAY)
    put("bob_apollo", bob, "Apollo secret review meeting notes",
        metadata={"project": "apollo", "owner": "bob", "tags": ["a"]},
        subject_refs={"taskId": "T-1"}, occurred_at=JAN)
    put("shared_apollo", workspace, "Apollo shared review meeting notes",
        metadata={"project": "apollo", "tags": ["x"]}, occurred_at=MAR)
    # One memory written long ago (write time), for the created* ranges.
    db.execute("UPDATE agent_memories SET created_at = %s WHERE id = %s",
               (datetime(2020, 6, 1, tzinfo=UTC), ids["hermes"]))
    return settings, ada, bob, ids


def _found(db, world, where=None, ctx=None, embedder=None, limit=50, **kwargs):
    settings, ada, _, ids = world
    criteria = parse_criteria(where, **kwargs)
    hits = search_memories(db, settings, ctx or ada, QUERY, limit=limit, criteria=criteria,
                           stamp=False, **({"embedder": embedder} if embedder else {}))
    names = {v: k for k, v in ids.items()}
    return {names[h.memory_id] for h in hits}


ADA_SEES = {"apollo_launch", "apollo_budget", "zeus", "hermes", "shared_apollo"}


def test_without_a_filter_the_caller_sees_its_own_and_shared_memories(db, world):
    assert _found(db, world) == ADA_SEES


@pytest.mark.parametrize(("where", "expected"), [
    ({"metadata.project": {"eq": "apollo"}}, {"apollo_launch", "apollo_budget",
                                              "shared_apollo"}),
    ({"metadata.project": {"in": ["zeus", "hermes"]}}, {"zeus", "hermes"}),
    ({"metadata.tags": {"eq": "x"}}, {"apollo_launch", "shared_apollo"}),  # array element
    ({"metadata.tags": {"in": ["b", "nope"]}}, {"apollo_budget"}),
    ({"metadata.priority": {"eq": 1}}, {"apollo_launch"}),
    ({"metadata.priority": {"in": [2.5, 7]}}, {"apollo_budget"}),
    ({"metadata.draft": {"eq": True}}, {"apollo_budget"}),
    ({"metadata.draft": {"eq": None}}, {"hermes"}),
    ({"metadata.draft": {"exists": True}}, {"apollo_budget", "hermes"}),  # null counts
    ({"metadata.draft": {"exists": False}}, {"apollo_launch", "zeus", "shared_apollo"}),
    ({"metadata.nested.level": {"eq": "deep"}}, {"zeus"}),
    ({"metadata.nested.level": {"exists": True}}, {"zeus"}),
    ({"metadata.project": {"eq": 1}}, set()),  # a type mismatch matches nothing
    ({"subjectRefs.taskId": {"eq": "T-1"}}, {"apollo_launch"}),
    ({"subjectRefs.documentId": {"in": ["D-9", "D-10"]}}, {"zeus"}),
    ({"subjectRefs.documentId": {"exists": True}}, {"zeus"}),
    ({"and": [{"metadata.project": {"eq": "apollo"}}, {"metadata.tags": {"eq": "x"}}]},
     {"apollo_launch", "shared_apollo"}),
    ({"or": [{"metadata.project": {"eq": "zeus"}}, {"subjectRefs.taskId": {"eq": "T-1"}}]},
     {"zeus", "apollo_launch"}),
    ({"not": {"metadata.project": {"eq": "apollo"}}}, {"zeus", "hermes"}),
    ({"not": {"metadata.project": {"eq": 1}}}, ADA_SEES),  # unknown is not true
    ({"and": [{"metadata.project": {"eq": "apollo"}},
              {"not": {"or": [{"metadata.draft": {"exists": True}},
                              {"subjectRefs.taskId": {"exists": True}}]}}]}, {"shared_apollo"}),
])
def test_every_operator(db, world, where, expected):
    assert _found(db, world, where) == expected


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({"occurred_after": "2024-02-01T00:00:00Z"}, {"apollo_budget", "hermes", "shared_apollo"}),
    ({"occurred_before": MAR}, {"apollo_launch"}),  # exclusive; no event time never matches
    ({"occurred_after": MAR, "occurred_before": MAY}, {"apollo_budget", "shared_apollo"}),
    ({"created_before": "2021-01-01T00:00:00Z"}, {"hermes"}),
    ({"created_after": "2021-01-01T00:00:00+01:00"}, ADA_SEES - {"hermes"}),
    ({"source_types": ["fact"]}, {"zeus"}),
    ({"source_types": "prompt_file,fact"}, {"zeus", "hermes"}),
])
def test_time_ranges_and_source_types(db, world, kwargs, expected):
    assert _found(db, world, **kwargs) == expected


def test_filters_combine(db, world):
    assert _found(db, world, {"metadata.project": {"eq": "apollo"}},
                  occurred_after=JAN, occurred_before=MAY,
                  created_after=datetime(2021, 1, 1, tzinfo=UTC),
                  source_types=["manual"]) == {"apollo_launch", "apollo_budget", "shared_apollo"}


# --- a filter never widens ---------------------------------------------------------------


@pytest.mark.parametrize("where", [
    {"metadata.project": {"eq": "apollo"}},
    {"metadata.owner": {"eq": "bob"}},  # names only bob's memory
    {"subjectRefs.taskId": {"eq": "T-1"}},
    {"or": [{"metadata.owner": {"exists": True}}, {"not": {"metadata.owner": {"exists": True}}}]},
    {"not": {"metadata.project": {"eq": "nothing"}}},
])
def test_another_users_private_memory_that_matches_is_never_returned(db, world, where):
    found = _found(db, world, where)
    assert "bob_apollo" not in found
    assert found <= ADA_SEES
    # bob does see it: the memory matches the filter
    _, _, bob, _ = world
    assert "bob_apollo" in _found(db, world, where, ctx=bob)


def test_a_filter_naming_an_audience_the_caller_cannot_see_returns_nothing(db, world):
    assert _found(db, world, {"metadata.owner": {"eq": "bob"}}) == set()
    assert _found(db, world, {"metadata.owner": {"eq": "bob"}},
                  embedder=OutageEmbedder()) == set()
    stranger = AccessContext(world[1].instance_key, user_id="carol")
    assert _found(db, world, {"metadata.project": {"eq": "apollo"}},
                  ctx=stranger) == {"shared_apollo"}
    other_instance = AccessContext(f"other-{uuid.uuid4().hex[:8]}", user_id="ada")
    assert _found(db, world, {"metadata.project": {"eq": "apollo"}},
                  ctx=other_instance) == set()


def test_the_keyword_only_path_filters_too(db, world):
    assert _found(db, world, {"metadata.project": {"eq": "apollo"}},
                  embedder=OutageEmbedder()) == {"apollo_launch", "apollo_budget",
                                                 "shared_apollo"}


def test_context_search_with_a_filter_searches_the_filtered_memories(db, world):
    settings, ada, _, ids = world
    items = context_search(db, settings, ada, QUERY, limit=20,
                           criteria=parse_criteria({"metadata.project": {"eq": "zeus"}}))
    assert [i.details["memoryId"] for i in items] == [str(ids["zeus"])]
    assert all(i.found_by == ["memories"] for i in items)


# --- top-k after filtering: exact and HNSW paths -----------------------------------------


@pytest.fixture(scope="module")
def crowd(db, module_database_url, tmp_path_factory):
    """60 memories that rank above the 3 that match the filter."""
    settings = hash_embedding_settings(module_database_url,
                                       data_dir=tmp_path_factory.mktemp("crowd"))
    ctx = AccessContext(f"crowd-{uuid.uuid4().hex[:10]}", user_id="ada")
    for i in range(60):
        store_memory(db, settings, ctx, MemoryWrite(
            f"Quarterly invoice reconciliation for vendor number {i}", source_type="manual",
            metadata={"kind": "noise"}))
    wanted = {store_memory(db, settings, ctx, MemoryWrite(
        f"Invoice {i} of the gardening club: tomatoes, basil and compost", source_type="manual",
        metadata={"kind": "wanted"})).id for i in range(3)}
    return settings, ctx, wanted


@pytest.mark.parametrize("exact_max", [10_000, 0])  # exact scan; HNSW with iterative scan
def test_top_k_is_taken_among_the_matches(db, crowd, exact_max):
    settings, ctx, wanted = crowd
    settings = settings.model_copy(update={"retrieval_exact_scan_max": exact_max})
    hits = search_memories(db, settings, ctx, "quarterly invoice reconciliation vendor",
                           limit=3, stamp=False,
                           criteria=parse_criteria({"metadata.kind": {"eq": "wanted"}}))
    assert {h.memory_id for h in hits} == wanted


def test_a_search_with_a_filter_is_one_statement(db, crowd):
    settings, ctx, _ = crowd
    plan: list[str] = []
    search_memories(db, settings, ctx, "gardening", limit=3, stamp=False, explain=plan,
                    criteria=parse_criteria({"metadata.kind": {"eq": "wanted"}},
                                            created_after=datetime.now(UTC) - timedelta(1)))
    text = "\n".join(plan)
    assert "agent_memories" in text and "agent_memory_chunks" in text

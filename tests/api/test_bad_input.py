"""Bad input: each case is a specific 4xx in the one JSON error shape, never a 500, and
nothing is written (row counts of every table a write touches are compared around it)."""

from __future__ import annotations

import json
import sys
import unicodedata
from collections.abc import Callable, Iterator

import psycopg
import pytest

from api.input import is_free_text, refused_character
from api.table import TABLE
from memory_platform.features.apikeys import create_key
from memory_platform.features.dreaming.partitions import Partition
from tests.api.conftest import (
    ALL_SCOPES,
    assert_error,
    bearer,
    key_maker,
    make_settings,
    open_client,
    row_counts,
)

UUID0 = "00000000-0000-0000-0000-000000000000"
OK = "The on-call rotation changes every Monday at nine."

# Error paths write nothing, so one database and one app serve the whole module.
pytestmark = pytest.mark.shared_app


@pytest.fixture(scope="module")
def alice(shared_database_url: str) -> dict[str, str]:
    return bearer(key_maker(shared_database_url)("alice", ALL_SCOPES))


@pytest.fixture(scope="module")
def counts(shared_database_url: str) -> Iterator[Callable[[], dict[str, int]]]:
    with psycopg.connect(shared_database_url, autocommit=True) as connection:
        yield lambda: row_counts(connection)


@pytest.fixture
def rejected(client, alice, counts) -> Callable[..., dict]:
    """``rejected(method, path, status, code, **request)``: sends the request as alice,
    asserts the error shape and status, and that no row was written; the error object."""

    def check(method: str, path: str, status: int, code: str | None = None, **request) -> dict:
        headers = {**alice, **request.pop("headers", {})}
        before = counts()
        response = client.request(method, path, headers=headers, **request)
        error = assert_error(response, status, code)
        assert counts() == before
        return error

    return check


def _raw(body: bytes) -> dict:
    return {"content": body, "headers": {"Content-Type": "application/json"}}


# --- the body is not a JSON object ---------------------------------------------------------
@pytest.mark.parametrize("body", [
    b'{"content": ', b'{"content": "a"} trailing', b"", b"   ", b"{'content': 'a'}",
    b'{"content": "a",}', b'{"content": "unterminated}',
], ids=["truncated", "trailing", "empty", "blank", "single-quotes", "trailing-comma",
        "unterminated-string"])
def test_malformed_json_is_400(rejected, body):
    error = rejected("POST", "/api/v1/memory", 400, "malformed_json", **_raw(body))
    assert "JSON" in error["message"]


@pytest.mark.parametrize("body", [b"[]", b'["content"]', b'"remember this"', b"42", b"null",
                                  b"true"])
def test_json_that_is_not_an_object_is_400(rejected, body):
    error = rejected("POST", "/api/v1/memory", 400, "malformed_json", **_raw(body))
    assert "object" in error["message"]


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_nan_and_infinity_are_400(rejected, constant):
    body = b'{"content": "' + OK.encode() + b'", "subjectRefs": {"x": ' + constant + b"}}"
    rejected("POST", "/api/v1/memory", 400, "malformed_json", **_raw(body))


def test_a_number_that_overflows_to_infinity_is_400(rejected):
    body = b'{"content": "The release date moves again.", "subjectRefs": {"x": 1e999}}'
    rejected("POST", "/api/v1/memory", 400, **_raw(body))


@pytest.mark.parametrize("depth", [980, 20_000])
def test_deeply_nested_json_is_400(rejected, depth):
    nested = b"[" * depth + b"]" * depth
    rejected("POST", "/api/v1/memory", 400,
             **_raw(b'{"content": "' + OK.encode() + b'", "extra": ' + nested + b"}"))


# --- encoding and characters ----------------------------------------------------------------
@pytest.mark.parametrize("body", [
    b'{"content": "caf\xe9 au lait"}', b'{"content": "\xff\xfe"}',
    '{"content": "utf-16"}'.encode("utf-16"), b'{"content": "\xed\xa0\x80"}',
], ids=["latin-1", "invalid-bytes", "utf-16", "encoded-surrogate"])
def test_a_body_that_is_not_utf8_is_400(rejected, body):
    rejected("POST", "/api/v1/memory", 400, "invalid_encoding", **_raw(body))


NUL_OR_SURROGATE = [
    b'{"content": "before\\u0000after"}',
    b'{"content": "lone \\ud800 high"}',
    b'{"content": "lone \\udfff low"}',
    b'{"content": "' + OK.encode() + b'", "title": "t\\u0000"}',
    b'{"content": "' + OK.encode() + b'", "title": "\\ud83d"}',
    b'{"content": "' + OK.encode() + b'", "subjectRefs": {"taskId": "T\\u0000"}}',
    b'{"content": "' + OK.encode() + b'", "subjectRefs": {"k\\ud800": "v"}}',
    b'{"content": "' + OK.encode() + b'", "context": {"sessionKey": "s\\u0000"}}',
    b'{"content": "' + OK.encode() + b'", "context": {"channelThreadKey": "\\udc00"}}',
]


@pytest.mark.parametrize("body", NUL_OR_SURROGATE, ids=[
    "content-nul", "content-high-surrogate", "content-low-surrogate", "title-nul",
    "title-surrogate", "ref-value-nul", "ref-key-surrogate", "session-nul",
    "thread-surrogate"])
def test_nul_and_lone_surrogates_in_any_string_field_are_400(rejected, body):
    error = rejected("POST", "/api/v1/memory", 400, "invalid_characters", **_raw(body))
    assert error["details"]["field"]


@pytest.mark.parametrize(("path", "body"), [
    ("/api/v1/context/search", b'{"query": "x\\u0000"}'),
    ("/api/v1/context/search", b'{"query": "on-call", "context": {"groupRoomId": "\\ud800"}}'),
    ("/api/v1/feedback/injected", b'{"runId": "r\\u0000", "assertionIds": ["' +
     UUID0.encode() + b'"]}'),
    ("/api/v1/feedback/cited", b'{"runId": "r", "responseText": "\\udbff"}'),
], ids=["context-query", "context-room", "injected-run", "cited-text"])
def test_nul_and_lone_surrogates_in_other_routes_are_400(rejected, path, body):
    rejected("POST", path, 400, "invalid_characters", **_raw(body))


@pytest.mark.parametrize("char", ["\x07", "\x1b", "\x7f", "\x85", "\x0b", "\x0c"])
def test_control_characters_in_content_are_400(rejected, char):
    error = rejected("POST", "/api/v1/memory", 400, "invalid_characters",
                     json={"content": f"Colour codes {char}[31m are fun"})
    assert "control character" in error["message"]
    assert error["details"] == {"field": "content", "character": f"U+{ord(char):04X}"}


def test_control_characters_in_the_title_are_400(rejected):
    rejected("POST", "/api/v1/memory", 400, "invalid_characters",
             json={"content": "The pager escalates after ten minutes.",
                   "title": "On-call\x1b[2J"})


def test_text_fields_keep_tabs_and_line_breaks(client, alice):
    """Free text (content, title) may hold tab, line feed and carriage return."""
    response = client.post("/api/v1/memory", headers=alice, json={
        "content": "Deploy steps:\r\n\t1. freeze\n\t2. tag the release",
        "title": "Deploy\tsteps"})
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("char", ["\n", "\t", "\r", "\u200b", "\u202e", "\u00ad", "\ufeff",
                                  "\u2028", "\U000e0041"])
def test_identifiers_take_no_line_breaks_or_invisible_characters(rejected, char):
    """A session key that looks like another one is another one: refused at the edge."""
    error = rejected("POST", "/api/v1/memory", 400, "invalid_characters",
                     json={"content": OK, "context": {"sessionKey": f"web:al{char}ice"}})
    assert error["details"] == {"field": "context.sessionKey",
                                "character": f"U+{ord(char):04X}"}


def test_the_invisible_character_class_is_unicodes():
    """Every Cf, Zl, Zp and Cc character of this Python's Unicode is refused in identifiers,
    and every C0/C1 control but tab, line feed and carriage return in text."""
    missed_identifier, missed_text = [], []
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        category = unicodedata.category(char)
        if category in ("Cf", "Zl", "Zp", "Cc", "Cs") and \
                refused_character(char, free_text=False) is None:
            missed_identifier.append(f"U+{code:04X}")
        if category in ("Cc", "Cs") and char not in "\t\n\r" and \
                refused_character(char, free_text=True) is None:
            missed_text.append(f"U+{code:04X}")
    assert missed_identifier == [] and missed_text == []
    assert refused_character("Grüße, naïve café 👩‍💻 مرحبا", free_text=False) == "\u200d"
    assert refused_character("Grüße, naïve café 👩‍💻 مرحبا\n", free_text=True) is None


# --- the character rules on every route of the table -----------------------------------------
# Valid inputs of some operations (the hostile string is placed into them); any other
# operation of the table that reads a body or a query string starts from an empty one: the
# characters are checked before the model, so the answer is the same.
BASE_INPUTS: dict[tuple[str, str], dict] = {
    ("GET", "/api/v1/memory"): {"query": "on-call"},
    ("POST", "/api/v1/memory"): {"content": OK},
    ("POST", "/api/v1/context/search"): {"query": "on-call"},
    ("POST", "/api/v1/feedback/injected"): {"runId": "run-1", "assertionIds": [UUID0]},
    ("POST", "/api/v1/feedback/cited"): {"runId": "run-1", "responseText": OK},
    ("POST", "/internal/memory/reembed"): {},
    ("GET", "/internal/memory/dreams"): {},
    ("POST", "/internal/memory/dreams"): {"partition": "default/team/default"},
    ("POST", "/api/v1/sessions/{session_key:path}/items"): {"items": [
        {"role": "user", "content": OK, "metadata": {"attachments": [{"name": "a.txt"}]}}]},
}
HOSTILE_IN_ANY_FIELD = ["\x00", "\x01", "\x1b", "\x7f", "\x85", "\x9f"]
HOSTILE_IN_IDENTIFIERS = ["\n", "\t", "\u200b", "\u202e", "\u2066", "\ufeff", "\u00ad"]
KEY = object()  # a path step: a key of the object (an additionalProperties map)


def _input_operations() -> list[tuple[str, str, str, type, str | None]]:
    return [(op.method, section.prefix + op.path, where, model, op.scope)
            for section in TABLE for op in section.operations
            for where, model in (("body", op.body), ("query", op.query)) if model]


def _string_paths(schema: dict, defs: dict, path: tuple = ()) -> Iterator[tuple]:
    """Paths (keys, 0 for a list item, KEY for a map key) of every string in ``schema``."""
    if "$ref" in schema:
        yield from _string_paths(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, path)
        return
    for option in schema.get("anyOf", []):
        yield from _string_paths(option, defs, path)
    if schema.get("type") == "string" or (isinstance(schema.get("enum"), list) and
                                          all(isinstance(v, str) for v in schema["enum"])):
        yield path
    for name, inner in schema.get("properties", {}).items():
        yield from _string_paths(inner, defs, (*path, name))
    if isinstance(schema.get("additionalProperties"), dict):
        yield (*path, KEY)
        yield from _string_paths(schema["additionalProperties"], defs, (*path, "ref"))
    if schema.get("type") == "array":
        yield from _string_paths(schema.get("items", {}), defs, (*path, 0))


def _placed(base: dict, path: tuple, value: str) -> dict:
    """A copy of ``base`` with ``value`` at ``path`` (containers made as needed)."""
    data = json.loads(json.dumps(base))
    here = data
    for step, following in zip(path, path[1:], strict=False):
        if following is KEY:
            break
        if isinstance(here, list):
            here = here[step]
            continue
        here = here.setdefault(step, [] if following == 0 else {})
    last = path[-1]
    if path == (KEY,):
        data[value] = "v"
    elif last is KEY:
        here[path[-2]] = {value: "v"}
    elif isinstance(here, list):
        here[:] = [value]
    else:
        here[last] = value
    return data


def _field_name(path: tuple) -> str:
    return ".".join("<key>" if p is KEY else f"[{p}]" if p == 0 else p for p in path) \
        .replace(".[", "[")


def _hostile_cases() -> list:
    cases = []
    for method, route, where, model, scope in _input_operations():
        schema = model.model_json_schema(by_alias=True)
        paths = sorted(set(_string_paths(schema, schema.get("$defs", {}))), key=_field_name)
        for path in [*paths, (KEY,)]:
            free = is_free_text(_field_name(path))
            for char in HOSTILE_IN_ANY_FIELD + ([] if free else HOSTILE_IN_IDENTIFIERS):
                if where == "query" and len(path) > 1:
                    continue  # a query string is flat
                cases.append(pytest.param(method, route, where, scope, path, char,
                                          id=f"{method} {route} {_field_name(path)} "
                                             f"U+{ord(char):04X}"))
    return cases


def test_the_table_has_routes_with_input():
    assert {(m, r) for m, r, *_ in _input_operations()} >= set(BASE_INPUTS)


@pytest.fixture(scope="module")
def scope_headers(shared_database_url: str) -> Callable[[str | None], dict[str, str]]:
    """Headers of a key that passes a route's scope: alice's for the route scopes, a runtime
    key (no user) for a route only the runtime may call."""
    made: dict[tuple[str, ...], dict[str, str]] = {}

    def headers(scope: str | tuple[str, ...] | None) -> dict[str, str]:
        needed = (scope,) if isinstance(scope, str) else scope or ()
        if not needed or set(needed) & set(ALL_SCOPES):
            return {}
        if needed not in made:
            with psycopg.connect(shared_database_url) as connection:
                _, token = create_key(connection, instance_key="default", user_id=None,
                                      scopes=(), runtime=True)
                connection.commit()
            made[needed] = bearer(token)
        return made[needed]

    return headers


@pytest.mark.parametrize(("method", "route", "where", "scope", "path", "char"),
                         _hostile_cases())
def test_a_control_or_invisible_character_in_any_field_of_any_route_is_400(
        rejected, scope_headers, method, route, where, scope, path, char):
    """Every string (keys too) of every body and query the route table reads: 400
    invalid_characters naming the field, never a 500, no row written."""
    value = f"ok{char}ok"
    data = _placed(BASE_INPUTS.get((method, route), {}), path, value)
    request = {"json": data} if where == "body" else {"params": data}
    route = route.replace("{", "").replace("}", "").replace(":path", "")  # a sample id
    error = rejected(method, route, 400, "invalid_characters",
                     headers=scope_headers(scope), **request)
    field = error["details"]["field"]
    expected = f"({where})" if path == (KEY,) else _field_name(path[:-1] if path[-1] is KEY
                                                               else path)
    assert field == expected
    assert error["details"]["character"] == f"U+{ord(char):04X}"


# --- F17: Dream partition keys -----------------------------------------------------------
@pytest.mark.parametrize("partition", ["default/team/a%00b", "default%00/team/default",
                                       "default/team%00/default"])
def test_f17_a_partition_key_decoding_to_nul_is_400(rejected, partition):
    """F17: the key decodes to NUL; it was a psycopg DataError and a 500."""
    error = rejected("POST", "/internal/memory/dreams", 400, "invalid_partition",
                     json={"partition": partition})
    assert "U+0000" in error["message"]


@pytest.mark.parametrize("partition", ["default/team/a%1Bb", "default/team/%ED%A0%80",
                                       "default/team/%FF"])
def test_other_odd_partition_keys_are_unknown_not_500(rejected, partition):
    rejected("POST", "/internal/memory/dreams", 404, "unknown_partition",
             json={"partition": partition})


def test_f17_decoding_refuses_nul_everywhere():
    with pytest.raises(ValueError, match="U\\+0000"):
        Partition.from_partition_key("default/team/a%00b")
    assert Partition.from_partition_key("default/team/a%09b").key == "a\tb"


# --- credentials ----------------------------------------------------------------------------
@pytest.mark.parametrize("content", [
    "The staging password: hunter2hunter2",
    "Use the key sk-proj-abcdefghijklmnopqrstuvwx1234 for the bot",
    "-----BEGIN RSA PRIVATE KEY----- MIIEow",
    "Connect with postgres://app:s3cretpw@db.internal/memory",
    "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
])
def test_a_credential_in_content_is_422(rejected, content):
    error = rejected("POST", "/api/v1/memory", 422, "credential_detected",
                     json={"content": content})
    assert error["details"]["field"] == "content"
    assert "hunter2" not in error["message"] and "s3cretpw" not in error["message"]


def test_a_credential_in_a_subject_ref_is_422(rejected):
    rejected("POST", "/api/v1/memory", 422, "credential_detected",
             json={"content": OK, "subjectRefs": {"note": "password: hunter2hunter2"}})


def test_a_credential_in_the_title_is_422(rejected):
    rejected("POST", "/api/v1/memory", 422, "credential_detected",
             json={"content": "The staging box is reachable over the VPN only.",
                   "title": "password: hunter2hunter2"})


# --- wrong types, unknown fields, missing and out-of-range values ---------------------------
@pytest.mark.parametrize("body", [
    {"content": 42}, {"content": None}, {"content": ["a", "b"]}, {"content": {"text": OK}},
    {"content": OK, "explicitPrivate": "yes"}, {"content": OK, "explicitPrivate": 1},
    {"content": OK, "visibility": 1}, {"content": OK, "visibility": "public"},
    {"content": OK, "subjectRefs": ["taskId"]}, {"content": OK, "subjectRefs": None},
    {"content": OK, "subjectRefs": {"k": {"nested": 1}}},
    {"content": OK, "subjectRefs": {"k": True}},
    {"content": OK, "title": 5}, {"content": OK, "context": "s-1"},
    {"content": OK, "context": {"sessionKey": 5}}, {"content": OK, "assertionType": "opinion"},
], ids=lambda body: ",".join(f"{k}={type(v).__name__}" for k, v in body.items()))
def test_wrong_types_are_400(rejected, body):
    rejected("POST", "/api/v1/memory", 400, "validation_error", json=body)


@pytest.mark.parametrize("body", [
    {"content": OK, "colour": "red"}, {"content": OK, "sourceType": "dream"},
    {"content": OK, "trustClass": "system"}, {"content": OK, "instanceKey": "acme"},
    {"content": OK, "context": {"tenant": "acme"}}, {"content": OK, "Content": OK},
], ids=["colour", "sourceType", "trustClass", "instanceKey", "context.tenant", "Content"])
def test_unknown_fields_are_400_naming_the_field(rejected, body):
    error = rejected("POST", "/api/v1/memory", 400, "validation_error", json=body)
    unknown = (set(body) - {"content", "context"}) or set(body["context"])
    assert any(d["field"].split(".")[-1] in unknown for d in error["details"])


@pytest.mark.parametrize("body", [{}, {"title": "No content"}])
def test_missing_content_is_400(rejected, body):
    error = rejected("POST", "/api/v1/memory", 400, "validation_error", json=body)
    assert error["message"].startswith("content")


@pytest.mark.parametrize(("content", "code"), [("", "validation_error"),
                                              ("  \n\t ", "invalid_input")])
def test_empty_content_is_400(rejected, content, code):
    rejected("POST", "/api/v1/memory", 400, code, json={"content": content})


def test_content_above_memory_max_chars_is_400(rejected, client):
    limit = client.app_state["settings"].memory_max_chars
    error = rejected("POST", "/api/v1/memory", 400, "invalid_input",
                     json={"content": "a" * (limit + 1)})
    assert error["details"]["limit"] == limit


@pytest.mark.parametrize("body", [
    {"content": OK, "subjectRefs": {f"k{i}": "v" for i in range(33)}},
    {"content": OK, "subjectRefs": {"k" * 65: "v"}},
    {"content": OK, "subjectRefs": {"taskId": ""}},
    {"content": OK, "title": "t" * 301},
    {"content": OK, "context": {"sessionKey": ""}},
    {"content": OK, "context": {"channelType": "c" * 65}},
], ids=["33-refs", "long-ref-key", "empty-ref-value", "long-title", "empty-session",
        "long-channel-type"])
def test_out_of_range_fields_are_400(rejected, body):
    rejected("POST", "/api/v1/memory", 400, json=body)


def test_a_channel_memory_without_a_channel_is_refused(rejected):
    error = rejected("POST", "/api/v1/memory", 403, "access_denied",
                     json={"content": OK, "visibility": "channel"})
    assert "channel" in error["message"]


# --- media type and size --------------------------------------------------------------------
@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x",
                                          "application/json-patch+json", "application/xml"])
def test_a_body_that_is_not_application_json_is_415(rejected, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    rejected("POST", "/api/v1/memory", 415, "unsupported_media_type",
             content=b'{"content": "' + OK.encode() + b'"}', headers=headers)


def _oversized(settings_limit: int) -> bytes:
    return b'{"content": "' + b"a" * settings_limit + b'"}'


def test_a_body_above_the_limit_is_413_by_content_length(rejected):
    error = rejected("POST", "/api/v1/memory", 413, "body_too_large",
                     **_raw(_oversized(64 * 1024)))
    assert error["details"] == {"limit": 64 * 1024}


def test_a_chunked_body_above_the_limit_is_413(rejected):
    def chunks():
        yield b'{"content": "'
        for _ in range(80):
            yield b"a" * 1024
        yield b'"}'

    rejected("POST", "/api/v1/memory", 413, "body_too_large", content=chunks(),
             headers={"Content-Type": "application/json"})


def test_the_body_limit_follows_the_setting(database_url, tmp_path, alice):
    settings = make_settings(database_url, tmp_path, api_max_body_bytes=2048)
    with open_client(settings) as small:
        response = small.post("/api/v1/memory", content=_oversized(2100),
                              headers={**alice, "Content-Type": "application/json"})
    assert_error(response, 413, "body_too_large")


# --- search parameters ----------------------------------------------------------------------
@pytest.mark.parametrize("query", [
    "", "limit=5", "query=", "query=%20%20", "query=on-call&limit=0", "query=on-call&limit=51",
    "query=on-call&limit=-1", "query=on-call&limit=abc", "query=on-call&limit=1.5",
    "query=on-call&limit=", "query=a&query=b", "query=on-call&limit=1&limit=2",
    "query=on-call&user=bob", "query=on-call&scope=public", "query=x%00y",
    "query=on-call&sessionKey=%00", "query=on-call&%00=1", "query=on-call&sessionKey=",
    "query=" + "q" * 2001, "query=on-call&minScore=2", "query=on-call&minScore=-0.1",
    "query=on-call&minScore=abc",
], ids=["missing-query", "only-limit", "empty-query", "blank-query", "limit-0", "limit-51",
        "limit-negative", "limit-abc", "limit-float", "limit-empty", "query-twice",
        "limit-twice", "unknown-param", "bad-scope", "nul-in-query", "nul-in-session",
        "nul-in-name", "empty-session", "query-too-long", "min-score-2",
        "min-score-negative", "min-score-abc"])
def test_bad_search_parameters_are_400(rejected, query):
    rejected("GET", f"/api/v1/memory?{query}", 400)


@pytest.mark.parametrize("body", [
    {}, {"query": ""}, {"query": "  "}, {"query": 5}, {"query": "x", "limit": 0},
    {"query": "x", "limit": 51}, {"query": "x", "limit": -1}, {"query": "x", "limit": "5"},
    {"query": "x", "limit": 5.5}, {"query": "x", "limit": True}, {"query": "x", "depth": "deeper"},
    {"query": "x", "intent": "chat"}, {"query": "x", "extra": 1}, {"query": "q" * 2001},
], ids=["missing", "empty", "blank", "number", "limit-0", "limit-51", "limit-negative",
        "limit-string", "limit-float", "limit-bool", "depth", "intent", "unknown", "too-long"])
def test_bad_context_search_bodies_are_400(rejected, body):
    rejected("POST", "/api/v1/context/search", 400, json=body)


@pytest.mark.parametrize(("path", "body"), [
    ("/api/v1/feedback/injected", {"runId": "r"}),
    ("/api/v1/feedback/injected", {"runId": "r", "assertionIds": []}),
    ("/api/v1/feedback/injected", {"runId": "r", "assertionIds": [UUID0] * 101}),
    ("/api/v1/feedback/injected", {"runId": "r", "assertionIds": ["not-a-uuid"]}),
    ("/api/v1/feedback/injected", {"runId": "r", "assertionIds": UUID0}),
    ("/api/v1/feedback/injected", {"runId": "", "assertionIds": [UUID0]}),
    ("/api/v1/feedback/injected", {"runId": 7, "assertionIds": [UUID0]}),
    ("/api/v1/feedback/cited", {"runId": "r"}),
    ("/api/v1/feedback/cited", {"runId": "r", "responseText": ""}),
    ("/api/v1/feedback/cited", {"runId": "r", "responseText": "x", "colour": "red"}),
    ("/internal/memory/reembed", {"limit": 0}),
    ("/internal/memory/reembed", {"limit": 5001}),
    ("/internal/memory/reembed", {"limit": "10"}),
], ids=["injected-no-ids", "injected-empty-ids", "injected-101-ids", "injected-bad-uuid",
        "injected-ids-string", "injected-empty-run", "injected-run-number", "cited-no-text",
        "cited-empty-text", "cited-unknown-field", "reembed-0", "reembed-5001",
        "reembed-string"])
def test_bad_feedback_and_reembed_bodies_are_400(rejected, path, body):
    rejected("POST", path, 400, json=body)


# --- ids --------------------------------------------------------------------------------------
@pytest.mark.parametrize("memory_id", [
    "7d3c2a8e-52f1-4c0b-9e61-0f4b2d1c9a77", "abc", "123", "%00", "x" * 500, UUID0 + "0",
    "%E2%82%AC",
])
def test_unknown_and_malformed_memory_ids_are_404(rejected, memory_id):
    rejected("GET", f"/api/v1/memory/{memory_id}", 404, "not_found")


@pytest.mark.parametrize("item_id", [
    f"foo:{UUID0}", UUID0, "memory", "memory:", "memory:abc", f"MEMORY:{UUID0}",
    f"claim:{UUID0}", f"summary:{UUID0}", f"message:{UUID0}", f"assertion:{UUID0}", "a/b/c",
    "",
])
def test_unknown_context_item_ids_are_404(rejected, item_id):
    rejected("GET", f"/api/v1/context/{item_id}", 404, "not_found")


def test_a_wrong_method_is_405_with_an_allow_header(rejected, client, alice):
    rejected("POST", f"/api/v1/memory/{UUID0}", 405, "method_not_allowed", json={})
    response = client.post(f"/api/v1/memory/{UUID0}", json={}, headers=alice)
    assert "GET" in response.headers.get("allow", "")


def test_a_body_of_too_many_json_values_is_400(rejected):
    """The character check walks every value on the event loop: a body of thousands of tiny
    arrays (within the size cap and the depth limit) is refused before that work grows."""
    error = rejected("POST", "/api/v1/memory", 400, "too_many_values",
                     json={"content": OK, "subjectRefs": {"k": [[[1]]] * 3000}})
    assert error["details"] == {"limit": 2000}

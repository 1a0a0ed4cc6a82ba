"""Finding F7 through the API: a secret in any stored field of ``POST /api/v1/memory`` (the
content, the title, a subject-ref key or value, a claimed context field) is refused with 422
``credential_detected`` naming the field and the kind, never echoing the secret, and nothing
is stored; ordinary prose about passwords and tokens is stored."""

from __future__ import annotations

import psycopg
import pytest

from tests.api.conftest import (
    READ,
    WRITE,
    assert_error,
    bearer,
    row_counts,
    store,
)
from tests.inspector.support import sign_in
from tests.secrets_corpus import credentials, prose
from tests.test_secrets import GITHUB, MPK, ORDINARY_PROSE, TRUE_SECRETS

pytestmark = pytest.mark.shared_app

URL = "/api/v1/memory"


@pytest.fixture
def alice(make_key) -> dict[str, str]:
    return bearer(make_key("alice", (READ, WRITE)))


@pytest.fixture
def runtime(make_key) -> dict[str, str]:
    return bearer(make_key(None, (READ, WRITE), runtime=True))


def _refused(client, headers, body, database_url, field, kind=None, secret=None):
    before = row_counts(database_url)
    response = client.post(URL, json=body, headers=headers)
    error = assert_error(response, 422, "credential_detected")
    assert error["details"]["field"] == field
    if kind is not None:
        assert error["details"]["kind"] == kind
    if secret is not None:
        assert secret not in response.text
    assert row_counts(database_url) == before
    return error


@pytest.mark.parametrize(("kind", "text"), TRUE_SECRETS)
def test_f7_a10_every_true_secret_in_the_content_is_refused_and_nothing_stored(
        shared_client, alice, database_url, kind, text):
    _refused(shared_client, alice, {"content": text}, database_url, "content", kind)


@pytest.mark.parametrize("text", ORDINARY_PROSE)
def test_f7_ordinary_prose_about_credentials_is_stored(shared_client, alice, text):
    store(shared_client, alice, text)


def test_f7_a_secret_in_the_title_is_refused(shared_client, alice, database_url):
    _refused(shared_client, alice, {"content": "Staging credentials were rotated.",
                                    "title": f"Staging key {MPK}"},
             database_url, "title", "memory-platform API key", MPK)


def test_f7_a10_a_secret_subject_ref_key_is_refused_without_echoing_it(
        shared_client, alice, database_url):
    _refused(shared_client, alice, {"content": "harmless", "subjectRefs": {GITHUB: "x"}},
             database_url, "subject_refs (a key)", "GitHub token", GITHUB)


@pytest.mark.parametrize(("refs", "field"), [
    ({"moduleSlug": "staging", "note": "password: hunter22"}, "subject_refs.note"),
    ({"password": "Hunter22!"}, "subject_refs.password"),
    ({"deployKey": "sk-proj-" + "Ab1" * 10}, "subject_refs.deployKey"),
])
def test_f7_a_secret_subject_ref_value_is_refused(shared_client, alice, database_url,
                                                  refs, field):
    _refused(shared_client, alice, {"content": "Staging credentials were rotated.",
                                    "subjectRefs": refs}, database_url, field)


CONTEXT_FIELDS = ["sessionKey", "groupRoomId", "channelThreadKey", "channelType"]


@pytest.mark.parametrize("name", CONTEXT_FIELDS)
def test_f7_a_secret_in_a_claimed_context_field_is_refused_before_membership(
        shared_client, alice, database_url, name):
    """A secret is refused (422), not answered with 403 not_a_member that would echo it."""
    value = GITHUB if name != "channelType" else "sk_live_" + "Ab1" * 8
    _refused(shared_client, alice, {"content": "The VAT filing is due on the tenth.",
                                    "context": {name: value}},
             database_url, f"context.{name}", secret=value)


def test_f7_a_secret_as_the_acting_user_of_a_runtime_key_is_refused(
        shared_client, runtime, database_url):
    _refused(shared_client, runtime, {"content": "The VAT filing is due on the tenth.",
                                      "context": {"userId": MPK}},
             database_url, "context.userId", "memory-platform API key", MPK)


def test_f7_a_secret_in_a_search_context_parameter_is_refused(shared_client, alice):
    response = shared_client.get(URL, params={"query": "filing", "channelThreadKey": GITHUB},
                                 headers=alice)
    error = assert_error(response, 422, "credential_detected")
    assert error["details"]["field"] == "context.channelThreadKey"
    assert GITHUB not in response.text


# --- finding 6 of the review of 7c85f33: the credential and prose corpora through HTTP ---

CORPUS = credentials()
# The review's forms, sent through every other stored field.
REVIEW_FORMS = [text for form, text in CORPUS if form in {
    "JSON password", "Azure storage connection string", "curl -u", "mysql -p",
    "German: Kennwort heißt", "German: WLAN-Passwort wie immer", "URL query pass",
    "AWS secret access key without label", "SSH2 encrypted private key",
    "Cyrillic look-alike label"}]


def test_the_review_forms_are_in_the_corpus():
    assert len(REVIEW_FORMS) == 10


@pytest.mark.parametrize(("form", "text"), CORPUS, ids=[form for form, _ in CORPUS])
def test_finding_6_every_corpus_credential_in_the_content_is_refused(
        shared_client, alice, database_url, form, text):
    _refused(shared_client, alice, {"content": text}, database_url, "content")


PROSE_SHARDS = 4  # the corpus dealt round-robin over tests xdist can run side by side


@pytest.mark.parametrize("shard", range(PROSE_SHARDS))
def test_finding_6_every_prose_sentence_is_stored(shared_client, alice, shard):
    texts = prose()[shard::PROSE_SHARDS]
    assert texts
    for text in texts:
        response = shared_client.post(URL, json={"content": text}, headers=alice)
        assert response.status_code in (200, 201), (text, response.text)


@pytest.mark.parametrize("text", REVIEW_FORMS)
def test_finding_6_the_review_forms_are_refused_in_title_metadata_and_refs(
        shared_client, alice, database_url, text):
    single_line = text.splitlines()[0]   # a key block's first line is its BEGIN marker
    base = {"content": "The staging credentials were rotated on Monday."}
    _refused(shared_client, alice, {**base, "title": single_line[:200]}, database_url,
             "title")
    _refused(shared_client, alice, {**base, "metadata": {"note": single_line}}, database_url,
             "metadata.note")
    _refused(shared_client, alice, {**base, "subjectRefs": {"note": single_line[:200]}},
             database_url, "subject_refs.note")


@pytest.mark.parametrize(("where", "value"), [
    ("metadata", {"password": "correcthorsebattery"}),
    ("metadata", {"db": {"token": "plainvalue99x"}}),
    ("subjectRefs", {"password": "correcthorsebattery"}),
])
def test_finding_6_a_secret_word_key_with_any_value_is_refused(shared_client, alice,
                                                                database_url, where, value):
    """A key-value pair is read as the assignment it is: the value needs no digit."""
    before = row_counts(database_url)
    response = shared_client.post(URL, json={"content": "Harmless note.", where: value},
                                  headers=alice)
    assert_error(response, 422, "credential_detected")
    assert row_counts(database_url) == before


def _messages(database_url: str) -> int:
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT count(*) FROM agent_context_messages").fetchone()[0]


@pytest.mark.parametrize("text", REVIEW_FORMS)
def test_finding_6_the_review_forms_are_refused_in_session_items_and_attachments(
        shared_client, alice, database_url, text):
    url = "/api/v1/sessions/alice-secrets/items"
    line = text.splitlines()[0]
    before = _messages(database_url)
    for item in ({"role": "tool", "content": text},
                 {"role": "tool", "content": "uploaded", "metadata": {"attachments": [
                     {"name": "creds.txt", "uri": f"https://files.example.com/x?{line}"}]}},
                 {"role": "tool", "content": "uploaded", "metadata": {"attachments": [
                     {"name": line[:500]}]}}):
        response = shared_client.post(url, json={"items": [item]}, headers=alice)
        assert_error(response, 422, "credential_detected")
        assert _messages(database_url) == before


@pytest.mark.parametrize("model", [
    "sk-proj-" + "Ab1x" * 12,                                # an API key pasted as model
    "gpt-4o password=Hunter22xyz", "gpt 4o", "<script>", "-rf", "a" * 201,
])
def test_finding_6_the_persisted_model_is_a_model_name_without_secret(
        shared_client, make_key, database_url, model):
    """POST /inspector/api/dreams/model stored any 200-character string on 7c85f33."""
    csrf = sign_in(shared_client, make_key("root", (READ, WRITE, "admin")))
    response = shared_client.post("/inspector/api/dreams/model", json={"model": model},
                                  headers={"X-CSRF-Token": csrf})
    assert response.status_code in (400, 422), response.text
    assert model[:40] not in response.text
    with psycopg.connect(database_url) as conn:
        stored = conn.execute("SELECT value FROM app_settings WHERE key ="
                              " 'memory_dreaming_model'").fetchall()
    assert all(model != value for (value,) in stored)


@pytest.mark.parametrize("model", ["gpt-4o-mini", "openai/gpt-4o", "llama3.1:8b",
                                   "claude-3-5-sonnet@20240620", "extractive", ""])
def test_a_model_name_is_persisted(shared_client, make_key, model):
    csrf = sign_in(shared_client, make_key("root", (READ, WRITE, "admin")))
    response = shared_client.post("/inspector/api/dreams/model", json={"model": model},
                                  headers={"X-CSRF-Token": csrf})
    assert response.status_code == 200 and response.json() == {"model": model}

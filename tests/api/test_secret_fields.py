"""Finding F7 through the API: a secret in any stored field of ``POST /api/v1/memory`` (the
content, the title, a subject-ref key or value, a claimed context field) is refused with 422
``credential_detected`` naming the field and the kind, never echoing the secret, and nothing
is stored; ordinary prose about passwords and tokens is stored."""

from __future__ import annotations

import pytest

from tests.api.conftest import (
    READ,
    WRITE,
    assert_error,
    bearer,
    row_counts,
    store,
)
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

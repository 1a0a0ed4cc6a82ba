"""What the write path refuses to store: credentials, empty or oversize text, control
characters. A refused write raises a specific error and leaves no row behind."""

from __future__ import annotations

import pytest

from memory_platform.features.memories.bulk.rows import check_row
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.memories.validation import clean_content
from memory_platform.foundation.errors import CredentialDetected, InvalidInput
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from tests.memories.support import nothing_written
from tests.support.settings import hash_embedding_settings
from tests.support.tables import row_counts

PEM_BODY = "MIIEowIBAAKCAQEA7bq3Yx8mYl9kQ2vT5nLw3cZ0pRb6hJ1sXf4uG8eKa2dNq"
OPENAI_KEY = "sk-proj-4f9XkQ2mZ8rT1vB7nL3wYc6HdJ5eRt0u"
JWT = ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
OPAQUE = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"

CREDENTIALS = [
    pytest.param("private key",
                 "Here is the deploy key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
                 f"{PEM_BODY}\n-----END OPENSSH PRIVATE KEY-----", id="pem-en"),
    pytest.param("private key",
                 "Hier ist der Schlüssel für den Server:\n-----BEGIN RSA PRIVATE KEY-----\n"
                 f"{PEM_BODY}\n-----END RSA PRIVATE KEY-----", id="pem-de"),
    pytest.param("OpenAI-style API key", f"api_key = {OPENAI_KEY}", id="openai-en"),
    pytest.param("OpenAI-style API key", f"Der OpenAI-Schlüssel lautet {OPENAI_KEY}.",
                 id="openai-de"),
    pytest.param("Stripe key", "Use sk_live_4eC39HqLyjWDarjtT1zdp7dc for payments.",
                 id="stripe-en"),
    pytest.param("Stripe key", "Der Stripe-Schlüssel ist rk_test_4eC39HqLyjWDarjtT1zdp7dc.",
                 id="stripe-de"),
    pytest.param("AWS access key", "The access key id is AKIAIOSFODNN7EXAMPLE.", id="aws-id-en"),
    pytest.param("AWS access key", "Die Zugriffsschlüssel-ID lautet AKIAIOSFODNN7EXAMPLE.",
                 id="aws-id-de"),
    pytest.param("AWS secret key",
                 "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                 id="aws-secret-en"),
    pytest.param("AWS secret key",
                 "In der Datei steht aws_secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCY",
                 id="aws-secret-de"),
    pytest.param("GitHub token", "My token is ghp_16C7e42F292c6912E7710c838347Ae178B4a.",
                 id="github-en"),
    pytest.param("GitHub token",
                 "Unser Zugangstoken lautet github_pat_11ABCDEFG0123456789_abcdefghijklmnop.",
                 id="github-de"),
    pytest.param("Slack token",
                 "The bot token is xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy.",
                 id="slack-en"),
    pytest.param("Slack token", "Das Slack-Token lautet xoxp-1234567890-abcdefghij.",
                 id="slack-de"),
    pytest.param("Google API key", "The Maps key is AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe.",
                 id="google-en"),
    pytest.param("Google API key",
                 "Der Google-Schlüssel ist AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe.",
                 id="google-de"),
    pytest.param("JSON web token", f"Send the session token {JWT} with each call.",
                 id="jwt-en"),
    pytest.param("JSON web token", f"Das Sitzungstoken ist {JWT}.", id="jwt-de"),
    pytest.param("bearer token", f"Authorization: Bearer {OPAQUE}", id="bearer-en"),
    pytest.param("bearer token", f"Im Header steht Bearer {OPAQUE} für die API.",
                 id="bearer-de"),
    pytest.param("URL with password",
                 "Connect with postgres://admin:s3cretPass@db.example.com:5432/app",
                 id="url-en"),
    pytest.param("URL with password",
                 "Die Datenbank erreichst du unter postgresql://app:geheim123@localhost/app.",
                 id="url-de"),
    pytest.param("password", "Staging login: user admin, password: hunter22", id="pw-colon-en"),
    pytest.param("password", "Zugang zum Staging: Benutzer admin, Kennwort=hunter22",
                 id="pw-colon-de"),
    pytest.param("password", "My password is hunter22", id="pw-is-en"),
    pytest.param("password", "Mein Passwort ist hunter22", id="pw-ist-de"),
    pytest.param("password", "Das Passwort lautet: Sommer2024!", id="pw-lautet-de"),
    pytest.param("password", "The password for the build server is hunter22",
                 id="pw-qualified-en"),
    pytest.param("password", "Das Passwort für den Build-Server ist hunter22",
                 id="pw-qualified-de"),
    pytest.param("API key or secret", f"client_secret = '{OPAQUE}'", id="secret-assign-en"),
    pytest.param("API key or secret", f"The API key is {OPAQUE}", id="api-key-is-en"),
    pytest.param("API key or secret", f"API key: {OPAQUE}", id="api-key-colon-en"),
    pytest.param("API key or secret", f"Der API-Schlüssel lautet {OPAQUE}", id="api-key-de"),
]

ORDINARY = [
    pytest.param("Our password policy requires 12 characters and a rotation every 90 days.",
                 id="password-policy-en"),
    pytest.param("API key rotation happens monthly.", id="key-rotation-en"),
    pytest.param("Die Passwortrichtlinie verlangt mindestens 12 Zeichen.",
                 id="password-policy-de"),
    pytest.param("Der API-Schlüssel wird jeden Monat rotiert.", id="key-rotation-de"),
    pytest.param("Bearer tokens expire after one hour.", id="bearer-tokens-en"),
    pytest.param("The memory docs live at https://docs.example.com/memory.", id="url-en"),
    pytest.param("Passwort-Resets laufen über support@example.com.", id="mail-de"),
    pytest.param("The password is required for every login to the VPN.", id="password-is-en"),
    pytest.param("Das Passwort ist nach 90 Tagen abgelaufen.", id="password-ist-de"),
]


@pytest.fixture
def ctx(instance: str) -> AccessContext:
    return AccessContext(instance, user_id="ada")


def _write(db, settings, ctx, content, **kwargs):
    return store_memory(db, settings, ctx, MemoryWrite(content, **kwargs))


@pytest.mark.parametrize(("kind", "text"), CREDENTIALS)
def test_credential_is_rejected_with_its_kind_and_nothing_is_written(
        db, hash_settings, ctx, kind, text):
    with pytest.raises(CredentialDetected) as raised:
        _write(db, hash_settings, ctx, text)
    assert raised.value.details["kind"] == kind
    assert nothing_written(db, ctx.instance_key)


def test_credential_error_never_echoes_the_secret(db, hash_settings, ctx):
    with pytest.raises(CredentialDetected) as raised:
        _write(db, hash_settings, ctx, f"api_key = {OPENAI_KEY}")
    shown = f"{raised.value} {raised.value.message} {raised.value.details}"
    assert OPENAI_KEY not in shown and "4f9XkQ2mZ8rT1vB7nL3wYc6H" not in shown


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_about_credentials_is_stored(db, hash_settings, ctx, text):
    stored = _write(db, hash_settings, ctx, text)
    assert not stored.deduplicated
    assert row_counts(db, ctx.instance_key)["agent_memories"] == 1


def test_credential_in_a_subject_ref_is_rejected_and_nothing_is_written(db, hash_settings, ctx):
    with pytest.raises(CredentialDetected):
        _write(db, hash_settings, ctx, "Staging credentials were rotated.",
               subject_refs={"moduleSlug": "staging", "note": "password: hunter22"})
    assert nothing_written(db, ctx.instance_key)


def test_credential_in_the_title_is_rejected_and_nothing_is_written(db, hash_settings, ctx):
    with pytest.raises(CredentialDetected):
        _write(db, hash_settings, ctx, "Staging credentials were rotated.",
               title="Staging password: hunter22")
    assert nothing_written(db, ctx.instance_key)


@pytest.mark.parametrize("char", ["\x00", "\x07"], ids=["NUL", "BEL"])
def test_control_character_in_the_title_is_rejected_with_invalid_input(
        db, hash_settings, ctx, char):
    with pytest.raises(InvalidInput) as raised:
        _write(db, hash_settings, ctx, "Staging credentials were rotated.",
               title=f"Staging{char}notes")
    assert not isinstance(raised.value, CredentialDetected)
    assert nothing_written(db, ctx.instance_key)


@pytest.mark.parametrize("text", ["", "   ", "\n\t \r\n"], ids=["empty", "spaces", "mixed"])
def test_empty_or_whitespace_content_is_rejected_with_invalid_input(
        db, hash_settings, ctx, text):
    with pytest.raises(InvalidInput) as raised:
        _write(db, hash_settings, ctx, text)
    assert not isinstance(raised.value, CredentialDetected)
    assert raised.value.details["field"] == "content"
    assert nothing_written(db, ctx.instance_key)


@pytest.mark.parametrize("value", [None, 42, b"bytes"], ids=["none", "int", "bytes"])
def test_non_string_content_is_rejected_with_invalid_input(db, hash_settings, ctx, value):
    with pytest.raises(InvalidInput):
        _write(db, hash_settings, ctx, value)
    assert nothing_written(db, ctx.instance_key)


@pytest.fixture
def small_limit(module_database_url: str) -> Settings:
    return hash_embedding_settings(module_database_url, memory_max_chars=200)


def test_content_over_the_size_limit_is_rejected_with_invalid_input(db, small_limit, ctx):
    with pytest.raises(InvalidInput) as raised:
        _write(db, small_limit, ctx, "a" * 201)
    assert raised.value.details == {"field": "content", "limit": 200, "length": 201}
    assert nothing_written(db, ctx.instance_key)


def test_content_exactly_at_the_size_limit_is_stored(db, small_limit, ctx):
    _write(db, small_limit, ctx, "word " * 39 + "last.")  # 200 characters
    assert row_counts(db, ctx.instance_key)["agent_memories"] == 1


@pytest.mark.parametrize(
    ("char", "code"),
    [("\x00", "U+0000"), ("\x07", "U+0007"), ("\x1b", "U+001B"), ("\x7f", "U+007F"),
     ("\ud800", "U+D800")],
    ids=["NUL", "BEL", "ESC", "DEL", "lone-surrogate"],
)
def test_control_character_in_content_is_rejected_naming_it(db, hash_settings, ctx, char, code):
    with pytest.raises(InvalidInput) as raised:
        _write(db, hash_settings, ctx, f"The VAT filing{char} is due on the tenth.")
    assert not isinstance(raised.value, CredentialDetected)
    assert raised.value.details["character"] == code
    assert nothing_written(db, ctx.instance_key)


def test_newlines_tabs_and_carriage_returns_are_allowed(db, hash_settings, ctx):
    _write(db, hash_settings, ctx, "First line.\r\n\tSecond line.\n\nThird paragraph.")
    assert row_counts(db, ctx.instance_key)["agent_memories"] == 1


# Finding F7: every stored string field is checked, not only the content.

MPK_TOKEN = "mpk_0123456789ab_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg"


@pytest.mark.parametrize(("metadata", "field"), [
    ({"note": f"deploy with {MPK_TOKEN}"}, "metadata.note"),
    ({"password": "Hunter22!"}, "metadata.password"),
    ({"db": {"DB_PASSWORD": "Tr0ub4dor&3"}}, "metadata.db.DB_PASSWORD"),
    ({"hosts": ["ok", "postgres://app:s3cretPass@db/app"]}, "metadata.hosts[1]"),
    ({MPK_TOKEN: "x"}, "metadata (a key)"),
], ids=["value", "key-value-pair", "nested-env", "list-item", "key"])
def test_f7_credential_in_metadata_is_rejected_naming_the_field(
        db, hash_settings, ctx, metadata, field):
    with pytest.raises(CredentialDetected) as raised:
        _write(db, hash_settings, ctx, "Staging credentials were rotated.", metadata=metadata)
    assert raised.value.details["field"] == field
    assert MPK_TOKEN not in f"{raised.value} {raised.value.details}"
    assert nothing_written(db, ctx.instance_key)


def test_ordinary_metadata_about_credentials_is_stored(db, hash_settings, ctx):
    _write(db, hash_settings, ctx, "Staging credentials were rotated.",
           metadata={"topic": "password policy", "tokens": 4096, "tags": ["secrets", "vault"]})
    assert row_counts(db, ctx.instance_key)["agent_memories"] == 1


def test_f7_credential_as_a_subject_ref_key_is_rejected_without_echoing_it(
        db, hash_settings, ctx):
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    with pytest.raises(CredentialDetected) as raised:
        _write(db, hash_settings, ctx, "harmless", subject_refs={token: "x"})
    assert raised.value.details == {"field": "subject_refs (a key)", "kind": "GitHub token"}
    assert token not in str(raised.value)
    assert nothing_written(db, ctx.instance_key)


@pytest.mark.parametrize("name", ["user_id", "session_key", "group_room_id",
                                  "channel_thread_key", "channel_type"])
def test_f7_credential_in_an_imported_rows_context_field_is_rejected(hash_settings, name):
    row = {"content": "The VAT filing is due on the tenth.", name: MPK_TOKEN}
    with pytest.raises(CredentialDetected) as raised:
        check_row(row, hash_settings, 1)
    assert raised.value.details == {"field": name, "kind": "memory-platform API key"}


def test_f7_credential_in_imported_metadata_is_rejected(hash_settings):
    row = {"content": "The VAT filing is due on the tenth.",
           "metadata": {"source": "export OPENAI_API_KEY=abc123XYZ987"}}
    with pytest.raises(CredentialDetected) as raised:
        check_row(row, hash_settings, 1)
    assert raised.value.details["field"] == "metadata.source"


def test_f11_a_word_that_grows_past_the_lexeme_limit_when_lowercased_is_refused():
    """F11: 700 x U+023A is 1,400 bytes, 2,100 lower-cased: refused before PostgreSQL's full
    text search sees it; ordinary long words pass."""
    with pytest.raises(InvalidInput) as refused:
        clean_content("marker " + "\u023a" * 700, max_chars=16_000)
    assert refused.value.code == "word_too_long"
    assert clean_content("Donaudampfschifffahrtsgesellschaft " * 3, max_chars=16_000)
    assert clean_content("x" * 300, max_chars=16_000)

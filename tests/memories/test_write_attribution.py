"""Who a write is attributed to and which audience it lands in (F2, F12, F13).

* Reserved subject refs (userId, groupRoomId, channelThreadKey) are set by the server: a
  caller naming one is refused with a clear error and nothing is written (F12).
* Channel and room keys are kept only on channel rows: a team, workspace or private row
  never carries them (F2: a team reader would learn the key of a channel).
* ``channelType`` alone does not make a write a team write, and an explicit opt-out of
  sharing with the team holds in a channel or room too (F13).
"""

from __future__ import annotations

import pytest
from psycopg.rows import dict_row

from memory_platform.features.memories.bulk.rows import check_row
from memory_platform.features.memories.sharing import (
    resolve_visibility,
    set_share_with_team,
    share_preference,
)
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.memories.write_rules import RESERVED_SUBJECT_REFS, clean_subject_refs
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AccessContext
from tests.memories.support import nothing_written

FACT = "Nordwind prefers German invoices."


def _rows(db, instance) -> list[dict]:
    with db.cursor(row_factory=dict_row) as cur:
        return cur.execute("SELECT m.visibility_scope, m.subject_refs AS memory_refs,"
                           " a.subject_refs AS assertion_refs FROM agent_memories m"
                           " LEFT JOIN agent_memory_assertions a ON a.id = m.assertion_id"
                           " WHERE m.instance_key = %s", (instance,)).fetchall()


# --- F12: reserved subject refs -----------------------------------------------------------


@pytest.mark.parametrize("key", RESERVED_SUBJECT_REFS)
def test_f12_a_reserved_subject_ref_from_the_caller_is_refused(db, hash_settings, instance,
                                                              key):
    ctx = AccessContext(instance, user_id="eve")
    with pytest.raises(InvalidInput) as refused:
        store_memory(db, hash_settings, ctx,
                     MemoryWrite(FACT, visibility="team", subject_refs={key: "bob"}))
    assert refused.value.code == "reserved_subject_ref"
    assert refused.value.details == {"field": f"subject_refs.{key}"}
    assert "set by the server" in refused.value.message
    assert nothing_written(db, instance)


def test_f12_a_bulk_row_naming_a_reserved_subject_ref_is_refused(hash_settings):
    with pytest.raises(InvalidInput) as refused:
        check_row({"content": FACT, "subject_refs": {"userId": "bob"}}, hash_settings, 1)
    assert refused.value.code == "reserved_subject_ref"


def test_f12_a_shared_fact_names_its_real_author(db, hash_settings, instance):
    stored = store_memory(db, hash_settings, AccessContext(instance, user_id="eve"),
                          MemoryWrite(FACT, visibility="team", subject_refs={"taskId": "t1"}))
    assert stored.audience.kind == "team"
    [row] = _rows(db, instance)
    assert row["memory_refs"] == row["assertion_refs"] == {"taskId": "t1", "userId": "eve"}


def test_ordinary_subject_refs_pass(db):
    assert clean_subject_refs({"mandantId": "nord", "taskId": 4}) == {
        "mandantId": "nord", "taskId": "4"}


# --- F2: channel keys stay on channel rows --------------------------------------------------


@pytest.mark.parametrize("visibility", ["team", "workspace", "private", None])
def test_f2_a_non_channel_row_never_carries_the_channel_or_room_key(db, hash_settings,
                                                                    instance, visibility):
    ctx = AccessContext(instance, user_id="bob", group_room_id="room-7",
                        channel_thread_key="slack:C0SECRET:1718000000.000200",
                        channel_type="slack")
    store_memory(db, hash_settings, ctx, MemoryWrite(FACT, visibility=visibility,
                                                     source_type="manual"))
    [row] = _rows(db, instance)
    assert row["visibility_scope"] != "channel"
    assert not {"groupRoomId", "channelThreadKey"} & row["memory_refs"].keys()


def test_f2_a_channel_row_names_its_conversation(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="bob", group_room_id="room-7",
                        channel_thread_key="slack:C1", channel_type="slack")
    store_memory(db, hash_settings, ctx, MemoryWrite(FACT, visibility="channel"))
    [row] = _rows(db, instance)
    expected = {"userId": "bob", "groupRoomId": "room-7", "channelThreadKey": "slack:C1"}
    assert row["memory_refs"] == row["assertion_refs"] == expected


# --- F13: the default audience ----------------------------------------------------------


def test_f13_a_channel_type_alone_does_not_make_a_team_write(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="eve", channel_type="web")
    assert resolve_visibility(db, ctx, None) == "private"
    set_share_with_team(db, instance, "eve", False)
    stored = store_memory(db, hash_settings, ctx, MemoryWrite("Eve is interviewing elsewhere."))
    assert stored.audience.as_dict() == {"kind": "private", "key": "eve"}


def test_f13_a_user_less_channel_type_alone_writes_workspace_not_team(db, instance):
    assert resolve_visibility(db, AccessContext(instance, channel_type="web"), None) == (
        "workspace")


@pytest.mark.parametrize("context", [{"channel_thread_key": "slack:C1"},
                                     {"group_room_id": "room-7"},
                                     {"group_room_id": "room-7",
                                      "channel_thread_key": "slack:C1"}],
                         ids=["thread", "room", "room-thread"])
def test_f13_an_explicit_opt_out_holds_in_a_channel_or_room(db, hash_settings, instance,
                                                            context):
    ctx = AccessContext(instance, user_id="eve", channel_type="slack", **context)
    assert resolve_visibility(db, ctx, None) == "team"  # no profile row: the spec's default
    set_share_with_team(db, instance, "eve", True)
    assert resolve_visibility(db, ctx, None) == "team"
    set_share_with_team(db, instance, "eve", False)
    stored = store_memory(db, hash_settings, ctx, MemoryWrite(FACT))
    key = context.get("channel_thread_key") or context["group_room_id"]
    assert stored.audience.as_dict() == {"kind": "channel", "key": key}


def test_f13_an_explicit_visibility_still_wins_over_the_opt_out(db, instance):
    set_share_with_team(db, instance, "eve", False)
    ctx = AccessContext(instance, user_id="eve", channel_thread_key="slack:C1")
    assert resolve_visibility(db, ctx, "team") == "team"


def test_the_share_preference_is_read_as_stored(db, instance):
    ctx = AccessContext(instance, user_id="eve")
    assert share_preference(db, ctx) is None
    set_share_with_team(db, instance, "eve", False)
    assert share_preference(db, ctx) is False
    set_share_with_team(db, instance, "eve", True)
    assert share_preference(db, ctx) is True
    assert share_preference(db, AccessContext(instance)) is None

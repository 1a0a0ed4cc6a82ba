"""Dream input selection: pools, the automation filter before the recency limit, the
per-session cap, the fact quota, quarantine, exact audience partitions, partition keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory_platform.features.dreaming.inputs import eligible_partitions, select_inputs
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.shared.access import AccessContext
from tests.dreaming.support import remember


def team(instance):
    return Partition(instance, "team", instance)


def summaries(db, settings, instance, session, n, *, user="ada", visibility="team", **kw):
    ctx = AccessContext(instance, user_id=user, session_key=session, **kw)
    return [remember(db, settings, ctx, f"Session {session} summary number {i}: we talked "
                     "about the invoice workflow.", visibility=visibility).id
            for i in range(n)]


def facts(db, settings, instance, n, *, user="bob", trust_class="human_direct", topic="VAT"):
    ctx = AccessContext(instance, user_id=user)
    return [remember(db, settings, ctx, f"Mandant {i} files {topic} returns quarterly.",
                     source_type="fact", visibility="team", trust_class=trust_class).id
            for i in range(n)]


# --- partition keys ------------------------------------------------------------------------


@pytest.mark.parametrize("instance_key,kind,key", [
    ("default", "team", "default"),
    ("acme corp", "channel", "slack:C1/thread|1,2[3]"),
    ("a...b", "private", "user..x...y"),
    ("tab\there", "workspace", "100%/done"),
])
def test_partition_keys_round_trip_without_characters_dagster_rejects(instance_key, kind, key):
    partition = Partition(instance_key, kind, key)
    encoded = partition.partition_key
    assert encoded.count("/") == 2
    for bad in ("|", ",", "[", "]", " ", "...", "\t"):
        assert bad not in encoded
    assert Partition.from_partition_key(encoded) == partition


def test_a_partition_key_needs_three_parts():
    with pytest.raises(ValueError):
        Partition.from_partition_key("default/team")


# --- pools ---------------------------------------------------------------------------------


def test_only_assertionless_activity_and_approved_projections_are_inputs(db, settings, instance):
    activity = summaries(db, settings, instance, "chat:ada-1", 2)
    flush = remember(db, settings, AccessContext(instance, user_id="ada", session_key="chat:2"),
                     "Flush: the customer portal uses Keycloak for login.", source_type="flush",
                     visibility="team").id
    direct = facts(db, settings, instance, 1)
    # An assistant inference waits for review: its assertion is not approved, so no input.
    pending = facts(db, settings, instance, 1, trust_class="assistant_inference",
                    topic="payroll")
    # Legacy assertion-less dream/manual rows are never inputs.
    legacy = remember(db, settings, AccessContext(instance, user_id="ada"),
                      "Legacy dream text without an assertion.", source_type="dream",
                      visibility="team").id

    inputs = select_inputs(db, settings, team(instance))

    ids = {r.memory_id for r in inputs.rows}
    assert ids == {*activity, flush, *direct}
    assert pending[0] not in ids and legacy not in ids
    assert inputs.selected == {"direct_facts": 1, "activity": 3, "other_facts": 0, "dreams": 0}
    assert inputs.excluded_legacy == 1


def test_automation_is_filtered_before_the_recency_limit(db, settings, instance):
    human = summaries(db, settings, instance, "teamchat:room-1", 3)
    for prefix in ("heartbeat:", "webhook:", "Release:", "docproc:", "livestream:"):
        summaries(db, settings, instance, f"{prefix}job", 4)
    narrow = settings.model_copy(update={"dream_candidate_limit": 3})

    inputs = select_inputs(db, narrow, team(instance))

    assert {r.memory_id for r in inputs.rows} == set(human)
    assert inputs.excluded_automation == 20


def test_one_session_contributes_at_most_the_activity_cap(db, settings, instance):
    busy = summaries(db, settings, instance, "teamchat:busy", 10)
    quiet = summaries(db, settings, instance, "chat:quiet", 2)
    capped = settings.model_copy(update={"dream_per_session_activity_cap": 4})

    inputs = select_inputs(db, capped, team(instance))

    chosen = {r.memory_id for r in inputs.rows}
    assert len(chosen & set(busy)) == 4 and set(quiet) <= chosen
    assert chosen & set(busy) == set(busy[-4:])  # the most recent ones
    assert inputs.over_session_cap == 6


def test_the_fact_quota_comes_first_then_activity_round_robin(db, settings, instance):
    direct = facts(db, settings, instance, 6)
    rooms = [summaries(db, settings, instance, f"teamchat:room-{r}", 5) for r in range(3)]
    narrow = settings.model_copy(update={"dream_max_inputs": 10, "dream_fact_quota_ratio": 0.3})

    inputs = select_inputs(db, narrow, team(instance))

    chosen = {r.memory_id for r in inputs.rows}
    assert len(inputs.rows) == 10
    assert len(chosen & set(direct)) == 3
    per_room = [len(chosen & set(room)) for room in rooms]
    assert sorted(per_room) == [2, 2, 3]


def test_with_little_activity_the_remaining_facts_fill_up(db, settings, instance):
    direct = facts(db, settings, instance, 6)
    activity = summaries(db, settings, instance, "teamchat:room-1", 2)
    narrow = settings.model_copy(update={"dream_max_inputs": 6, "dream_fact_quota_ratio": 0.3})

    inputs = select_inputs(db, narrow, team(instance))

    chosen = {r.memory_id for r in inputs.rows}
    assert set(activity) <= chosen and len(chosen & set(direct)) == 4


# --- audiences -----------------------------------------------------------------------------


def test_unowned_rows_are_quarantined_not_widened(db, settings, instance):
    summaries(db, settings, instance, "teamchat:room-1", 3)
    # A team row with no user, no session, no room or thread: nobody it belongs to.
    anonymous = AccessContext(instance, channel_type="slack")
    stray = remember(db, settings, anonymous, "An anonymous note about the deploy freeze.",
                     visibility="team").id

    inputs = select_inputs(db, settings, team(instance))

    assert stray not in {r.memory_id for r in inputs.rows}
    assert inputs.quarantined == 1


def test_partitions_are_exact_audiences_and_need_the_minimum(db, settings, instance):
    summaries(db, settings, instance, "teamchat:room-1", 3)
    summaries(db, settings, instance, "chat:ada-private", 3, visibility="private")
    summaries(db, settings, instance, "chat:bob-private", 2, user="bob", visibility="private")
    summaries(db, settings, instance, "slack:t1", 3, user=None, visibility="channel",
              channel_thread_key="slack:C1/t1")

    found = {s.partition: s for s in eligible_partitions(db, settings, instance_key=instance)}

    assert set(found) == {team(instance), Partition(instance, "private", "ada"),
                          Partition(instance, "channel", "slack:C1/t1")}
    assert found[team(instance)].counts["activity"] == 3
    assert found[team(instance)].newest_input_at is not None
    later = datetime.now(UTC) + timedelta(minutes=1)
    assert eligible_partitions(db, settings, instance_key=instance, since=later) == []


def test_the_flush_and_dreaming_share_one_prefix_list(settings):
    from memory_platform.features.dreaming.inputs import is_automation_session

    assert is_automation_session(settings, "Heartbeat:hourly")
    assert is_automation_session(settings, "github:pr-12")
    assert not is_automation_session(settings, "teamchat:room-1")
    assert not is_automation_session(settings, None)
    custom = settings.model_copy(update={"automation_session_prefixes": ["bot:"]})
    assert is_automation_session(custom, "bot:1") and not is_automation_session(custom, "cron:x")

"""Records and replay, as rules (Kafka's GroupMetadataManagerTest style): a handler returns records, responses and
timer operations; `replay` is the only way a group changes, live and when loading; a fired timer re-checks what
it is for. Every GroupContext step also checks that nothing but replay changed the group (tests/state/context.py).
"""

from __future__ import annotations

import json
import logging

import pytest

from state.runtime import coordinator
from state.batch import step_group
from state.errors import ReplayError
from state.runtime.replay import replay
from state.handling.step import Env
from state.runtime.replay import applied
from state.errors import Errors
from state.classic.group import GroupState, IllegalTransition, Member
from state.offset_values import OffsetValue
from state.runtime.load import load
from state.classic.records import MemberAdded, StateChanged
from state.records import GroupLoaded, Record, group_tombstone, offset_record
from state.handling.timers import JOIN, SYNC, Schedule, heartbeat_key
from state.wire import decode_request
from tests.state.context import GroupContext


def handle(ctx: GroupContext, request: dict):
    """One request through the coordinator on the group as stored: (its result, the group after)."""
    group = ctx.group
    result = coordinator.handle(group, decode_request(json.dumps(request).encode()),
                                Env(ctx.now_ms, ctx.config, timers=group.timers if group is not None else {}))
    return result, applied(group, result)


def heartbeat(ctx: GroupContext, member_id: str, generation: int) -> dict:
    return {"api": "Heartbeat", "request_id": ctx.request_id(), "group_id": ctx.group_id,
            "generation_id": generation, "member_id": member_id}


def test_a_heartbeat_appends_no_record_and_only_reschedules_the_session():
    ctx = GroupContext()
    leader, _ = ctx.stable_group(2, session=10_000)
    result, _ = handle(ctx, heartbeat(ctx, leader, 1))
    assert result.records == []
    assert result.timers == [Schedule(heartbeat_key(leader), ctx.now_ms + 10_000)]
    assert [r.error_code for r in result.responses] == [Errors.NONE]


def test_a_joining_member_is_an_in_memory_record_and_is_not_written():
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2)
    result, group = handle(ctx, ctx.join_request(leader))  # the leader's JoinGroup starts a rebalance
    assert StateChanged(GroupState.PREPARING_REBALANCE, ctx.now_ms) in result.records
    # only the directory's group metadata record is written: Kafka writes nothing for this join
    assert [type(r) for r in result.written] == [Record]
    assert group.state == GroupState.PREPARING_REBALANCE and group.members[leader].join is not None


def test_the_leaders_sync_writes_the_group_with_its_assignment():
    ctx = GroupContext()
    ctx.stable_group(2)
    _, value = [r for r in ctx.records if b'"version":2' in r[0]][-1]
    assert json.loads(value)["generation"] == 1 and json.loads(value)["directory"]["group_state"] == "Stable"


def test_replay_refuses_a_record_for_a_group_that_does_not_exist():
    with pytest.raises(ReplayError):
        replay(None, offset_record("g", "t", 0, OffsetValue(1, -1, "", 0, None)))
    with pytest.raises(ReplayError):
        replay(None, group_tombstone("g"))


def test_a_group_metadata_tombstone_removes_the_group():
    ctx = GroupContext()
    ctx.stable_group(1)
    assert replay(ctx.group, group_tombstone("g")) is None


def test_a_group_metadata_tombstone_leaves_the_offsets_in_a_group_without_members():
    """Kafka keeps offsets apart from groups (its OffsetMetadataManager): only their own tombstones remove them, and
    offsets without a group are held by a "simple" group, as a commit without a group creates one."""
    ctx = GroupContext()
    ctx.commit({("t", 0): 1})
    ctx.stable_group(1)
    left = replay(ctx.group, group_tombstone("g"))
    assert left is not None and not left.members and not left.protocol_type and dict(left.offsets) == dict(
        ctx.group.offsets)


def test_a_member_added_by_a_record_is_the_groups_own_copy():
    ctx = GroupContext()
    ctx.stable_group(1)
    group = ctx.group
    record = MemberAdded(Member("m2", None, "c", "", 30_000, 10_000, "consumer", [("range", "")]))
    replay(group, record)
    assert group.members["m2"] == record.member and group.members["m2"] is not record.member


def test_a_loaded_group_enters_stable_through_the_transition_table():
    ctx = GroupContext()
    ctx.stable_group(2)
    loaded = load("g", ctx.records, ctx.now_ms, ctx.config).group
    assert (loaded.previous_state, loaded.state) == (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
    ctx.join(ctx.group.leader)  # PreparingRebalance: a GroupLoaded onto it is an illegal transition
    preparing = ctx.group
    with pytest.raises(IllegalTransition):
        replay(preparing, GroupLoaded(preparing.persisted))


def corrupt_copy_of_last_group_record(ctx: GroupContext) -> tuple[bytes, bytes]:
    key, value = [r for r in ctx.records if b'"version":2' in r[0]][-1]
    return key, value[: len(value) // 2]


def test_a_corrupt_later_group_record_is_reported_with_its_position_not_skipped_in_silence(caplog):
    ctx = GroupContext()
    ctx.stable_group(2)
    records = ctx.records + [corrupt_copy_of_last_group_record(ctx)]
    with caplog.at_level(logging.ERROR, logger="state.runtime.load"):
        loaded = load("g", records, ctx.now_ms, ctx.config)
    position = len(records) - 1
    assert [p for p, _ in loaded.unreadable] == [position]
    assert f"record {position} " in caplog.text
    assert loaded.group.generation == 1  # what the readable records hold, and the caller is told the rest


def test_a_load_request_counts_each_unreadable_record_as_a_dead_letter():
    ctx = GroupContext()
    ctx.stable_group(2)
    records = ctx.records + [corrupt_copy_of_last_group_record(ctx), (b"junk", b"junk")]
    raw = json.dumps({"api": "LoadGroup", "request_id": "rebuild", "group_id": "g", "records": [
        {"key": k.decode(), "value": None if v is None else v.decode(), "partition": 3, "offset": 100 + i}
        for i, (k, v) in enumerate(records)]}).encode()
    step = step_group("g", None, [raw], ctx.now_ms, ctx.config)
    assert [(i, reason.split(" cannot")[0]) for i, reason in step.dead_letters] == [
        (0, f"LoadGroup: records-topic partition 3 offset {100 + len(records) - 2}"),
        (0, f"LoadGroup: records-topic partition 3 offset {100 + len(records) - 1}")]
    assert step.metadata is not None  # the group is loaded from the records that could be read


def test_a_fired_join_timer_outside_the_join_phase_does_nothing():
    ctx = GroupContext()
    ctx.stable_group(2)
    group = ctx.group
    group.timers[JOIN] = ctx.now_ms  # a join timer that outlived its join phase
    live = coordinator.fire_timers(group, Env(ctx.now_ms, ctx.config, timers=group.timers))
    applied(group, live)
    assert live.responses == [] and live.written == []
    assert group.state == GroupState.STABLE and JOIN not in group.timers


def test_a_fired_sync_timer_with_nobody_left_to_sync_does_nothing():
    ctx = GroupContext()
    ctx.stable_group(2)
    group = ctx.group
    group.timers[SYNC] = ctx.now_ms
    live = coordinator.fire_timers(group, Env(ctx.now_ms, ctx.config, timers=group.timers))
    applied(group, live)
    assert live.responses == [] and group.state == GroupState.STABLE and len(group.members) == 2


def test_a_fired_session_timer_of_a_member_that_already_left_does_nothing():
    ctx = GroupContext()
    ctx.stable_group(2)
    group = ctx.group
    group.timers[heartbeat_key("gone")] = ctx.now_ms
    live = coordinator.fire_timers(group, Env(ctx.now_ms, ctx.config, timers=group.timers))
    applied(group, live)
    assert live.responses == [] and live.members_expired == 0 and group.state == GroupState.STABLE

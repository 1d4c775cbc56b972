"""Records rebuild the group (load_group), as Kafka loads __consumer_offsets on failover."""

from __future__ import annotations

import json

from state.batch import decode_state, load_group, step_group
from state.config import CoordinatorConfig
from state.errors import Errors
from state.classic.group import GroupState
from tests.state.context import GroupContext, assignment

CONFIG = CoordinatorConfig()


def test_stable_group_loads_stable_with_assignments_and_fresh_session_timers():
    ctx = GroupContext()
    a, b = ctx.stable_group(2, session=10_000)
    ctx.commit({("t", 0): 5}, member_id=a, generation=1)
    group = decode_state(load_group("g", ctx.records, 50_000, CONFIG))
    assert group.state == GroupState.STABLE and group.generation == 1 and group.leader == a
    assert group.members[b].assignment == assignment(("t", (1,)))
    assert group.timers[f"heartbeat:{a}"] == 60_000
    assert group.offsets[("t", 0)].offset == 5


def test_mid_rebalance_records_load_what_kafka_had_persisted():
    ctx = GroupContext()
    a, b = ctx.stable_group(2)
    ctx.join(a)  # PreparingRebalance: our directory record, but Kafka's value is still generation 1
    group = decode_state(load_group("g", ctx.records, ctx.now_ms, CONFIG))
    assert group.state == GroupState.STABLE and group.generation == 1 and set(group.members) == {a, b}


def test_loaded_group_writes_its_new_state_to_the_directory_on_the_next_call():
    ctx = GroupContext()
    a, b = ctx.stable_group(2)
    ctx.join(a)
    stored = load_group("g", ctx.records, ctx.now_ms, CONFIG)
    result = step_group("g", stored, [], ctx.now_ms, CONFIG)
    (key, value), = result.records
    assert json.loads(value)["directory"]["group_state"] == "Stable"


def test_empty_group_loads_empty_and_deleted_group_loads_nothing():
    ctx = GroupContext()
    (a,) = ctx.stable_group(1)
    ctx.leave(a)
    assert decode_state(load_group("g", ctx.records, ctx.now_ms, CONFIG)).state == GroupState.EMPTY
    ctx.step({"api": "DeleteGroups", "request_id": "d", "group_id": "g"})
    assert load_group("g", ctx.records, ctx.now_ms, CONFIG) is None


def test_offsets_without_group_metadata_load_a_simple_group():
    records = [(b'{"version":1,"group":"g","topic":"t","partition":0}',
                b'{"offset":3,"leader_epoch":-1,"metadata":"","commit_timestamp":0,"expire_timestamp":null}')]
    group = decode_state(load_group("g", records, 0, CONFIG))
    assert group.state == GroupState.EMPTY and group.offsets[("t", 0)].offset == 3


def test_other_groups_and_garbage_records_are_skipped():
    ctx = GroupContext()
    ctx.commit({("t", 0): 1})
    other = GroupContext(group_id="h")
    other.commit({("t", 0): 9})
    records = [(b"junk", b"junk")] + other.records + ctx.records
    group = decode_state(load_group("g", records, 0, CONFIG))
    assert group.offsets[("t", 0)].offset == 1


def test_group_above_max_size_rebalances_after_load():
    ctx = GroupContext()
    ctx.stable_group(3)
    group = decode_state(load_group("g", ctx.records, ctx.now_ms, CoordinatorConfig(group_max_size=2)))
    assert group.state == GroupState.PREPARING_REBALANCE


def test_last_joining_members_are_kicked_out_when_a_loaded_group_is_over_max_size():
    """After Kafka's testLastJoiningMembersAreKickedOutWhenRejoiningGroupWithMaxSize, via a load."""
    ctx = GroupContext()
    ids = ctx.stable_group(12)
    small = CoordinatorConfig(group_max_size=10)
    stored = load_group("g", ctx.records, ctx.now_ms, small)
    requests = [json.dumps(ctx.join_request(m)).encode() for m in ids]
    result = step_group("g", stored, requests, ctx.now_ms, small)
    responses = [json.loads(r) for r in result.responses]
    # the last two; as in Kafka, no completion yet
    assert [r["error_code"] for r in responses] == [Errors.GROUP_MAX_SIZE_REACHED, Errors.GROUP_MAX_SIZE_REACHED]
    stored = result.stored(stored)
    result = step_group("g", stored, [], ctx.now_ms + 30_000, small)  # the rebalance timeout
    assert [json.loads(r)["error_code"] for r in result.responses] == [Errors.NONE] * 10
    group = decode_state(result.stored(stored))
    assert group.state == GroupState.COMPLETING_REBALANCE and len(group.members) == 10
    assert set(group.members) == set(ids[:10])

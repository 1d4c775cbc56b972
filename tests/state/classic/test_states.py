"""The five states, the legal transitions between them, and the stored state's round trip."""

from __future__ import annotations

import json

import pytest

from state.batch import (
    STATE_SCHEMA_VERSION,
    GroupStep,
    StoredGroup,
    decode_state,
    encode_state,
    step_group,
    upgrade_state,
)
from state.config import CoordinatorConfig
from state.errors import Errors
from state.classic.group import VALID_PREVIOUS, ClassicGroup, GroupState, IllegalTransition
from tests.state.context import GroupContext

S = GroupState
KAFKA_VALID_PREVIOUS = {
    S.EMPTY: {S.PREPARING_REBALANCE},
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
}
"""Kafka's table without its Dead row: a group here is removed when deleted, never kept in Dead."""


def test_transition_table_is_kafkas():
    assert {k: set(v) for k, v in VALID_PREVIOUS.items()} == KAFKA_VALID_PREVIOUS


@pytest.mark.parametrize("source", list(S))
@pytest.mark.parametrize("target", list(S))
def test_only_listed_transitions_are_allowed(source, target):
    group = ClassicGroup("g", state=source)
    if source in KAFKA_VALID_PREVIOUS.get(target, ()):
        group.transition_to(target, 5)
        assert (group.state, group.previous_state, group.state_timestamp) == (target, source, 5)
    else:
        with pytest.raises(IllegalTransition):
            group.transition_to(target, 5)
        assert group.state == source


def test_no_stable_to_empty_edge_last_member_goes_through_preparing_rebalance():
    ctx = GroupContext()
    (a,) = ctx.stable_group(1)
    ctx.leave(a)
    assert [v["directory"]["group_state"] for v in ctx.record_values] == ["Empty"]
    assert ctx.group.previous_state == S.PREPARING_REBALANCE


def test_every_state_change_writes_a_directory_record():
    ctx = GroupContext(CoordinatorConfig(group_initial_rebalance_delay_ms=0))
    member = ctx.new_member()
    ctx.join(member)
    ctx.sleep(0)
    ctx.sync(member, 1)
    states = [json.loads(v)["directory"]["group_state"] for _, v in ctx.records]
    assert states == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable"]


def test_stored_state_round_trips_byte_identically_and_carries_its_schema_version():
    ctx = GroupContext()
    leader, *_ = ctx.stable_group(3)
    ctx.commit({("t", 0): 1}, leader, ctx.group.generation)
    assert encode_state(decode_state(ctx.state)) == ctx.state
    assert ctx.state.metadata.startswith(b'{"v":%d,' % STATE_SCHEMA_VERSION)
    assert ctx.state.offsets.startswith(b'{"v":%d,' % STATE_SCHEMA_VERSION)
    again = step_group("g", ctx.state, [], ctx.now_ms, ctx.config)
    assert again.stored(ctx.state) == ctx.state and again.records == [] and again.responses == []
    assert not again.offsets_changed
    assert again.next_deadline_ms == min(ctx.group.timers.values())


def stable_with_offsets() -> tuple[GroupContext, str]:
    ctx = GroupContext()
    leader, _ = ctx.stable_group(2)
    ctx.commit({("t", 0): 7, ("t", 1): 9}, leader, ctx.group.generation)
    return ctx, leader


def step_counting_reads(ctx: GroupContext, *requests: dict) -> tuple[GroupStep, int]:
    reads: list[None] = []
    raw = [json.dumps(r).encode() for r in requests]
    step = step_group("g", ctx.state, raw, ctx.now_ms, ctx.config,
                      read_offsets=lambda: reads.append(None) or ctx.state.offsets)
    return step, len(reads)


def test_a_heartbeat_neither_reads_nor_writes_the_offsets():
    ctx, leader = stable_with_offsets()
    step, reads = step_counting_reads(ctx, {"api": "Heartbeat", "request_id": "h", "group_id": "g",
                                            "generation_id": ctx.group.generation, "member_id": leader})
    assert json.loads(step.responses[0])["error_code"] == Errors.NONE
    assert reads == 0 and not step.offsets_changed
    assert step.stored(ctx.state).offsets == ctx.state.offsets


def test_a_commit_reads_the_offsets_once_and_writes_them_back():
    ctx, leader = stable_with_offsets()
    step, reads = step_counting_reads(ctx, {"api": "OffsetCommit", "request_id": "c", "group_id": "g",
                                            "generation_id": ctx.group.generation, "member_id": leader,
                                            "topics": [{"name": "t", "partitions": [
                                                {"partition_index": 0, "committed_offset": 8}]}]})
    assert reads == 1 and step.offsets_changed
    after = decode_state(step.stored(ctx.state))
    assert {tp: o.offset for tp, o in after.offsets.items()} == {("t", 0): 8, ("t", 1): 9}


def test_a_fetch_reads_the_offsets_and_leaves_them_as_they_are():
    ctx, _ = stable_with_offsets()
    step, reads = step_counting_reads(ctx, {"api": "OffsetFetch", "request_id": "f", "group_id": "g",
                                            "topics": [{"name": "t", "partition_indexes": [1]}]})
    assert reads == 1 and not step.offsets_changed
    assert json.loads(step.responses[0])["topics"][0]["partitions"][0]["committed_offset"] == 9


def test_a_deleted_group_drops_both_parts():
    ctx = GroupContext()
    ctx.commit({("t", 0): 1})
    step, reads = step_counting_reads(ctx, {"api": "DeleteGroups", "request_id": "d", "group_id": "g"})
    assert reads == 1 and step.stored(ctx.state) is None and step.offsets_changed and step.offsets is None


def test_a_state_of_release_0_1_is_upgraded_with_every_field_and_offset():
    """Schema version 1 kept the offsets inside the one document; `upgrade_state` splits it."""
    ctx, _ = stable_with_offsets()
    doc = json.loads(ctx.state.metadata)
    doc["v"] = 1
    doc["group"]["offsets"] = json.loads(ctx.state.offsets)["offsets"]
    old = json.dumps(doc, separators=(",", ":")).encode()
    assert upgrade_state(old) == ctx.state
    refused = step_group("g", StoredGroup(old), [], ctx.now_ms, ctx.config)
    assert refused.stored(StoredGroup(old)) == StoredGroup(old)  # never misread: kept as it is

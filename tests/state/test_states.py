"""The five states, the legal transitions between them, and the stored state's round trip."""

from __future__ import annotations

import json

import pytest

from state.batch import STATE_SCHEMA_VERSION, decode_state, encode_state, step_group
from state.config import CoordinatorConfig
from state.group import VALID_PREVIOUS, ClassicGroup, GroupState, IllegalTransition
from tests.state.context import GroupContext

S = GroupState
KAFKA_VALID_PREVIOUS = {
    S.EMPTY: {S.PREPARING_REBALANCE},
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.DEAD: {S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD},
}


def test_transition_table_is_kafkas():
    assert {k: set(v) for k, v in VALID_PREVIOUS.items()} == KAFKA_VALID_PREVIOUS


@pytest.mark.parametrize("source", list(S))
@pytest.mark.parametrize("target", list(S))
def test_only_listed_transitions_are_allowed(source, target):
    group = ClassicGroup("g", state=source)
    if source in KAFKA_VALID_PREVIOUS[target]:
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
    ctx.stable_group(3)
    ctx.commit({("t", 0): 1})
    assert encode_state(decode_state(ctx.state)) == ctx.state
    assert ctx.state.startswith(b'{"v":%d,' % STATE_SCHEMA_VERSION)
    again = step_group("g", ctx.state, [], ctx.now_ms, ctx.config)
    assert again.state == ctx.state and again.records == [] and again.responses == []
    assert again.next_deadline_ms == min(ctx.group.timers.values())

"""The internal LoadGroup request: how a rebuild (checkpoint lost) brings groups back through the control topic."""

from __future__ import annotations

import json

from state.batch import route, step_group
from state.config import CoordinatorConfig
from state.classic.group import GroupState
from tests.state.context import GroupContext


def load_request(ctx: GroupContext) -> bytes:
    records = [{"key": k.decode(), "value": None if v is None else v.decode()} for k, v in ctx.records]
    return json.dumps({"api": "LoadGroup", "request_id": "rebuild", "group_id": ctx.group_id,
                       "records": records}).encode()


def stable_with_offsets() -> GroupContext:
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2)
    ctx.commit({("t", 0): 42}, leader, ctx.group.generation)
    return ctx


def test_route_sends_a_load_to_its_group():
    raw = json.dumps({"api": "LoadGroup", "request_id": "rebuild", "group_id": "g", "records": []}).encode()
    assert route(b"g", raw).group_id == "g"


def test_a_group_without_state_is_loaded_stable_with_its_members_and_offsets():
    before = stable_with_offsets()
    step = step_group("g", None, [load_request(before)], before.now_ms + 1_000, CoordinatorConfig())
    assert step.responses == [] and step.dead_letters == []
    after = GroupContext()
    after.state, after.now_ms = step.stored(None), before.now_ms + 1_000
    assert after.group.state == GroupState.STABLE
    assert set(after.group.members) == set(before.group.members)
    assert after.group.generation == before.group.generation
    assert after.group.offsets[("t", 0)].offset == 42


def test_a_group_that_has_state_ignores_the_load():
    ctx = stable_with_offsets()
    step = step_group("g", ctx.state, [load_request(GroupContext())], ctx.now_ms, ctx.config)
    assert step.stored(ctx.state) == ctx.state and step.responses == [] and step.records == []


def test_a_malformed_load_is_a_dead_letter_and_changes_nothing():
    raw = json.dumps({"api": "LoadGroup", "group_id": "g", "records": "nope"}).encode()
    step = step_group("g", None, [raw], 0, CoordinatorConfig())
    assert step.metadata is None and [i for i, _ in step.dead_letters] == [0]


def test_a_load_counts_from_the_step_not_from_its_arrival():
    """A rebuild publishes its loads before the query steps them, maybe minutes before at a million members. Loaded
    at its arrival, a group whose load arrived before a retention-check instant and was stepped after it would leave
    that check already due, and the next batch would step it again for nothing (issue 35)."""
    before = stable_with_offsets()
    config = CoordinatorConfig()
    interval = config.offsets_retention_check_interval_ms
    arrival = (before.now_ms // interval + 1) * interval - 5_000  # 5 s before a check instant
    stepped = arrival + 60_000  # ... stepped a minute later, after it
    step = step_group("g", None, [load_request(before)], stepped, config, request_times_ms=[arrival])
    assert step.next_deadline_ms > stepped  # nothing due at the next call
    after = GroupContext()
    after.state, after.now_ms = step.stored(None), stepped
    sessions = {after.group.timers[f"heartbeat:{m}"] - stepped for m in after.group.members}
    assert sessions == {m.session_timeout_ms for m in after.group.members.values()}  # restarted at the step


def test_a_load_as_a_rebuild_encodes_it_steps_as_the_same_load_in_any_json():
    """A rebuild's loads (msgspec's encoding, `api` first) are decoded in one pass; any other spelling of the same
    JSON takes the general path. Both load the same group, to the byte."""
    from schemas.messages import LoadedRecord, LoadGroup
    from state.wire import encode

    before = stable_with_offsets()
    compact = encode(LoadGroup(request_id="rebuild", group_id="g",
                               records=tuple(LoadedRecord(k.decode(), None if v is None else v.decode(), 0, i)
                                             for i, (k, v) in enumerate(before.records))))
    assert compact.startswith(b'{"api":"LoadGroup",')
    spaced = json.dumps(json.loads(compact)).encode()
    assert spaced != compact
    now, config = before.now_ms + 1_000, CoordinatorConfig()
    fast, general = (step_group("g", None, [raw], now, config, [now], position=(0, 7)) for raw in (compact, spaced))
    assert fast.metadata is not None and fast.offsets is not None and fast.dead_letters == []
    assert (fast.metadata, fast.offsets, fast.view, fast.next_deadline_ms, fast.records, fast.responses) == (
        general.metadata, general.offsets, general.view, general.next_deadline_ms, general.records, general.responses)


def test_a_malformed_load_spelled_as_a_rebuild_writes_it_is_still_a_dead_letter():
    raw = b'{"api":"LoadGroup","request_id":"r","group_id":"g","records":"nope"}'
    step = step_group("g", None, [raw], 0, CoordinatorConfig())
    assert step.metadata is None and [i for i, _ in step.dead_letters] == [0]

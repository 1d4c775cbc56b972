"""Requests count at their arrival time, not at the time a (possibly late) micro-batch handles them.

Kafka handles a request when it arrives; a micro-batch collects requests and runs later. With each record's
timestamp passed as its arrival time, a heartbeat that arrived before its member's session deadline keeps the
member even when the batch runs after that deadline, and one that arrived after the deadline finds its member
already gone, as it would in Kafka.
"""

from __future__ import annotations

from state.config import CoordinatorConfig
from state.errors import Errors
from state.classic.group import GroupState
from tests.state.context import GroupContext

SESSION = 10_000
CONFIG = CoordinatorConfig(coordinator_session_reset_lateness_ms=0)
"""Late batches as Kafka would have handled the requests when they arrived: no session reset for lateness (the
core's default restarts sessions in a call more than 5 s late; `OUTAGE_AWARE` below)."""


def stable_pair() -> tuple[GroupContext, str, str, int]:
    ctx = GroupContext(CONFIG)
    leader, follower = ctx.stable_group(2, session=SESSION)
    return ctx, leader, follower, ctx.group.generation


def heartbeat(ctx: GroupContext, member_id: str, generation: int) -> dict:
    return {"api": "Heartbeat", "request_id": ctx.request_id(), "group_id": ctx.group_id,
            "generation_id": generation, "member_id": member_id, "group_instance_id": None}


def test_heartbeat_that_arrived_in_time_keeps_its_member_in_a_late_batch():
    ctx, leader, follower, generation = stable_pair()
    arrived = ctx.now_ms + SESSION - 1
    ctx.now_ms += SESSION + 5_000  # the batch runs well after both members' deadlines
    responses = ctx.step(heartbeat(ctx, leader, generation), heartbeat(ctx, follower, generation),
                         times=[arrived, arrived])
    assert [r["error_code"] for r in responses] == [Errors.NONE, Errors.NONE]
    assert ctx.group.state == GroupState.STABLE and set(ctx.group.members) == {leader, follower}


def test_without_arrival_times_the_same_late_batch_expires_both_members_first():
    ctx, leader, follower, generation = stable_pair()
    ctx.now_ms += SESSION + 5_000
    responses = ctx.step(heartbeat(ctx, leader, generation), heartbeat(ctx, follower, generation))
    assert [r["error_code"] for r in responses] == [Errors.UNKNOWN_MEMBER_ID, Errors.UNKNOWN_MEMBER_ID]


def test_heartbeat_that_arrived_after_the_deadline_finds_its_member_expired():
    ctx, leader, follower, generation = stable_pair()
    start = ctx.now_ms
    ctx.now_ms += SESSION + 5_000
    responses = ctx.step(heartbeat(ctx, leader, generation), heartbeat(ctx, follower, generation),
                         times=[start + SESSION - 1, start + SESSION + 1])
    assert [r["error_code"] for r in responses] == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID]
    assert set(ctx.group.members) == {leader}


def test_arrival_times_are_clamped_so_time_never_goes_back_or_ahead():
    ctx, leader, follower, generation = stable_pair()
    before = ctx.now_ms
    ctx.now_ms += 1_000
    ctx.step(heartbeat(ctx, leader, generation), times=[before - 60_000])  # an old client clock
    assert ctx.group.timers[f"heartbeat:{leader}"] == before + SESSION  # counted at the last processing time
    ctx.now_ms += 1_000
    ctx.step(heartbeat(ctx, follower, generation), times=[ctx.now_ms + 60_000])  # a clock ahead of ours
    assert ctx.group.timers[f"heartbeat:{follower}"] == ctx.now_ms + SESSION


def test_timers_due_after_the_last_request_are_left_for_the_next_call():
    ctx, leader, follower, generation = stable_pair()
    start = ctx.now_ms
    ctx.now_ms += SESSION + 5_000
    ctx.step(heartbeat(ctx, leader, generation), times=[start + 6_000])
    assert follower in ctx.group.members  # its deadline passed after the only request of this call
    assert ctx.last.next_deadline_ms <= ctx.now_ms
    ctx.step()  # the shell calls back at once
    assert set(ctx.group.members) == {leader}


OUTAGE_AWARE = CoordinatorConfig(coordinator_session_reset_lateness_ms=15_000)


def test_a_session_deadline_missed_by_an_outage_restarts_instead_of_expiring():
    """Kafka restarts every session timer when a coordinator loads a group after a failover."""
    ctx = GroupContext(OUTAGE_AWARE)
    leader, follower = ctx.stable_group(2, session=SESSION)
    deadline = ctx.group.timers[f"heartbeat:{leader}"]
    ctx.now_ms = deadline + 15_001  # the coordinator came back more than the threshold after the deadline
    ctx.step()
    assert set(ctx.group.members) == {leader, follower} and ctx.group.state == GroupState.STABLE
    assert ctx.group.timers[f"heartbeat:{leader}"] == ctx.now_ms + SESSION


def test_within_the_threshold_an_overdue_session_still_expires():
    ctx = GroupContext(OUTAGE_AWARE)
    leader, follower = ctx.stable_group(2, session=SESSION)
    ctx.now_ms = max(v for k, v in ctx.group.timers.items() if k.startswith("heartbeat:")) + 15_000
    ctx.step()
    assert ctx.group.members == {}


def test_a_member_that_stays_quiet_after_the_outage_expires_one_session_later():
    ctx = GroupContext(OUTAGE_AWARE)
    leader, follower = ctx.stable_group(2, session=SESSION)
    ctx.sleep(SESSION + 60_000)  # both sessions restart here
    ctx.sleep(1_000)
    assert ctx.heartbeat(leader, ctx.group.generation)[0]["error_code"] == Errors.NONE
    ctx.sleep(SESSION - 1_000)  # the follower stayed quiet for a whole session after the outage
    assert set(ctx.group.members) == {leader}


def test_requests_queued_through_an_outage_count_from_the_restart_and_sessions_restart():
    """The kill -9 drill: a 40 s outage with 10 s sessions; one heartbeat each was queued early in the outage."""
    ctx = GroupContext(OUTAGE_AWARE)
    leader, follower = ctx.stable_group(2, session=SESSION)
    killed_at = ctx.now_ms
    ctx.now_ms = killed_at + 40_000
    responses = ctx.step(heartbeat(ctx, leader, ctx.group.generation), times=[killed_at + 3_000])
    assert [r["error_code"] for r in responses] == [Errors.NONE]
    assert set(ctx.group.members) == {leader, follower}
    assert ctx.group.timers[f"heartbeat:{leader}"] == ctx.now_ms + SESSION
    assert ctx.group.timers[f"heartbeat:{follower}"] == ctx.now_ms + SESSION


def test_the_first_call_after_a_restart_restarts_sessions_even_a_little_after_their_deadline():
    """The kill -9 drill's narrow case: the replayed batch ran at its original time and set the deadlines, its
    answers reached the members only after the outage, and their next requests came just after those deadlines,
    too little late for the lateness threshold. The shell marks the first new batch after a restart as resumed."""
    ctx = GroupContext(OUTAGE_AWARE)
    leader, follower = ctx.stable_group(2, session=SESSION)
    deadline = ctx.group.timers[f"heartbeat:{leader}"]
    ctx.now_ms = deadline + 1_500
    late = [deadline + 500, deadline + 600]
    responses = ctx.step(heartbeat(ctx, leader, ctx.group.generation),
                         heartbeat(ctx, follower, ctx.group.generation), times=late, resumed=True)
    assert [r["error_code"] for r in responses] == [Errors.NONE, Errors.NONE]
    assert set(ctx.group.members) == {leader, follower}
    assert ctx.group.timers[f"heartbeat:{follower}"] == ctx.now_ms + SESSION


def test_the_same_late_requests_without_a_restart_find_their_members_expired():
    ctx = GroupContext(OUTAGE_AWARE)
    leader, follower = ctx.stable_group(2, session=SESSION)
    deadline = ctx.group.timers[f"heartbeat:{leader}"]
    ctx.now_ms = deadline + 1_500
    responses = ctx.step(heartbeat(ctx, leader, ctx.group.generation),
                         heartbeat(ctx, follower, ctx.group.generation), times=[deadline + 500, deadline + 600])
    assert [r["error_code"] for r in responses] == [Errors.UNKNOWN_MEMBER_ID, Errors.UNKNOWN_MEMBER_ID]

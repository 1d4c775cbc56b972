"""SyncGroup, Heartbeat and session expiry, after Kafka's classic coordinator tests."""

from __future__ import annotations

import pytest

from state.config import CoordinatorConfig
from state.errors import Errors
from state.classic.group import GroupState
from tests.state.context import GroupContext, assignment, by_request

NO_DELAY = CoordinatorConfig(group_initial_rebalance_delay_ms=0)
AS_KAFKA_WHEN_LATE = CoordinatorConfig(coordinator_session_reset_lateness_ms=0)
"""A call that comes late fires what timely calls would have fired, as Kafka's timers do (the core's default
restarts the sessions of a call more than 5 s late instead: `coordinator.session.reset.lateness.ms`)."""
NO_DELAY_AS_KAFKA_WHEN_LATE = CoordinatorConfig(group_initial_rebalance_delay_ms=0,
                                                coordinator_session_reset_lateness_ms=0)


def completing_group(ctx: GroupContext, n: int = 2, **kw) -> tuple[str, list[str]]:
    """n members through the join phase; returns (leader, followers), the group in CompletingRebalance."""
    ids = [ctx.new_member(**kw) for _ in range(n)]
    ctx.join_all(*ids, **kw)
    responses = ctx.sleep(0)
    leader = responses[0]["leader"]
    return leader, [m for m in ids if m != leader]


class TestSyncGroup:
    def test_followers_wait_for_the_leader_then_all_get_their_assignment(self):
        ctx = GroupContext(NO_DELAY)
        leader, (follower,) = completing_group(ctx)
        assert ctx.sync(follower, 1) == []
        responses = by_request(ctx.sync(leader, 1, {leader: assignment(("t", (0,))),
                                                     follower: assignment(("t", (1,)))}))
        assert {r["error_code"] for r in responses.values()} == {Errors.NONE}
        assert {r["assignment"] for r in responses.values()} == {assignment(("t", (0,))), assignment(("t", (1,)))}
        assert ctx.group.state == GroupState.STABLE
        (record,) = ctx.record_values
        assert record["generation"] == 1 and record["directory"]["group_state"] == "Stable"
        assert {m["member_id"]: m["assignment"] for m in record["members"]}[follower] == assignment(("t", (1,)))

    def test_leader_first_then_follower_gets_stored_assignment_at_once(self):
        ctx = GroupContext(NO_DELAY)
        leader, (follower,) = completing_group(ctx)
        (own,) = ctx.sync(leader, 1, {follower: assignment(("t", (1,)))})
        assert own["assignment"] == ""  # members the leader left out get empty bytes
        (response,) = ctx.sync(follower, 1)
        assert response["assignment"] == assignment(("t", (1,))) and response["protocol_name"] == "range"

    @pytest.mark.parametrize(
        "name, mutate, error",
        [
            ("unknown_member", lambda r: r.update(member_id="nobody"), Errors.UNKNOWN_MEMBER_ID),
            ("illegal_generation", lambda r: r.update(generation_id=7), Errors.ILLEGAL_GENERATION),
            ("protocol_name_mismatch", lambda r: r.update(protocol_name="roundrobin"),
             Errors.INCONSISTENT_GROUP_PROTOCOL),
            ("protocol_type_mismatch", lambda r: r.update(protocol_type="connect"), Errors.INCONSISTENT_GROUP_PROTOCOL),
            ("v5_requires_protocol_name", lambda r: r.update(protocol_name=None), Errors.INCONSISTENT_GROUP_PROTOCOL),
            # Kafka's validateMember: an instance id the group does not know is an unknown member (25); FENCED
            # is for a known instance id sent with another member id (test_sync_with_the_instance_id_...).
            ("unknown_group_instance_id", lambda r: r.update(group_instance_id="someone"), Errors.UNKNOWN_MEMBER_ID),
        ],
    )
    def test_sync_errors(self, name, mutate, error):
        ctx = GroupContext(NO_DELAY)
        leader, _ = completing_group(ctx)
        request = ctx.sync_request(leader, 1)
        mutate(request)
        (response,) = ctx.step(request)
        assert response["error_code"] == error
        assert ctx.group.state == GroupState.COMPLETING_REBALANCE

    def test_sync_with_the_instance_id_of_another_member_is_fenced(self):
        ctx = GroupContext(NO_DELAY)
        ctx.join(instance="i1")
        (joined,) = ctx.sleep(0)
        (response,) = ctx.sync("someone-else", 1, instance="i1")
        assert response["error_code"] == Errors.FENCED_INSTANCE_ID
        (response,) = ctx.sync(joined["member_id"], 1, instance="i1")
        assert response["error_code"] == Errors.NONE

    def test_v4_may_omit_protocol_name(self):
        ctx = GroupContext(NO_DELAY)
        leader, _ = completing_group(ctx, 1)
        (response,) = ctx.sync(leader, 1, version=4, protocol_name=None)
        assert response["error_code"] == Errors.NONE

    def test_sync_unknown_group_is_unknown_member(self):
        ctx = GroupContext()
        (response,) = ctx.sync("m", 1)
        assert response["error_code"] == Errors.UNKNOWN_MEMBER_ID

    def test_sync_in_preparing_rebalance_is_rebalance_in_progress(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2)
        ctx.join(a)
        (response,) = ctx.sync(b, 1)
        assert response["error_code"] == Errors.REBALANCE_IN_PROGRESS

    def test_pending_sync_timeout_removes_members_that_did_not_sync(self):
        ctx = GroupContext(NO_DELAY)
        leader, (follower,) = completing_group(ctx, rebalance=20_000)
        # The leader's sync completes the group at once: only the leader is answered; the follower stays pending.
        assert [(r["api"], r["error_code"]) for r in ctx.sync(leader, 1)] == [("SyncGroup", Errors.NONE)]
        assert ctx.group.state == GroupState.STABLE and list(ctx.group.pending_sync) == [follower]
        for _ in range(2):
            ctx.heartbeat(follower, 1)
            ctx.heartbeat(leader, 1)
            ctx.sleep(9_000)
        ctx.heartbeat(follower, 1)
        ctx.heartbeat(leader, 1)
        ctx.sleep(2_000)
        group = ctx.group
        assert follower not in group.members and group.state == GroupState.PREPARING_REBALANCE

    def test_pending_sync_timeout_aborts_the_parked_syncs_of_others(self):
        ctx = GroupContext(NO_DELAY)
        leader, (follower,) = completing_group(ctx, rebalance=20_000, session=30_000)
        assert ctx.sync(follower, 1) == []
        responses = ctx.sleep(20_000)  # the leader never syncs
        assert [(r["api"], r["error_code"]) for r in responses] == [("SyncGroup", Errors.REBALANCE_IN_PROGRESS)]
        assert leader not in ctx.group.members

    def test_sync_cancels_the_pending_sync_timer_once_everyone_synced(self):
        ctx = GroupContext(NO_DELAY)
        leader, (follower,) = completing_group(ctx)
        ctx.sync(follower, 1)
        ctx.sync(leader, 1)
        assert "sync" not in ctx.group.timers


class TestHeartbeat:
    @pytest.mark.parametrize(
        "name, state, member, generation, error",
        [
            ("stable_ok", "stable", "leader", 1, Errors.NONE),
            ("stable_illegal_generation", "stable", "leader", 0, Errors.ILLEGAL_GENERATION),
            ("stable_unknown_member", "stable", "nobody", 1, Errors.UNKNOWN_MEMBER_ID),
            ("unknown_member_wins_over_generation", "stable", "nobody", 9, Errors.UNKNOWN_MEMBER_ID),
            ("preparing_rebalance_in_progress", "preparing", "follower", 1, Errors.REBALANCE_IN_PROGRESS),
            ("preparing_wrong_generation_is_illegal", "preparing", "follower", 0, Errors.ILLEGAL_GENERATION),
            ("completing_ok", "completing", "follower", 1, Errors.NONE),
            ("missing_group_unknown_member", "missing", "leader", 1, Errors.UNKNOWN_MEMBER_ID),
            ("empty_group_unknown_member", "empty", "leader", 2, Errors.UNKNOWN_MEMBER_ID),
        ],
    )
    def test_heartbeat_by_state(self, name, state, member, generation, error):
        ctx = GroupContext(NO_DELAY)
        if state != "missing":
            leader, (follower,) = completing_group(ctx)
            if state in ("stable", "preparing", "empty"):
                ctx.sync(follower, 1)
                ctx.sync(leader, 1)
            if state == "preparing":
                ctx.join(leader)
            if state == "empty":
                ctx.leave(leader, follower)
        else:
            leader = follower = "x"
        member_id = {"leader": leader, "follower": follower}.get(member, member)
        (response,) = ctx.heartbeat(member_id, generation)
        assert response["error_code"] == error

    def test_heartbeat_with_instance_id_of_another_member_is_fenced(self):
        ctx = GroupContext(NO_DELAY)
        ctx.join(instance="i1")
        (r,) = ctx.sleep(0)
        (response,) = ctx.heartbeat("someone-else", 1, instance="i1")
        assert response["error_code"] == Errors.FENCED_INSTANCE_ID
        (response,) = ctx.heartbeat(r["member_id"], 1, instance="i2")
        assert response["error_code"] == Errors.UNKNOWN_MEMBER_ID

    @pytest.mark.parametrize("api", ["Heartbeat", "SyncGroup", "JoinGroup", "LeaveGroup", "OffsetDelete"])
    def test_empty_group_id_is_invalid(self, api):
        ctx = GroupContext(group_id="")
        request = {"Heartbeat": lambda: ctx.step({"api": "Heartbeat", "request_id": "x", "group_id": "",
                                                  "generation_id": 1, "member_id": "m"}),
                   "SyncGroup": lambda: ctx.sync("m", 1),
                   "JoinGroup": lambda: ctx.join(),
                   "LeaveGroup": lambda: ctx.leave("m"),
                   "OffsetDelete": lambda: ctx.step({"api": "OffsetDelete", "request_id": "x", "group_id": "",
                                                     "topics": []})}[api]
        (response,) = request()
        assert response["error_code"] == Errors.INVALID_GROUP_ID and ctx.group is None

    def test_heartbeat_in_preparing_rebalance_still_resets_the_session(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2, rebalance=60_000)
        ctx.join(a, rebalance=60_000)
        for _ in range(4):
            ctx.sleep(9_000)
            (r,) = ctx.heartbeat(b, 1)
            assert r["error_code"] == Errors.REBALANCE_IN_PROGRESS
        assert b in ctx.group.members


class TestSessionExpiry:
    def test_stable_member_that_stops_heartbeating_is_removed_and_triggers_a_rebalance(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2, session=10_000)
        ctx.heartbeat(a, 1)
        ctx.sleep(9_999)
        ctx.heartbeat(a, 1)
        assert b in ctx.group.members
        ctx.sleep(1)
        assert b not in ctx.group.members and ctx.group.state == GroupState.PREPARING_REBALANCE

    def test_last_member_expiring_leaves_the_group_empty_with_a_new_generation(self):
        ctx = GroupContext()
        (a,) = ctx.stable_group(1)
        ctx.sleep(9_999)
        assert ctx.last.members_expired == 0
        ctx.sleep(1)
        group = ctx.group
        assert group.state == GroupState.EMPTY and group.generation == 2 and not group.members
        assert ctx.last.members_expired == 1  # the job's "members expired" metric

    def test_member_parked_in_join_is_not_expired(self):
        ctx = GroupContext(AS_KAFKA_WHEN_LATE)
        a, b = ctx.stable_group(2, session=10_000, rebalance=60_000)
        ctx.join(a, session=10_000, rebalance=60_000)
        ctx.sleep(30_000)  # a parked; b expired at 10s -> join completes with a alone
        assert list(ctx.group.members) == [a] and ctx.group.state == GroupState.COMPLETING_REBALANCE

    def test_member_parked_in_sync_is_not_expired(self):
        ctx = GroupContext(NO_DELAY)
        leader, (follower,) = completing_group(ctx, session=10_000, rebalance=60_000)
        ctx.sync(follower, 1)
        for _ in range(3):
            ctx.sleep(9_000)
            ctx.heartbeat(leader, 1)
        assert follower in ctx.group.members
        responses = ctx.sync(leader, 1)
        assert len(responses) == 2
        assert ctx.group.timers[f"heartbeat:{follower}"] == ctx.now_ms + 10_000

    def test_silent_member_in_completing_rebalance_expires_and_aborts_parked_syncs(self):
        ctx = GroupContext(NO_DELAY)
        leader, (follower,) = completing_group(ctx, session=10_000, rebalance=60_000)
        assert ctx.sync(follower, 1) == []  # follower parked; the leader neither syncs nor heartbeats
        responses = ctx.sleep(10_000)
        assert [(r["api"], r["error_code"]) for r in responses] == [("SyncGroup", Errors.REBALANCE_IN_PROGRESS)]
        assert leader not in ctx.group.members
        assert ctx.group.state == GroupState.PREPARING_REBALANCE

    def test_member_in_stable_without_sync_expires(self):
        ctx = GroupContext(NO_DELAY)
        leader, (follower,) = completing_group(ctx, session=10_000, rebalance=60_000)
        ctx.sync(leader, 1)  # stable; follower never syncs nor heartbeats
        ctx.sleep(10_000)
        assert follower not in ctx.group.members
        assert ctx.last.members_expired == 2  # the leader did not heartbeat either

    def test_late_call_fires_an_earlier_expiry_before_a_later_pending_sync_timeout(self):
        """F2's session (10 s) ends before the pending-sync timeout (20 s): its expiry rebalances the group, which
        cancels the pending-sync timer, so the leader that had not synced yet stays. Fired the other way round,
        the pending-sync timeout would remove the leader too."""
        ctx = GroupContext(NO_DELAY_AS_KAFKA_WHEN_LATE)
        leader, f1, f2 = (ctx.new_member() for _ in range(3))
        ctx.step(ctx.join_request(leader, session=60_000, rebalance=20_000),
                 ctx.join_request(f1, session=60_000, rebalance=20_000),
                 ctx.join_request(f2, session=10_000, rebalance=20_000))
        assert {r["leader"] for r in ctx.sleep(0)} == {leader}
        assert ctx.sync(f1, 1) == []
        responses = ctx.sleep(25_000)
        assert [(r["api"], r["error_code"]) for r in responses] == [("SyncGroup", Errors.REBALANCE_IN_PROGRESS)]
        assert list(ctx.group.members) == [leader, f1] and ctx.group.state == GroupState.PREPARING_REBALANCE

    def test_late_call_fires_expiries_in_deadline_order(self):
        """A call long after several deadlines gives what timely calls would have (except `now`)."""
        late, timely = GroupContext(AS_KAFKA_WHEN_LATE), GroupContext(AS_KAFKA_WHEN_LATE)
        for ctx in (late, timely):
            ctx.stable_group(3, session=10_000)
        timely.sleep(10_000)
        timely.sleep(50_000)
        late.sleep(60_000)
        assert late.group.generation == timely.group.generation
        assert late.group.state == timely.group.state == GroupState.EMPTY

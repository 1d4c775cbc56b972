"""LeaveGroup and static membership (KIP-345, KIP-814), after Kafka's classic coordinator tests."""

from __future__ import annotations

import pytest

from state.config import CoordinatorConfig
from state.errors import Errors
from state.classic.group import GroupState
from tests.state.context import GroupContext, assignment, subscription

NO_DELAY = CoordinatorConfig(group_initial_rebalance_delay_ms=0)


def static_group(ctx: GroupContext, *instances: str, session: int = 60_000) -> dict[str, str]:
    """Static members joined and synced; instance -> member id. The first instance leads."""
    ctx.step(*(ctx.join_request(instance=i, session=session) for i in instances))
    responses = ctx.sleep(0)
    ids = {ctx.group.members[r["member_id"]].group_instance_id: r["member_id"] for r in responses}
    leader = responses[0]["leader"]
    for instance, member_id in ids.items():
        if member_id != leader:
            ctx.sync(member_id, 1, instance=instance)
    leader_instance = ctx.group.members[leader].group_instance_id
    ctx.sync(leader, 1, {m: assignment(("t", (n,))) for n, m in enumerate(ids.values())}, instance=leader_instance)
    assert ctx.group.state == GroupState.STABLE
    return ids


class TestLeaveGroup:
    def test_leave_from_stable_triggers_a_rebalance(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2)
        (response,) = ctx.leave(b)
        assert response["error_code"] == Errors.NONE and response["members"][0]["error_code"] == Errors.NONE
        assert ctx.group.state == GroupState.PREPARING_REBALANCE and b not in ctx.group.members

    def test_batch_leave_removes_all_then_rebalances_once(self):
        ctx = GroupContext()
        a, b, c = ctx.stable_group(3)
        (response,) = ctx.leave(b, c, "nobody")
        assert [m["error_code"] for m in response["members"]] == [Errors.NONE, Errors.NONE, Errors.UNKNOWN_MEMBER_ID]
        assert ctx.group.state == GroupState.PREPARING_REBALANCE and list(ctx.group.members) == [a]

    def test_a_leaving_leader_hands_leadership_to_the_first_remaining_member(self):
        """Kafka's ClassicGroup.remove: the group is never without a leader while it has members."""
        ctx = GroupContext()
        a, b, c = ctx.stable_group(3)
        ctx.leave(a)
        assert ctx.group.leader == b and ctx.group.state == GroupState.PREPARING_REBALANCE

    def test_leave_of_everyone_ends_empty(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2)
        ctx.leave(a, b)
        assert ctx.group.state == GroupState.EMPTY and ctx.group.generation == 2

    def test_leave_of_unknown_group_answers_unknown_member_per_member(self):
        ctx = GroupContext()
        (response,) = ctx.leave("a", "b")
        assert response["error_code"] == Errors.NONE
        assert [m["error_code"] for m in response["members"]] == [Errors.UNKNOWN_MEMBER_ID, Errors.UNKNOWN_MEMBER_ID]

    @pytest.mark.parametrize("version", [0, 1, 2])
    def test_v0_to_v2_report_the_member_error_at_top_level(self, version):
        ctx = GroupContext()
        ctx.stable_group(1)
        (response,) = ctx.step({"api": "LeaveGroup", "api_version": version, "request_id": "x", "group_id": "g",
                                "member_id": "nobody"})
        assert response["error_code"] == Errors.UNKNOWN_MEMBER_ID and response["members"] == []

    def test_leave_of_a_pending_member(self):
        ctx = GroupContext()
        pending = ctx.new_member()
        (response,) = ctx.leave(pending)
        assert response["members"][0]["error_code"] == Errors.NONE and not ctx.group.pending_members

    def test_leave_answers_the_leavers_parked_join(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2)
        ctx.join(a)
        responses = ctx.leave(a)
        assert [(r["api"], r["error_code"]) for r in responses] == [("JoinGroup", Errors.UNKNOWN_MEMBER_ID),
                                                                    ("LeaveGroup", Errors.NONE)]

    def test_leave_in_preparing_rebalance_completes_the_join_when_the_rest_joined(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2)
        ctx.join(a)
        responses = ctx.leave(b)
        assert [r["api"] for r in responses] == ["JoinGroup", "LeaveGroup"]
        assert ctx.group.state == GroupState.COMPLETING_REBALANCE

    def test_admin_removal_of_a_static_member_by_instance_id(self):
        ctx = GroupContext(NO_DELAY)
        ids = static_group(ctx, "i1", "i2")
        (response,) = ctx.leave(("", "i2"), ("", "i9"))
        assert [m["error_code"] for m in response["members"]] == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID]
        assert ids["i2"] not in ctx.group.members and "i2" not in ctx.group.static_members

    def test_static_leave_with_wrong_member_id_is_fenced(self):
        ctx = GroupContext(NO_DELAY)
        static_group(ctx, "i1", "i2")
        (response,) = ctx.leave(("not-i2", "i2"))
        assert response["members"][0]["error_code"] == Errors.FENCED_INSTANCE_ID


class TestStaticMembership:
    def test_static_member_gets_no_member_id_required(self):
        ctx = GroupContext()
        assert ctx.join(instance="i1") == []
        assert ctx.group.state == GroupState.PREPARING_REBALANCE

    def test_static_follower_restart_in_stable_does_not_rebalance(self):
        ctx = GroupContext(NO_DELAY)
        ids = static_group(ctx, "i1", "i2")
        (response,) = ctx.join(instance="i2", session=60_000)
        new_id = response["member_id"]
        assert response["error_code"] == Errors.NONE and new_id != ids["i2"] and new_id.startswith("i2-")
        assert response["generation_id"] == 1 and response["members"] == [] and not response["skip_assignment"]
        group = ctx.group
        assert group.state == GroupState.STABLE and group.static_members["i2"] == new_id
        assert group.members[new_id].assignment == assignment(("t", (1,)))
        (record,) = ctx.record_values
        assert new_id in [m["member_id"] for m in record["members"]]
        (sync,) = ctx.sync(new_id, 1, instance="i2")
        assert sync["assignment"] == assignment(("t", (1,)))
        (old,) = ctx.heartbeat(ids["i2"], 1, instance="i2")
        assert old["error_code"] == Errors.FENCED_INSTANCE_ID

    def test_static_leader_restart_on_v9_skips_assignment(self):
        ctx = GroupContext(NO_DELAY)
        static_group(ctx, "i1", "i2")
        (response,) = ctx.join(instance="i1", session=60_000, version=9)
        assert response["skip_assignment"] and response["leader"] == response["member_id"]
        assert len(response["members"]) == 2

    def test_static_leader_restart_before_v9_is_told_the_old_leader(self):
        ctx = GroupContext(NO_DELAY)
        ids = static_group(ctx, "i1", "i2")
        (response,) = ctx.join(instance="i1", session=60_000, version=8)
        assert not response["skip_assignment"] and response["leader"] == ids["i1"]
        assert response["members"] == []

    def test_static_restart_that_changes_the_selected_protocol_rebalances(self):
        ctx = GroupContext(NO_DELAY)
        static_group(ctx, "i1")
        md = subscription("t")
        (response,) = ctx.join(instance="i1", session=60_000, protocols=[("roundrobin", md), ("range", md)])
        # it rebalanced, and as the only member it completed the join phase at once
        assert response["generation_id"] == 2 and response["protocol_name"] == "roundrobin"
        assert ctx.group.state == GroupState.COMPLETING_REBALANCE

    def test_static_restart_while_parked_fences_the_old_join(self):
        ctx = GroupContext(NO_DELAY)
        ids = static_group(ctx, "i1", "i2")
        ctx.join(ids["i2"], instance="i2", session=60_000, protocols=[("range", subscription("x"))])
        responses = ctx.join(instance="i2", session=60_000, protocols=[("range", subscription("x"))])
        fenced = [r for r in responses if r["error_code"] == Errors.FENCED_INSTANCE_ID]
        assert fenced and fenced[0]["member_id"] == ids["i2"]

    def test_known_member_id_with_another_instance_is_fenced(self):
        ctx = GroupContext(NO_DELAY)
        ids = static_group(ctx, "i1", "i2")
        (response,) = ctx.join(ids["i1"], instance="i2", session=60_000)
        assert response["error_code"] == Errors.FENCED_INSTANCE_ID

    def test_unknown_instance_with_member_id_is_unknown(self):
        ctx = GroupContext(NO_DELAY)
        ids = static_group(ctx, "i1")
        (response,) = ctx.join(ids["i1"], instance="i7", session=60_000)
        assert response["error_code"] == Errors.UNKNOWN_MEMBER_ID

    def test_static_members_are_removed_by_session_expiry(self):
        ctx = GroupContext(NO_DELAY)
        ids = static_group(ctx, "i1", "i2", session=10_000)
        ctx.heartbeat(ids["i1"], 1, instance="i1")
        ctx.sleep(10_000)
        assert "i2" not in ctx.group.static_members

    def test_static_restart_rearms_with_the_old_session_timeout(self):
        ctx = GroupContext(NO_DELAY)
        static_group(ctx, "i1", "i2", session=10_000)
        (response,) = ctx.join(instance="i2", session=60_000)
        assert ctx.group.timers[f"heartbeat:{response['member_id']}"] == ctx.now_ms + 10_000
        assert ctx.group.members[response["member_id"]].session_timeout_ms == 60_000


def test_leave_of_a_pending_member_from_a_stable_group_rebalances_as_java_does():
    ctx = GroupContext()
    ctx.stable_group(1)
    pending = ctx.new_member()
    ctx.leave(pending)
    assert ctx.group.state == GroupState.PREPARING_REBALANCE


def test_duplicate_member_in_one_leave_batch_is_unknown_the_second_time():
    ctx = GroupContext()
    a, b = ctx.stable_group(2)
    (response,) = ctx.leave(b, b)
    assert [m["error_code"] for m in response["members"]] == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID]


class TestStaticEdgeCases:
    def test_static_restart_in_completing_rebalance_fences_the_old_sync_and_rebalances(self):
        ctx = GroupContext(NO_DELAY)
        ctx.step(ctx.join_request(instance="i1", session=60_000), ctx.join_request(instance="i2", session=60_000))
        responses = ctx.sleep(0)
        leader = responses[0]["leader"]
        follower = next(r["member_id"] for r in responses if r["member_id"] != leader)
        follower_instance = ctx.group.members[follower].group_instance_id
        assert ctx.sync(follower, 1, instance=follower_instance) == []
        responses = ctx.join(instance=follower_instance, session=60_000)
        assert [(r["api"], r["error_code"]) for r in responses] == [("SyncGroup", Errors.FENCED_INSTANCE_ID)]
        assert ctx.group.state == GroupState.PREPARING_REBALANCE

    def test_static_restart_before_syncing_keeps_the_pending_sync_under_the_new_id(self):
        ctx = GroupContext(NO_DELAY)
        ctx.step(ctx.join_request(instance="i1", session=60_000), ctx.join_request(instance="i2", session=60_000))
        responses = ctx.sleep(0)
        leader = responses[0]["leader"]
        follower = next(r["member_id"] for r in responses if r["member_id"] != leader)
        ctx.sync(leader, 1, instance=ctx.group.members[leader].group_instance_id)  # Stable; follower pending
        (response,) = ctx.join(instance=ctx.group.members[follower].group_instance_id, session=60_000)
        assert list(ctx.group.pending_sync) == [response["member_id"]]

    def test_static_leader_that_did_not_rejoin_is_replaced_by_a_member_that_did(self):
        ctx = GroupContext(NO_DELAY)
        ctx.join(instance="i1", session=60_000)
        (r,) = ctx.sleep(0)
        static_leader = r["member_id"]
        ctx.sync(static_leader, 1, instance="i1")
        dynamic = ctx.new_member(session=60_000)
        ctx.join(dynamic, session=60_000)
        responses = ctx.sleep(30_000)  # the static leader never re-joins; it stays, but cannot lead
        (response,) = [r for r in responses if r["api"] == "JoinGroup"]
        assert response["leader"] == dynamic and static_leader in ctx.group.members

    def test_pending_member_id_with_an_instance_id_is_refused(self):
        ctx = GroupContext()
        pending = ctx.new_member()
        (response,) = ctx.join(pending, instance="i1")
        assert response["error_code"] == Errors.INVALID_REQUEST

    def test_known_member_with_a_protocol_the_group_cannot_use_is_inconsistent(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2)
        (response,) = ctx.join(b, protocols=[("sticky", subscription("t"))])
        assert response["error_code"] == Errors.INCONSISTENT_GROUP_PROTOCOL and response["member_id"] == b

    def test_leaving_member_with_a_parked_sync_gets_an_answer(self):
        ctx = GroupContext(NO_DELAY)
        a, b = ctx.new_member(), ctx.new_member()
        ctx.join_all(a, b)
        leader = ctx.sleep(0)[0]["leader"]
        follower = b if leader == a else a
        ctx.sync(follower, 1)
        responses = ctx.leave(follower)
        assert [(r["api"], r["error_code"]) for r in responses] == [("SyncGroup", Errors.UNKNOWN_MEMBER_ID),
                                                                    ("LeaveGroup", Errors.NONE)]

"""JoinGroup and the join phase, after Kafka's GroupMetadataManagerTest / GroupCoordinatorTest classic cases."""

from __future__ import annotations

import pytest

from state.config import CoordinatorConfig
from state.errors import Errors
from state.classic.group import GroupState
from tests.state.context import GroupContext, by_request, subscription

NO_DELAY = CoordinatorConfig(group_initial_rebalance_delay_ms=0)


@pytest.mark.parametrize(
    "name, kwargs, config, error",
    [
        ("empty_group_id_is_invalid", {"group_id": ""}, None, Errors.INVALID_GROUP_ID),
        ("session_timeout_below_min", {"session": 5999}, None, Errors.INVALID_SESSION_TIMEOUT),
        ("session_timeout_above_max", {"session": 1_800_001}, None, Errors.INVALID_SESSION_TIMEOUT),
        ("session_timeout_bounds_are_configurable", {"session": 100}, CoordinatorConfig(
            group_min_session_timeout_ms=200), Errors.INVALID_SESSION_TIMEOUT),
        ("empty_protocol_type_is_inconsistent", {"protocol_type": ""}, None, Errors.INCONSISTENT_GROUP_PROTOCOL),
        ("no_protocols_is_inconsistent", {"protocols": []}, None, Errors.INCONSISTENT_GROUP_PROTOCOL),
        ("unknown_member_id_for_missing_group", {"member_id": "ghost"}, None, Errors.UNKNOWN_MEMBER_ID),
        ("v4_new_dynamic_member_needs_member_id", {}, None, Errors.MEMBER_ID_REQUIRED),
    ],
)
def test_join_errors_on_a_new_group(name, kwargs, config, error):
    ctx = GroupContext(config)
    group_id = kwargs.pop("group_id", None)
    member_id = kwargs.pop("member_id", "")
    request = ctx.join_request(member_id, **kwargs)
    if group_id is not None:
        request["group_id"] = ctx.group_id = group_id
    (response,) = ctx.step(request)
    assert response["error_code"] == error
    if error != 79:
        assert ctx.group is None or ctx.group.members == {}


def test_member_id_required_registers_a_pending_member_without_changing_state():
    ctx = GroupContext()
    member_id = ctx.new_member(client_id="cli")
    group = ctx.group
    assert member_id.startswith("cli-")
    assert list(group.pending_members) == [member_id]
    assert group.state == GroupState.EMPTY and group.generation == 0
    # Java writes an empty group metadata record for a group a JoinGroup creates.
    assert ctx.record_values == [ctx.record_values[0]]
    assert ctx.record_values[0]["generation"] == 0 and ctx.record_values[0]["members"] == []


def test_member_ids_are_deterministic_and_prefixed_by_instance_id():
    a, b = GroupContext(), GroupContext()
    assert a.new_member() == b.new_member()
    assert a.join(instance="inst-1") == []  # static members are added at once, no MEMBER_ID_REQUIRED
    (member_id,) = a.group.members
    assert member_id.startswith("inst-1-")


def test_pending_member_expires_after_its_session_timeout_and_is_then_unknown():
    ctx = GroupContext()
    member_id = ctx.new_member(session=10_000)
    ctx.sleep(9_999)
    assert member_id in ctx.group.pending_members
    ctx.sleep(1)
    assert member_id not in ctx.group.pending_members and ctx.last.members_expired == 1
    (response,) = ctx.join(member_id)
    assert response["error_code"] == Errors.UNKNOWN_MEMBER_ID


def test_pending_member_blocks_join_completion_until_it_expires():
    ctx = GroupContext(NO_DELAY)
    a = ctx.new_member()
    ctx.join(a)
    assert ctx.group.state == GroupState.PREPARING_REBALANCE
    responses = ctx.sleep(0)
    assert [r["error_code"] for r in responses] == [Errors.NONE]  # initial delay 0 fires at once
    ctx.sync(a, 1, {a: ""})
    b = ctx.new_member(session=6_000)
    assert ctx.join(a) == []  # leader re-joins: rebalance, but b is pending
    assert ctx.group.state == GroupState.PREPARING_REBALANCE
    assert ctx.sleep(5_999) == []
    responses = ctx.sleep(1)
    assert [(r["request_id"], r["error_code"]) for r in responses][0][1] == 0
    assert ctx.group.state == GroupState.COMPLETING_REBALANCE
    assert b not in ctx.group.pending_members


def test_old_versions_join_without_the_member_id_handshake():
    ctx = GroupContext(NO_DELAY)
    assert ctx.join(version=3) == []
    assert ctx.group.state == GroupState.PREPARING_REBALANCE
    (response,) = ctx.sleep(0)
    assert response["error_code"] == Errors.NONE and response["generation_id"] == 1
    assert response["leader"] == response["member_id"] and len(response["members"]) == 1


def test_v0_uses_the_session_timeout_as_rebalance_timeout():
    ctx = GroupContext(NO_DELAY)
    ctx.join(version=0, session=7_000, rebalance=99_999)
    assert next(iter(ctx.group.members.values())).rebalance_timeout_ms == 7_000


class TestInitialRebalanceDelay:
    """KIP-134: the first rebalance of an Empty group is held, extended while members arrive, capped."""

    def test_join_is_held_for_the_initial_delay(self):
        ctx = GroupContext()
        a = ctx.new_member()
        assert ctx.join(a) == []
        assert ctx.sleep(2_999) == []
        (response,) = ctx.sleep(1)
        assert response["generation_id"] == 1

    def test_new_member_during_the_delay_extends_it(self):
        ctx = GroupContext()
        a, b = ctx.new_member(), ctx.new_member()
        ctx.join(a)
        ctx.sleep(1_000)
        ctx.join(b)
        assert ctx.sleep(2_000) == []  # at 3000 the delay is extended to 6000
        assert ctx.sleep(2_999) == []
        assert len(ctx.sleep(1)) == 2

    def test_extensions_are_capped_by_the_rebalance_timeout(self):
        ctx = GroupContext()
        members = [ctx.new_member(rebalance=7_000) for _ in range(4)]
        ctx.join(members[0], rebalance=7_000)
        # delay 3000 (remaining 4000) -> +3000 (remaining 1000) -> +1000 (remaining 0) -> complete at 7000
        for member_id, next_deadline in zip(members[1:], [6_000, 7_000]):
            ctx.join(member_id, rebalance=7_000)  # a new member in every delay window
            assert ctx.sleep(ctx.group.timers["join"] - ctx.now_ms) == []
            assert ctx.group.timers["join"] == next_deadline
        ctx.join(members[3], rebalance=7_000)
        assert len(ctx.sleep(7_000 - ctx.now_ms)) == 4

    def test_no_extension_without_new_members(self):
        ctx = GroupContext()
        a = ctx.new_member()
        ctx.join(a)
        assert len(ctx.sleep(3_000)) == 1

    def test_initial_delay_is_not_cut_short_when_everyone_joined(self):
        ctx = GroupContext()
        a = ctx.new_member()
        assert ctx.join(a) == []
        assert ctx.group.has_all_members_joined()
        assert ctx.group.state == GroupState.PREPARING_REBALANCE


class TestJoinCompletion:
    def test_leader_gets_members_and_followers_do_not(self):
        ctx = GroupContext(NO_DELAY)
        a, b = ctx.new_member(), ctx.new_member()
        ctx.join_all(a, b)
        responses = ctx.sleep(0)
        leader = [r for r in responses if r["members"]]
        assert len(leader) == 1 and leader[0]["member_id"] == leader[0]["leader"]
        assert {m["member_id"] for m in leader[0]["members"]} == {a, b}
        assert all(r["generation_id"] == 1 and r["protocol_name"] == "range" for r in responses)

    def test_rebalance_completes_when_all_members_rejoined(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2)
        assert ctx.join(a) == []
        assert ctx.group.state == GroupState.PREPARING_REBALANCE
        responses = ctx.join(b)
        assert len(responses) == 2 and {r["generation_id"] for r in responses} == {2}

    def test_rebalance_timeout_removes_dynamic_members_that_did_not_rejoin(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2, rebalance=20_000, session=30_000)
        ctx.join(a, rebalance=20_000, session=30_000)
        ctx.heartbeat(b, 1)  # keeps b's session alive, but it does not re-join
        assert ctx.sleep(19_999) == []
        responses = ctx.sleep(1)
        (response,) = [r for r in responses if r["api"] == "JoinGroup"]
        assert response["member_id"] == a and response["members"][0]["member_id"] == a
        assert list(ctx.group.members) == [a]

    def test_leader_that_did_not_rejoin_is_replaced_by_a_member_that_did(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2, rebalance=20_000)
        ctx.join(b, protocols=[("range", subscription("t", "u"))], rebalance=20_000)  # follower changes metadata
        responses = ctx.sleep(20_000)
        (response,) = [r for r in responses if r["api"] == "JoinGroup"]
        assert response["leader"] == b and ctx.group.leader == b

    def test_generation_bumps_to_empty_when_the_last_member_leaves(self):
        ctx = GroupContext()
        (a,) = ctx.stable_group(1)
        ctx.leave(a)
        group = ctx.group
        assert group.state == GroupState.EMPTY and group.generation == 2 and group.protocol_name is None
        assert ctx.record_values[-1]["generation"] == 2 and ctx.record_values[-1]["members"] == []

    def test_new_member_cut_after_the_new_member_join_timeout(self):
        """A new member parked in JoinGroup cannot heartbeat: Kafka's 5-minute new-member join timeout bounds its
        wait, not its (here shorter) session."""
        ctx = GroupContext()
        a, b = ctx.stable_group(2, session=100_000, rebalance=600_000)
        c = ctx.new_member(session=100_000, rebalance=600_000)
        ctx.join(c, session=100_000, rebalance=600_000)  # a and b never re-join, but keep heartbeating
        answered = []
        for _ in range(4):
            answered += ctx.sleep(60_000)
            ctx.heartbeat(a, 1)
            ctx.heartbeat(b, 1)
        assert answered == [] and c in ctx.group.members  # 240 s: well past c's session
        answered += ctx.sleep(60_000)
        assert [(r["api"], r["error_code"]) for r in answered] == [("JoinGroup", Errors.UNKNOWN_MEMBER_ID)]
        assert c not in ctx.group.members and ctx.group.state == GroupState.PREPARING_REBALANCE

    def test_static_members_that_did_not_rejoin_stay_in_the_new_generation(self):
        ctx = GroupContext(NO_DELAY)
        ctx.step(ctx.join_request(instance="i1", session=60_000), ctx.join_request(instance="i2", session=60_000))
        responses = ctx.sleep(0)
        gen1 = responses[0]["generation_id"]
        leader = responses[0]["leader"]
        other = [r["member_id"] for r in responses if r["member_id"] != leader][0]
        ctx.sync(other, gen1, instance="i2")
        ctx.sync(leader, gen1, instance="i1")
        ctx.join(leader, instance="i1", session=60_000)
        responses = ctx.sleep(30_000)
        (response,) = responses
        assert response["generation_id"] == gen1 + 1
        assert {m["member_id"] for m in response["members"]} == {leader, other}
        (hb,) = ctx.heartbeat(other, gen1, instance="i2")
        assert hb["error_code"] == Errors.ILLEGAL_GENERATION

    def test_only_static_members_not_rejoined_postpone_completion(self):
        ctx = GroupContext(NO_DELAY)
        ctx.step(*(ctx.join_request(instance=i, session=60_000, rebalance=20_000) for i in ("i1", "i2")))
        responses = ctx.sleep(0)
        for r in responses:
            ctx.sync(r["member_id"], 1, instance=ctx.group.members[r["member_id"]].group_instance_id)
        leaving = responses[0]["member_id"]
        ctx.leave((leaving, ctx.group.members[leaving].group_instance_id))
        assert ctx.group.state == GroupState.PREPARING_REBALANCE
        ctx.sleep(20_000)  # nobody re-joined: wait another rebalance timeout, same generation
        group = ctx.group
        assert group.state == GroupState.PREPARING_REBALANCE and group.generation == 1
        assert group.timers["join"] == ctx.now_ms + 20_000


class TestProtocols:
    def test_protocol_is_selected_by_vote(self):
        ctx = GroupContext(NO_DELAY)
        md = subscription("t")
        a, b, c = ctx.new_member(), ctx.new_member(), ctx.new_member()
        ctx.step(ctx.join_request(a, protocols=[("range", md), ("roundrobin", md)]),
                 ctx.join_request(b, protocols=[("roundrobin", md), ("range", md)]),
                 ctx.join_request(c, protocols=[("roundrobin", md), ("range", md), ("sticky", md)]))
        responses = ctx.sleep(0)
        assert {r["protocol_name"] for r in responses} == {"roundrobin"}

    def test_a_tied_vote_goes_to_the_first_protocol_name(self):
        """Kafka leaves ties open; we break them by name so that every replay picks the same protocol."""
        ctx = GroupContext(NO_DELAY)
        md = subscription("t")
        a, b = ctx.new_member(), ctx.new_member()
        ctx.step(ctx.join_request(a, protocols=[("roundrobin", md), ("range", md)]),
                 ctx.join_request(b, protocols=[("range", md), ("roundrobin", md)]))
        assert {r["protocol_name"] for r in ctx.sleep(0)} == {"range"}

    def test_joining_with_no_common_protocol_is_inconsistent(self):
        ctx = GroupContext()
        a, _ = ctx.stable_group(2)
        (response,) = ctx.join(protocols=[("sticky", subscription("t"))])
        assert response["error_code"] == Errors.INCONSISTENT_GROUP_PROTOCOL

    def test_joining_with_another_protocol_type_is_inconsistent(self):
        ctx = GroupContext()
        ctx.stable_group(1)
        (response,) = ctx.join(protocol_type="connect")
        assert response["error_code"] == Errors.INCONSISTENT_GROUP_PROTOCOL


class TestExistingMembers:
    def test_follower_rejoining_stable_with_same_metadata_gets_current_generation(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2)
        (response,) = ctx.join(b)
        assert response["error_code"] == Errors.NONE and response["generation_id"] == 1 and response["members"] == []
        assert ctx.group.state == GroupState.STABLE

    def test_leader_rejoining_stable_always_rebalances(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2)
        assert ctx.join(a) == []
        assert ctx.group.state == GroupState.PREPARING_REBALANCE

    def test_follower_with_changed_metadata_rebalances(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2)
        assert ctx.join(b, protocols=[("range", subscription("t", "u"))]) == []
        assert ctx.group.state == GroupState.PREPARING_REBALANCE

    def test_rejoin_in_completing_rebalance_with_same_metadata_returns_current_generation(self):
        ctx = GroupContext(NO_DELAY)
        a, b = ctx.new_member(), ctx.new_member()
        ctx.join_all(a, b)
        responses = by_request(ctx.sleep(0))
        leader = next(r for r in responses.values() if r["members"])["member_id"]
        (response,) = ctx.join(leader)
        assert response["generation_id"] == 1 and len(response["members"]) == 2
        assert ctx.group.state == GroupState.COMPLETING_REBALANCE

    def test_rejoin_in_completing_rebalance_with_new_metadata_aborts_parked_syncs(self):
        ctx = GroupContext(NO_DELAY)
        a, b = ctx.new_member(), ctx.new_member()
        ctx.join_all(a, b)
        responses = ctx.sleep(0)
        leader = next(r for r in responses if r["members"])["member_id"]
        follower = b if leader == a else a
        assert ctx.sync(follower, 1) == []
        (aborted,) = ctx.join(leader, protocols=[("range", subscription("x"))])
        assert aborted["api"] == "SyncGroup" and aborted["error_code"] == Errors.REBALANCE_IN_PROGRESS
        assert ctx.group.state == GroupState.PREPARING_REBALANCE

    def test_unknown_member_id_on_existing_group(self):
        ctx = GroupContext()
        ctx.stable_group(1)
        (response,) = ctx.join("nobody")
        assert response["error_code"] == Errors.UNKNOWN_MEMBER_ID


class TestMaxSize:
    def test_group_max_size_rejects_new_members_when_full(self):
        ctx = GroupContext(CoordinatorConfig(group_max_size=2))
        ctx.stable_group(2)
        (response,) = ctx.join(version=3)
        assert response["error_code"] == Errors.GROUP_MAX_SIZE_REACHED and response["member_id"] == ""

    def test_pending_members_do_not_count_toward_the_max_in_preparing_rebalance(self):
        ctx = GroupContext(CoordinatorConfig(group_max_size=1, group_initial_rebalance_delay_ms=1000))
        a = ctx.new_member()
        ctx.join(a)
        (response,) = ctx.join()  # max size checked first: 1 member awaiting join already
        assert response["error_code"] == Errors.GROUP_MAX_SIZE_REACHED

    def test_rejected_existing_member_is_removed(self):
        ctx = GroupContext(CoordinatorConfig(group_max_size=1, group_initial_rebalance_delay_ms=1000))
        a = ctx.new_member()
        b = ctx.new_member()
        ctx.join(a)
        (response,) = ctx.join(b)
        assert response["error_code"] == Errors.GROUP_MAX_SIZE_REACHED
        assert b not in ctx.group.pending_members and b not in ctx.group.members


def test_a_late_timer_call_rearms_the_initial_delay_from_the_call_time(ctx):
    """Timers fire in deadline order with the call's time as now: an extension counts from when it ran."""
    a, b = ctx.new_member(), ctx.new_member()
    ctx.join(a)
    ctx.join(b)
    assert ctx.sleep(5_000) == []  # the 3000 deadline fires at 5000 and extends the delay to 8000
    assert ctx.group.timers["join"] == 8_000
    assert len(ctx.sleep(3_000)) == 2

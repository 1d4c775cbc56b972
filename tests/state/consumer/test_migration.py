"""Online migration between the protocols under `group.consumer.migration.policy` (Kafka's GroupMetadataManager:
convertToConsumerGroup, classicGroup{Join,Sync,Heartbeat,Leave}ToConsumerGroup, convertToClassicGroup), through the
core's public contract (`GroupContext`: every step deterministic, replayed, rebuilt from the records written).

Ported from GroupMetadataManagerTest (the case each test ports is named in it): inputs and expected outputs, with
the real server assignor (`uniform`) where Kafka's tests use a mock one, so the partitions asserted are the ones
our Java-exact assignor gives.
"""

from __future__ import annotations

import base64
import json

from assignors.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from state.config import CoordinatorConfig
from state.consumer.group import ConsumerGroup, MemberState
from state.errors import Errors
from state.classic.group import ClassicGroup, GroupState
from state.handling.timers import (
    HEARTBEAT_PREFIX,
    JOIN,
    consumer_join_timeout_key,
    consumer_session_timeout_key,
    consumer_sync_timeout_key,
)
from state.classic.member_id_round import PENDING_MEMBER, pending_member_id
from tests.state.consumer.support import topic_id
from tests.state.context import GroupContext, assignment, subscription

T = topic_id("t")
CLASSIC_SESSION = 10_000
CONSUMER_SESSION = 45_000


def context(config: CoordinatorConfig | None = None) -> GroupContext:
    ctx = GroupContext(config=config, now_ms=1_000)
    ctx.publish_topics(1, (T, "t", 6))
    return ctx


def keys(ctx: GroupContext) -> list[int]:
    """The record types the last step wrote (2: classic group metadata, 1: offset, 3-8: consumer group)."""
    return [json.loads(k)["version"] for k, _ in ctx.last.records]  # type: ignore[union-attr]


def partitions(assignment: str) -> set[int]:
    decoded = decode_assignment(base64.b64decode(assignment))
    return {p for topic, parts in decoded.assigned_partitions for p in parts if topic == "t"}


def upgraded(ctx: GroupContext) -> str:
    """A Stable classic group of one member (holding t-0, generation 1) that consumer-protocol member B joins."""
    (classic,) = ctx.stable_group(1)
    response = ctx.consumer_join("B")
    assert response["error_code"] == Errors.NONE and isinstance(ctx.group, ConsumerGroup)
    return classic


def rejoined(ctx: GroupContext, member_id: str) -> tuple[dict, dict]:
    """An eager classic member told to rebalance joins again (owning nothing) and syncs."""
    (join,) = ctx.join(member_id)
    (sync,) = ctx.sync(member_id, join["generation_id"])
    return join, sync


# -- upgrade -------------------------------------------------------------------------------------------------------

def test_a_consumer_member_joining_a_stable_classic_group_converts_it_with_its_members():
    """testConsumerGroupHeartbeatWithStableClassicGroup."""
    ctx = context()
    classic = upgraded(ctx)
    # classic tombstone; the converted group (5, 3, 7, 6, 8); then B's heartbeat (5, 3, 7 x2, 6, 8); ListGroups' entry
    assert keys(ctx) == [2, 5, 3, 7, 6, 8, 5, 3, 7, 7, 6, 8, 3]
    values = ctx.record_values
    assert values[0] is None
    assert values[1]["classic_member_metadata"] == {
        "session_timeout_ms": CLASSIC_SESSION,
        "supported_protocols": [{"name": "range", "metadata": subscription("t")}]}
    assert values[2]["epoch"] == 1 and values[4]["assignment_epoch"] == 1  # group and assignment epoch = generation
    assert values[5]["member_epoch"] == 1 and values[5]["previous_member_epoch"] == 1 and values[5]["state"] == 0
    assert values[5]["assigned_partitions"][0]["partitions"] == [0]  # its last classic assignment
    assert values[7]["epoch"] == 2  # B joining bumps the group epoch
    group = ctx.group
    assert group.members[classic].uses_classic_protocol and not group.members["B"].uses_classic_protocol
    assert group.members[classic].member_epoch == 1 and group.members["B"].member_epoch == 2
    # each member's session: the classic one its own session timeout, B the consumer protocol's
    assert group.timers[consumer_session_timeout_key(classic)] == ctx.now_ms + CLASSIC_SESSION
    assert group.timers[consumer_session_timeout_key("B")] == ctx.now_ms + CONSUMER_SESSION
    assert not any(key.startswith(HEARTBEAT_PREFIX) for key in group.timers)
    # ConsumerGroupDescribe v1 tells the classic member from the consumer one (Kafka's MemberType)
    (described,) = ctx.step({"api": "ConsumerGroupDescribe", "api_version": 1, "request_id": ctx.request_id(),
                             "group_id": "g"})
    assert {m["member_id"]: m["member_type"] for m in described["members"]} == {classic: 0, "B": 1}


def test_a_classic_group_rebalancing_is_converted_and_its_parked_join_told_to_rejoin():
    """testConsumerGroupHeartbeatWithPreparingRebalanceClassicGroup: what the classic group holds is answered
    REBALANCE_IN_PROGRESS, so its members rejoin the consumer group."""
    ctx = context()
    first, second = ctx.stable_group(2)
    (parked,) = [ctx.join_request(first)]
    assert ctx.step(parked) == []  # the leader rejoins: the group prepares a rebalance, its join is parked
    assert ctx.group.state is GroupState.PREPARING_REBALANCE
    responses = ctx.step({"api": "ConsumerGroupHeartbeat", "request_id": "hb", "group_id": "g", "member_id": "B",
                          "member_epoch": 0, "rebalance_timeout_ms": 300_000, "subscribed_topic_names": ["t"],
                          "topic_partitions": []})
    by_api = {r["api"]: r for r in responses}
    assert by_api["JoinGroup"]["request_id"] == parked["request_id"]
    assert by_api["JoinGroup"]["error_code"] == Errors.REBALANCE_IN_PROGRESS
    assert by_api["ConsumerGroupHeartbeat"]["error_code"] == Errors.NONE
    assert isinstance(ctx.group, ConsumerGroup) and set(ctx.group.members) == {first, second, "B"}
    assert JOIN not in ctx.group.timers


def test_no_upgrade_when_the_policy_forbids_it_or_the_group_is_too_big():
    """validateOnlineUpgrade: the policy, then group.consumer.max.size; the heartbeat gets GROUP_ID_NOT_FOUND."""
    for config in (CoordinatorConfig(group_consumer_migration_policy="downgrade"),
                   CoordinatorConfig(group_consumer_migration_policy="disabled"),
                   CoordinatorConfig(group_consumer_max_size=1)):
        ctx = context(config)
        ctx.stable_group(2)
        assert ctx.consumer_join("B")["error_code"] == Errors.GROUP_ID_NOT_FOUND
        assert isinstance(ctx.group, ClassicGroup) and len(ctx.group.members) == 2


def test_no_upgrade_when_a_member_s_embedded_protocol_is_malformed():
    """convertToConsumerGroup: a subscription that cannot be decoded: GROUP_ID_NOT_FOUND, nothing converted."""
    ctx = context()
    ctx.stable_group(1, protocols=[("range", base64.b64encode(b"\x00").decode())])
    response = ctx.consumer_join("B")
    assert response["error_code"] == Errors.GROUP_ID_NOT_FOUND and "malformed" in response["error_message"]
    assert isinstance(ctx.group, ClassicGroup) and ctx.last.records == []


def test_no_upgrade_when_an_assignment_carries_user_data():
    """An assignment with user data (a client-side assignor's own state) cannot be carried: GROUP_ID_NOT_FOUND."""
    ctx = context()
    member = ctx.new_member()
    ctx.join(member)
    (joined,) = ctx.sleep(ctx.config.group_initial_rebalance_delay_ms)
    with_data = base64.b64encode(encode_assignment(Assignment((("t", (0,)),), user_data=b"gen"))).decode()
    ctx.sync(member, joined["generation_id"], {member: with_data})
    assert ctx.consumer_join("B")["error_code"] == Errors.GROUP_ID_NOT_FOUND
    assert isinstance(ctx.group, ClassicGroup)


def test_a_failing_heartbeat_converts_nothing():
    """The conversion's records go with the heartbeat's (Kafka's rollback): an unsupported assignor converts
    nothing."""
    ctx = context()
    ctx.stable_group(1)
    assert ctx.consumer_join("B", server_assignor="nope")["error_code"] == Errors.UNSUPPORTED_ASSIGNOR
    assert isinstance(ctx.group, ClassicGroup) and ctx.last.records == []


# -- classic members inside a consumer group -----------------------------------------------------------------------

def test_a_classic_member_is_told_to_rebalance_then_rejoins_and_syncs_its_new_assignment():
    """testClassicGroupHeartbeatToConsumerGroupRebalanceInProgress, testReconciliationInJoiningConsumerGroupWith
    EagerProtocol, testClassicGroupSyncToConsumerGroupWithAllConsumerProtocolVersions."""
    ctx = context()
    classic = upgraded(ctx)
    (heartbeat,) = ctx.heartbeat(classic, 1)
    assert heartbeat["error_code"] == Errors.REBALANCE_IN_PROGRESS  # its epoch is behind the group's
    assert ctx.group.timers[consumer_join_timeout_key(classic)] == ctx.now_ms + 30_000  # its rebalance timeout
    join, sync = rejoined(ctx, classic)
    assert (join["error_code"], join["generation_id"], join["protocol_type"], join["protocol_name"]) == (
        Errors.NONE, 2, "consumer", "range")
    assert join["members"] == [] and join["leader"] == ""
    assert sync["error_code"] == Errors.NONE and (sync["protocol_type"], sync["protocol_name"]) == ("consumer", "range")
    assert partitions(sync["assignment"]) == {0, 4, 5}  # its target: it kept t-0
    group = ctx.group
    assert consumer_join_timeout_key(classic) not in group.timers
    assert consumer_sync_timeout_key(classic) not in group.timers
    assert group.members[classic].state is MemberState.STABLE and group.state.value == "Stable"
    (heartbeat,) = ctx.heartbeat(classic, 2)
    assert heartbeat["error_code"] == Errors.NONE


def owning(*owned: int, protocol: str = "cooperative-sticky") -> list[tuple[str, str]]:
    """A cooperative member's protocols: its subscription lists the partitions it owns."""
    metadata = encode_subscription(Subscription(("t",), owned_partitions=(("t", owned),) if owned else ()))
    return [(protocol, base64.b64encode(metadata).decode())]


def test_a_cooperative_classic_member_keeps_what_it_owns_until_it_revokes():
    """testReconciliationInJoiningConsumerGroupWithCooperativeProtocol: a classic member owning all six partitions
    rejoins listing them; it must revoke three (UNREVOKED_PARTITIONS, its epoch unchanged, its SyncGroup still
    answered, its heartbeat told to rejoin); once it rejoins without them, it is at the new epoch and the consumer
    member gets them."""
    ctx = context()
    every = tuple(range(6))
    member = ctx.new_member(protocols=owning())
    ctx.join(member, protocols=owning())
    (joined,) = ctx.sleep(ctx.config.group_initial_rebalance_delay_ms)
    ctx.sync(member, joined["generation_id"], {member: assignment(("t", every))}, protocol_name="cooperative-sticky")
    b = ctx.consumer_join("B")
    assert b["member_epoch"] == 2 and b["assignment"]["topic_partitions"] == []  # waits for them
    (join,) = ctx.join(member, protocols=owning(*every))
    assert join["error_code"] == Errors.NONE and join["generation_id"] == 1
    assert ctx.group.members[member].state is MemberState.UNREVOKED_PARTITIONS
    (sync,) = ctx.sync(member, 1, protocol_name="cooperative-sticky")
    kept = partitions(sync["assignment"])
    assert len(kept) == 3
    assert ctx.heartbeat(member, 1)[0]["error_code"] == Errors.REBALANCE_IN_PROGRESS
    (join,) = ctx.join(member, protocols=owning(*sorted(kept)))
    assert join["generation_id"] == 2 and ctx.group.members[member].state is MemberState.STABLE
    b = ctx.consumer_heartbeat("B", 2)
    assert set(b["assignment"]["topic_partitions"][0]["partitions"]) == set(every) - kept


def test_a_classic_member_must_offer_a_protocol_every_classic_member_has():
    """testJoiningConsumerGroupThrowsExceptionIfProtocolIsNotSupported, with classic members in the group."""
    ctx = context()
    upgraded(ctx)
    assert ctx.join("new", protocols=owning())[0]["error_code"] == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.join("new", protocols=owning() + owning(protocol="range"))[0]["error_code"] == Errors.NONE


def test_a_new_classic_member_gets_a_member_id_then_joins():
    """testJoiningConsumerGroupWithNewDynamicMember: MEMBER_ID_REQUIRED (v4+), then a join with the id."""
    ctx = context()
    ctx.consumer_join("B")
    (first,) = ctx.join()
    assert first["error_code"] == Errors.MEMBER_ID_REQUIRED and first["member_id"]
    assert ctx.last.records == []
    (join,) = ctx.join(first["member_id"])
    assert join["error_code"] == Errors.NONE and join["generation_id"] == 2
    assert ctx.group.members[first["member_id"]].uses_classic_protocol
    assert ctx.group.timers[consumer_sync_timeout_key(first["member_id"])] == ctx.now_ms + 30_000
    assert ctx.group.timers[consumer_session_timeout_key(first["member_id"])] == ctx.now_ms + CLASSIC_SESSION


def test_a_member_id_round_a_gateway_answered_keeps_nothing_in_a_consumer_group():
    """The round's `PendingMember` (state.classic.member_id_round) names the gateway's id; a consumer group keeps no pending
    member (Kafka: MEMBER_ID_REQUIRED and nothing else), and the member joins with that id."""
    ctx = context()
    ctx.consumer_join("B")
    request = {**ctx.join_request(client_id="cli"), "api": PENDING_MEMBER}
    (response,) = ctx.step(request, valid=False)
    member_id = pending_member_id("g", "cli", request["request_id"])
    assert (response["error_code"], response["member_id"]) == (Errors.MEMBER_ID_REQUIRED, member_id)
    assert ctx.last.records == [] and set(ctx.group.members) == {"B"}
    (join,) = ctx.join(member_id, client_id="cli")
    assert join["error_code"] == Errors.NONE and member_id in ctx.group.members


def test_a_classic_join_is_refused_when_the_group_is_full_or_the_protocol_is_not_supported():
    """testJoiningConsumerGroupThrowsExceptionIfGroupOverMaxSize, ...IfProtocolIsNotSupported."""
    ctx = context(CoordinatorConfig(group_consumer_max_size=1))
    ctx.consumer_join("B")
    assert ctx.join("new")[0]["error_code"] == Errors.GROUP_MAX_SIZE_REACHED
    ctx = context()
    ctx.consumer_join("B")
    assert ctx.join("new", protocol_type="connect")[0]["error_code"] == Errors.INCONSISTENT_GROUP_PROTOCOL


def test_classic_sync_and_heartbeat_errors():
    """testClassicGroupSyncToConsumerGroupWith{UnknownMemberId,InconsistentGroupProtocol,IllegalGeneration},
    ...RebalanceInProgress; testClassicGroupHeartbeatToConsumerWith{UnknownMember,IllegalGenerationId,
    MemberNotUsingClassicProtocol}."""
    ctx = context()
    classic = upgraded(ctx)
    assert ctx.sync("unknown", 1)[0]["error_code"] == Errors.UNKNOWN_MEMBER_ID
    assert ctx.sync("B", 2)[0]["error_code"] == Errors.UNKNOWN_MEMBER_ID  # B uses the consumer protocol
    assert ctx.sync(classic, 7)[0]["error_code"] == Errors.ILLEGAL_GENERATION
    assert ctx.sync(classic, 1, protocol_name="roundrobin")[0]["error_code"] == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.sync(classic, 1)[0]["error_code"] == Errors.REBALANCE_IN_PROGRESS  # epoch 1 < group epoch 2
    assert ctx.heartbeat("unknown", 1)[0]["error_code"] == Errors.UNKNOWN_MEMBER_ID
    assert ctx.heartbeat("B", 2)[0]["error_code"] == Errors.UNKNOWN_MEMBER_ID
    assert ctx.heartbeat(classic, 5)[0]["error_code"] == Errors.ILLEGAL_GENERATION
    assert ctx.heartbeat(classic, 1, instance="other")[0]["error_code"] == Errors.UNKNOWN_MEMBER_ID


def test_a_classic_member_commits_with_its_generation_at_any_version():
    """ConsumerGroupTest.testValidateOffsetCommit for a member of the classic protocol: any OffsetCommit version,
    ILLEGAL_GENERATION (not STALE_MEMBER_EPOCH) when its generation is not its member epoch."""
    ctx = context()
    classic = upgraded(ctx)
    (ok,) = ctx.commit({("t", 0): 5}, member_id=classic, generation=1, version=8)
    assert ok["topics"][0]["partitions"][0]["error_code"] == Errors.NONE and ctx.committed() == {("t", 0): 5}
    (stale,) = ctx.commit({("t", 0): 6}, member_id=classic, generation=2, version=8)
    assert stale["topics"][0]["partitions"][0]["error_code"] == Errors.ILLEGAL_GENERATION
    (consumer,) = ctx.commit({("t", 1): 6}, member_id="B", generation=2, version=8)
    assert consumer["topics"][0]["partitions"][0]["error_code"] == Errors.UNSUPPORTED_VERSION


def test_a_classic_member_that_does_not_rejoin_in_time_is_fenced():
    """testConsumerGroupMemberUsingClassicProtocolFencedWhenJoinTimeout."""
    ctx = context()
    classic = upgraded(ctx)
    ctx.heartbeat(classic, 1)  # REBALANCE_IN_PROGRESS: the join deadline starts
    ctx.consumer_heartbeat("B", 2)
    ctx.now_ms += 30_000
    ctx.consumer_heartbeat("B", 2)
    assert set(ctx.group.members) == {"B"} and ctx.group.group_epoch == 3


def test_a_classic_member_whose_session_runs_out_is_fenced():
    """testConsumerGroupMemberUsingClassicProtocolFencedWhenSessionTimeout."""
    ctx = context()
    classic = upgraded(ctx)
    ctx.now_ms += CLASSIC_SESSION
    ctx.consumer_heartbeat("B", 2)
    assert set(ctx.group.members) == {"B"} and ctx.group.group_epoch == 3


def test_classic_members_leave_together_and_an_unknown_one_is_answered_on_its_own():
    """testConsumerGroupMemberUsingClassicProtocolBatchLeaveGroup, testClassicGroupLeaveToConsumerGroupWithout
    ValidLeaveGroupMember."""
    ctx = context()
    first, second = ctx.stable_group(2)
    ctx.consumer_join("B")
    epoch = ctx.group.group_epoch
    (response,) = ctx.leave(first, second, "unknown", "B")
    assert [(m["member_id"], m["error_code"]) for m in response["members"]] == [
        (first, 0), (second, 0), ("unknown", Errors.UNKNOWN_MEMBER_ID), ("B", Errors.UNKNOWN_MEMBER_ID)]
    assert set(ctx.group.members) == {"B"} and ctx.group.group_epoch == epoch + 1  # one bump for both
    (response,) = ctx.leave("unknown")
    assert response["members"][0]["error_code"] == Errors.UNKNOWN_MEMBER_ID and ctx.last.records == []


# -- downgrade -----------------------------------------------------------------------------------------------------

def test_the_last_consumer_member_leaving_converts_the_group_back_to_classic():
    """testLastConsumerProtocolMemberLeavingConsumerGroup: the consumer group's tombstones in Kafka's order, then
    the classic group of what stays (Stable, generation = group epoch, its target as assignment), which prepares a
    rebalance at once."""
    ctx = context()
    classic = upgraded(ctx)
    rejoined(ctx, classic)
    epoch = ctx.group.group_epoch
    response = ctx.consumer_heartbeat("B", -1)
    assert response["error_code"] == Errors.NONE and response["member_epoch"] == -1
    # current assignments, targets, assignment epoch, subscriptions, subscription metadata, group epoch; classic
    assert keys(ctx)[:10] == [8, 8, 7, 7, 6, 5, 5, 4, 3, 2]
    value = ctx.record_values[9]
    assert (value["protocol_type"], value["generation"], value["protocol"], value["leader"]) == (
        "consumer", epoch, "range", classic)
    (member,) = value["members"]
    assert (member["member_id"], member["session_timeout"], member["rebalance_timeout"]) == (
        classic, CLASSIC_SESSION, 30_000)
    assert partitions(member["assignment"]) == {0, 4, 5}
    group = ctx.group
    assert isinstance(group, ClassicGroup) and group.state is GroupState.PREPARING_REBALANCE
    assert group.generation == epoch and set(group.members) == {classic}
    assert JOIN in group.timers and HEARTBEAT_PREFIX + classic in group.timers
    assert not any(key.startswith("consumer-") for key in group.timers)
    # the classic member rebalances as in any classic group
    assert ctx.heartbeat(classic, epoch)[0]["error_code"] == Errors.REBALANCE_IN_PROGRESS
    (join,) = ctx.join(classic)
    assert join["error_code"] == Errors.NONE and join["generation_id"] == epoch + 1 and join["leader"] == classic


def test_the_last_consumer_member_timing_out_converts_the_group_back_to_classic():
    """testLastConsumerProtocolMemberSessionTimeoutInConsumerGroup."""
    ctx = context()
    classic = upgraded(ctx)
    rejoined(ctx, classic)
    for _ in range(CONSUMER_SESSION // (CLASSIC_SESSION // 2) + 1):  # B's session runs out, the classic one's not
        ctx.now_ms += CLASSIC_SESSION // 2
        ctx.heartbeat(classic, 2)
    assert isinstance(ctx.group, ClassicGroup) and set(ctx.group.members) == {classic}


def test_no_downgrade_when_the_policy_forbids_it_or_the_classic_group_would_be_too_big():
    """testNoConversionWhenSizeExceedsClassicMaxGroupSize, and the policy (upgrade only)."""
    for config in (CoordinatorConfig(group_consumer_migration_policy="upgrade"), CoordinatorConfig(group_max_size=1)):
        ctx = context(config)
        ctx.consumer_join("B")
        ctx.join("c1")
        ctx.join("c2")
        ctx.consumer_heartbeat("B", -1)
        assert isinstance(ctx.group, ConsumerGroup) and set(ctx.group.members) == {"c1", "c2"}


def test_the_last_member_leaving_leaves_a_consumer_group():
    """validateOnlineDowngradeWithFencedMember: a group left without members stays a consumer group (Empty)."""
    ctx = context()
    ctx.consumer_join("B")
    ctx.consumer_heartbeat("B", -1)
    assert isinstance(ctx.group, ConsumerGroup) and not ctx.group.members


def test_a_classic_heartbeat_answered_from_the_view_before_the_upgrade_is_decided_inside_the_consumer_group():
    """A gateway answered the classic member from its classic group's view; by the time its Liveness report
    arrives the group is a consumer group: the heartbeat is the classic member's (its session from when it was
    heard, REBALANCE_IN_PROGRESS decided: a misprediction), not a consumer-protocol heartbeat."""
    ctx = context()
    classic = upgraded(ctx)
    heard = ctx.now_ms
    ctx.now_ms += 1_000
    assert ctx.step({"api": "Liveness", "request_id": ctx.request_id(), "group_id": "g", "members": [
        {"member_id": classic, "generation_id": 1, "heard_ms": heard, "answered": 0}]}, valid=False) == []
    (answer,) = ctx.last.fast_answers
    assert (answer.answered, answer.decided, answer.mispredicted) == (0, Errors.REBALANCE_IN_PROGRESS, True)
    assert ctx.group.timers[consumer_session_timeout_key(classic)] == heard + CLASSIC_SESSION
    assert ctx.group.members[classic].member_epoch == 1 and not ctx.group.heartbeat_owed


def test_a_restarted_static_classic_member_replaces_its_instance():
    """testJoiningConsumerGroupReplacingExistingStaticMember: a static classic member joining under a new member id
    with the instance id of a member that has not left takes its place, its partitions with it."""
    ctx = context()
    ctx.consumer_join("B")
    (first,) = ctx.join("", instance="i")
    assert first["error_code"] == Errors.NONE and first["member_id"]  # a static member gets its id at once
    held = ctx.group.members[first["member_id"]].assigned()
    (again,) = ctx.join("", instance="i")
    assert again["error_code"] == Errors.NONE and again["member_id"] != first["member_id"]
    assert set(ctx.group.members) == {"B", again["member_id"]}
    assert ctx.group.members[again["member_id"]].assigned() == held
    assert ctx.sync(first["member_id"], first["generation_id"], instance="i")[0]["error_code"] == (
        Errors.FENCED_INSTANCE_ID)


def test_an_upgrade_waits_for_the_topics_the_classic_members_hold():
    """Kafka's image always holds the cluster's topics; ours may not yet (just after a rebuild from the records
    topic, or a topic created since the driver's last refresh). The member would be converted without its
    partitions, which another member would then be given: the heartbeat is answered COORDINATOR_LOAD_IN_PROGRESS
    (retried) and nothing is converted until the image names them."""
    ctx = GroupContext(now_ms=1_000)  # no topic metadata yet
    (classic,) = ctx.stable_group(1)
    response = ctx.consumer_join("B")
    assert response["error_code"] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert response["error_message"] == ("Cannot upgrade the classic group g to consumer group yet: the cluster's "
                                         "topics do not include t.")
    assert isinstance(ctx.group, ClassicGroup) and ctx.last.records == []
    ctx.publish_topics(1, (topic_id("other"), "other", 1))  # an image without t
    assert ctx.consumer_join("B")["error_code"] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    ctx.publish_topics(2, (T, "t", 6))
    assert ctx.consumer_join("B")["error_code"] == Errors.NONE
    assert ctx.group.members[classic].assigned() == {T: frozenset({0})}


def static_consumer_member_and_a_classic_one(ctx: GroupContext) -> str:
    """A consumer group of consumer-protocol member A (static, instance "i") and classic member C, reconciled."""
    assert ctx.consumer_join("A", instance_id="i")["error_code"] == Errors.NONE
    classic = ctx.new_member()
    (joined,) = ctx.join(classic)
    assert joined["error_code"] == Errors.NONE and isinstance(ctx.group, ConsumerGroup)
    return classic


def test_a_static_classic_member_replacing_the_last_consumer_member_downgrades_the_group():
    """testConsumerGroupJoinWithStaticMemberReplacingLastConsumerMember (validateOnlineDowngradeWithReplacedMemberId,
    Kafka's 2024 snapshot): the group becomes a Stable classic group of the same members at the group epoch, the
    joining member holding the replaced one's target, with no rebalance; it syncs with the generation it was told."""
    ctx = context()
    classic = static_consumer_member_and_a_classic_one(ctx)
    epoch = ctx.group.group_epoch
    target = ctx.group.target_assignment["A"]
    (joined,) = ctx.join("", instance="i")
    assert joined["error_code"] == Errors.NONE and joined["generation_id"] == epoch
    replacing = joined["member_id"]
    group = ctx.group
    assert isinstance(group, ClassicGroup) and group.state == GroupState.STABLE and group.generation == epoch
    assert set(group.members) == {classic, replacing} and group.static_members == {"i": replacing}
    # the join's records (A's removal, its copy under the new id, the join's own), the tombstones of the group
    # they leave, then the classic group's record
    assert keys(ctx) == [8, 7, 5, 5, 7, 8, 5, 8, 8, 8, 7, 7, 6, 5, 5, 4, 3, 2]
    # (no retention check: a Stable group without offsets has nothing it could remove)
    assert sorted(group.timers) == sorted([f"{HEARTBEAT_PREFIX}{classic}", f"{HEARTBEAT_PREFIX}{replacing}"])
    (synced,) = ctx.sync(replacing, epoch, instance="i")
    assert synced["error_code"] == Errors.NONE and partitions(synced["assignment"]) == set(target[T])


def test_no_downgrade_by_a_replacing_static_member_when_the_policy_forbids_it_or_others_use_the_consumer_protocol():
    ctx = context(CoordinatorConfig(group_consumer_migration_policy="upgrade"))
    static_consumer_member_and_a_classic_one(ctx)
    (joined,) = ctx.join("", instance="i")
    assert joined["error_code"] == Errors.NONE and isinstance(ctx.group, ConsumerGroup)
    ctx = context()
    static_consumer_member_and_a_classic_one(ctx)
    ctx.consumer_join("B")
    (joined,) = ctx.join("", instance="i")
    assert joined["error_code"] == Errors.NONE and isinstance(ctx.group, ConsumerGroup)
    assert ctx.group.members[joined["member_id"]].uses_classic_protocol and "B" in ctx.group.members

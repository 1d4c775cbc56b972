"""ConsumerGroupHeartbeat (state.consumer.heartbeat): validation, joining, epochs, target assignments, leaving and
reconciliation, as Kafka's GroupMetadataManagerTest checks them. Inputs, expected responses and expected records
are Kafka's (with Kafka 4.1+'s records: the metadata hash in the group epoch record, no subscription-metadata
record); each test names Kafka's case it ports. The assignor is Kafka's mock: it hands back a prepared target."""

from __future__ import annotations

from dataclasses import replace

import pytest

from state.consumer import records
from state.config import CoordinatorConfig
from state.consumer.group import ConsumerGroupMember, ConsumerGroupState, MemberState
from state.topics.image import kafka_uuid, metadata_hash
from state.errors import Errors
from tests.state.consumer.context import CLIENT_HOST, CLIENT_ID, ConsumerContext, build_group, error, fields, ok
from tests.state.consumer.support import MockAssignor, assignment, epochs, image

G = "fooup"
M1, M2, M3 = "member-1", "member-2", "member-3"
IMAGE = image(("foo", 6), ("bar", 3))
HASH_FOO_BAR = metadata_hash(["foo", "bar"], IMAGE)


def member(member_id, epoch=10, previous=9, assigned=(), topics=("foo", "bar"), state=MemberState.STABLE,
           revoking=(), instance_id=None, rebalance_timeout_ms=5000):
    return ConsumerGroupMember(
        member_id, instance_id=instance_id, member_epoch=epoch, previous_member_epoch=previous, state=state,
        rebalance_timeout_ms=rebalance_timeout_ms, client_id=CLIENT_ID, client_host=CLIENT_HOST,
        subscribed_topic_names=tuple(sorted(topics)), server_assignor_name="range",
        assigned_partitions=epochs(previous if epoch < 0 else epoch, *assigned),
        partitions_pending_revocation=epochs(epoch, *revoking))


def two_members(ctx, instance_ids=(None, None), topics2=("foo", "bar")):
    """Kafka's usual group: epoch 10, member 1 with foo-0,1,2 bar-0,1, member 2 with foo-3,4,5 bar-2."""
    m1 = member(M1, assigned=[("foo", (0, 1, 2)), ("bar", (0, 1))], instance_id=instance_ids[0])
    m2 = member(M2, assigned=[("foo", (3, 4, 5)), ("bar", (2,))], instance_id=instance_ids[1], topics=topics2)
    build_group(ctx, 10, [m1, m2])
    return m1, m2


# -- validation ----------------------------------------------------------------------------------------------------

VALIDATION = [
    # (request fields, error code, message) in Kafka's order of checks (GroupCoordinatorService, Kafka 4.3)
    (dict(group_id="", member_id="m", member_epoch=1), 42, "GroupId can't be empty."),
    (dict(group_id="   ", member_id="m", member_epoch=1), 42, "GroupId can't be empty."),
    (dict(member_id="", member_epoch=1, version=0), 42, "MemberId can't be empty."),
    (dict(member_id="", member_epoch=0, version=1), 42, "MemberId can't be empty."),
    (dict(member_id="", member_epoch=-1, version=0), 42, "MemberId can't be empty."),
    (dict(member_id="m", member_epoch=0), 42, "RebalanceTimeoutMs must be provided in first request."),
    (dict(member_id="m", member_epoch=0, rebalance_timeout_ms=5000), 42,
     "TopicPartitions must be empty when (re-)joining."),
    (dict(member_id="m", member_epoch=0, rebalance_timeout_ms=5000, owned=[("foo", (0,))]), 42,
     "TopicPartitions must be empty when (re-)joining."),
    (dict(member_id="m", member_epoch=0, rebalance_timeout_ms=5000, owned=()), 42,
     "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    (dict(member_id="m", member_epoch=1, instance_id=""), 42, "InstanceId can't be empty."),
    (dict(member_id="m", member_epoch=1, rack_id=""), 42, "RackId can't be empty."),
    (dict(member_id="m", member_epoch=1, server_assignor="bar"), 112,
     "ServerAssignor bar is not supported. Supported assignors: range."),
    (dict(member_id="m", member_epoch=-2, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"), owned=()),
     42, "InstanceId can't be null."),
    (dict(member_id="m", member_epoch=-3), 42, "MemberEpoch is invalid."),
]


@pytest.mark.parametrize("request_fields, code, message", VALIDATION, ids=[m for _, _, m in VALIDATION])
def test_an_invalid_heartbeat_is_refused_with_kafkas_message(request_fields, code, message):
    """Kafka: testConsumerHeartbeatRequestValidation (and KIP-1082: v1 members choose their own member id)."""
    ctx = ConsumerContext()
    request_fields = dict(request_fields)
    result = ctx.heartbeat(request_fields.pop("member_id"), request_fields.pop("member_epoch"), **request_fields)
    assert error(result) == (code, message)
    assert result.records == [] and result.timers == []


def test_an_invalid_regex_is_refused():
    """Kafka: testConsumerHeartbeatRegexValidation (RE2 says why in its own words, not RE2/J's)."""
    result = ConsumerContext(image=IMAGE).heartbeat("m", 0, rebalance_timeout_ms=5000, owned=(),
                                                    subscribed_topic_regex="[")
    code, message = error(result)
    assert code == Errors.INVALID_REGULAR_EXPRESSION
    assert message.startswith("SubscribedTopicRegex `[` is not a valid regular expression: missing ]")


def test_the_consumer_protocol_can_be_switched_off():
    """KafkaApis answers UNSUPPORTED_VERSION when `consumer` is not in group.coordinator.rebalance.protocols."""
    ctx = ConsumerContext(config=CoordinatorConfig(group_coordinator_rebalance_protocols=("classic",)))
    assert error(ctx.join("m"))[0] == Errors.UNSUPPORTED_VERSION


# -- joining -------------------------------------------------------------------------------------------------------

def test_a_v0_member_without_id_gets_one_from_the_coordinator():
    """Kafka: testMemberIdGeneration (the id is derived from the request, so a replay hands out the same)."""
    ctx = ConsumerContext()
    result = ctx.join("", version=0)
    member_id = result.response.member_id
    assert member_id == kafka_uuid(f"{G}\x00r0\x000") and len(member_id) == 22
    assert fields(result.response) == {**ok(member_id, 1), "assignment": {"topic_partitions": []}}


def test_a_heartbeat_to_an_unknown_group_is_refused():
    """Kafka: testUnknownGroupId."""
    result = ConsumerContext().heartbeat("m", 100, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",),
                                         owned=())
    assert error(result) == (Errors.GROUP_ID_NOT_FOUND, "Consumer group fooup not found.")


def test_an_unknown_member_must_join_with_epoch_zero():
    """Kafka: testUnknownMemberIdJoinsConsumerGroup."""
    ctx = ConsumerContext()
    ctx.join("m")
    result = ctx.heartbeat("other", 1, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"), owned=())
    assert error(result) == (Errors.UNKNOWN_MEMBER_ID, "Member other is not a member of group fooup.")


def test_a_member_joining_an_empty_group_creates_it_and_gets_everything():
    """Kafka: testMemberJoinsEmptyConsumerGroup."""
    ctx = ConsumerContext(image=IMAGE)
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2, 3, 4, 5)), ("bar", (0, 1, 2)))})
    result = ctx.join(M1)
    assert fields(result.response) == ok(M1, 1, assigned=[("foo", (0, 1, 2, 3, 4, 5)), ("bar", (0, 1, 2))])
    expected = member(M1, 1, 0, [("foo", (0, 1, 2, 3, 4, 5)), ("bar", (0, 1, 2))])
    assert tuple(result.records) == (
        records.member_subscription(G, expected),
        records.group_epoch(G, 1, HASH_FOO_BAR),
        records.target_assignment(G, M1, assignment(("foo", (0, 1, 2, 3, 4, 5)), ("bar", (0, 1, 2)))),
        records.target_assignment_epoch(G, 1, 0),
        records.current_assignment(G, expected),
    )
    assert ctx.group.state is ConsumerGroupState.STABLE


def test_a_changed_subscription_bumps_the_epoch_and_computes_a_new_target():
    """Kafka: testUpdatingSubscriptionTriggersNewTargetAssignment."""
    ctx = ConsumerContext(image=IMAGE)
    build_group(ctx, 10, [member(M1, 10, 9, [("foo", (0, 1, 2, 3, 4, 5))], topics=("foo",))])
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2, 3, 4, 5)), ("bar", (0, 1, 2)))})
    result = ctx.heartbeat(M1, 10, subscribed_topic_names=("foo", "bar"))
    assert fields(result.response) == ok(M1, 11, assigned=[("foo", (0, 1, 2, 3, 4, 5)), ("bar", (0, 1, 2))])
    # KIP-1251: foo stays assigned from epoch 10, bar is assigned at 11
    expected = replace(member(M1, 11, 10), assigned_partitions={**epochs(10, ("foo", (0, 1, 2, 3, 4, 5))),
                                                                **epochs(11, ("bar", (0, 1, 2)))})
    assert tuple(result.records) == (
        records.member_subscription(G, expected),
        records.group_epoch(G, 11, HASH_FOO_BAR),
        records.target_assignment(G, M1, assignment(("foo", (0, 1, 2, 3, 4, 5)), ("bar", (0, 1, 2)))),
        records.target_assignment_epoch(G, 11, 0),
        records.current_assignment(G, expected),
    )


def test_a_new_member_triggers_a_new_target_and_waits_for_its_partitions():
    """Kafka: testNewJoiningMemberTriggersNewTargetAssignment."""
    ctx = ConsumerContext(image=IMAGE)
    two_members(ctx)
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1)), ("bar", (0,))), M2: assignment(("foo", (2, 3)), ("bar", (1,))),
                          M3: assignment(("foo", (4, 5)), ("bar", (2,)))})
    result = ctx.join(M3)
    assert fields(result.response) == {**ok(M3, 11), "assignment": {"topic_partitions": []}}
    expected = member(M3, 11, 0, state=MemberState.UNRELEASED_PARTITIONS)
    assert tuple(result.records) == (
        records.member_subscription(G, expected),
        records.group_epoch(G, 11, HASH_FOO_BAR),
        records.target_assignment(G, M1, assignment(("foo", (0, 1)), ("bar", (0,)))),
        records.target_assignment(G, M2, assignment(("foo", (2, 3)), ("bar", (1,)))),
        records.target_assignment(G, M3, assignment(("foo", (4, 5)), ("bar", (2,)))),
        records.target_assignment_epoch(G, 11, 0),
        records.current_assignment(G, expected),
    )
    assert ctx.group.state is ConsumerGroupState.RECONCILING


def test_a_leaving_member_is_removed_and_bumps_the_group_epoch():
    """Kafka: testLeavingMemberBumpsGroupEpoch (the hash now covers foo and bar only: zar left with member 2)."""
    ctx = ConsumerContext(image=image(("foo", 6), ("bar", 3), ("zar", 1)))
    two_members(ctx, topics2=("foo", "bar", "zar"))
    ctx.timers["consumer-session-timeout:member-2"] = 45_000
    result = ctx.heartbeat(M2, -1, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"), owned=())
    assert fields(result.response) == {**ok(M2, -1, interval=0)}
    assert tuple(result.records) == (
        records.current_assignment_tombstone(G, M2),
        records.target_assignment_tombstone(G, M2),
        records.member_subscription_tombstone(G, M2),
        records.group_epoch(G, 11, metadata_hash(["foo", "bar"], ctx.image)),
    )
    assert M2 not in ctx.group.members and ctx.session_deadline(M2) is None
    assert ctx.group.state is ConsumerGroupState.ASSIGNING


def test_a_member_of_an_unknown_group_cannot_leave():
    assert error(ConsumerContext().heartbeat("m", -1))[0] == Errors.GROUP_ID_NOT_FOUND


def test_an_unknown_member_cannot_leave():
    ctx = ConsumerContext(image=IMAGE)
    two_members(ctx)
    assert error(ctx.heartbeat("ghost", -1)) == (Errors.UNKNOWN_MEMBER_ID, "Member ghost is not a member of group fooup.")


def test_a_full_group_refuses_new_members_but_not_its_own():
    """Kafka: testNewMemberIsRejectedWithMaximumMembersIsReached."""
    ctx = ConsumerContext(image=IMAGE, config=CoordinatorConfig(group_consumer_max_size=2))
    two_members(ctx)
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2)), ("bar", (0, 1))),
                          M2: assignment(("foo", (3, 4, 5)), ("bar", (2,)))})
    assert error(ctx.join(M3)) == (Errors.GROUP_MAX_SIZE_REACHED,
                                   "The consumer group has reached its maximum capacity of 2 members.")
    assert error(ctx.join("", version=0))[0] == Errors.GROUP_MAX_SIZE_REACHED
    assert ctx.heartbeat(M1, 10).response.error_code == Errors.NONE


# -- epochs --------------------------------------------------------------------------------------------------------

def test_only_the_current_or_the_previous_epoch_with_owned_partitions_is_accepted():
    """Kafka: testConsumerGroupMemberEpochValidation."""
    ctx = ConsumerContext(image=IMAGE)
    m = member(M1, 100, 99, [("foo", (1, 2, 3))])
    build_group(ctx, 100, [m])
    ahead = ctx.heartbeat(M1, 200, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"))
    assert error(ahead) == (Errors.FENCED_MEMBER_EPOCH, "The consumer group member has a greater member epoch (200) "
                            "than the one known by the group coordinator (100). The member must abandon all its "
                            "partitions and rejoin.")
    behind = ctx.heartbeat(M1, 50, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"))
    assert error(behind)[0] == Errors.FENCED_MEMBER_EPOCH and "smaller member epoch (50)" in error(behind)[1]
    previous_without_partitions = ctx.heartbeat(M1, 99, rebalance_timeout_ms=5000,
                                                subscribed_topic_names=("foo", "bar"))
    assert error(previous_without_partitions)[0] == Errors.FENCED_MEMBER_EPOCH
    previous_with_subset = ctx.heartbeat(M1, 99, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"),
                                         owned=[("foo", (1, 2))])
    assert previous_with_subset.response.member_epoch == 100


@pytest.mark.parametrize("state, assigned, revoking", [
    (MemberState.STABLE, [("foo", (0, 1, 2))], ()),
    (MemberState.UNREVOKED_PARTITIONS, [("foo", (0, 1))], [("foo", (2,))]),
    (MemberState.UNRELEASED_PARTITIONS, [("foo", (0, 1))], ()),
])
def test_a_member_rejoining_with_epoch_zero_and_its_id_gets_its_state_back(state, assigned, revoking):
    """Kafka 4.2+ (KAFKA-19233): testConsumerGroupMemberCanRejoinWithEpochZero, in each reconciliation state
    (4.0 and 4.1 answered FENCED_MEMBER_EPOCH until the session expired)."""
    ctx = ConsumerContext(image=IMAGE)
    m = member(M1, 100, 99, assigned, topics=("foo",), state=state, revoking=revoking)
    build_group(ctx, 100, [m], targets={M1: assignment(("foo", (0, 1, 2)))})
    result = ctx.join(M1, topics=("foo",))
    assert result.response.error_code == Errors.NONE and result.response.member_epoch == 100
    assert fields(result.response)["assignment"] is not None
    assert ctx.member(M1).member_epoch == 100


# -- responses and reconciliation ----------------------------------------------------------------------------------

def test_the_assignment_is_sent_on_a_join_a_full_request_or_a_change_only():
    """Kafka: testConsumerGroupHeartbeatFullResponse."""
    ctx = ConsumerContext(image=image(("foo", 2)))
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1)))})
    assert fields(ctx.join(M1).response) == ok(M1, 1, assigned=[("foo", (0, 1))])
    assert fields(ctx.heartbeat(M1, 1).response) == ok(M1, 1)
    full = ctx.heartbeat(M1, 1, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"),
                         server_assignor="range", owned=())
    assert fields(full.response) == ok(M1, 1, assigned=[("foo", (0, 1))])


def test_members_revoke_before_others_get_their_partitions():
    """Kafka: testReconciliationProcess."""
    ctx = ConsumerContext(image=IMAGE)
    two_members(ctx)
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1)), ("bar", (0,))), M2: assignment(("foo", (2, 3)), ("bar", (2,))),
                          M3: assignment(("foo", (4, 5)), ("bar", (1,)))})
    assert ctx.group.state is ConsumerGroupState.STABLE

    result = ctx.join(M3)
    assert fields(result.response) == {**ok(M3, 11), "assignment": {"topic_partitions": []}}
    assert result.records[-1] == records.current_assignment(G, member(M3, 11, 0,
                                                                       state=MemberState.UNRELEASED_PARTITIONS))
    assert ctx.group.state is ConsumerGroupState.RECONCILING

    result = ctx.heartbeat(M1, 10)
    assert fields(result.response) == ok(M1, 10, assigned=[("foo", (0, 1)), ("bar", (0,))])
    assert tuple(result.records) == (records.current_assignment(G, member(
        M1, 10, 10, [("foo", (0, 1)), ("bar", (0,))], state=MemberState.UNREVOKED_PARTITIONS,
        revoking=[("foo", (2,)), ("bar", (1,))])),)

    result = ctx.heartbeat(M2, 10)
    assert fields(result.response) == ok(M2, 10, assigned=[("foo", (3,)), ("bar", (2,))])
    assert ctx.member(M2).state is MemberState.UNREVOKED_PARTITIONS

    result = ctx.heartbeat(M3, 11)
    assert fields(result.response) == ok(M3, 11)
    assert tuple(result.records) == (records.current_assignment(G, member(M3, 11, 11,
                                                                   state=MemberState.UNRELEASED_PARTITIONS)),)

    result = ctx.heartbeat(M1, 10, owned=[("foo", (0, 1)), ("bar", (0,))])
    assert fields(result.response) == ok(M1, 11)
    assert ctx.member(M1).state is MemberState.STABLE and ctx.member(M1).previous_member_epoch == 10

    result = ctx.heartbeat(M2, 10)
    assert fields(result.response) == ok(M2, 10) and result.records == []

    result = ctx.heartbeat(M3, 11)
    assert fields(result.response) == ok(M3, 11, assigned=[("bar", (1,))])
    assert ctx.member(M3).state is MemberState.UNRELEASED_PARTITIONS

    result = ctx.heartbeat(M3, 11)
    assert fields(result.response) == ok(M3, 11) and result.records == []

    result = ctx.heartbeat(M2, 10, owned=[("foo", (3,)), ("bar", (2,))])
    assert fields(result.response) == ok(M2, 11, assigned=[("foo", (2, 3)), ("bar", (2,))])

    result = ctx.heartbeat(M3, 11, owned=[("bar", (1,))])
    assert fields(result.response) == ok(M3, 11, assigned=[("foo", (4, 5)), ("bar", (1,))])
    assert ctx.group.state is ConsumerGroupState.STABLE


def test_the_group_state_follows_its_epochs_and_members():
    """Kafka: testConsumerGroupStates."""
    ctx = ConsumerContext(image=IMAGE)
    build_group(ctx, 10, [])
    assert ctx.group.state is ConsumerGroupState.EMPTY
    ctx.replay(records.member_subscription(G, member(M1)), records.group_epoch(G, 11, HASH_FOO_BAR))
    assert ctx.group.state is ConsumerGroupState.ASSIGNING
    ctx.replay(records.target_assignment(G, M1, assignment(("foo", (1, 2, 3)))), records.target_assignment_epoch(G, 11, 0))
    assert ctx.group.state is ConsumerGroupState.RECONCILING
    ctx.replay(records.current_assignment(G, member(M1, 11, 10, [("foo", (1, 2, 3))])))
    assert ctx.group.state is ConsumerGroupState.STABLE


def test_an_assignor_failure_is_answered_unknown_server_error():
    """Kafka: testPartitionAssignorExceptionOnRegularHeartbeat."""
    ctx = ConsumerContext(image=IMAGE)
    ctx.assignor.fail = "Assignment failed."
    assert error(ctx.join(M1)) == (Errors.UNKNOWN_SERVER_ERROR,
                                   "Failed to compute a new target assignment for epoch 1: Assignment failed.")
    assert ctx.group is None


def test_the_members_preferred_assignor_wins_over_the_default():
    """Kafka: ConsumerGroupTest.testPreferredServerAssignor, seen through the target computation."""
    uniform, range_ = MockAssignor("uniform"), MockAssignor("range")
    ctx = ConsumerContext(uniform, range_, image=IMAGE)
    ctx.join(M1, server_assignor=None)
    assert uniform.calls and not range_.calls
    ctx.join(M2, server_assignor="range")
    assert range_.calls


def test_the_real_uniform_assignor_spreads_partitions_over_members():
    """The worked example of the reference (uniform, 6 partitions): A joins and gets all, B joins and A revokes
    what B gets (section 11, with Kafka's own uniform assignor)."""
    from state.consumer.heartbeat import Env
    from assignors import registry

    ctx = ConsumerContext(registry.get("uniform", kind="server"), image=image(("t", 6)))
    assert fields(ctx.join("A", topics=("t",), server_assignor="uniform").response) == ok(
        "A", 1, assigned=[("t", (0, 1, 2, 3, 4, 5))])
    joined = ctx.join("B", topics=("t",), server_assignor="uniform")
    assert fields(joined.response) == {**ok("B", 2), "assignment": {"topic_partitions": []}}
    revoking = ctx.heartbeat("A", 1)
    assert fields(revoking.response) == ok("A", 1, assigned=[("t", (0, 1, 2))])
    ctx.heartbeat("A", 1, owned=[("t", (0, 1, 2))])
    assert fields(ctx.heartbeat("B", 2).response) == ok("B", 2, assigned=[("t", (3, 4, 5))])
    assert ctx.group.state is ConsumerGroupState.STABLE
    assert Env(0).assignor("uniform").name == "uniform"


def test_a_member_in_a_state_this_coordinator_does_not_know_is_fenced_until_it_owns_nothing():
    """Kafka: testUnknownState through the heartbeat: a current-assignment record with a state byte a newer
    coordinator wrote replays as UNKNOWN."""
    ctx = ConsumerContext(image=IMAGE)
    two_members(ctx)
    ctx.replay(records.current_assignment(G, replace(ctx.member(M1), state=MemberState.UNKNOWN)))
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2)), ("bar", (0, 1))),
                          M2: assignment(("foo", (3, 4, 5)), ("bar", (2,)))})
    assert error(ctx.heartbeat(M1, 10))[0] == Errors.FENCED_MEMBER_EPOCH
    assert ctx.heartbeat(M1, 10, owned=()).response.error_code == Errors.NONE
    assert ctx.member(M1).state is MemberState.STABLE

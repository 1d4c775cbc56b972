"""The consumer group as its records leave it (state.consumer.group, state.consumer.replay), and the rules read from
it: replaying each record type and its tombstone, partition ownership, deletion, ConsumerGroupDescribe, the
subscription type, and what OffsetCommit/OffsetFetch must check. Kafka's cases are named where a test ports one
(GroupMetadataManagerTest testReplayConsumerGroup*, testConsumerGroupDescribe*, testConsumerGroupDelete;
ConsumerGroupTest)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assignors.api import SubscriptionType
from schemas.consumer_group import ConsumerGroupDescribeRequest
from state.consumer import records
from state.consumer.describe import consumer_group_describe
from state.consumer.group import ConsumerGroupState, MemberState, subscription_type, validate_delete
from state.consumer.records import delete_records
from state.consumer.offsets import validate_offset_commit, validate_offset_fetch
from state.consumer.replay import IllegalStateError, replay
from state.errors import CoordinatorError, Errors
from tests.state.consumer.context import ConsumerContext, build_group
from tests.state.consumer.support import assignment, epochs, topic_id
from tests.state.consumer.test_heartbeat import G, IMAGE, M1, M2, member, two_members

FOO = topic_id("foo")


def test_a_value_record_creates_the_group_and_a_tombstone_of_none_is_ignored():
    """Kafka: testReplayConsumerGroupMetadata and its tombstone."""
    group = replay(None, records.group_epoch(G, 10, 7))
    assert (group.group_epoch, group.metadata_hash) == (10, 7)
    assert replay(None, records.group_epoch_tombstone(G)) is None
    assert replay(None, records.current_assignment_tombstone(G, M1)) is None


def test_a_group_is_deleted_only_without_members_targets_and_assignment_epoch():
    ctx = ConsumerContext(image=IMAGE)
    two_members(ctx)
    with pytest.raises(IllegalStateError):
        replay(ctx.group, records.group_epoch_tombstone(G))


def test_a_member_is_removed_only_after_its_assignment_tombstones():
    """Kafka: testReplayConsumerGroupMemberMetadata tombstone without the current-assignment tombstone first."""
    ctx = ConsumerContext(image=IMAGE)
    two_members(ctx)
    with pytest.raises(IllegalStateError):
        replay(ctx.group, records.member_subscription_tombstone(G, M1))
    replay(ctx.group, records.current_assignment_tombstone(G, M1))
    with pytest.raises(IllegalStateError):
        replay(ctx.group, records.member_subscription_tombstone(G, M1))


def test_partition_ownership_follows_the_members_epochs():
    """Kafka: ConsumerGroupTest.testUpdatingMemberUpdatesPartitionEpoch / testDeletingMemberRemovesPartitionEpoch."""
    ctx = ConsumerContext(image=IMAGE)
    m1, _ = two_members(ctx)
    assert ctx.group.current_partition_epoch(FOO, 0) == 10
    moved = replace(m1, member_epoch=11, state=MemberState.UNREVOKED_PARTITIONS,
                    assigned_partitions=epochs(11, ("foo", (0, 1))), partitions_pending_revocation=epochs(11, ("foo", (2,))))
    ctx.replay(records.current_assignment(G, moved))
    assert [ctx.group.current_partition_epoch(FOO, p) for p in (0, 2, 3)] == [11, 11, 10]
    ctx.replay(records.current_assignment_tombstone(G, M1))
    assert ctx.group.current_partition_epoch(FOO, 0) == -1


def test_a_partition_held_by_two_members_is_a_corrupt_log():
    """Kafka: ConsumerGroupTest.testUpdatingMemberUpdatesPartitionEpoch (IllegalStateException)."""
    ctx = ConsumerContext(image=IMAGE)
    two_members(ctx)
    with pytest.raises(IllegalStateError):
        replay(ctx.group, records.current_assignment(G, member(M2, assigned=[("foo", (0,))])))


def test_deleting_a_group_tombstones_everything_in_kafkas_order():
    """Kafka: testConsumerGroupDelete / ConsumerGroup.createGroupTombstoneRecords."""
    ctx = ConsumerContext(image=IMAGE)
    two_members(ctx)
    with pytest.raises(CoordinatorError) as refused:
        validate_delete(ctx.group)
    assert refused.value.code == Errors.NON_EMPTY_GROUP
    tombstones = delete_records(ctx.group)
    assert tombstones == [
        records.current_assignment_tombstone(G, M1), records.current_assignment_tombstone(G, M2),
        records.target_assignment_tombstone(G, M1), records.target_assignment_tombstone(G, M2),
        records.target_assignment_epoch_tombstone(G),
        records.member_subscription_tombstone(G, M1), records.member_subscription_tombstone(G, M2),
        records.subscription_metadata_tombstone(G), records.group_epoch_tombstone(G)]
    group = ctx.group
    for record in tombstones:
        group = replay(group, record)
    assert group is None


def test_an_empty_group_may_be_deleted():
    ctx = ConsumerContext(image=IMAGE)
    build_group(ctx, 3, [])
    validate_delete(ctx.group)
    assert ctx.group.state is ConsumerGroupState.EMPTY


def test_describe_shows_epochs_members_and_both_assignments():
    """Kafka: testConsumerGroupDescribeNoErrors."""
    ctx = ConsumerContext(image=IMAGE)
    two_members(ctx)
    ctx.replay(records.target_assignment(G, M1, assignment(("foo", (0, 1)))))
    described = consumer_group_describe(ctx.group, ConsumerGroupDescribeRequest(request_id="d", group_id=G),
                                        "uniform", IMAGE)
    assert (described.error_code, described.group_state, described.group_epoch, described.assignment_epoch,
            described.assignor_name) == (0, "Stable", 10, 10, "range")
    first = described.members[0]
    assert (first.member_id, first.member_epoch, first.member_type, first.client_host) == (
        M1, 10, 1, "localhost/127.0.0.1")
    assert [(t.topic_name, t.partitions) for t in first.assignment.topic_partitions] == sorted(
        [("bar", (0, 1)), ("foo", (0, 1, 2))], key=lambda t: topic_id(t[0]))
    assert [(t.topic_name, t.partitions) for t in first.target_assignment.topic_partitions] == [("foo", (0, 1))]


@pytest.mark.parametrize("group_id, code", [("", Errors.INVALID_GROUP_ID), ("missing", Errors.GROUP_ID_NOT_FOUND)])
def test_describe_of_no_group_says_why(group_id, code):
    """Kafka: testConsumerGroupDescribeWithErrors."""
    described = consumer_group_describe(None, ConsumerGroupDescribeRequest(request_id="d", group_id=group_id),
                                        "uniform", IMAGE)
    assert (described.error_code, described.group_state, described.members) == (code, "", ())


@pytest.mark.parametrize("regexes, names, members, expected", [
    ({}, {}, 0, SubscriptionType.HOMOGENEOUS),
    ({}, {"foo": (2, 0)}, 2, SubscriptionType.HOMOGENEOUS),
    ({}, {"foo": (2, 0), "bar": (1, 0)}, 2, SubscriptionType.HETEROGENEOUS),
    ({"foo*": 2}, {"foo": (0, 1)}, 2, SubscriptionType.HOMOGENEOUS),
    ({"foo*": 2}, {"foo": (1, 1)}, 2, SubscriptionType.HETEROGENEOUS),
    ({"foo*": 1}, {"foo": (0, 1)}, 2, SubscriptionType.HETEROGENEOUS),
    ({"foo*": 1, "bar*": 1}, {"foo": (0, 1), "bar": (0, 1)}, 2, SubscriptionType.HETEROGENEOUS),
])
def test_the_subscription_type(regexes, names, members, expected):
    """Kafka: ConsumerGroupTest.testSubscriptionType (one regular expression shared by every member, and no
    topic names, is homogeneous)."""
    assert subscription_type(regexes, names, members) is expected


# -- offsets -------------------------------------------------------------------------------------------------------

def commit(ctx, member_id=M1, epoch=10, api_version=9, transactional=False, instance_id=None):
    return validate_offset_commit(ctx.group, member_id=member_id, instance_id=instance_id, member_epoch=epoch,
                                  api_version=api_version, transactional=transactional)


def test_offset_commits_are_checked_against_the_member_epoch():
    """Kafka: ConsumerGroupTest.testValidateOffsetCommit (with KIP-1251, Kafka 4.3: an older epoch commits the
    partitions the member held from that epoch or earlier)."""
    ctx = ConsumerContext(image=IMAGE)
    two_members(ctx)
    assert commit(ctx)(FOO, 0) == Errors.NONE
    for kwargs, code in ((dict(member_id="ghost"), Errors.UNKNOWN_MEMBER_ID), (dict(api_version=8), Errors.UNSUPPORTED_VERSION),
                         (dict(epoch=11), Errors.STALE_MEMBER_EPOCH)):
        with pytest.raises(CoordinatorError) as refused:
            commit(ctx, **kwargs)
        assert refused.value.code == code
    assert commit(ctx, transactional=True, api_version=3)(FOO, 0) == Errors.NONE
    assert commit(ctx, member_id="", epoch=-1, transactional=True)(FOO, 9) == Errors.NONE
    moved = replace(ctx.member(M1), member_epoch=12, assigned_partitions={FOO: {0: 10, 1: 12}})
    ctx.replay(records.current_assignment(G, moved))
    lagging = commit(ctx, epoch=10)
    assert [lagging(FOO, p) for p in (0, 1, 2)] == [Errors.NONE, Errors.STALE_MEMBER_EPOCH, Errors.STALE_MEMBER_EPOCH]


def test_an_admin_may_commit_to_a_group_without_members():
    """Kafka: testConsumerGroupOffsetCommitFromAdminClient."""
    ctx = ConsumerContext(image=IMAGE)
    build_group(ctx, 3, [])
    assert commit(ctx, member_id="", epoch=-1)(FOO, 0) == Errors.NONE


def test_offset_fetches_name_no_member_or_the_member_at_its_epoch():
    """Kafka: ConsumerGroupTest.testValidateOffsetFetch."""
    ctx = ConsumerContext(image=IMAGE)
    two_members(ctx)
    validate_offset_fetch(ctx.group, member_id=None, member_epoch=-1)
    validate_offset_fetch(ctx.group, member_id=M1, member_epoch=10)
    for member_id, epoch, code in ((M1, 9, Errors.STALE_MEMBER_EPOCH), ("ghost", 10, Errors.UNKNOWN_MEMBER_ID)):
        with pytest.raises(CoordinatorError) as refused:
            validate_offset_fetch(ctx.group, member_id=member_id, member_epoch=epoch)
        assert refused.value.code == code

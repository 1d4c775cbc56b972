"""The records a consumer group (KIP-848) writes, and their constructors (Kafka's GroupCoordinatorRecordHelpers for
consumer groups, record types 3-8 and 16): one place for each, as `state.share.records` is for share groups and
`state.records` for what every kind writes (the `Record` itself, keys, offsets, the classic group's value)."""

from __future__ import annotations

from msgspec import UNSET, UnsetType

from schemas.consumer_group import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupDirectoryEntry,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    MemberTopicPartitions,
    TargetTopicPartitions,
)
from state.consumer.group import ConsumerGroup, ConsumerGroupMember, PartitionEpochs, Partitions
from state.records import Record
from state.topics.image import ResolvedRegularExpression


# Topics are written in topic id order and partitions ascending, so the same group gives the same bytes.

# -- type 3: group epoch -------------------------------------------------------------------------------------------

def group_epoch(group_id: str, epoch: int, metadata_hash: int,
                directory: ConsumerGroupDirectoryEntry | UnsetType = UNSET) -> Record:
    """`directory`: the group's state now, for ListGroups (our extension; Kafka's epoch bumps have none)."""
    return Record(ConsumerGroupMetadataKey(group_id), ConsumerGroupMetadataValue(
        epoch=epoch, metadata_hash=metadata_hash, directory=directory))


def group_epoch_tombstone(group_id: str) -> Record:
    return Record(ConsumerGroupMetadataKey(group_id), None)


# -- type 4: subscription metadata (Kafka 4.0; only ever tombstoned now) -------------------------------------------

def subscription_metadata_tombstone(group_id: str) -> Record:
    return Record(ConsumerGroupPartitionMetadataKey(group_id), None)


# -- type 5: member subscription -----------------------------------------------------------------------------------

def member_subscription(group_id: str, member: ConsumerGroupMember) -> Record:
    return Record(ConsumerGroupMemberMetadataKey(group_id, member.member_id), ConsumerGroupMemberMetadataValue(
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=tuple(sorted(member.subscribed_topic_names)),
        subscribed_topic_regex=member.subscribed_topic_regex,
        rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor_name,
        classic_member_metadata=member.classic_member_metadata,
        principal=UNSET if member.principal is None else member.principal,  # our extension
    ))


def member_subscription_tombstone(group_id: str, member_id: str) -> Record:
    return Record(ConsumerGroupMemberMetadataKey(group_id, member_id), None)


# -- types 6 and 7: target assignment ------------------------------------------------------------------------------

def target_assignment(group_id: str, member_id: str, partitions: Partitions) -> Record:
    return Record(ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), ConsumerGroupTargetAssignmentMemberValue(
        topic_partitions=tuple(TargetTopicPartitions(topic, tuple(sorted(parts)))
                               for topic, parts in sorted(partitions.items()) if parts)))


def target_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return Record(ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), None)


def target_assignment_epoch(group_id: str, epoch: int, timestamp_ms: int) -> Record:
    return Record(ConsumerGroupTargetAssignmentMetadataKey(group_id), ConsumerGroupTargetAssignmentMetadataValue(
        assignment_epoch=epoch, assignment_timestamp=timestamp_ms))


def target_assignment_epoch_tombstone(group_id: str) -> Record:
    return Record(ConsumerGroupTargetAssignmentMetadataKey(group_id), None)


# -- type 8: current assignment ------------------------------------------------------------------------------------

def _with_epochs(partitions: PartitionEpochs) -> tuple[MemberTopicPartitions, ...]:
    out = []
    for topic, parts in sorted(partitions.items()):
        if parts:
            ordered = sorted(parts.items())
            out.append(MemberTopicPartitions(topic, tuple(p for p, _ in ordered), tuple(e for _, e in ordered)))
    return tuple(out)


def current_assignment(group_id: str, member: ConsumerGroupMember) -> Record:
    return Record(ConsumerGroupCurrentMemberAssignmentKey(group_id, member.member_id),
                  ConsumerGroupCurrentMemberAssignmentValue(
                      member_epoch=member.member_epoch,
                      previous_member_epoch=member.previous_member_epoch,
                      state=int(member.state),
                      assigned_partitions=_with_epochs(member.assigned_partitions),
                      partitions_pending_revocation=_with_epochs(member.partitions_pending_revocation),
                  ))


def current_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return Record(ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id), None)


# -- type 16: resolved regular expression --------------------------------------------------------------------------

def regular_expression(group_id: str, regex: str, resolved: ResolvedRegularExpression) -> Record:
    return Record(ConsumerGroupRegularExpressionKey(group_id, regex), ConsumerGroupRegularExpressionValue(
        topics=tuple(sorted(resolved.topics)), version=resolved.version, timestamp=resolved.timestamp_ms))


def regular_expression_tombstone(group_id: str, regex: str) -> Record:
    return Record(ConsumerGroupRegularExpressionKey(group_id, regex), None)


def directory_record(group: ConsumerGroup) -> Record:
    """The group-epoch record as it is, with the group's state now: what ListGroups is answered from."""
    return group_epoch(group.group_id, group.group_epoch, group.metadata_hash,
                       ConsumerGroupDirectoryEntry(group.state.value, len(group.members)))


def delete_records(group: ConsumerGroup) -> list[Record]:
    """The tombstones that delete the group, in Kafka's order (ConsumerGroup.createGroupTombstoneRecords): current
    and target assignments, the assignment epoch, subscriptions, resolved regular expressions, the subscription
    metadata, the group epoch. Replaying them leaves no group."""
    group_id = group.group_id
    members = sorted(group.members)
    return [
        *(current_assignment_tombstone(group_id, m) for m in members),
        *(target_assignment_tombstone(group_id, m) for m in sorted(group.target_assignment)),
        target_assignment_epoch_tombstone(group_id),
        *(member_subscription_tombstone(group_id, m) for m in members),
        *(regular_expression_tombstone(group_id, r) for r in sorted(group.resolved_regexes)),
        subscription_metadata_tombstone(group_id),
        group_epoch_tombstone(group_id),
    ]

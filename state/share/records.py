"""The records a share group writes, and their constructors (Kafka's GroupCoordinatorRecordHelpers for share
groups, and the share coordinator's snapshot): one place for each, as `state.consumer.records` is for consumer
groups and `state.records` for what every kind writes."""

from __future__ import annotations

from msgspec import UNSET, Struct

from schemas.share_group import (
    GroupConfigKey,
    GroupConfigValue,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupDirectoryEntry,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
    SharePartitionSnapshotKey,
    SharePartitionSnapshotValue,
    ShareTopicPartitions,
    StateBatchValue,
    TopicInfo,
    TopicPartitionsInfo,
)
from state.records import Record
from state.share.group import InitializedTopic, Partitions, ShareGroup, ShareGroupMember, ShareSnapshot
from state.share.partitions.partition import StateBatch


def topic_partitions(partitions: Partitions) -> tuple[ShareTopicPartitions, ...]:
    return tuple(ShareTopicPartitions(t, tuple(sorted(p))) for t, p in sorted(partitions.items()) if p)


def group_epoch(group_id: str, epoch: int, metadata_hash: int, members: int | None = None) -> Record:
    """Record 11; with the group's state for ListGroups when `members` (the member count after it) is given."""
    directory = UNSET if members is None else ShareGroupDirectoryEntry("Stable" if members else "Empty", members)
    return Record(ShareGroupMetadataKey(group_id), ShareGroupMetadataValue(
        epoch=epoch, metadata_hash=metadata_hash, directory=directory))


def directory_changed(group: ShareGroup) -> bool:
    """Whether the group's state or member count changed since its last group-epoch record that said them
    (the directory sync, `state.runtime.directory`)."""
    return group.directory != [group.state.value, len(group.members)]


def directory_record(group: ShareGroup) -> Record:
    """Its group-epoch record again, with its state and member count (ListGroups' directory)."""
    return group_epoch(group.group_id, group.group_epoch, group.metadata_hash, members=len(group.members))


def group_epoch_tombstone(group_id: str) -> Record:
    return Record(ShareGroupMetadataKey(group_id), None)


def member_subscription(group_id: str, member: ShareGroupMember) -> Record:
    return Record(ShareGroupMemberMetadataKey(group_id, member.member_id), ShareGroupMemberMetadataValue(
        rack_id=member.rack_id, client_id=member.client_id, client_host=member.client_host,
        subscribed_topic_names=member.subscribed_topic_names,
        principal=member.principal if member.principal is not None else UNSET))


def member_subscription_tombstone(group_id: str, member_id: str) -> Record:
    return Record(ShareGroupMemberMetadataKey(group_id, member_id), None)


def target_assignment(group_id: str, member_id: str, partitions: Partitions) -> Record:
    return Record(ShareGroupTargetAssignmentMemberKey(group_id, member_id),
                  ShareGroupTargetAssignmentMemberValue(topic_partitions=topic_partitions(partitions)))


def target_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return Record(ShareGroupTargetAssignmentMemberKey(group_id, member_id), None)


def target_assignment_epoch(group_id: str, epoch: int, timestamp_ms: int) -> Record:
    return Record(ShareGroupTargetAssignmentMetadataKey(group_id), ShareGroupTargetAssignmentMetadataValue(
        assignment_epoch=epoch, assignment_timestamp=timestamp_ms))


def target_assignment_epoch_tombstone(group_id: str) -> Record:
    return Record(ShareGroupTargetAssignmentMetadataKey(group_id), None)


def current_assignment(group_id: str, member: ShareGroupMember) -> Record:
    return Record(ShareGroupCurrentMemberAssignmentKey(group_id, member.member_id),
                  ShareGroupCurrentMemberAssignmentValue(
                      member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch,
                      state=member.state, assigned_partitions=topic_partitions(member.assigned_partitions)))


def current_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return Record(ShareGroupCurrentMemberAssignmentKey(group_id, member_id), None)


def state_partition_metadata(group_id: str, initialized: dict[str, InitializedTopic],
                             deleting: dict[str, str]) -> Record:
    return Record(ShareGroupStatePartitionMetadataKey(group_id), ShareGroupStatePartitionMetadataValue(
        initialized_topics=tuple(TopicPartitionsInfo(t, i.name, tuple(sorted(i.partitions)))
                                 for t, i in sorted(initialized.items())),
        deleting_topics=tuple(TopicInfo(t, name) for t, name in sorted(deleting.items()))))


def state_partition_metadata_tombstone(group_id: str) -> Record:
    return Record(ShareGroupStatePartitionMetadataKey(group_id), None)


def batch_value(b: StateBatch) -> StateBatchValue:
    return StateBatchValue(b.first, b.last, int(b.state), b.delivery_count)


def snapshot(group_id: str, topic_id: str, partition: int, sp: ShareSnapshot, snapshot_epoch: int = 0) -> Record:
    """Version 100: one share-partition's durable state and grant (Kafka's ShareSnapshotValue, plus the grant)."""
    p, g = sp.persisted, sp.grant
    return Record(SharePartitionSnapshotKey(group_id, topic_id, partition), SharePartitionSnapshotValue(
        snapshot_epoch=snapshot_epoch, state_epoch=p.state_epoch, start_offset=p.start_offset,
        delivery_complete_count=p.delivery_complete_count(), create_timestamp=sp.create_timestamp_ms,
        write_timestamp=sp.write_timestamp_ms, state_batches=tuple(batch_value(b) for b in p.batches),
        grant_epoch=g.epoch, holder=g.holder, last_holder=g.last_holder))


def snapshot_tombstone(group_id: str, topic_id: str, partition: int) -> Record:
    return Record(SharePartitionSnapshotKey(group_id, topic_id, partition), None)


def group_config(group_id: str, configs: dict[str, str]) -> Record:
    """Version 101: the group's dynamic configs (a tombstone when none is left)."""
    return Record(GroupConfigKey(group_id), GroupConfigValue(configs=dict(sorted(configs.items())))
                  if configs else None)


class SharePartitionWanted(Struct, frozen=True, gc=False):
    """In-memory: a gateway was refused a share-partition another holds (None: nobody waits for it now); the view
    shows it, so that the holder may hand it over. Never written: a new holder is asked for again."""

    group_id: str
    topic_id: str
    partition: int
    holder: str | None

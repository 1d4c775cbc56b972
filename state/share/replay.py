"""`replay(group, record)`: the only way a share group changes, live (a handler's records) and when loading (the
records topic, in log order). Kafka's GroupMetadataManager.replay for record types 10-15, and the share
coordinator's for a share-partition's snapshot.

- A value record of a group that does not exist creates it; a tombstone for one that does not exist is ignored.
- A member appears with its first subscription (10) or current-assignment (14) record; its subscription tombstone
  removes it, once its current assignment is gone.
- The group-epoch tombstone (11) removes the group, which must have no member and no target.
- A snapshot (100) replaces its share-partition whole; its tombstone removes it.

A group id is of one kind at a time: `written` is a share group's record on a group of any kind (a classic group
with nothing in it gives way; no other does). The share handlers compose (`then`) with this replay.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from msgspec import UNSET

from schemas.share_group import (
    GroupConfigKey,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupMemberMetadataKey,
    ShareGroupMetadataKey,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMetadataKey,
    SharePartitionSnapshotKey,
    ShareTopicPartitions,
)
from state.classic.group import ClassicGroup
from state.errors import ReplayError
from state.handling import step
from state.handling.step import CoordinatorResult
from state.records import HeartbeatOwed, Record, heartbeat_owed
from state.share.partitions.grant import Grant
from state.share.group import InitializedTopic, Partitions, ShareGroup, ShareGroupMember, ShareSnapshot
from state.share.records import SharePartitionWanted
from state.share.partitions.partition import PersistedState, RecordState, StateBatch


class IllegalStateError(Exception):
    """The records contradict each other (Kafka's IllegalStateException while replaying)."""


def partitions_of(topics: tuple[ShareTopicPartitions, ...]) -> Partitions:
    return {t.topic_id: frozenset(t.partitions) for t in topics}


def replay(group: ShareGroup | None, record: Record | SharePartitionWanted) -> ShareGroup | None:
    """The group after `record` (None: there is no group); `group` is changed in place when it exists."""
    if isinstance(record, SharePartitionWanted):
        if group is None:
            raise IllegalStateError("a share-partition wanted in a group that does not exist")
        if record.holder is None:
            group.wanted.pop((record.topic_id, record.partition), None)
        else:
            group.wanted[(record.topic_id, record.partition)] = record.holder
        return group
    key, value = record.key, record.value
    if isinstance(key, GroupConfigKey):
        raise IllegalStateError("a group's configs are not a share group's record")
    if group is None:
        if value is None:
            return None
        group = ShareGroup(key.group_id)
    if isinstance(key, ShareGroupMetadataKey):
        if value is None:
            if group.members or group.target_assignment:
                raise IllegalStateError(f"Received a tombstone record to delete group {group.group_id} but the group "
                                        "still has members or target assignments.")
            return None
        group.group_epoch = value.epoch
        group.metadata_hash = value.metadata_hash
        if value.directory is not UNSET:
            group.directory = [value.directory.group_state, value.directory.member_count]
    elif isinstance(key, ShareGroupMemberMetadataKey):
        _replay_subscription(group, key.member_id, value)
    elif isinstance(key, ShareGroupTargetAssignmentMemberKey):
        if value is None:
            group.target_assignment.pop(key.member_id, None)
        else:
            group.target_assignment[key.member_id] = partitions_of(value.topic_partitions)
    elif isinstance(key, ShareGroupTargetAssignmentMetadataKey):
        group.assignment_epoch = -1 if value is None else value.assignment_epoch
        group.assignment_timestamp_ms = 0 if value is None else value.assignment_timestamp
    elif isinstance(key, ShareGroupCurrentMemberAssignmentKey):
        _replay_current_assignment(group, key.member_id, value)
    elif isinstance(key, ShareGroupStatePartitionMetadataKey):
        group.has_state_partition_metadata = value is not None
        group.initialized = {} if value is None else {
            t.topic_id: InitializedTopic(t.topic_name, frozenset(t.partitions)) for t in value.initialized_topics}
        group.deleting = {} if value is None else {t.topic_id: t.topic_name for t in value.deleting_topics}
    elif isinstance(key, SharePartitionSnapshotKey):
        tp = (key.topic_id, key.partition)
        group.wanted.pop(tp, None)
        if value is None:
            group.partitions.pop(tp, None)
        else:
            group.partitions[tp] = ShareSnapshot(
                PersistedState(value.start_offset, value.state_epoch, tuple(
                    StateBatch(b.first_offset, b.last_offset, RecordState(b.delivery_state), b.delivery_count)
                    for b in value.state_batches)),
                Grant(value.grant_epoch, value.holder, 0, value.last_holder),
                value.create_timestamp, value.write_timestamp)
    else:
        raise IllegalStateError(f"not a share group's record: {type(key).__name__}")
    return group


def written(group: Any, record: Record) -> ShareGroup | Any:
    """A share group's record: a group id has one kind at a time, and no share group replaces another kind (Kafka
    refuses the share APIs on a classic or consumer group); a classic group with nothing in it (no members, no
    offsets) is the only one that gives way."""
    if group is not None and not isinstance(group, ShareGroup):
        if record.value is None:
            return group
        if group.members or group.offsets or (isinstance(group, ClassicGroup) and (group.protocol_type or
                                                                                  group.pending_members)):
            raise ReplayError(f"a share group record for group {group.group_id}, which is of another kind")
        group = None
    return replay(group, record)


def then(group: Any, done: CoordinatorResult, more: CoordinatorResult) -> tuple[Any, CoordinatorResult]:
    """`state.handling.step.then` with the replay the share handlers' records need: a share group's own records,
    `SharePartitionWanted`, `HeartbeatOwed`."""
    return step.then(group, done, more, _share_handlers)


def _share_handlers(group: Any, record: Any) -> Any:
    kind = type(record)
    if kind is Record:
        return group if type(record.key) is GroupConfigKey else written(group, record)
    if kind is not HeartbeatOwed and kind is not SharePartitionWanted:
        raise ReplayError(f"no replay for a record of type {kind.__name__}")
    if group is None:
        raise ReplayError(f"{kind.__name__} for a group that does not exist")
    return heartbeat_owed(group, record) if kind is HeartbeatOwed else replay(group, record)


def _replay_subscription(group: ShareGroup, member_id: str, value) -> None:
    old = group.members.get(member_id)
    if value is None:
        if old is None:
            return
        if old.member_epoch != -1 and old.assigned_partitions:
            raise IllegalStateError(f"Received a tombstone record to delete member {member_id} but the member still "
                                    "has an assignment.")
        _index(group, old, None)
        del group.members[member_id]
        return
    member = replace(old if old is not None else ShareGroupMember(member_id), rack_id=value.rack_id,
                     client_id=value.client_id, client_host=value.client_host,
                     subscribed_topic_names=tuple(value.subscribed_topic_names),
                     principal=None if value.principal is UNSET else value.principal)
    _index(group, old, member)
    group.members[member_id] = member


def _replay_current_assignment(group: ShareGroup, member_id: str, value) -> None:
    old = group.members.get(member_id)
    if value is None:
        if old is not None:
            group.members[member_id] = replace(old, member_epoch=-1, previous_member_epoch=-1,
                                               assigned_partitions={})
        return
    member = replace(old if old is not None else ShareGroupMember(member_id), member_epoch=value.member_epoch,
                     previous_member_epoch=value.previous_member_epoch, state=value.state,
                     assigned_partitions=partitions_of(value.assigned_partitions))
    if old is None:
        _index(group, None, member)
    group.members[member_id] = member


def _index(group: ShareGroup, old: ShareGroupMember | None, new: ShareGroupMember | None) -> None:
    if old is not None:
        group.subscribed_names.subtract(old.subscribed_topic_names)
    if new is not None:
        group.subscribed_names.update(new.subscribed_topic_names)
    group.subscribed_names = +group.subscribed_names

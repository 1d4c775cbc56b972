"""`replay(group, record)`: the only way a consumer group changes, live (a handler's records) and when loading
(the records topic, in log order). Kafka's GroupMetadataManager.replay for record types 3-8 and 16.

- A value record of a group that does not exist creates it; a tombstone for one that does not exist is ignored.
- A member appears with its first subscription (5) or current-assignment (8) record. Its current-assignment
  tombstone leaves it at epoch -1 without partitions; only then may its subscription tombstone remove it, and only
  once its target is gone (a log in any other order is not one this coordinator wrote: IllegalStateError).
- The group-epoch tombstone (3) removes the group, which must have no member, no target and no assignment epoch.
- A partition held by two members at once is a corrupt log too (Kafka's IllegalStateException).

A consumer group and a classic group convert into each other (`state.consumer.migration`): `written` is a consumer
group's record on a group of either protocol, and the consumer handlers compose (`then`) with a replay that sends a
classic group's records to the classic replay (`state.classic.replay`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from msgspec import UNSET

from schemas.consumer_group import (
    ConsumerGroupCurrentMemberAssignmentKey,
    MemberTopicPartitions,
    TargetTopicPartitions,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
)
from state.classic import replay as classic_replay
from state.classic.group import ClassicGroup
from state.classic.records import CLASSIC_KEYS
from state.consumer.group import ConsumerGroup, ConsumerGroupMember, MemberState
from state.errors import ReplayError
from state.handling import step
from state.handling.step import CoordinatorResult
from state.topics.image import ResolvedRegularExpression
from state.records import HeartbeatOwed, Record, heartbeat_owed

LEAVE_GROUP_MEMBER_EPOCH = -1


class IllegalStateError(Exception):
    """The records contradict each other (Kafka's IllegalStateException while replaying)."""


def replay(group: ConsumerGroup | None, record: Record) -> ConsumerGroup | None:
    """The group after `record` (None: there is no group); `group` is changed in place when it exists."""
    key, value = record.key, record.value
    if group is None:
        if value is None:
            return None
        group = ConsumerGroup(key.group_id)
    if isinstance(key, ConsumerGroupMetadataKey):
        if value is None:
            if group.members or group.target_assignment or group.assignment_epoch != -1:
                raise IllegalStateError(f"Received a tombstone record to delete group {group.group_id} but the group "
                                        "still has members, target assignments or an assignment epoch.")
            return None
        group.group_epoch = value.epoch  # type: ignore[union-attr]
        group.metadata_hash = value.metadata_hash  # type: ignore[union-attr]
        directory = value.directory  # type: ignore[union-attr]
        if directory is not UNSET:
            group.directory = [directory.group_state, directory.member_count]
    elif isinstance(key, ConsumerGroupPartitionMetadataKey):
        group.has_subscription_metadata_record = value is not None
    elif isinstance(key, ConsumerGroupMemberMetadataKey):
        _replay_subscription(group, key.member_id, value)
    elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
        if value is None:
            group.target_assignment.pop(key.member_id, None)
        else:
            group.target_assignment[key.member_id] = partitions_of_record(value.topic_partitions)  # type: ignore
    elif isinstance(key, ConsumerGroupTargetAssignmentMetadataKey):
        group.assignment_epoch = -1 if value is None else value.assignment_epoch  # type: ignore[union-attr]
        group.assignment_timestamp_ms = 0 if value is None else value.assignment_timestamp  # type: ignore
    elif isinstance(key, ConsumerGroupCurrentMemberAssignmentKey):
        _replay_current_assignment(group, key.member_id, value)
    elif isinstance(key, ConsumerGroupRegularExpressionKey):
        if value is None:
            group.resolved_regexes.pop(key.regular_expression, None)
        else:
            group.resolved_regexes[key.regular_expression] = ResolvedRegularExpression(
                frozenset(value.topics), value.version, value.timestamp)  # type: ignore[union-attr]
            group.last_regex_refresh_ms = value.timestamp  # type: ignore[union-attr]
            group.last_regex_version = value.version  # type: ignore[union-attr]
    return group


def written(group: ClassicGroup | ConsumerGroup | None, record: Record) -> ClassicGroup | ConsumerGroup | None:
    """A consumer group's record on a group of either protocol: a classic group without members is replaced by
    the consumer group (a consumer-group tombstone leaves a classic group as it is); the group's tombstone leaves
    its offsets only (`state.classic.replay.offsets_only`)."""
    if isinstance(group, ClassicGroup):
        if record.value is None:
            return group  # a consumer-group tombstone for a classic group: nothing of a consumer group is there
        group = classic_replay.replaced(group, ConsumerGroup(group.group_id), "a consumer group record")
    after = replay(group, record)
    return classic_replay.offsets_only(group) if after is None and group is not None else after


def then(group: Any, done: CoordinatorResult, more: CoordinatorResult) -> tuple[Any, CoordinatorResult]:
    """`state.handling.step.then` with the replay the consumer handlers' records need: a consumer group's own,
    a classic group's (the group they convert from or into: `state.classic.replay`), `HeartbeatOwed`."""
    return step.then(group, done, more, _either_protocol)


def _either_protocol(group: Any, record: Any) -> Any:
    kind = type(record)
    if kind is Record and not isinstance(record.key, CLASSIC_KEYS):
        return written(group, record)
    if kind is HeartbeatOwed:
        if group is None:
            raise ReplayError(f"{kind.__name__} for a group that does not exist")
        return heartbeat_owed(group, record)
    return classic_replay.replay(group, record)


def _replay_subscription(group: ConsumerGroup, member_id: str, value: object) -> None:
    old = group.members.get(member_id)
    if value is None:
        if old is None:
            return
        if old.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            raise IllegalStateError(f"Received a tombstone record to delete member {member_id} but did not receive "
                                    "its current-assignment tombstone first.")
        if member_id in group.target_assignment:
            raise IllegalStateError(f"Received a tombstone record to delete member {member_id} but did not receive "
                                    "its target-assignment tombstone first.")
        _update_member(group, old, None)
        return
    base = old if old is not None else ConsumerGroupMember(member_id)
    _update_member(group, old, replace(
        base,
        instance_id=value.instance_id,  # type: ignore[attr-defined]
        rack_id=value.rack_id,  # type: ignore[attr-defined]
        client_id=value.client_id,  # type: ignore[attr-defined]
        client_host=value.client_host,  # type: ignore[attr-defined]
        subscribed_topic_names=tuple(sorted(set(value.subscribed_topic_names))),  # type: ignore[attr-defined]
        subscribed_topic_regex=value.subscribed_topic_regex,  # type: ignore[attr-defined]
        rebalance_timeout_ms=value.rebalance_timeout_ms,  # type: ignore[attr-defined]
        server_assignor_name=value.server_assignor,  # type: ignore[attr-defined]
        classic_member_metadata=value.classic_member_metadata,  # type: ignore[attr-defined]
        principal=None if value.principal is UNSET else value.principal,  # type: ignore[attr-defined]
    ))


def _replay_current_assignment(group: ConsumerGroup, member_id: str, value: object) -> None:
    old = group.members.get(member_id)
    if value is None:
        if old is None:
            return
        new = replace(old, member_epoch=LEAVE_GROUP_MEMBER_EPOCH, previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                      assigned_partitions={}, partitions_pending_revocation={})
    else:
        base = old if old is not None else ConsumerGroupMember(member_id)
        epoch = value.member_epoch  # type: ignore[attr-defined]
        new = replace(
            base,
            member_epoch=epoch,
            previous_member_epoch=value.previous_member_epoch,  # type: ignore[attr-defined]
            state=MemberState.of(value.state),  # type: ignore[attr-defined]
            assigned_partitions=epochs_of_record(value.assigned_partitions, epoch),  # type: ignore[attr-defined]
            partitions_pending_revocation=epochs_of_record(
                value.partitions_pending_revocation, epoch),  # type: ignore[attr-defined]
        )
    _update_member(group, old, new)


def _update_member(group: ConsumerGroup, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None) -> None:
    """Put `new` in place of `old` (either may be None) and keep every index in step."""
    if old is not None:
        _release(group, old)
        group.subscribed_names.subtract(set(old.subscribed_topic_names))
        if old.regex is not None:
            group.subscribed_regexes[old.regex] -= 1
        if old.server_assignor_name is not None:
            group.server_assignors[old.server_assignor_name] -= 1
        if old.instance_id is not None and group.static_members.get(old.instance_id) == old.member_id:
            del group.static_members[old.instance_id]
        del group.members[old.member_id]
        if new is None:
            group.heartbeat_owed.discard(old.member_id)
    if new is not None:
        _hold(group, new)
        group.subscribed_names.update(set(new.subscribed_topic_names))
        if new.regex is not None:
            group.subscribed_regexes[new.regex] += 1
        if new.server_assignor_name is not None:
            group.server_assignors[new.server_assignor_name] += 1
        if new.instance_id is not None:
            group.static_members[new.instance_id] = new.member_id
        group.members[new.member_id] = new
    for counter in (group.subscribed_names, group.subscribed_regexes, group.server_assignors):
        for name in [n for n, count in counter.items() if count <= 0]:
            del counter[name]


def _release(group: ConsumerGroup, member: ConsumerGroupMember) -> None:
    for partitions in (member.assigned_partitions, member.partitions_pending_revocation):
        for topic, parts in partitions.items():
            held = group.partition_epochs.get(topic, {})
            for partition in parts:
                epoch = held.pop(partition, None)
                if epoch != member.member_epoch:
                    raise IllegalStateError(f"Cannot remove the epoch {member.member_epoch} from {topic}-{partition}"
                                            f" because the partition is held at epoch {epoch}.")
            if not held:
                group.partition_epochs.pop(topic, None)


def _hold(group: ConsumerGroup, member: ConsumerGroupMember) -> None:
    for partitions in (member.assigned_partitions, member.partitions_pending_revocation):
        for topic, parts in partitions.items():
            held = group.partition_epochs.setdefault(topic, {})
            for partition in parts:
                if partition in held:
                    raise IllegalStateError(f"Cannot set the epoch of {topic}-{partition} to {member.member_epoch}"
                                            f" because the partition is still held at epoch {held[partition]}.")
                held[partition] = member.member_epoch


def partitions_of_record(topics: tuple[TargetTopicPartitions, ...]) -> dict[str, frozenset[int]]:
    """A target-assignment record's partitions, per topic id."""
    out: dict[str, frozenset[int]] = {}
    for tp in topics:
        out[tp.topic_id] = out.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return out


def epochs_of_record(topics: tuple[MemberTopicPartitions, ...], default_epoch: int) -> dict[str, dict[int, int]]:
    """A current-assignment record's partitions with their assignment epochs; a record written before KIP-1251
    (no epochs) counts them assigned at `default_epoch`."""
    out: dict[str, dict[int, int]] = {}
    for tp in topics:
        epochs = tp.assignment_epochs
        if epochs is None or len(epochs) != len(tp.partitions):
            epochs = (default_epoch,) * len(tp.partitions)
        out.setdefault(tp.topic_id, {}).update(zip(tp.partitions, epochs))
    return {t: dict(sorted(p.items())) for t, p in out.items()}

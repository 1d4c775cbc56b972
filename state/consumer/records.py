"""Every consumer-group record, built in one place: Kafka's GroupCoordinatorRecordHelpers for record types 3-8 and
16. Handlers and tests build records through these functions, so a test's expected list reads like the log.

Topics are written in topic id order and partitions ascending, so the same group gives the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.consumer_group import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupRecordKey,
    ConsumerGroupRecordValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    MemberTopicPartitions,
    TargetTopicPartitions,
)
from state.consumer.member import ConsumerGroupMember, PartitionEpochs, Partitions
from state.records import encode_key
from state.wire import encode


@dataclass(frozen=True, slots=True)
class Record:
    key: ConsumerGroupRecordKey
    value: ConsumerGroupRecordValue | None
    """None: a tombstone."""

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_key(self.key), None if self.value is None else encode(self.value)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class ResolvedRegularExpression:
    """The topics a regular expression matched, at which metadata version, resolved when."""

    topics: frozenset[str]
    version: int
    timestamp_ms: int


# -- type 3: group epoch -------------------------------------------------------------------------------------------

def group_epoch(group_id: str, epoch: int, metadata_hash: int) -> Record:
    return Record(ConsumerGroupMetadataKey(group_id), ConsumerGroupMetadataValue(epoch=epoch,
                                                                                metadata_hash=metadata_hash))


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


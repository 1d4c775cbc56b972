"""The records every kind of group writes (`Record`, its keys, the offsets) and their constructors (Kafka's
GroupCoordinatorRecordHelpers); each kind's own are in its package (`state.classic.records`,
`state.consumer.records`, `state.share.records`).

Two kinds, both applied by replay (`state.runtime.replay.replay`, which sends each to its kind's):

- **Written records** (`Record`): what Kafka writes to `__consumer_offsets`, as JSON (classes:
  `schemas.messages`). Keys follow Kafka's: the key's `version` is the record type (1 = offset commit, keyed by
  group, topic and partition; 2 = group metadata, keyed by group), so a compacted topic keeps the latest of each.
  A None value is a tombstone. The group metadata value is Kafka's `GroupMetadataValue` plus a `directory` object
  (current state, protocol type, member count) that ListGroups is answered from; loading ignores `directory`, as
  Kafka would not have it. These, and only these, go to the records topic, byte for byte as before.
- **In-memory records** (`state.classic.records`: `MemberAdded`, `StateChanged`, `JoinParked`, ...; here only the
  two other kinds use too, `GroupLoaded` and `HeartbeatOwed`): the changes Kafka's classic coordinator
  makes to a group without writing anything (members joining, parked JoinGroup/SyncGroup, pending members, the
  assignment before it is persisted, the join phase's bookkeeping). Kafka mutates its `ClassicGroup` in place for
  these; here a handler appends one of these records instead and `replay` applies it, so a group changes in one
  way only, live and when loading. They are never written: what a records topic holds stays exactly Kafka's
  records, and a load rebuilds the membership from the last persisted group value (`GroupLoaded`), as Kafka does.

Each in-memory record is a small frozen value (a msgspec Struct: cheap to build, as a join appends many) naming one change in Kafka's words; `replay` is the only code that
reads them (`state.classic.replay`; `heartbeat_owed` below), and the group module (`state.classic.group`) keeps the invariants they rely on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import msgspec
from msgspec import Struct

from schemas.consumer_group import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRecordValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
from schemas.messages import (
    GROUP_METADATA_KEY_VERSION,
    OFFSET_COMMIT_KEY_VERSION,
    GroupMetadataKey,
    GroupMetadataRecord,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordKey,
    TxnOffsetCommitKey,
)
from schemas.share_group import SHARE_RECORD_VALUES, ShareGroupRecordValue
from state.offset_values import OffsetValue
from state.wire import encode

__all__ = ["GROUP_METADATA_KEY_VERSION", "OFFSET_COMMIT_KEY_VERSION", "Record", "decode_key"]

_KEY_DECODER = msgspec.json.Decoder(RecordKey)


@dataclass(frozen=True, slots=True)
class Record:
    """A written record: what the records topic gets (see the module's docstring)."""

    key: RecordKey
    value: GroupMetadataRecord | OffsetCommitValue | ConsumerGroupRecordValue | ShareGroupRecordValue | None

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_key(self.key), None if self.value is None else encode(self.value)


def encode_key(key: RecordKey) -> bytes:
    """A key as every release wrote it, non-ASCII escaped: the topic is compacted by these bytes, so they must not
    change when the encoder does."""
    raw = encode(key)
    return raw if raw.isascii() else json.dumps(msgspec.to_builtins(key), separators=(",", ":")).encode()


def decode_key(raw: bytes | None) -> RecordKey:
    """The key of a records-topic record; msgspec.DecodeError when it is not one of ours."""
    return _KEY_DECODER.decode(raw if raw is not None else b"")


_VALUES: dict[type, msgspec.json.Decoder] = {key: msgspec.json.Decoder(value) for key, value in (
    (OffsetCommitKey, OffsetCommitValue),
    (TxnOffsetCommitKey, OffsetCommitValue),
    (GroupMetadataKey, GroupMetadataRecord),
    (ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    (ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
    (ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
    (ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue),
    (ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue),
    (ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue),
    (ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue),
    *SHARE_RECORD_VALUES.items(),
)}
"""The value's class of each key's class."""


def decode_record(raw_key: bytes | None, raw_value: bytes | None) -> Record:
    """A records-topic record as written; msgspec.DecodeError when it is not one of ours."""
    key = decode_key(raw_key)
    if raw_value is None:
        return Record(key, None)
    return Record(key, _VALUES[type(key)].decode(raw_value))


def group_tombstone(group_id: str) -> Record:
    return Record(GroupMetadataKey(group_id), None)


def offset_record(group_id: str, topic: str, partition: int, value: OffsetValue) -> Record:
    return Record(OffsetCommitKey(group_id, topic, partition), OffsetCommitValue(
        value.offset, value.leader_epoch, value.metadata, value.commit_timestamp, value.expire_timestamp))


def offset_tombstone(group_id: str, topic: str, partition: int) -> Record:
    return Record(OffsetCommitKey(group_id, topic, partition), None)


def pending_offset_record(group_id: str, producer_id: int, topic: str, partition: int,
                          value: OffsetValue) -> Record:
    """A transactional offset, pending until its transaction ends (`schemas.messages.TxnOffsetCommitKey`)."""
    return Record(TxnOffsetCommitKey(group_id, producer_id, topic, partition), OffsetCommitValue(
        value.offset, value.leader_epoch, value.metadata, value.commit_timestamp, None))


def pending_offset_tombstone(group_id: str, producer_id: int, topic: str, partition: int) -> Record:
    return Record(TxnOffsetCommitKey(group_id, producer_id, topic, partition), None)


def offset_value_of(value: OffsetCommitValue) -> OffsetValue:
    return OffsetValue(value.offset, value.leader_epoch, value.metadata, value.commit_timestamp,
                       value.expire_timestamp)


# -- in-memory records: applied by replay, never written -----------------------------------------------------------

class GroupLoaded(Struct, frozen=True, gc=False):
    """The group's membership as its last persisted value left it (Kafka's replay of a GroupMetadataValue when it
    loads `__consumer_offsets`): members, generation, protocol and leader; Stable with members, else Empty."""

    value: GroupMetadataValue


class HeartbeatOwed(Struct, frozen=True, gc=False):
    """A consumer group's member owes the coordinator a heartbeat (`owed`), or no longer does: a gateway answered
    its heartbeat from the group's view, and the coordinator, checking it, would have answered otherwise (the view
    was stale, or the topics changed). Its next heartbeat must reach the coordinator, so its view leaves it out
    (`state.views.published`; the fast path, docs/gateway.md)."""

    member_id: str
    owed: bool


def heartbeat_owed(group, record: HeartbeatOwed):
    """The replay of `HeartbeatOwed`, of a consumer or a share group (both kinds' replays send it here)."""
    if record.owed:
        group.heartbeat_owed.add(record.member_id)
    else:
        group.heartbeat_owed.discard(record.member_id)
    return group

"""The records every kind of group writes (`Record`, its keys, the offsets), the classic group's, and their
constructors (Kafka's GroupCoordinatorRecordHelpers); a consumer group's own are in `state.consumer.records`, a
share group's in `state.share.records`.

Two kinds, both applied by the one `state.runtime.replay.replay`:

- **Written records** (`Record`): what Kafka writes to `__consumer_offsets`, as JSON (classes:
  `schemas.messages`). Keys follow Kafka's: the key's `version` is the record type (1 = offset commit, keyed by
  group, topic and partition; 2 = group metadata, keyed by group), so a compacted topic keeps the latest of each.
  A None value is a tombstone. The group metadata value is Kafka's `GroupMetadataValue` plus a `directory` object
  (current state, protocol type, member count) that ListGroups is answered from; loading ignores `directory`, as
  Kafka would not have it. These, and only these, go to the records topic, byte for byte as before.
- **In-memory records** (`MemberAdded`, `StateChanged`, `JoinParked`, ...): the changes Kafka's classic coordinator
  makes to a group without writing anything (members joining, parked JoinGroup/SyncGroup, pending members, the
  assignment before it is persisted, the join phase's bookkeeping). Kafka mutates its `ClassicGroup` in place for
  these; here a handler appends one of these records instead and `replay` applies it, so a group changes in one
  way only, live and when loading. They are never written: what a records topic holds stays exactly Kafka's
  records, and a load rebuilds the membership from the last persisted group value (`GroupLoaded`), as Kafka does.

Each in-memory record is a small frozen value (a msgspec Struct: cheap to build, as a join appends many) naming one change in Kafka's words; `replay` is the only code that
reads them (`state.runtime.replay`), and the group module (`state.classic.group`) keeps the invariants they rely on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import msgspec
from msgspec import UNSET, Struct

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
    GroupDirectoryEntry,
    GroupMetadataKey,
    GroupMetadataRecord,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordKey,
    TxnOffsetCommitKey,
)
from schemas.share_group import SHARE_RECORD_VALUES, ShareGroupRecordValue
from state.classic.group import ClassicGroup, GroupState, Member, Parked
from state.offsets.values import OffsetValue
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


def kafka_group_value(group: ClassicGroup, assignments: dict[str, str] | None = None) -> GroupMetadataValue:
    """Kafka's GroupMetadataValue of the group as it is now (members' subscription = selected protocol's)."""
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation,
        protocol=group.protocol_name,
        leader=group.leader,
        current_state_timestamp=group.state_timestamp,
        members=tuple(MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata(group.protocol_name),
            assignment=m.assignment if assignments is None else assignments.get(m.member_id, ""),
            # our extension, so that a load keeps the member's binding
            principal=UNSET if m.principal is None else m.principal,
        ) for m in group.members.values()),
    )


def directory_changed(group: ClassicGroup) -> bool:
    """Whether the group's state or protocol type differs from its last group metadata record's `directory`.
    (A GroupState is the string it names, so it compares with the stored one without going through `.value`:
    this runs after every request.)"""
    directory = group.directory
    return directory is None or directory[0] != group.state or directory[1] != (group.protocol_type or "")


def group_record(group: ClassicGroup, persist: bool = False) -> Record:
    """The group metadata record: the directory entry of the group now, plus Kafka's GroupMetadataValue, either
    the group as it is now (`persist`: where Kafka's storeGroup writes) or as last persisted (a state change Kafka
    would not write, so that a load still comes back to what Kafka would load)."""
    value = kafka_group_value(group) if persist or group.persisted is None else group.persisted
    directory = GroupDirectoryEntry(group.state.value, group.protocol_type or "", len(group.members))
    return Record(GroupMetadataKey(group.group_id), GroupMetadataRecord(
        *msgspec.structs.astuple(value), directory=directory))  # type: ignore[call-arg]


def persisted_of(record: GroupMetadataRecord) -> GroupMetadataValue:
    """Kafka's part of a group metadata record."""
    return GroupMetadataValue(*msgspec.structs.astuple(record)[:-1])


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

class GroupCreated(Struct, frozen=True, gc=False):
    """A new Empty group at generation 0 (Kafka's getOrMaybeCreateClassicGroup)."""

    group_id: str
    timestamp: int


class GroupLoaded(Struct, frozen=True, gc=False):
    """The group's membership as its last persisted value left it (Kafka's replay of a GroupMetadataValue when it
    loads `__consumer_offsets`): members, generation, protocol and leader; Stable with members, else Empty."""

    value: GroupMetadataValue


class MemberAdded(Struct, frozen=True, gc=False):
    member: Member


class MemberUpdated(Struct, frozen=True, gc=False):
    """A member re-joined: its protocols, timeouts and partition counts as its JoinGroup gives them, the JoinGroup
    parked. (Replay sets these on the group's member; the lists are never changed in place.)"""

    member_id: str
    protocols: list[tuple[str, str]]
    rebalance_timeout_ms: int
    session_timeout_ms: int
    topic_partitions: list[tuple[str, int]]
    join: Parked


class MemberRemoved(Struct, frozen=True, gc=False):
    """A member, or a pending member, leaves the group (with its pending-sync mark)."""

    member_id: str


class StaticMemberReplaced(Struct, frozen=True, gc=False):
    """KIP-345: a restarted static member takes over the old member id's place (leader and pending sync too)."""

    old_member_id: str
    member: Member


class PendingMemberAdded(Struct, frozen=True, gc=False):
    """KIP-394: a member id handed out with MEMBER_ID_REQUIRED, not a member until it joins with it; `id_counter`
    as `MemberIdIssued`'s (the id was just issued)."""

    member_id: str
    id_counter: int


class MemberIdIssued(Struct, frozen=True, gc=False):
    """The counter that makes generated member ids unique within the group (see `ClassicGroup.member_id_for`)."""

    id_counter: int


class JoinParked(Struct, frozen=True, gc=False):
    """A member's JoinGroup parked until the join phase completes (None: answered)."""

    member_id: str
    parked: Parked | None


class SyncParked(Struct, frozen=True, gc=False):
    """A member's SyncGroup parked until the leader's assignment arrives: the member no longer holds the sync
    phase up (it leaves the pending-sync set)."""

    member_id: str
    parked: Parked


class ParkedSyncsAnswered(Struct, frozen=True, gc=False):
    """Every parked SyncGroup was answered (with the assignment or an error)."""


class StateChanged(Struct, frozen=True, gc=False):
    """A transition, checked against `state.classic.group.VALID_PREVIOUS` when replayed."""

    state: GroupState
    timestamp: int


class JoinPhaseChanged(Struct, frozen=True, gc=False):
    """KIP-134's bookkeeping of the initial rebalance delay."""

    new_member_added: bool
    initial_delay: tuple[int, int] | None


class LeaderElected(Struct, frozen=True, gc=False):
    member_id: str


class GenerationStarted(Struct, frozen=True, gc=False):
    """The join phase completed: the next generation, its protocol (None without members) and the subscribed
    topics that follow from them."""

    generation: int
    protocol_name: str | None


class JoinCompleted(Struct, frozen=True, gc=False):
    """Every member's JoinGroup was answered and nobody is new any more; `await_sync`: every member owes a
    SyncGroup (the pending-sync set), unless the coordinator assigned itself."""

    await_sync: bool


class PendingSyncCleared(Struct, frozen=True, gc=False):
    """Nobody owes a SyncGroup any more (a new join phase began, or one completed)."""


class SyncReceived(Struct, frozen=True, gc=False):
    """The member sent its SyncGroup: it no longer holds the sync phase up."""

    member_id: str


class AssignmentsSet(Struct, frozen=True, gc=False):
    """Every member's assignment: from this map, empty bytes for a member it leaves out."""

    assignments: dict[str, str]


class HeartbeatOwed(Struct, frozen=True, gc=False):
    """A consumer group's member owes the coordinator a heartbeat (`owed`), or no longer does: a gateway answered
    its heartbeat from the group's view, and the coordinator, checking it, would have answered otherwise (the view
    was stale, or the topics changed). Its next heartbeat must reach the coordinator, so its view leaves it out
    (`state.views.published`; the fast path, docs/gateway.md)."""

    member_id: str
    owed: bool


InMemoryRecord = (GroupCreated | GroupLoaded | MemberAdded | MemberUpdated | MemberRemoved | StaticMemberReplaced
                  | PendingMemberAdded | MemberIdIssued | JoinParked | SyncParked | ParkedSyncsAnswered
                  | StateChanged | JoinPhaseChanged | LeaderElected | GenerationStarted | JoinCompleted
                  | PendingSyncCleared | SyncReceived | AssignmentsSet | HeartbeatOwed)
AnyRecord = Record | InMemoryRecord

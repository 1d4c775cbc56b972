"""The records-topic format: what Kafka writes to `__consumer_offsets`, as JSON (classes: `schemas.messages`).

Keys follow Kafka's: the key's `version` is the record type (1 = offset commit, keyed by group, topic and
partition; 2 = group metadata, keyed by group), so a compacted topic keeps the latest of each. A None value is a
tombstone. The group metadata value is Kafka's `GroupMetadataValue` plus a `directory` object (current state,
protocol type, member count) that ListGroups is answered from; loading ignores `directory`, as Kafka would not
have it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import msgspec
from msgspec import UNSET

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
)
from state.group import ClassicGroup, OffsetValue
from state.wire import encode

__all__ = ["GROUP_METADATA_KEY_VERSION", "OFFSET_COMMIT_KEY_VERSION", "Record", "decode_key"]

_KEY_DECODER = msgspec.json.Decoder(RecordKey)


@dataclass(frozen=True, slots=True)
class Record:
    key: RecordKey
    value: GroupMetadataRecord | OffsetCommitValue | None

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


def directory_of(group: ClassicGroup) -> list:
    return [group.state.value, group.protocol_type or ""]


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


def offset_value_of(value: OffsetCommitValue) -> OffsetValue:
    return OffsetValue(value.offset, value.leader_epoch, value.metadata, value.commit_timestamp,
                       value.expire_timestamp)

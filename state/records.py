"""The records-topic format: what Kafka writes to `__consumer_offsets`, as JSON.

Keys follow Kafka's: the key's `version` is the record type (1 = offset commit, keyed by group, topic and
partition; 2 = group metadata, keyed by group), so a compacted topic keeps the latest of each. A None value is a
tombstone. The group metadata value is Kafka's `GroupMetadataValue` plus a `directory` object (current state,
protocol type, member count) that ListGroups is answered from; loading ignores `directory`, as Kafka would not
have it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from state.group import ClassicGroup, OffsetValue

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2


@dataclass(frozen=True, slots=True)
class Record:
    key: dict
    value: dict | None

    def encode(self) -> tuple[bytes, bytes | None]:
        return dumps(self.key), None if self.value is None else dumps(self.value)


def dumps(obj: object) -> bytes:
    """The one JSON encoding of everything we emit: insertion-ordered keys, compact, ASCII-escaped."""
    return json.dumps(obj, separators=(",", ":")).encode()


def group_key(group_id: str) -> dict:
    return {"version": GROUP_METADATA_KEY_VERSION, "group": group_id}


def offset_key(group_id: str, topic: str, partition: int) -> dict:
    return {"version": OFFSET_COMMIT_KEY_VERSION, "group": group_id, "topic": topic, "partition": partition}


def kafka_group_value(group: ClassicGroup, assignments: dict[str, str] | None = None) -> dict:
    """Kafka's GroupMetadataValue of the group as it is now (members' subscription = selected protocol's)."""
    members = []
    for m in group.members.values():
        member = {
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "rebalance_timeout": m.rebalance_timeout_ms,
            "session_timeout": m.session_timeout_ms,
            "subscription": m.metadata(group.protocol_name),
            "assignment": m.assignment if assignments is None else assignments.get(m.member_id, ""),
        }
        if m.principal is not None:  # our extension, so that a load keeps the member's binding
            member["principal"] = m.principal
        members.append(member)
    return {
        "protocol_type": group.protocol_type or "",
        "generation": group.generation,
        "protocol": group.protocol_name,
        "leader": group.leader,
        "current_state_timestamp": group.state_timestamp,
        "members": members,
    }


def directory_of(group: ClassicGroup) -> list:
    return [group.state.value, group.protocol_type or ""]


def group_record(group: ClassicGroup, persist: bool = False) -> Record:
    """The group metadata record: the directory entry of the group now, plus Kafka's GroupMetadataValue, either
    the group as it is now (`persist`: where Kafka's storeGroup writes) or as last persisted (a state change Kafka
    would not write, so that a load still comes back to what Kafka would load)."""
    value = kafka_group_value(group) if persist or group.persisted is None else dict(group.persisted)
    value["directory"] = {
        "group_state": group.state.value,
        "protocol_type": group.protocol_type or "",
        "member_count": len(group.members),
    }
    return Record(group_key(group.group_id), value)


def group_tombstone(group_id: str) -> Record:
    return Record(group_key(group_id), None)


def offset_record(group_id: str, topic: str, partition: int, value: OffsetValue) -> Record:
    return Record(offset_key(group_id, topic, partition), {
        "offset": value.offset,
        "leader_epoch": value.leader_epoch,
        "metadata": value.metadata,
        "commit_timestamp": value.commit_timestamp,
        "expire_timestamp": value.expire_timestamp,
    })


def offset_tombstone(group_id: str, topic: str, partition: int) -> Record:
    return Record(offset_key(group_id, topic, partition), None)


def offset_value_of(value: dict) -> OffsetValue:
    return OffsetValue(value["offset"], value["leader_epoch"], value["metadata"], value["commit_timestamp"],
                       value["expire_timestamp"])

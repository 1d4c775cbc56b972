"""The driver's view of the groups, for the operator: how many are in each state, and which group changed state.

Both come from the records topic, as ListGroups does (`streaming.directory`): every state change of a group writes a
group metadata record whose `directory` part names the state the group is now in and its member count
(`state.classic.records.group_record`; a consumer group's group-epoch record, `state.consumer.group.directory_record`). The counts are `state.views.directory.GroupDirectory`'s, the same rule ListGroups answers
with; the changes are the records whose state differs from the group's previous one.

The metrics listener follows the topic after each micro-batch, off the batch's path, so a line appears once the
batch that made the change has committed its output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import msgspec
from msgspec import UNSET

from schemas.base import Int32
from schemas.consumer_group import ConsumerGroupMetadataKey, ConsumerGroupMetadataValue
from schemas.messages import GroupDirectoryEntry, GroupMetadataKey
from state.api import GroupDirectory, GroupState, decode_key

GENERATION_WRITTEN = frozenset({GroupState.STABLE.value, GroupState.EMPTY.value})
"""States whose group record carries the group's current generation: Kafka's storeGroup writes the group when a
rebalance completes (Stable) or ends with no members (Empty); the records of other state changes repeat the group as
it was last stored, so their `generation` is the previous one."""


class _GroupState(msgspec.Struct):
    """The part of a group metadata record the watch reads (`GroupMetadataRecord`'s fields of these names); msgspec
    skips the rest: decoding whole records of 10-member groups took 1.4 s per 100,000, this 0.1 s (a rebuild seeds
    the watch with every group's)."""

    generation: Int32
    directory: GroupDirectoryEntry


_GROUP = msgspec.json.Decoder(_GroupState)
_CONSUMER_GROUP = msgspec.json.Decoder(ConsumerGroupMetadataValue)


@dataclass(frozen=True, slots=True)
class GroupChange:
    """A group entered `state` (None: the group was deleted); `generation` only where the record carries it."""

    group_id: str
    state: str | None
    members: int = 0
    generation: int | None = None

    def line(self) -> str:
        """`group billing: Stable, generation 4, 3 members` (a consumer group's generation is its group epoch)."""
        if self.state is None:
            return f"group {self.group_id}: deleted"
        generation = "" if self.generation is None else f", generation {self.generation}"
        members = f"{self.members} member" + ("" if self.members == 1 else "s")
        return f"group {self.group_id}: {self.state}{generation}, {members}"


class GroupWatch:
    """Groups by state and state changes, from records-topic records fed to `apply` (or read by `poll`)."""

    def __init__(self, topic: str | None = None, config: Mapping[str, Any] | None = None,
                 reader: str = "kafka-python") -> None:
        """`topic` and `config` (kafka-python settings) for `poll`, which reads with `reader`
        (`streaming.kafka_io.kafka_clients.catch_up`'s `client`); a watch fed by `apply` alone needs neither."""
        self.topic = topic
        self.config = config
        self.reader = reader
        self.directory = GroupDirectory()
        self._states: dict[str, str] = {}
        self._positions: dict[int, int] = {}

    def apply(self, key: bytes, value: bytes | None) -> GroupChange | None:
        """Take one records-topic record; the change it makes, if it is a group record that changes the state.
        Records that are not group metadata, or unreadable, change nothing (as for ListGroups). The key is decoded
        once for the directory and the watch (a million members' records seed the watch at a rebuild)."""
        try:
            k = decode_key(key)
        except msgspec.DecodeError:
            return None
        self.directory.apply_keyed(k, value)
        try:
            if not isinstance(k, (GroupMetadataKey, ConsumerGroupMetadataKey)):
                return None
            if value is None:
                return GroupChange(k.group_id, None) if self._states.pop(k.group_id, None) is not None else None
            if isinstance(k, ConsumerGroupMetadataKey):
                epoch = _CONSUMER_GROUP.decode(value)
                if epoch.directory is UNSET:
                    return None  # an epoch bump Kafka writes; the state comes with the next directory record
                state, members, generation = epoch.directory.group_state, epoch.directory.member_count, epoch.epoch
            else:
                group = _GROUP.decode(value)
                state, members = group.directory.group_state, group.directory.member_count
                generation = group.generation if state in GENERATION_WRITTEN else None
        except msgspec.DecodeError:
            return None
        if self._states.get(k.group_id) == state:
            return None
        self._states[k.group_id] = state
        return GroupChange(k.group_id, state, members, generation)

    def poll(self) -> list[GroupChange]:
        """Read the records topic up to its end; the changes since the last poll, in the order they were written
        (per partition: a group's records are all in one partition)."""
        from streaming.kafka_io.kafka_clients import catch_up

        if self.topic is None or self.config is None:
            raise ValueError("a GroupWatch without a topic is fed by apply()")
        changes: list[GroupChange] = []

        def take(record) -> None:
            change = self.apply(record.key, record.value)
            if change is not None:
                changes.append(change)

        catch_up("group-watch", self.config, self.topic, self._positions, take, self.reader)
        return changes

    def seed(self, records: Iterable[tuple[bytes, bytes | None]], positions: Mapping[int, int]) -> None:
        """Start from records the driver has read already (a rebuild's: the latest per key, in topic order) and
        the positions where that read ended, instead of reading the topic again: `poll` continues from there."""
        for key, value in records:
            self.apply(key, value)
        self._positions.update(positions)

    def count_by_state(self) -> dict[str, int]:
        return self.directory.count_by_state()

"""How a group changes: `replay(group, record)`, the only code that changes a group.

Handlers (`state.runtime.step`) return records; the step loop replays them (`state.runtime.step.applied`), and a
handler that reads its own writes replays a sub-result on the way (`then`). Written records
(`state.records.Record`) also go to the records topic; in-memory ones (the rest of `state.records`) do not: they
carry what Kafka's classic coordinator keeps only in memory.

`replay` is the only code that changes a group: live, when a handler appends, and when a group is loaded from its
records (`state.runtime.load`), where the same function replays the written records and then `GroupLoaded`. The transition
table (`state.classic.group.VALID_PREVIOUS`) is checked on every `StateChanged`, loading included.

A group is of either kind, a `ClassicGroup` or a KIP-848 `ConsumerGroup`, and its records say which, as in Kafka:
a consumer-group record (`state.consumer.replay`) creates a consumer group, or replaces a classic group that has
no members (the "simple" group that only holds offsets, which a conversion between the protocols leaves once it
has tombstoned the old group); a classic group metadata value likewise replaces a consumer group without members.
A group's tombstone removes its metadata, not its offsets (Kafka keeps offsets apart from groups): a group left
with offsets only is a simple classic group, as Kafka creates one to hold committed offsets.
"""

from __future__ import annotations

from typing import Callable

from schemas.messages import GroupMetadataKey, OffsetCommitKey
from state.classic import replay as classic_replay
from state.classic.group import ClassicGroup
from state.consumer import replay as consumer_replay
from state.consumer.group import ConsumerGroup
from state.errors import ReplayError
from state.records import AnyRecord, GroupCreated, HeartbeatOwed, Record, kafka_group_value, offset_value_of, persisted_of


# -- replay ------------------------------------------------------------------------------------------------------

def replay(group: ClassicGroup | None, record: AnyRecord) -> ClassicGroup | None:
    """Apply one record of this group: the group after it (None: the group metadata tombstone removed it)."""
    kind = type(record)
    apply = _REPLAY.get(kind)
    if apply is None:
        raise ReplayError(f"no replay for a record of type {kind.__name__}")
    if group is None and kind not in _CREATING:
        raise ReplayError(f"{kind.__name__} for a group that does not exist")
    return apply(group, record)


Group = ClassicGroup | ConsumerGroup


def _written(group: Group | None, record: Record) -> Group | None:
    key, value = record.key, record.value
    if isinstance(key, GroupMetadataKey):
        if group is None:
            raise ReplayError("a group metadata record for a group that does not exist")
        if isinstance(group, ConsumerGroup):
            group = _replaced(group, ClassicGroup(group.group_id), "a classic group metadata record")
        if value is None:
            return _offsets_only(group)
        group.persisted = persisted_of(value)  # type: ignore[arg-type]
        group.directory = [value.directory.group_state, value.directory.protocol_type]  # type: ignore[union-attr]
        return group
    if isinstance(key, OffsetCommitKey):
        if group is None:
            raise ReplayError("an offset record for a group that does not exist")
        tp = (key.topic, key.partition)
        if value is None:
            group.offsets.pop(tp, None)
        else:
            group.offsets[tp] = offset_value_of(value)  # type: ignore[arg-type]
        return group
    # a consumer group's record
    if isinstance(group, ClassicGroup):
        if value is None:
            return group  # a consumer-group tombstone for a classic group: nothing of a consumer group is there
        group = _replaced(group, ConsumerGroup(group.group_id), "a consumer group record")
    after = consumer_replay.replay(group, record)
    return _offsets_only(group) if after is None and group is not None else after


def _replaced(old: Group, new: Group, what: str) -> Group:
    """`new` (empty) in place of `old`, a group without members, with its offsets and the runtime's timers and
    clock; a group with members cannot be replaced by a record (a corrupt log, or a handler's bug)."""
    if old.members or (isinstance(old, ClassicGroup) and (old.protocol_type or old.pending_members)):
        raise ReplayError(f"{what} for group {old.group_id}, which has members of the other protocol")
    new.offsets, new.timers, new.clock_ms = old.offsets, old.timers, old.clock_ms
    if isinstance(new, ClassicGroup):
        new.persisted = kafka_group_value(new)
    return new


def _offsets_only(group: Group) -> ClassicGroup | None:
    """What a group's tombstone leaves: nothing, or the simple group of its remaining offsets."""
    if not group.offsets:
        return None
    simple = ClassicGroup(group.group_id, offsets=group.offsets, timers=group.timers, clock_ms=group.clock_ms)
    simple.persisted = kafka_group_value(simple)
    return simple


_CREATING: frozenset[type] = frozenset({GroupCreated, Record})
"""The records that may apply to no group: they create one (a written record checks its own key: a consumer group's
value record creates the group, any other needs it)."""

_REPLAY: dict[type, Callable] = {Record: _written, **classic_replay.REPLAY, HeartbeatOwed: consumer_replay.heartbeat_owed}
"""By record type: a written record by its key (`_written`), an in-memory one of either kind by its type."""


__all__ = ["ReplayError", "replay"]

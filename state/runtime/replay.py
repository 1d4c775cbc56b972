"""How a group changes: `replay(group, record)`, the only code that changes a group.

Handlers (`state.runtime.step`) return records; the step loop replays them (`state.runtime.step.applied`), and a
handler that reads its own writes replays a sub-result on the way (`then`). Written records
(`state.records.Record`) also go to the records topic; in-memory ones (the rest of `state.records`) do not: they
carry what Kafka's classic coordinator keeps only in memory.

The same function replays a group's written records when it is loaded (`state.runtime.load`), then `GroupLoaded`.
The transition table (`state.classic.group.VALID_PREVIOUS`) is checked on every `StateChanged`, loading included.

A group is of one kind, a `ClassicGroup`, a KIP-848 `ConsumerGroup` or a KIP-932 `ShareGroup`, and its records say
which, as in Kafka (a share group replaces only a classic group with nothing in it, and nothing replaces it):
a consumer-group record (`state.consumer.replay`) creates a consumer group, or replaces a classic group that has
no members (the "simple" group that only holds offsets, which a conversion between the protocols leaves once it
has tombstoned the old group); a classic group metadata value likewise replaces a consumer group without members.
A group's tombstone removes its metadata, not its offsets (Kafka keeps offsets apart from groups): a group left
with offsets only is a simple classic group, as Kafka creates one to hold committed offsets. The group id's configs
(record version 101) are the runtime's, kept beside the group by the step loop.
"""

from __future__ import annotations

from typing import Callable

from schemas.messages import GroupMetadataKey, OffsetCommitKey, TxnOffsetCommitKey
from state.classic import replay as classic_replay
from state.classic.group import ClassicGroup
from state.consumer import replay as consumer_replay
from state.consumer.group import ConsumerGroup
from state.errors import ReplayError
from state.offset_values import PendingOffset
from state.classic import records as classic_records
from state.classic.records import GroupCreated, kafka_group_value, persisted_of
from state.records import GroupLoaded, HeartbeatOwed, Record, offset_value_of
from schemas.share_group import GroupConfigKey, ShareGroupRecordKey
from state.share import replay as share_replay
from state.share.group import ShareGroup
from state.share.records import SharePartitionWanted


InMemoryRecord = (GroupCreated | GroupLoaded | classic_records.MemberAdded | classic_records.MemberUpdated
                  | classic_records.MemberRemoved | classic_records.StaticMemberReplaced
                  | classic_records.PendingMemberAdded | classic_records.MemberIdIssued | classic_records.JoinParked
                  | classic_records.SyncParked | classic_records.ParkedSyncsAnswered | classic_records.StateChanged
                  | classic_records.JoinPhaseChanged | classic_records.LeaderElected
                  | classic_records.GenerationStarted | classic_records.JoinCompleted
                  | classic_records.PendingSyncCleared | classic_records.SyncReceived | classic_records.AssignmentsSet
                  | HeartbeatOwed)
"""The records `replay` applies that are never written (`state.records` says why there are any)."""
AnyRecord = Record | InMemoryRecord

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


Group = ClassicGroup | ConsumerGroup | ShareGroup

_SHARE_KEYS = frozenset(ShareGroupRecordKey.__args__) - {GroupConfigKey}  # type: ignore[attr-defined]


def _written(group: Group | None, record: Record) -> Group | None:
    key, value = record.key, record.value
    if type(key) is GroupConfigKey:
        return group  # the group id's configs: the runtime's, kept beside the group (`state.batch`)
    if isinstance(group, ShareGroup) and isinstance(key, (GroupMetadataKey, OffsetCommitKey, TxnOffsetCommitKey)):
        raise ReplayError(f"a classic group's record for share group {group.group_id}")
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
        offsets = group.offsets
        if value is None:  # Kafka's: the partition's committed offset and every pending one go
            offsets.pop(tp, None)
            for pending in [k for k in offsets.pending if k[1:] == tp]:
                offsets.drop_pending(pending)
        else:
            offsets[tp] = offset_value_of(value)  # type: ignore[arg-type]
            for pending in [v for k, v in offsets.pending.items() if k[1:] == tp and not v.superseded]:
                pending.superseded = True  # Kafka: the later record offset stays committed
                offsets.changed = True
        return group
    if isinstance(key, TxnOffsetCommitKey):
        if group is None:
            raise ReplayError("a transactional offset record for a group that does not exist")
        pending_key = (key.producer_id, key.topic, key.partition)
        if value is None:
            group.offsets.drop_pending(pending_key)
        else:
            group.offsets.set_pending(pending_key, PendingOffset(offset_value_of(value)))  # type: ignore[arg-type]
        return group
    if type(key) in _SHARE_KEYS:
        return _share_written(group, record)
    # a consumer group's record
    if isinstance(group, ShareGroup):
        if value is None:
            return group
        raise ReplayError(f"a consumer group record for share group {group.group_id}")
    if isinstance(group, ClassicGroup):
        if value is None:
            return group  # a consumer-group tombstone for a classic group: nothing of a consumer group is there
        group = _replaced(group, ConsumerGroup(group.group_id), "a consumer group record")
    after = consumer_replay.replay(group, record)
    return _offsets_only(group) if after is None and group is not None else after


def _share_written(group: Group | None, record: Record) -> Group | None:
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
    return share_replay.replay(group, record)


def _share_wanted(group: ShareGroup, record: SharePartitionWanted) -> ShareGroup:
    return share_replay.replay(group, record)  # type: ignore[return-value]


def _heartbeat_owed(group: ConsumerGroup | ShareGroup, record: HeartbeatOwed) -> ConsumerGroup | ShareGroup:
    """The fast path's record, of a consumer or a share group: a member owes the coordinator a heartbeat."""
    if record.owed:
        group.heartbeat_owed.add(record.member_id)
    else:
        group.heartbeat_owed.discard(record.member_id)
    return group


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
    """What a group's tombstone leaves: nothing, or the simple group of its remaining offsets (pending ones too)."""
    if not group.offsets and not group.offsets.pending:
        return None
    simple = ClassicGroup(group.group_id, offsets=group.offsets, timers=group.timers, clock_ms=group.clock_ms)
    simple.persisted = kafka_group_value(simple)
    return simple


_CREATING: frozenset[type] = frozenset({GroupCreated, Record})
"""The records that may apply to no group: they create one (a written record checks its own key: a consumer group's
value record creates the group, any other needs it)."""

_REPLAY: dict[type, Callable] = {Record: _written, **classic_replay.REPLAY, HeartbeatOwed: _heartbeat_owed,
                                  SharePartitionWanted: _share_wanted}
"""By record type: a written record by its key (`_written`), an in-memory one of either kind by its type."""


__all__ = ["ReplayError", "replay"]

"""How a group of any kind changes: `replay(group, record)` sends each record to its kind's replay (`state.classic.
replay`, `state.consumer.replay`, `state.share.replay`), the only code that changes a group.

Handlers (`state.handling.step`) return records; the step loop replays them with this replay (`applied`, `then`
below), and a handler that reads its own writes replays a sub-result on the way with its kind's (`then` of its
kind's replay module). Written records
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

from typing import Any

from schemas.share_group import GroupConfigKey, ShareGroupRecordKey
from state.classic import records as classic_records
from state.classic import replay as classic_replay
from state.classic.group import ClassicGroup
from state.classic.records import CLASSIC_KEYS, GroupCreated
from state.consumer import replay as consumer_replay
from state.consumer.group import ConsumerGroup
from state.errors import ReplayError
from state.handling import step
from state.handling.step import CoordinatorResult
from state.records import GroupLoaded, HeartbeatOwed, Record, heartbeat_owed
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
                  | HeartbeatOwed | SharePartitionWanted)
"""The records `replay` applies that are never written (`state.records` says why there are any)."""
AnyRecord = Record | InMemoryRecord

Group = ClassicGroup | ConsumerGroup | ShareGroup

# -- replay ------------------------------------------------------------------------------------------------------

def replay(group: Group | None, record: AnyRecord) -> Group | None:
    """Apply one record of this group: the group after it (None: the group metadata tombstone removed it)."""
    kind = type(record)
    if kind is Record:
        return _written(group, record)  # type: ignore[arg-type]
    if kind is HeartbeatOwed or kind is SharePartitionWanted:
        if group is None:
            raise ReplayError(f"{kind.__name__} for a group that does not exist")
        if kind is HeartbeatOwed:
            return heartbeat_owed(group, record)
        return share_replay.replay(group, record)  # type: ignore[arg-type]
    return classic_replay.replay(group, record)  # a classic group's in-memory record (or none at all)


def applied(group: Any, result: CoordinatorResult) -> Any:
    """`state.handling.step.applied` with this replay: how the step loop takes a result of any kind's handler."""
    return step.applied(group, result, replay)


def then(group: Any, done: CoordinatorResult, more: CoordinatorResult) -> tuple[Any, CoordinatorResult]:
    """`state.handling.step.then` with this replay, for what the runtime composes around any kind's handlers."""
    return step.then(group, done, more, replay)


_SHARE_KEYS = frozenset(ShareGroupRecordKey.__args__) - {GroupConfigKey}  # type: ignore[attr-defined]


def _written(group: Group | None, record: Record) -> Group | None:
    """A written record, by its key: the group id's configs are the runtime's, kept beside the group by the step
    loop (`state.batch`); a classic group's metadata and every kind's offsets go to the classic replay, a share
    group's records to the share replay, the rest (a consumer group's) to the consumer replay, each of which
    decides whether its record may replace a group of another kind."""
    key = record.key
    if type(key) is GroupConfigKey:
        return group
    if isinstance(key, CLASSIC_KEYS):
        if isinstance(group, ShareGroup):
            raise ReplayError(f"a classic group's record for share group {group.group_id}")
        return classic_replay.written(group, record)
    if type(key) in _SHARE_KEYS:
        return share_replay.written(group, record)
    if isinstance(group, ShareGroup):
        if record.value is None:
            return group
        raise ReplayError(f"a consumer group record for share group {group.group_id}")
    return consumer_replay.written(group, record)


__all__ = ["ReplayError", "applied", "replay", "then"]

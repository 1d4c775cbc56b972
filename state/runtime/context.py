"""How a group changes: `replay(group, record)`, and the runtime of one call (`Context`) that collects results.

A handler of the one shape (`state.runtime.step`) returns a `CoordinatorResult`, which `Context.apply` takes as the
step loop does. The classic handlers still being moved to that shape (`state.classic.membership`, the offset
commit, the timers) write what they decide through the context instead, as Kafka's `CoordinatorResult(records,
response)` and its `CoordinatorTimer`:

- `ctx.append(record)`: the record is replayed onto the group at once (`replay`), so the rest of the handler reads
  its own writes, as Kafka's runtime replays each record of a result before the next operation runs. Written
  records (`state.records.Record`) also go to the records topic; in-memory ones (the rest of `state.records`) do
  not: they carry what Kafka's classic coordinator keeps only in memory.
- `ctx.respond(response)`.
- `ctx.schedule(key, deadline_ms)` / `ctx.cancel(key)`: timers by key (`state.runtime.timers`); scheduling a key
  replaces its deadline. Timers are the runtime's, not records: they are stored with the group for the shell to
  call it back, and a fired timer's handler re-checks what it was for.

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

from dataclasses import dataclass, field
from typing import Callable

from msgspec import UNSET

from schemas.messages import GroupMetadataKey, OffsetCommitKey, Response
from state.config import CoordinatorConfig
from state.consumer import replay as consumer_replay
from state.consumer.group import ConsumerGroup
from state.topics.image import MetadataImage, decode_image_row
from state.classic.group import ClassicGroup, GroupState, Member
from schemas.share_group import GroupConfigKey, ShareGroupRecordKey
from state.share import replay as share_replay
from state.share.group import ShareGroup
from state.share import records as share_records
from state.share.records import SharePartitionWanted
from state.records import (
    AnyRecord,
    AssignmentsSet,
    GenerationStarted,
    GroupCreated,
    GroupLoaded,
    HeartbeatOwed,
    JoinCompleted,
    JoinParked,
    JoinPhaseChanged,
    LeaderElected,
    MemberAdded,
    MemberIdIssued,
    MemberRemoved,
    MemberUpdated,
    ParkedSyncsAnswered,
    PendingMemberAdded,
    PendingSyncCleared,
    Record,
    StateChanged,
    StaticMemberReplaced,
    SyncParked,
    SyncReceived,
    consumer_directory_record,
    directory_changed,
    group_record,
    kafka_group_value,
    offset_value_of,
    persisted_of,
)
from state.runtime.step import CoordinatorResult, Env
from state.runtime.timers import OFFSETS_EXPIRATION, Cancel, Schedule, next_retention_check


class ReplayError(Exception):
    """A record that cannot apply to the group it names (a bug in a handler, or a records log out of order)."""


@dataclass
class Context:
    """One call's runtime for one group: the group as replayed so far, the time, the config, and the result."""

    group_id: str
    group: ClassicGroup | ConsumerGroup | ShareGroup | None
    now_ms: int
    config: CoordinatorConfig
    topics: bytes | None = None
    group_configs: dict[str, str] = field(default_factory=dict)
    """The group id's dynamic configs (IncrementalAlterConfigs on a GROUP resource), whatever its kind: record
    version 101 sets them, kept with the group's state by the shell (`state.batch`)."""
    view_changed: bool = False
    """A record of this call changed the group's view though `state.batch` would not see it from the record's key
    (a share-partition's grant: its snapshot is otherwise view-neutral)."""
    batch_ms: int = -1
    """The step's time (the micro-batch's), which `now_ms` starts at; `now_ms` then follows each request's
    arrival. What no gateway's clock may move (a share-partition's lease) counts on this one. -1: `now_ms`."""
    """The state bucket's stored topic metadata (`state.batch`), read as `image` on first use."""
    result: CoordinatorResult = field(default_factory=CoordinatorResult)
    """Everything this call produced so far; `mark`/`since` cut it into one result per request or timer."""
    members_expired: int = 0
    """Members (pending ones included) removed this call because a session or the sync deadline ran out."""
    fast_answers: list = field(default_factory=list)
    """Requests a gateway answered from the group's view, checked (`state.views.fast_answers.FastAnswer`)."""
    waited_ms: int = 0
    """How long the request being handled waited for this call (the call's time minus its arrival): what the
    heartbeat interval a consumer group tells grows with (`state.consumer.interval`)."""
    _image: MetadataImage | None = field(default=None, repr=False)

    @property
    def image(self) -> MetadataImage:
        """The cluster's topics as the consumer groups' assignors see them (`state.topics.image`)."""
        if self._image is None:
            self._image = decode_image_row(self.topics)
        return self._image

    @image.setter
    def image(self, image: MetadataImage) -> None:
        self._image = image

    def __post_init__(self) -> None:
        if self.batch_ms < 0:
            self.batch_ms = self.now_ms

    def append(self, record: AnyRecord) -> None:
        """Replay the record onto the group, and add it to the result."""
        if type(record) is Record and type(record.key) is GroupConfigKey:
            self.group_configs = {} if record.value is None else dict(record.value.configs)  # type: ignore[union-attr]
            self.result.records.append(record)
            return
        apply = _REPLAY.get(type(record))
        group = self.group
        if apply is None or (group is None and type(record) not in _CREATING):
            replay(group, record)  # raises the ReplayError that says why
        self.group = apply(group, record)  # type: ignore[misc] - `replay` inlined: a rebalance appends thousands
        self.result.records.append(record)

    def env(self, now_ms: int | None = None) -> Env:
        """What a handler of the one shape (`state.runtime.step`) reads besides the group and the request."""
        group = self.group
        return Env(self.now_ms if now_ms is None else now_ms, self.config, self._image,
                   group.timers if group is not None else {}, waited_ms=self.waited_ms, topics=self.topics)

    def apply(self, result: CoordinatorResult) -> None:
        """A handler's result, as the step loop takes it (`state.runtime.step.applied`): what `then` replayed on
        the way is kept as it left the group, the rest appended (replayed), answered and scheduled."""
        records, timers = result.replayed
        if (records, timers) != (0, 0):
            self.group = result.after
            self.result.records.extend(result.records[:records])
            self.result.timers.extend(result.timers[:timers])
        for record in result.records[records:]:
            self.append(record)
        self.result.responses.extend(result.responses)
        for op in result.timers[timers:]:
            if isinstance(op, Schedule):
                if self.group is not None:
                    self.schedule(op.key, op.deadline_ms)
            else:
                self.cancel(op.key)
        self.members_expired += result.members_expired
        self.fast_answers.extend(result.fast_answers)

    def respond(self, response: Response) -> None:
        self.result.responses.append(response)

    def schedule(self, key: str, deadline_ms: int) -> None:
        """Arm the timer `key` at `deadline_ms`, replacing its deadline if it is armed (CoordinatorTimer.schedule)."""
        self.group.timers[key] = deadline_ms  # type: ignore[union-attr]
        self.result.timers.append(Schedule(key, deadline_ms))

    def cancel(self, key: str) -> None:
        if self.group is not None and self.group.timers.pop(key, None) is not None:
            self.result.timers.append(Cancel(key))

    def create_group(self) -> ClassicGroup:
        """A new Empty group (generation 0), as Kafka's getOrMaybeCreateClassicGroup, with its retention check
        scheduled. Its first written record (Java writes an empty GroupMetadata record for a group a JoinGroup
        creates) comes from the directory sync."""
        self.append(GroupCreated(self.group_id, self.now_ms))
        self.schedule(OFFSETS_EXPIRATION, next_retention_check(self.now_ms, self.config))
        return self.group  # type: ignore[return-value]

    def mark(self) -> tuple[int, int, int]:
        return len(self.result.records), len(self.result.responses), len(self.result.timers)

    def since(self, mark: tuple[int, int, int]) -> CoordinatorResult:
        records, responses, timers = mark
        return CoordinatorResult(self.result.records[records:], self.result.responses[responses:],
                                 self.result.timers[timers:])


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
    if isinstance(group, ShareGroup) and isinstance(key, (GroupMetadataKey, OffsetCommitKey)):
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
        if value is None:
            group.offsets.pop(tp, None)
        else:
            group.offsets[tp] = offset_value_of(value)  # type: ignore[arg-type]
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


def _group_created(group: None, record: GroupCreated) -> ClassicGroup:
    if group is not None:
        raise ReplayError(f"group {record.group_id} exists already")
    created = ClassicGroup(record.group_id, state_timestamp=record.timestamp)
    created.persisted = kafka_group_value(created)
    return created


def _group_loaded(group: ClassicGroup, record: GroupLoaded) -> ClassicGroup:
    value = record.value
    protocol_type = value.protocol_type or None
    for m in value.members:
        group.add(Member(
            m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout, m.session_timeout,
            value.protocol_type, [(value.protocol or "", m.subscription)], m.assignment,
            principal=None if m.principal is UNSET else m.principal,
        ))
    group.generation = value.generation
    group.protocol_type = protocol_type
    group.protocol_name = value.protocol
    if value.leader in group.members:
        group.leader = value.leader
    group.state_timestamp = value.current_state_timestamp
    if group.members:  # Kafka's loaded group is Stable: the path a group takes there
        for state in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            group.transition_to(state, value.current_state_timestamp)
    group.subscribed_topics = group.compute_subscribed_topics()
    return group


# A record is a value: the group gets its own copy of a member, since later records change members in place.

def _member_added(group: ClassicGroup, record: MemberAdded) -> ClassicGroup:
    group.add(record.member.__copy__())
    return group


def _member_updated(group: ClassicGroup, record: MemberUpdated) -> ClassicGroup:
    member = group.members[record.member_id]
    group.set_protocols(member, record.protocols)
    member.rebalance_timeout_ms = record.rebalance_timeout_ms
    member.session_timeout_ms = record.session_timeout_ms
    member.topic_partitions = record.topic_partitions
    group.set_join(member, record.join)
    return group


def _member_removed(group: ClassicGroup, record: MemberRemoved) -> ClassicGroup:
    group.remove(record.member_id)
    return group


def _static_member_replaced(group: ClassicGroup, record: StaticMemberReplaced) -> ClassicGroup:
    group.replace_static_member(record.old_member_id, record.member.__copy__())
    return group


def _pending_member_added(group: ClassicGroup, record: PendingMemberAdded) -> ClassicGroup:
    group.pending_members[record.member_id] = None
    group.id_counter = record.id_counter
    return group


def _member_id_issued(group: ClassicGroup, record: MemberIdIssued) -> ClassicGroup:
    group.id_counter = record.id_counter
    return group


def _join_parked(group: ClassicGroup, record: JoinParked) -> ClassicGroup:
    group.set_join(group.members[record.member_id], record.parked)
    return group


def _sync_parked(group: ClassicGroup, record: SyncParked) -> ClassicGroup:
    group.members[record.member_id].sync = record.parked
    group.pending_sync.pop(record.member_id, None)
    return group


def _parked_syncs_answered(group: ClassicGroup, record: ParkedSyncsAnswered) -> ClassicGroup:
    for member in group.members.values():
        member.sync = None
    return group


def _state_changed(group: ClassicGroup, record: StateChanged) -> ClassicGroup:
    group.transition_to(record.state, record.timestamp)
    return group


def _join_phase_changed(group: ClassicGroup, record: JoinPhaseChanged) -> ClassicGroup:
    group.new_member_added = record.new_member_added
    group.initial_delay = record.initial_delay
    return group


def _leader_elected(group: ClassicGroup, record: LeaderElected) -> ClassicGroup:
    group.leader = record.member_id
    return group


def _generation_started(group: ClassicGroup, record: GenerationStarted) -> ClassicGroup:
    group.generation = record.generation
    group.protocol_name = record.protocol_name
    group.subscribed_topics = group.compute_subscribed_topics()
    return group


def _join_completed(group: ClassicGroup, record: JoinCompleted) -> ClassicGroup:
    for member in group.members.values():
        group.set_join(member, None)
        member.is_new = False
        if record.await_sync:
            group.pending_sync[member.member_id] = None
    return group


def _pending_sync_cleared(group: ClassicGroup, record: PendingSyncCleared) -> ClassicGroup:
    group.pending_sync.clear()
    return group


def _sync_received(group: ClassicGroup, record: SyncReceived) -> ClassicGroup:
    group.pending_sync.pop(record.member_id, None)
    return group


def _heartbeat_owed(group: ConsumerGroup, record: HeartbeatOwed) -> ConsumerGroup:
    if record.owed:
        group.heartbeat_owed.add(record.member_id)
    else:
        group.heartbeat_owed.discard(record.member_id)
    return group


def _assignments_set(group: ClassicGroup, record: AssignmentsSet) -> ClassicGroup:
    for member in group.members.values():
        member.assignment = record.assignments.get(member.member_id, "")
    return group


_CREATING: frozenset[type] = frozenset({GroupCreated, Record})
"""The records that may apply to no group: they create one (a written record checks its own key: a consumer group's
value record creates the group, any other needs it)."""

_REPLAY: dict[type, Callable] = {
    Record: _written,
    GroupCreated: _group_created,
    GroupLoaded: _group_loaded,
    MemberAdded: _member_added,
    MemberUpdated: _member_updated,
    MemberRemoved: _member_removed,
    StaticMemberReplaced: _static_member_replaced,
    PendingMemberAdded: _pending_member_added,
    MemberIdIssued: _member_id_issued,
    JoinParked: _join_parked,
    SyncParked: _sync_parked,
    ParkedSyncsAnswered: _parked_syncs_answered,
    StateChanged: _state_changed,
    JoinPhaseChanged: _join_phase_changed,
    LeaderElected: _leader_elected,
    GenerationStarted: _generation_started,
    JoinCompleted: _join_completed,
    PendingSyncCleared: _pending_sync_cleared,
    SyncReceived: _sync_received,
    AssignmentsSet: _assignments_set,
    HeartbeatOwed: _heartbeat_owed,
    SharePartitionWanted: _share_wanted,
}


def sync_directory(ctx: Context) -> None:
    """Write a group metadata record when the state or protocol type changed since the last one, so the
    directory (ListGroups) follows every state change, not only those Kafka persists (a consumer group: its
    group-epoch record, with the state as our extension)."""
    group = ctx.group
    if isinstance(group, ClassicGroup):
        if directory_changed(group):
            ctx.append(group_record(group))
    elif isinstance(group, ShareGroup):
        now = [group.state.value, len(group.members)]
        if group.directory != now:
            ctx.append(share_records.group_epoch(group.group_id, group.group_epoch, group.metadata_hash,
                                                 members=len(group.members)))
    elif group is not None:
        state = group.state.value
        if group.directory is None or group.directory[0] != state:
            ctx.append(consumer_directory_record(group))


__all__ = ["CoordinatorResult", "Context", "ReplayError", "replay", "sync_directory"]

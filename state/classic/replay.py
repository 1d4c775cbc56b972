"""How a classic group changes: `replay(group, record)`, its in-memory records (`state.records`) by type and its
written ones (its group metadata value, its offsets) by key.

Kafka's classic coordinator changes a group in memory; here each of those changes is a record, replayed by these
functions and by nothing else. The classic handlers compose with this replay (`then`); the runtime's replay
(`state.runtime.replay`) sends each record of a classic group here. A classic group metadata record also replaces
a consumer group without members (`written`, `replaced`), and a group's tombstone leaves the simple group of its
offsets (`offsets_only`): the replays of the other kinds use these.
"""
from __future__ import annotations

from typing import Any, Callable

from msgspec import UNSET

from schemas.messages import GroupMetadataKey, OffsetCommitKey, TxnOffsetCommitKey
from state.classic.group import ClassicGroup, GroupState, Member
from state.errors import ReplayError
from state.handling import step
from state.handling.step import CoordinatorResult
from state.offset_values import PendingOffset
from state.classic.records import (
    CLASSIC_KEYS,
    AssignmentsSet,
    GenerationStarted,
    GroupCreated,
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
    StateChanged,
    StaticMemberReplaced,
    SyncParked,
    SyncReceived,
    kafka_group_value,
    persisted_of,
)
from state.records import GroupLoaded, Record, offset_value_of


def group_created(group: None, record: GroupCreated) -> ClassicGroup:
    if group is not None:
        raise ReplayError(f"group {record.group_id} exists already")
    created = ClassicGroup(record.group_id, state_timestamp=record.timestamp)
    created.persisted = kafka_group_value(created)
    return created


def group_loaded(group: ClassicGroup, record: GroupLoaded) -> ClassicGroup:
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

def member_added(group: ClassicGroup, record: MemberAdded) -> ClassicGroup:
    group.add(record.member.__copy__())
    return group


def member_updated(group: ClassicGroup, record: MemberUpdated) -> ClassicGroup:
    member = group.members[record.member_id]
    group.set_protocols(member, record.protocols)
    member.rebalance_timeout_ms = record.rebalance_timeout_ms
    member.session_timeout_ms = record.session_timeout_ms
    member.topic_partitions = record.topic_partitions
    group.set_join(member, record.join)
    return group


def member_removed(group: ClassicGroup, record: MemberRemoved) -> ClassicGroup:
    group.remove(record.member_id)
    return group


def static_member_replaced(group: ClassicGroup, record: StaticMemberReplaced) -> ClassicGroup:
    group.replace_static_member(record.old_member_id, record.member.__copy__())
    return group


def pending_member_added(group: ClassicGroup, record: PendingMemberAdded) -> ClassicGroup:
    group.pending_members[record.member_id] = None
    group.id_counter = record.id_counter
    return group


def member_id_issued(group: ClassicGroup, record: MemberIdIssued) -> ClassicGroup:
    group.id_counter = record.id_counter
    return group


def join_parked(group: ClassicGroup, record: JoinParked) -> ClassicGroup:
    group.set_join(group.members[record.member_id], record.parked)
    return group


def sync_parked(group: ClassicGroup, record: SyncParked) -> ClassicGroup:
    group.members[record.member_id].sync = record.parked
    group.pending_sync.pop(record.member_id, None)
    return group


def parked_syncs_answered(group: ClassicGroup, record: ParkedSyncsAnswered) -> ClassicGroup:
    for member in group.members.values():
        member.sync = None
    return group


def state_changed(group: ClassicGroup, record: StateChanged) -> ClassicGroup:
    group.transition_to(record.state, record.timestamp)
    return group


def join_phase_changed(group: ClassicGroup, record: JoinPhaseChanged) -> ClassicGroup:
    group.new_member_added = record.new_member_added
    group.initial_delay = record.initial_delay
    return group


def leader_elected(group: ClassicGroup, record: LeaderElected) -> ClassicGroup:
    group.leader = record.member_id
    return group


def generation_started(group: ClassicGroup, record: GenerationStarted) -> ClassicGroup:
    group.generation = record.generation
    group.protocol_name = record.protocol_name
    group.subscribed_topics = group.compute_subscribed_topics()
    return group


def join_completed(group: ClassicGroup, record: JoinCompleted) -> ClassicGroup:
    for member in group.members.values():
        group.set_join(member, None)
        member.is_new = False
        if record.await_sync:
            group.pending_sync[member.member_id] = None
    return group


def pending_sync_cleared(group: ClassicGroup, record: PendingSyncCleared) -> ClassicGroup:
    group.pending_sync.clear()
    return group


def sync_received(group: ClassicGroup, record: SyncReceived) -> ClassicGroup:
    group.pending_sync.pop(record.member_id, None)
    return group


def assignments_set(group: ClassicGroup, record: AssignmentsSet) -> ClassicGroup:
    for member in group.members.values():
        member.assignment = record.assignments.get(member.member_id, "")
    return group


REPLAY: dict[type, Callable] = {
    GroupCreated: group_created,
    GroupLoaded: group_loaded,
    MemberAdded: member_added,
    MemberUpdated: member_updated,
    MemberRemoved: member_removed,
    StaticMemberReplaced: static_member_replaced,
    PendingMemberAdded: pending_member_added,
    MemberIdIssued: member_id_issued,
    JoinParked: join_parked,
    SyncParked: sync_parked,
    ParkedSyncsAnswered: parked_syncs_answered,
    StateChanged: state_changed,
    JoinPhaseChanged: join_phase_changed,
    LeaderElected: leader_elected,
    GenerationStarted: generation_started,
    JoinCompleted: join_completed,
    PendingSyncCleared: pending_sync_cleared,
    SyncReceived: sync_received,
    AssignmentsSet: assignments_set,
}
"""The classic group's in-memory records by type."""


def replay(group: ClassicGroup | None, record: Any) -> ClassicGroup | None:
    """Apply one record of this classic group: the group after it (None: the group metadata tombstone removed it,
    and no offset is left)."""
    kind = type(record)
    apply = _BY_TYPE.get(kind)
    if apply is None:
        raise ReplayError(f"no replay for a record of type {kind.__name__}")
    if group is None and kind not in _CREATING:
        raise ReplayError(f"{kind.__name__} for a group that does not exist")
    return apply(group, record)


def then(group: Any, done: CoordinatorResult, more: CoordinatorResult) -> tuple[Any, CoordinatorResult]:
    """`state.handling.step.then` with the classic replay: how a classic handler reads its own writes."""
    return step.then(group, done, more, replay)


def written(group: Any, record: Record) -> Any:
    """A classic group's written record: its group metadata value (a consumer group without members is replaced by
    the classic group it names: `replaced`; a tombstone leaves the group's offsets only: `offsets_only`), or an
    offset, committed or pending in a transaction (every kind's offsets are Kafka's classic offset records)."""
    key, value = record.key, record.value
    if isinstance(key, GroupMetadataKey):
        if group is None:
            raise ReplayError("a group metadata record for a group that does not exist")
        if not isinstance(group, ClassicGroup):
            group = replaced(group, ClassicGroup(group.group_id), "a classic group metadata record")
        if value is None:
            return offsets_only(group)
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
    raise ReplayError(f"a {type(key).__name__} record is not a classic group's")


def replaced(old: Any, new: Any, what: str) -> Any:
    """`new` (empty) in place of `old`, a group without members, with its offsets and the runtime's timers and
    clock; a group with members cannot be replaced by a record (a corrupt log, or a handler's bug)."""
    if old.members or (isinstance(old, ClassicGroup) and (old.protocol_type or old.pending_members)):
        raise ReplayError(f"{what} for group {old.group_id}, which has members of the other protocol")
    new.offsets, new.timers, new.clock_ms = old.offsets, old.timers, old.clock_ms
    if isinstance(new, ClassicGroup):
        new.persisted = kafka_group_value(new)
    return new


def offsets_only(group: Any) -> ClassicGroup | None:
    """What a group's tombstone leaves: nothing, or the simple group of its remaining offsets (pending ones too)."""
    if not group.offsets and not group.offsets.pending:
        return None
    simple = ClassicGroup(group.group_id, offsets=group.offsets, timers=group.timers, clock_ms=group.clock_ms)
    simple.persisted = kafka_group_value(simple)
    return simple


_BY_TYPE: dict[type, Callable] = {Record: written, **REPLAY}
_CREATING: frozenset[type] = frozenset({GroupCreated, Record})
"""The records that may apply to no group: they create one (a written record checks its own key)."""

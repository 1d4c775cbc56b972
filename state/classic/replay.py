"""How a classic group changes: the replay of its in-memory records (`state.records`), one function a record type.

Kafka's classic coordinator changes a group in memory; here each of those changes is a record, replayed by these
functions and by nothing else (`state.runtime.replay` sends each record here by its type). The written records of a
classic group (its group metadata value, its offsets) are replayed by `state.runtime.replay` itself.
"""

from __future__ import annotations

from typing import Callable

from msgspec import UNSET

from state.classic.group import ClassicGroup, GroupState, Member
from state.errors import ReplayError
from state.classic.records import (
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
)
from state.records import GroupLoaded


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

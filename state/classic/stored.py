"""A classic group as the shell stores it: its fields as one document (`GroupDoc`), the members as arrays, the
offsets apart (`state.offset_values.Offsets`), as `state.consumer.stored` and `state.share.stored` store theirs.

Unlike the other kinds, a classic group is not stored as its records: most of what it holds is what Kafka keeps
only in memory (parked JoinGroup and SyncGroup requests, pending members, the join phase), which no written record
says; so its fields are stored, with `persisted` (the Kafka part of its last group metadata record) beside them,
or `CURRENT` when that equals the group as it is now.
"""

from __future__ import annotations

from typing import Literal

from msgspec import Struct

from schemas.messages import GroupMetadataValue
from state.classic.group import ClassicGroup, GroupState, Member
from state.offset_values import Offsets

CURRENT = "current"
"""Stored in place of the persisted group value when it equals the group as it is now (a Stable group), which
keeps the stored state about a third smaller; decoding rebuilds it."""


class GroupDoc(Struct):
    """A group as stored (`to_doc`): its fields in this order, the members as arrays (`Member`), offsets apart."""

    group_id: str
    state: GroupState
    previous_state: GroupState | None
    state_timestamp: int
    generation: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str | None
    members: list[Member]
    pending_members: list[str]
    pending_sync: list[str]
    new_member_added: bool
    initial_delay: tuple[int, int] | None
    subscribed_topics: list[str] | None
    timers: list[tuple[str, int]]
    id_counter: int
    clock_ms: int
    persisted: GroupMetadataValue | Literal["current"] | None
    directory: list[str] | None


def to_doc(group: ClassicGroup) -> GroupDoc:
    return GroupDoc(
        group.group_id, group.state, group.previous_state, group.state_timestamp, group.generation,
        group.protocol_type, group.protocol_name, group.leader, list(group.members.values()),
        list(group.pending_members), list(group.pending_sync), group.new_member_added, group.initial_delay,
        group.subscribed_topics, sorted(group.timers.items()), group.id_counter, group.clock_ms, group.persisted,
        group.directory,
    )


def from_doc(d: GroupDoc, offsets: Offsets) -> ClassicGroup:
    """The group `to_doc` wrote, with its offsets (read separately); a `persisted` of CURRENT is left for the
    caller to rebuild (`state.batch.decode_state`)."""
    group = ClassicGroup(d.group_id, d.state, d.previous_state, d.state_timestamp, d.generation, d.protocol_type,
                         d.protocol_name, d.leader, pending_members=dict.fromkeys(d.pending_members),
                         pending_sync=dict.fromkeys(d.pending_sync), new_member_added=d.new_member_added,
                         initial_delay=d.initial_delay, subscribed_topics=d.subscribed_topics, timers=dict(d.timers),
                         offsets=offsets, id_counter=d.id_counter, clock_ms=d.clock_ms,
                         persisted=d.persisted, directory=d.directory)  # type: ignore[arg-type]
    for member in d.members:
        group.restore(member)
    return group

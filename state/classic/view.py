"""A classic group's view (`schemas.messages.GroupView`): what a gateway answers heartbeats, commits and fetches
from (`state.views.fast_answers`), read by the rules of `state.rules` exactly as they read the group itself."""

from __future__ import annotations

from msgspec import UnsetType

from schemas.messages import GroupView, ViewMember, ViewOffset, ViewPosition
from state.classic.group import ClassicGroup


def view_of(group: ClassicGroup, offsets: tuple[ViewOffset, ...] | UnsetType,
            position: ViewPosition | UnsetType) -> GroupView:
    """Its state, generation, protocol and leader, and every member with its instance id, principal and session
    timeout; the offsets and their position where `state.views.published.view_of` gives them."""
    return GroupView(group.state.value, group.generation, group.protocol_type, group.protocol_name, group.leader,
                     tuple(ViewMember(m.member_id, m.group_instance_id, m.principal, m.session_timeout_ms)
                           for m in group.members.values()), offsets, position)

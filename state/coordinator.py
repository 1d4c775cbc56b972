"""One group's coordinator: fire the due timers, then handle requests, each producing responses and records.

This is the pure function behind `state.batch.step_group` and the replay tool: (group, requests, now) ->
(group', responses, records). It never reads a clock; the caller passes `now_ms` and gets back the next deadline.
"""

from __future__ import annotations

from schemas.messages import NO_AUTHORIZED_OPERATIONS, DescribedGroupMember, Request
from state import membership, offsets
from state.context import Context, sync_directory
from state.errors import GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, NONE
from state.group import ClassicGroup, GroupState
from state.timers import HEARTBEAT_PREFIX, JOIN, OFFSETS_EXPIRATION, SYNC, earliest, is_due
from state.wire import simple_response


def fire_timers(ctx: Context) -> None:
    """Fire every timer due at `now_ms`, earliest deadline first (ties by key), each with its own logic.
    A late call therefore replays the expiries in the order they would have happened. Ends with a directory
    sync, which also records the state a group was loaded in (`load_group` writes no records)."""
    while ctx.group is not None:
        group = ctx.group
        due = min(((deadline, key) for key, deadline in group.timers.items() if is_due(deadline, ctx.now_ms)),
                  default=None)
        if due is None:
            break
        key = due[1]
        if key == JOIN:
            membership.on_join_timer(ctx, group)
        elif key == SYNC:
            membership.on_sync_timer(ctx, group)
        elif key == OFFSETS_EXPIRATION:
            offsets.on_expiration_timer(ctx, group)
        elif key.startswith(HEARTBEAT_PREFIX):
            membership.on_heartbeat_timer(ctx, group, key[len(HEARTBEAT_PREFIX):])
        else:  # a key this release does not know (a newer state): drop it rather than fire it forever
            del group.timers[key]
        sync_directory(ctx)
    sync_directory(ctx)


def handle(ctx: Context, req: Request) -> None:
    _HANDLERS[req.api](ctx, req)
    sync_directory(ctx)


def next_deadline(group: ClassicGroup | None) -> int | None:
    return earliest(group.timers.values()) if group is not None else None


def _describe(ctx: Context, req: Request) -> None:
    group = ctx.group
    if group is None:
        return ctx.respond(simple_response(req, NONE))  # Kafka's answer for no group: Dead, nothing else
    stable = group.state == GroupState.STABLE
    members = tuple(
        DescribedGroupMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                             m.metadata(group.protocol_name) if stable else "", m.assignment if stable else "")
        for m in group.members.values()
    )
    ctx.respond(simple_response(
        req, NONE, group_state=group.state.value, protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "", members=members,
        authorized_operations=NO_AUTHORIZED_OPERATIONS,
    ))


def _delete_groups(ctx: Context, req: Request) -> None:
    group = ctx.group
    if group is None:
        return ctx.respond(simple_response(req, GROUP_ID_NOT_FOUND))
    if group.state != GroupState.EMPTY:
        return ctx.respond(simple_response(req, NON_EMPTY_GROUP))
    offsets.delete_group(ctx, group)
    ctx.respond(simple_response(req, NONE))


_HANDLERS = {
    "JoinGroup": membership.handle_join,
    "SyncGroup": membership.handle_sync,
    "Heartbeat": membership.handle_heartbeat,
    "LeaveGroup": membership.handle_leave,
    "OffsetCommit": offsets.handle_commit,
    "OffsetFetch": offsets.handle_fetch,
    "OffsetDelete": offsets.handle_delete,
    "DescribeGroups": _describe,
    "DeleteGroups": _delete_groups,
}

"""One group's coordinator: fire the due timers, then handle requests, each producing a `CoordinatorResult`.

This is the pure function behind `state.batch.step_group` and the replay tool: (group, requests, now) ->
(group', responses, records). It never reads a clock; the caller passes `now_ms` and gets back the next deadline.
The checks every group request shares (Kafka's API-level ones, and the group id) are made here, once, before a
handler runs.
"""

from __future__ import annotations

from typing import Any, Callable

from schemas.messages import DeleteGroupsRequest, Request, Response
from state.classic import describe, membership
from state.offsets import handlers as offsets
from state.consumer import coordinator as consumer
from state.consumer.group import ConsumerGroup, validate_delete
from state.runtime.context import Context, sync_directory
from state.runtime.step import CoordinatorResult, Env, answer
from state.errors import (
    GROUP_ID_NOT_FOUND,
    INCONSISTENT_GROUP_PROTOCOL,
    INVALID_GROUP_ID,
    NON_EMPTY_GROUP,
    NONE,
    CoordinatorError,
)
from state.classic.group import ClassicGroup, GroupState
from state.runtime.timers import HEARTBEAT_PREFIX, JOIN, OFFSETS_EXPIRATION, SYNC, earliest, is_due
from state.share import admin as share_admin
from state.share import coordinator as share
from state.share.group import ShareGroup
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
        ctx.cancel(key)  # a fired timer is gone; its handler schedules it again if it must
        if key == OFFSETS_EXPIRATION:
            ctx.apply(offsets.on_expiration_timer(group, ctx.env()))
        elif isinstance(group, ConsumerGroup):
            consumer.fire_timer(ctx, group, key)
        elif isinstance(group, ShareGroup):
            share.fire_timer(ctx, group, key)
        elif key == JOIN:
            ctx.apply(membership.on_join_timer(group, ctx.env()))
        elif key == SYNC:
            ctx.apply(membership.on_sync_timer(group, ctx.env()))
        elif key.startswith(HEARTBEAT_PREFIX):
            ctx.apply(membership.on_heartbeat_timer(group, key[len(HEARTBEAT_PREFIX):], ctx.env()))
        # else: a key this release does not know (a newer state): dropped rather than fired forever
        sync_directory(ctx)
    sync_directory(ctx)


def handle(ctx: Context, req: Request) -> CoordinatorResult:
    """Handle one request: its records (replayed), responses and timer operations."""
    mark = ctx.mark()
    run(ctx, req)
    return ctx.since(mark)


def run(ctx: Context, req: Request, new_member_id: str | None = None) -> None:
    """`handle` without cutting out this request's result: what a call over many requests uses (its
    `ctx.result` holds them all, in order). First the checks Kafka makes before the coordinator sees a request,
    in its order: KIP-559's, then the group id (INVALID_GROUP_ID). `new_member_id`: a JoinGroup's new member gets
    it instead of a generated id (a member-id round a gateway answered, `state.classic.member_id_round`)."""
    api = req.api
    if api == "SyncGroup" and req.version >= 5 and (req.protocol_type is None or  # type: ignore[union-attr]
                                                    req.protocol_name is None):  # type: ignore[union-attr]
        ctx.respond(_error(req, INCONSISTENT_GROUP_PROTOCOL))
    elif req.group_id == "" and api in _GROUP_ID_REQUIRED:
        ctx.respond(_error(req, INVALID_GROUP_ID))
    elif api in share.SHARE_APIS:
        share.handle(ctx, req)
    elif isinstance(ctx.group, ShareGroup) and api not in _ANY_KIND:
        ctx.respond(_not_this_kind(req))
    elif isinstance(ctx.group, ConsumerGroup) and api in _MEMBERSHIP:
        _classic_request_to_consumer_group(ctx, req, new_member_id)
    elif new_member_id is not None and api == "JoinGroup":
        ctx.apply(membership.join(ctx.group, req, ctx.env(), new_member_id))  # type: ignore[arg-type]
        sync_directory(ctx)
    else:
        _HANDLERS[api](ctx, req)
        sync_directory(ctx)


_MEMBERSHIP = frozenset({"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"})
"""The classic protocol's membership APIs, which a consumer group answers its own way."""


def _classic_request_to_consumer_group(ctx: Context, req: Request, new_member_id: str | None) -> None:
    """A consumer group without members is replaced by the classic group a JoinGroup creates (its records are
    tombstoned first, its offsets stay: Kafka's maybeDeleteEmptyConsumerGroup; the new member gets `new_member_id`
    as in `run`). Otherwise the consumer group serves the classic member (`state.consumer.migration.classic_members`)."""
    group: ConsumerGroup = ctx.group  # type: ignore[assignment]
    if req.api == "JoinGroup" and not group.members:
        ctx.apply(offsets.delete_group_metadata(group))
        return ctx.apply(membership.join(ctx.group, req, ctx.env(), new_member_id))  # type: ignore[arg-type]
    consumer.handle_classic(ctx, req, new_member_id)
    sync_directory(ctx)


_ANY_KIND = frozenset({"DescribeGroups", "DeleteGroups"})
"""The APIs every kind of group answers its own way; the others are one kind's (Kafka answers a share group's
id with another kind's API as below)."""


def _not_this_kind(req: Request) -> Response:
    """Another kind's API on a share group, as Kafka answers it: a JoinGroup INCONSISTENT_GROUP_PROTOCOL, the rest
    GROUP_ID_NOT_FOUND (the group exists, but not as the kind the API is for)."""
    if req.api == "JoinGroup":
        return simple_response(req, INCONSISTENT_GROUP_PROTOCOL, member_id="")
    kind = "consumer" if req.api in ("ConsumerGroupHeartbeat", "ConsumerGroupDescribe", "OffsetCommit",
                                     "OffsetFetch", "OffsetDelete") else "classic"
    if req.api in ("ConsumerGroupHeartbeat", "ConsumerGroupDescribe"):
        return simple_response(req, GROUP_ID_NOT_FOUND, error_message=f"Group {req.group_id} is not a {kind} group.")
    return simple_response(req, GROUP_ID_NOT_FOUND)


_GROUP_ID_REQUIRED = frozenset({"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetDelete"})
"""The APIs whose group id may not be "" (Kafka's INVALID_GROUP_ID); OffsetCommit, OffsetFetch, DescribeGroups
and DeleteGroups accept it."""


def _error(req: Request, error: int) -> Response:
    """The request's response with only an error (a JoinGroup's keeps the member id it was sent with)."""
    if req.api == "JoinGroup":
        return simple_response(req, error, member_id=req.member_id)  # type: ignore[union-attr]
    return simple_response(req, error)


def next_deadline(group: ClassicGroup | ConsumerGroup | ShareGroup | None) -> int | None:
    return earliest(group.timers.values()) if group is not None else None


def delete_groups(group: ClassicGroup | ConsumerGroup | ShareGroup | None, req: DeleteGroupsRequest,
                  env: Env) -> CoordinatorResult:
    """DeleteGroups, for one group (Kafka's deleteGroups: an Empty classic group, a consumer group without members;
    every offset tombstoned, then the group; a share group without members whose share-partitions no gateway
    holds: its records and its share-partitions' tombstoned)."""
    if group is None:
        return answer(simple_response(req, GROUP_ID_NOT_FOUND))
    if isinstance(group, ShareGroup):
        try:
            share_admin.validate_delete(group)
        except CoordinatorError as exc:
            return answer(simple_response(req, exc.code))
        return share_admin.delete_group(group) + answer(simple_response(req, NONE))
    if isinstance(group, ConsumerGroup):
        try:
            validate_delete(group)
        except CoordinatorError as exc:
            return answer(simple_response(req, exc.code))
    elif group.state != GroupState.EMPTY:
        return answer(simple_response(req, NON_EMPTY_GROUP))
    return offsets.delete_group(group) + answer(simple_response(req, NONE))


def _shaped(handler: Callable[[Any, Any, Env], CoordinatorResult]) -> Callable[[Context, Request], None]:
    """A handler of the one shape (`state.runtime.step`) run in this call's context, while the others move to it."""
    def run_shaped(ctx: Context, req: Request) -> None:
        ctx.apply(handler(ctx.group, req, ctx.env()))
    return run_shaped


_HANDLERS = {
    "JoinGroup": _shaped(membership.join),
    "SyncGroup": _shaped(membership.sync),
    "Heartbeat": _shaped(membership.heartbeat),
    "LeaveGroup": _shaped(membership.leave),
    "OffsetCommit": _shaped(offsets.offset_commit),
    "OffsetFetch": _shaped(offsets.offset_fetch),
    "OffsetDelete": _shaped(offsets.offset_delete),
    "DescribeGroups": _shaped(describe.describe),
    "DeleteGroups": _shaped(delete_groups),
    "ConsumerGroupHeartbeat": consumer.handle_heartbeat,
    "ConsumerGroupDescribe": _shaped(consumer.describe),
}

"""The share group in the core's runtime: its requests, internal requests and timers through the one
`state.context.Context`, as `state.consumer.coordinator` is the consumer group's.

The handlers of `state.share` are pure (group, request, environment) -> `CoordinatorResult`; this module hands them
the group, the time (a request's arrival for membership, the step's for leases), the configuration, the group's
configs and the cluster's topics, then appends the result's records (replayed at once), answers, and applies the
timer operations. A group id belongs to one kind: a share API on a classic or consumer group is GROUP_ID_NOT_FOUND,
as Kafka answers it.
"""

from __future__ import annotations

import msgspec

from schemas.share_group import (
    DescribeGroupConfigsRequest,
    DescribeGroupConfigsResponse,
    DescribedGroupConfig,
    IncrementalAlterGroupConfigsRequest,
    IncrementalAlterGroupConfigsResponse,
    ShareGrantRequest,
    ShareGrantResponse,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    ShareUpdateRequest,
)
from schemas.messages import Request
from state.runtime.context import Context, sync_directory
from state.runtime.step import CoordinatorResult
from state.records import HeartbeatOwed
from state.errors import CoordinatorError, Errors
from state.share import admin, configs, heartbeat
from state.share.partitions import holding
from state.share import records as share_records
from state.share.configs import ShareSettings
from state.share.group import ShareGroup
from state.runtime.timers import Schedule
from state.wire import BadRequest, simple_response

SHARE_APIS = frozenset({"ShareGroupHeartbeat", "ShareGroupDescribe", "DescribeShareGroupOffsets",
                        "AlterShareGroupOffsets", "DeleteShareGroupOffsets"})
CONFIG_APIS = frozenset({"IncrementalAlterGroupConfigs", "DescribeGroupConfigs"})


def env(ctx: Context) -> heartbeat.Env:
    base = ctx.env()
    return heartbeat.Env(base.now_ms, ctx.config, base.image, base.timers, ctx.group_configs, base.waited_ms)


def settings(ctx: Context) -> ShareSettings:
    return ShareSettings.of(ctx.group_configs, ctx.config)


def apply(ctx: Context, result: CoordinatorResult, view_neutral: bool = False) -> None:
    """The step loop's take of a result (`Context.apply`), then the directory sync. `view_neutral`: the records
    change no view (a holder's update changes durable state only)."""
    if result.records and not view_neutral:
        ctx.view_changed = True
    ctx.apply(result)
    sync_directory(ctx)


def _not_a_share_group(ctx: Context, req: Request) -> bool:
    group = ctx.group
    return group is not None and not isinstance(group, ShareGroup)


def handle(ctx: Context, req: Request) -> None:
    """A share-group API request."""
    api = req.api
    group = ctx.group
    if api == "ShareGroupHeartbeat":
        if _not_a_share_group(ctx, req):
            return ctx.respond(ShareGroupHeartbeatResponse(
                request_id=req.request_id, group_id=req.group_id, error_code=Errors.GROUP_ID_NOT_FOUND,
                error_message=f"Group {req.group_id} is not a share group."))
        result = heartbeat.share_group_heartbeat(group, req, env(ctx))  # type: ignore[arg-type]
        if isinstance(group, ShareGroup) and req.member_id in group.heartbeat_owed:  # type: ignore[attr-defined]
            ctx.append(HeartbeatOwed(req.member_id, False))  # type: ignore[attr-defined]
        return apply(ctx, result)
    if api == "ShareGroupDescribe":
        if group is None or not isinstance(group, ShareGroup):
            message = (f"Group {req.group_id} not found." if group is None
                       else f"Group {req.group_id} is not a share group.")
            return ctx.respond(ShareGroupDescribeResponse(
                request_id=req.request_id, group_id=req.group_id, error_code=Errors.GROUP_ID_NOT_FOUND,
                error_message=message))
        return ctx.respond(admin.share_group_describe(group, req, ctx.image))  # type: ignore[arg-type]
    if _not_a_share_group(ctx, req):
        return ctx.respond(simple_response(req, Errors.GROUP_ID_NOT_FOUND,
                                           error_message=f"Group {req.group_id} is not a share group."))
    share: ShareGroup | None = group  # type: ignore[assignment]
    if api == "DescribeShareGroupOffsets":
        ctx.respond(admin.describe_share_group_offsets(share, req, ctx.image))  # type: ignore[arg-type]
    elif api == "AlterShareGroupOffsets":
        apply(ctx, admin.alter_share_group_offsets(share, req, ctx.image, ctx.batch_ms))  # type: ignore[arg-type]
    elif api == "DeleteShareGroupOffsets":
        apply(ctx, admin.delete_share_group_offsets(share, req, ctx.image, ctx.batch_ms))  # type: ignore[arg-type]


def handle_heard(ctx: Context, req: ShareGroupHeartbeatRequest, heard_ms: int) -> int | None:
    """A heartbeat a gateway answered "nothing changed" from the view, run as of when it was heard: applied (the
    session restarted from then) only when it changes nothing, as answered; otherwise the member owes a heartbeat
    (it leaves the view, its next one reaches the coordinator), its session restarting all the same when the
    coordinator would have answered without an error. Returns the error decided, None where the answer would have
    been another one without error (as `state.consumer.coordinator.handle_heard`)."""
    group: ShareGroup = ctx.group  # type: ignore[assignment]
    result = heartbeat.share_group_heartbeat(group, req, env(ctx).at(heard_ms))
    response = result.response
    error = response.error_code
    unchanged = (error == Errors.NONE and not result.records and response.assignment is None
                 and response.member_epoch == req.member_epoch)
    session = heartbeat.share_session_timeout_key(req.member_id)
    for op in result.timers:
        if unchanged or (error == Errors.NONE and op.key == session):
            if isinstance(op, Schedule):
                ctx.schedule(op.key, op.deadline_ms)
            else:
                ctx.cancel(op.key)
    if unchanged:
        return Errors.NONE
    if req.member_id in group.members and req.member_id not in group.heartbeat_owed:
        ctx.append(HeartbeatOwed(req.member_id, True))
    return error or None


def fire_timer(ctx: Context, group: ShareGroup, key: str) -> None:
    if key.startswith(heartbeat.SHARE_SESSION_TIMEOUT_PREFIX):
        apply(ctx, heartbeat.on_session_timeout(group, key[len(heartbeat.SHARE_SESSION_TIMEOUT_PREFIX):], env(ctx)))
    elif key == heartbeat.SHARE_ASSIGNMENT:
        apply(ctx, heartbeat.on_assignment_timer(group, env(ctx)))
    elif key.startswith(holding.SHARE_LEASE_PREFIX):
        apply(ctx, holding.on_lease_expired(group, holding.parse_share_lease_key(key), ctx.batch_ms))


def restart(ctx: Context, group: ShareGroup) -> None:
    """A new driver (a resumed call): every member's session and every lease count again from now, as Kafka
    restarts sessions when it loads a group."""
    timeout = settings(ctx).session_timeout_ms
    for member_id in sorted(group.members):
        ctx.schedule(heartbeat.share_session_timeout_key(member_id), ctx.now_ms + timeout)
    for op in holding.restart_leases(group, ctx.batch_ms, ctx.config.share_partition_lease_ms):
        ctx.schedule(op.key, op.deadline_ms)


# -- internal requests of the holders ------------------------------------------------------------------------------

def handle_grant(ctx: Context, body: dict) -> list[str]:
    """A gateway's `ShareGrant`: answered (GROUP_ID_NOT_FOUND when the group is not a share group)."""
    request = _parsed(body, ShareGrantRequest)
    group = ctx.group
    if not isinstance(group, ShareGroup):
        ctx.respond(ShareGrantResponse(request_id=request.request_id, group_id=request.group_id,
                                       error_code=Errors.GROUP_ID_NOT_FOUND,
                                       error_message=f"Group {request.group_id} is not a share group."))
        return []
    apply(ctx, holding.share_grant(group, request, env(ctx), ctx.batch_ms))
    return []


def handle_update(ctx: Context, body: dict) -> list[str]:
    """A holder's `ShareUpdate`: no answer; each refused share-partition is a dead letter of the request, saying
    why (a fenced holder's late update, a stale state epoch, an impossible transition)."""
    request = _parsed(body, ShareUpdateRequest)
    group = ctx.group
    if not isinstance(group, ShareGroup):
        return [f"ShareUpdate: group {request.group_id} is not a share group"]
    updated = holding.share_update(group, request, ctx.batch_ms)
    apply(ctx, updated.result, view_neutral=True)
    return list(updated.refused)


# -- a group's configs ---------------------------------------------------------------------------------------------


def handle_alter_configs(ctx: Context, req: IncrementalAlterGroupConfigsRequest) -> None:
    """IncrementalAlterConfigs of this GROUP resource, whatever the group's kind (or none yet)."""
    try:
        after = configs.alter(ctx.group_configs, [(c.name, c.config_operation, c.value) for c in req.configs],
                              ctx.config)
    except CoordinatorError as exc:
        return ctx.respond(IncrementalAlterGroupConfigsResponse(
            request_id=req.request_id, group_id=req.group_id, error_code=exc.code, error_message=exc.message))
    if not req.validate_only and after != ctx.group_configs:
        ctx.append(share_records.group_config(ctx.group_id, after))
    ctx.respond(IncrementalAlterGroupConfigsResponse(request_id=req.request_id, group_id=req.group_id,
                                                     error_code=Errors.NONE))


def handle_describe_configs(ctx: Context, req: DescribeGroupConfigsRequest) -> None:
    described = configs.describe(ctx.group_configs, req.configuration_keys, ctx.config)
    ctx.respond(DescribeGroupConfigsResponse(
        request_id=req.request_id, group_id=req.group_id, error_code=Errors.NONE, configs=tuple(
            DescribedGroupConfig(d.name, value, False,
                                 configs.GROUP_CONFIG_SOURCE if is_set else configs.DEFAULT_CONFIG_SOURCE, False,
                                 configs.CONFIG_TYPE[d.type], d.doc if req.include_documentation else None)
            for d, value, is_set in described)))


def _parsed(body: dict, cls: type):
    try:
        return msgspec.convert(body, cls)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"{body.get('api')}: {exc}", body=body) from None


def handle_alter_configs_body(ctx: Context, body: dict) -> list[str]:
    handle_alter_configs(ctx, _parsed(body, IncrementalAlterGroupConfigsRequest))
    return []


def handle_describe_configs_body(ctx: Context, body: dict) -> list[str]:
    handle_describe_configs(ctx, _parsed(body, DescribeGroupConfigsRequest))
    return []

"""The share group's handlers as the runtime dispatches them, in the one shape (`state.handling.step`), as
`state.consumer.handlers` is the consumer group's.

The handlers of `state.share` decide on the share group alone: (group, request, environment) ->
`CoordinatorResult`; this module gives them the share group's environment (`heartbeat.Env`: the group id's configs
are its settings; the step's own time for leases, a request's arrival for membership) and adds what is about the
group's kind: a group id belongs to one kind, and a share API on a classic or consumer group is GROUP_ID_NOT_FOUND,
as Kafka answers it. A result that changed the group ends with the directory sync (`_synced`); one whose records
change the view though their keys would not say so says so (`view_changed`).
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
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    ShareUpdateRequest,
)
from schemas.messages import Request
from state.errors import CoordinatorError, Errors
from state.records import HeartbeatOwed
from state.handling.step import NOTHING, CoordinatorResult, Env, answer
from state.share.replay import then
from state.share import admin, configs, heartbeat
from state.share.describe import share_group_describe
from state.share import records as share_records
from state.share.group import ShareGroup
from state.share.partitions import holding
from state.handling.timers import Schedule
from state.wire import BadRequest, simple_response

SHARE_APIS = frozenset({"ShareGroupHeartbeat", "ShareGroupDescribe", "DescribeShareGroupOffsets",
                        "AlterShareGroupOffsets", "DeleteShareGroupOffsets"})
CONFIG_APIS = frozenset({"IncrementalAlterGroupConfigs", "DescribeGroupConfigs"})


def _synced(group: object, result: CoordinatorResult, view_neutral: bool = False) -> CoordinatorResult:
    """The result and the directory sync after it. `view_neutral`: its records change no view (a holder's update
    changes durable state only); otherwise records change it."""
    if result.records and not view_neutral:
        result = result + CoordinatorResult(view_changed=True)
    group, done = then(group, NOTHING, result)
    if isinstance(group, ShareGroup) and share_records.directory_changed(group):
        group, done = then(group, done, CoordinatorResult([share_records.directory_record(group)]))
    return done


def _not_a_share_group(group: object) -> bool:
    return group is not None and not isinstance(group, ShareGroup)


def handle(group: object, req: Request, env: Env) -> CoordinatorResult:
    """A share-group API request."""
    api = req.api
    share_env = heartbeat.Env.of(env)
    if api == "ShareGroupHeartbeat":
        if _not_a_share_group(group):
            return answer(ShareGroupHeartbeatResponse(
                request_id=req.request_id, group_id=req.group_id, error_code=Errors.GROUP_ID_NOT_FOUND,
                error_message=f"Group {req.group_id} is not a share group."))
        result = heartbeat.share_group_heartbeat(group, req, share_env)  # type: ignore[arg-type]
        done = NOTHING
        if isinstance(group, ShareGroup) and req.member_id in group.heartbeat_owed:  # type: ignore[attr-defined]
            group, done = then(group, done, CoordinatorResult([HeartbeatOwed(req.member_id, False)]))  # type: ignore
        return done + _synced(group, result)
    if api == "ShareGroupDescribe":
        return answer(share_group_describe(group, req, env.image))  # type: ignore[arg-type]
    if _not_a_share_group(group):
        return answer(simple_response(req, Errors.GROUP_ID_NOT_FOUND,
                                      error_message=f"Group {req.group_id} is not a share group."))
    share: ShareGroup | None = group  # type: ignore[assignment]
    if api == "DescribeShareGroupOffsets":
        return answer(admin.describe_share_group_offsets(share, req, env.image))  # type: ignore[arg-type]
    if api == "AlterShareGroupOffsets":
        return _synced(group, admin.alter_share_group_offsets(share, req, env.image,  # type: ignore[arg-type]
                                                              env.batch_ms))
    if api == "DeleteShareGroupOffsets":
        return _synced(group, admin.delete_share_group_offsets(share, req, env.image,  # type: ignore[arg-type]
                                                               env.batch_ms))
    return NOTHING


def heard(group: ShareGroup, req: ShareGroupHeartbeatRequest, env: Env, heard_ms: int) -> CoordinatorResult:
    """A heartbeat a gateway answered "nothing changed" from the view, run as of when it was heard (what of it is
    applied: `state.views.fast_answers`, as a consumer group's)."""
    return heartbeat.share_group_heartbeat(group, req, heartbeat.Env.of(env).at(heard_ms))


def on_timer(group: ShareGroup, key: str, env: Env) -> CoordinatorResult:
    """A share group's timer that came due (already dropped): it re-checks what it was armed for."""
    share_env = heartbeat.Env.of(env)
    if key.startswith(heartbeat.SHARE_SESSION_TIMEOUT_PREFIX):
        member_id = key[len(heartbeat.SHARE_SESSION_TIMEOUT_PREFIX):]
        return _synced(group, heartbeat.on_session_timeout(group, member_id, share_env))
    if key == heartbeat.SHARE_ASSIGNMENT:
        return _synced(group, heartbeat.on_assignment_timer(group, share_env))
    if key.startswith(holding.SHARE_LEASE_PREFIX):
        return _synced(group, holding.on_lease_expired(group, holding.parse_share_lease_key(key), env.batch_ms))
    return NOTHING


def restarted(group: ShareGroup, env: Env) -> CoordinatorResult:
    """A new driver (a resumed call, a load): every member's session and every lease count again from now, as
    Kafka restarts sessions when it loads a group."""
    timeout = heartbeat.Env.of(env).settings.session_timeout_ms
    sessions = [Schedule(heartbeat.share_session_timeout_key(member_id), env.now_ms + timeout)
                for member_id in sorted(group.members)]
    leases = holding.restart_leases(group, env.batch_ms, env.config.share_partition_lease_ms)
    return CoordinatorResult([], [], [*sessions, *leases])


# -- internal requests of the holders ------------------------------------------------------------------------------

def grant(group: object, body: dict, env: Env) -> tuple[CoordinatorResult, list[str]]:
    """A gateway's `ShareGrant`: answered (GROUP_ID_NOT_FOUND when the group is not a share group)."""
    request = _parsed(body, ShareGrantRequest)
    if not isinstance(group, ShareGroup):
        return answer(ShareGrantResponse(request_id=request.request_id, group_id=request.group_id,
                                         error_code=Errors.GROUP_ID_NOT_FOUND,
                                         error_message=f"Group {request.group_id} is not a share group.")), []
    return _synced(group, holding.share_grant(group, request, heartbeat.Env.of(env), env.batch_ms)), []


def update(group: object, body: dict, env: Env) -> tuple[CoordinatorResult, list[str]]:
    """A holder's `ShareUpdate`: no answer; each refused share-partition is a dead letter of the request, saying
    why (a fenced holder's late update, a stale state epoch, an impossible transition)."""
    request = _parsed(body, ShareUpdateRequest)
    if not isinstance(group, ShareGroup):
        return NOTHING, [f"ShareUpdate: group {request.group_id} is not a share group"]
    updated = holding.share_update(group, request, env.batch_ms)
    return _synced(group, updated.result, view_neutral=True), list(updated.refused)


# -- a group's configs ---------------------------------------------------------------------------------------------

def alter_configs(req: IncrementalAlterGroupConfigsRequest, env: Env) -> CoordinatorResult:
    """IncrementalAlterConfigs of this GROUP resource, whatever the group's kind (or none yet): the group id's
    configs record (record version 101), which the step loop keeps beside the group."""
    try:
        after = configs.alter(env.group_configs, [(c.name, c.config_operation, c.value) for c in req.configs],
                              env.config)
    except CoordinatorError as exc:
        return answer(IncrementalAlterGroupConfigsResponse(
            request_id=req.request_id, group_id=req.group_id, error_code=exc.code, error_message=exc.message))
    written = []
    if not req.validate_only and after != env.group_configs:
        written.append(share_records.group_config(req.group_id, after))
    return CoordinatorResult(written, [IncrementalAlterGroupConfigsResponse(
        request_id=req.request_id, group_id=req.group_id, error_code=Errors.NONE)])


def describe_configs(req: DescribeGroupConfigsRequest, env: Env) -> CoordinatorResult:
    described = configs.describe(env.group_configs, req.configuration_keys, env.config)
    return answer(DescribeGroupConfigsResponse(
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


def alter_configs_body(group: object, body: dict, env: Env) -> tuple[CoordinatorResult, list[str]]:
    return alter_configs(_parsed(body, IncrementalAlterGroupConfigsRequest), env), []


def describe_configs_body(group: object, body: dict, env: Env) -> tuple[CoordinatorResult, list[str]]:
    return describe_configs(_parsed(body, DescribeGroupConfigsRequest), env), []

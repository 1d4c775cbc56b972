"""One group's coordinator: fire the due timers, then handle requests, each producing a `CoordinatorResult`.

The handlers of every kind of group by API (`_HANDLERS`), each of the one shape (`state.handling.step`), and what
the step loop (`state.batch.step_group`) calls: `fire_timers` and `handle`, pure functions of (group, timers or
request, environment). It never reads a clock; the caller passes the time in `Env` and gets back the next deadline.
The checks every group request shares (Kafka's API-level ones, and the group id) are made here, once, before a
handler runs, and the directory sync after it.
"""

from __future__ import annotations

from typing import Any, Callable

from schemas.messages import DeleteGroupsRequest, Request, Response
from state.classic import describe
from state.classic import handlers as classic
from state.offsets import handlers as offsets
from state.offsets import transactions
from state.consumer import handlers as consumer
from state.consumer.group import ConsumerGroup, validate_delete
from state.runtime.directory import sync_directory
from state.handling.step import NOTHING, CoordinatorResult, Env, answer
from state.runtime.replay import applied, then
from state.errors import (
    GROUP_ID_NOT_FOUND,
    INCONSISTENT_GROUP_PROTOCOL,
    INVALID_GROUP_ID,
    NON_EMPTY_GROUP,
    NONE,
    CoordinatorError,
)
from state.classic.group import ClassicGroup, GroupState
from state.handling.timers import HEARTBEAT_PREFIX, JOIN, OFFSETS_EXPIRATION, SYNC, Cancel, earliest, is_due
from state.share import admin as share_admin
from state.share import handlers as share
from state.share.group import ShareGroup
from state.wire import simple_response


def fire_timers(group: ClassicGroup | ConsumerGroup | ShareGroup | None, env: Env) -> CoordinatorResult:
    """Fire every timer due at `env.now_ms`, earliest deadline first (ties by key), each with its own logic.
    A late call therefore replays the expiries in the order they would have happened. Ends with a directory
    sync, which also records the state a group was loaded in (`load_group` writes no records)."""
    done = NOTHING
    while group is not None:
        due = min(((deadline, key) for key, deadline in group.timers.items() if is_due(deadline, env.now_ms)),
                  default=None)
        if due is None:
            break
        key = due[1]
        # a fired timer is gone; its handler schedules it again if it must
        group, done = then(group, done, CoordinatorResult([], [], [Cancel(key)]))
        timer_env = env.replace(timers=group.timers)
        if key == OFFSETS_EXPIRATION:
            fired = offsets.on_expiration_timer(group, timer_env)
        elif isinstance(group, ConsumerGroup):
            fired = consumer.on_timer(group, key, timer_env)
        elif isinstance(group, ShareGroup):
            fired = share.on_timer(group, key, timer_env)
        elif key == JOIN:
            fired = classic.on_join_timer(group, timer_env)
        elif key == SYNC:
            fired = classic.on_sync_timer(group, timer_env)
        elif key.startswith(HEARTBEAT_PREFIX):
            fired = classic.on_heartbeat_timer(group, key[len(HEARTBEAT_PREFIX):], timer_env)
        else:  # a key this release does not know (a newer state): dropped rather than fired forever
            fired = NOTHING
        group, done = then(group, done, fired)
        group, done = then(group, done, sync_directory(group))
    return then(group, done, sync_directory(group))[1]


def handle(group: ClassicGroup | ConsumerGroup | ShareGroup | None, req: Request, env: Env,
           new_member_id: str | None = None) -> CoordinatorResult:
    """Handle one request: its records, responses and timer operations. First the checks Kafka makes before the
    coordinator sees a request, in its order: KIP-559's, then the group id (INVALID_GROUP_ID); then the handler
    of the request's API (`_HANDLERS`), and the directory sync. `new_member_id`: a JoinGroup's new member gets
    it instead of a generated id (a member-id round a gateway answered, `state.classic.member_id_round`)."""
    api = req.api
    if api == "SyncGroup" and req.version >= 5 and (req.protocol_type is None or  # type: ignore[union-attr]
                                                    req.protocol_name is None):  # type: ignore[union-attr]
        return answer(_error(req, INCONSISTENT_GROUP_PROTOCOL))
    if req.group_id == "" and api in _GROUP_ID_REQUIRED:
        return answer(_error(req, INVALID_GROUP_ID))
    if api in share.SHARE_APIS:
        return share.handle(group, req, env)
    if isinstance(group, ShareGroup) and api not in _ANY_KIND:
        return answer(_not_this_kind(req))
    if isinstance(group, ConsumerGroup) and api in _MEMBERSHIP:
        return _classic_request_to_consumer_group(group, req, env, new_member_id)
    if new_member_id is not None and api == "JoinGroup":
        result = classic.join(group, req, env, new_member_id)  # type: ignore[arg-type]
    else:
        result = _HANDLERS[api](group, req, env)
    group = applied(group, result)
    directory = sync_directory(group)
    records = result.records
    if directory is not NOTHING:
        group = applied(group, directory)
        records = records + directory.records
    return CoordinatorResult(records, result.responses, result.timers, result.members_expired, result.fast_answers,
                             (len(records), len(result.timers)), group)


_MEMBERSHIP = frozenset({"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"})
"""The classic protocol's membership APIs, which a consumer group answers its own way."""


def _classic_request_to_consumer_group(group: ConsumerGroup, req: Request, env: Env,
                                       new_member_id: str | None) -> CoordinatorResult:
    """A consumer group without members is replaced by the classic group a JoinGroup creates (its records are
    tombstoned first, its offsets stay: Kafka's maybeDeleteEmptyConsumerGroup; the new member gets `new_member_id`
    as in `handle`). Otherwise the consumer group serves the classic member
    (`state.consumer.migration.classic_members`)."""
    if req.api == "JoinGroup" and not group.members:
        replaced, done = then(group, NOTHING, offsets.delete_group_metadata(group))
        env = env.replace(timers=replaced.timers if replaced is not None else {})
        return done + classic.join(replaced, req, env, new_member_id)  # type: ignore[arg-type]
    served, done = then(group, NOTHING, consumer.classic_request(group, req, env, new_member_id))
    return done + sync_directory(served)


_ANY_KIND = frozenset({"DescribeGroups", "DeleteGroups"})
"""The APIs every kind of group answers its own way; the others are one kind's (Kafka answers a share group's
id with another kind's API as below)."""


def _not_this_kind(req: Request) -> Response:
    """Another kind's API on a share group, as Kafka answers it: a JoinGroup INCONSISTENT_GROUP_PROTOCOL, the rest
    GROUP_ID_NOT_FOUND (the group exists, but not as the kind the API is for)."""
    if req.api == "JoinGroup":
        return simple_response(req, INCONSISTENT_GROUP_PROTOCOL, member_id="")
    kind = "consumer" if req.api in ("ConsumerGroupHeartbeat", "ConsumerGroupDescribe", "OffsetCommit",
                                     "OffsetFetch", "OffsetDelete", "TxnOffsetCommit") else "classic"
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


_HANDLERS: dict[str, Callable[[Any, Any, Env], CoordinatorResult]] = {
    "JoinGroup": classic.join,
    "SyncGroup": classic.sync,
    "Heartbeat": classic.heartbeat,
    "LeaveGroup": classic.leave,
    "OffsetCommit": offsets.offset_commit,
    "OffsetFetch": offsets.offset_fetch,
    "OffsetDelete": offsets.offset_delete,
    "TxnOffsetCommit": transactions.txn_offset_commit,
    "DescribeGroups": describe.describe,
    "DeleteGroups": delete_groups,
    "ConsumerGroupHeartbeat": consumer.group_heartbeat,
    "ConsumerGroupDescribe": consumer.describe,
}

"""JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the membership timers: Kafka's classic rebalance protocol.

Follows the Java coordinator (`GroupMetadataManager.classicGroup*`); where Kafka's Scala and Java differ, the
Java behaviour is taken and marked "Java:". Requests Kafka parks (JoinGroup until the join phase completes,
SyncGroup until the leader's assignment) are kept on the member (`Member.join`/`Member.sync`) and answered when
the group gets there, from whichever request or timer gets it there.

The handlers here decide and change nothing themselves: they read the group and append records
(`state.records`, replayed at once by `state.runtime.context`), answer, and schedule or cancel timers. The group-id check
and the API-level checks come before any of them, in `state.runtime.coordinator.handle`.
"""

from __future__ import annotations

from schemas.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    MemberResponse,
    SyncGroupRequest,
)
from state import rules
from state.classic import server_assignment
from state.config import NEW_MEMBER_JOIN_TIMEOUT_MS
from state.runtime.context import Context
from state.runtime.step import CoordinatorResult, Env, answer
from state.errors import (
    FENCED_INSTANCE_ID,
    GROUP_MAX_SIZE_REACHED,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    INVALID_REQUEST,
    INVALID_SESSION_TIMEOUT,
    MEMBER_ID_REQUIRED,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    CoordinatorError,
)
from state.classic.group import ClassicGroup, GroupState, Member, Parked
from state.records import (
    AssignmentsSet,
    GenerationStarted,
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
    group_record,
)
from state.runtime.timers import JOIN, SYNC, Schedule, heartbeat_key
from state.wire import join_response, parked_join_response, simple_response, sync_response

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE


# -- JoinGroup ---------------------------------------------------------------------------------------------------

def handle_join(ctx: Context, req: JoinGroupRequest, new_member_id: str | None = None) -> None:
    """`new_member_id`: the id a new member gets instead of a generated one (a member-id round the gateway
    answered, `state.classic.member_id_round`)."""
    member_id = req.member_id
    session = req.session_timeout_ms
    if not ctx.config.group_min_session_timeout_ms <= session <= ctx.config.group_max_session_timeout_ms:
        return ctx.respond(join_response(req, INVALID_SESSION_TIMEOUT, member_id=member_id))
    group = ctx.group
    if group is None:
        if member_id != "":
            return ctx.respond(join_response(req, UNKNOWN_MEMBER_ID, member_id=member_id))
        group = ctx.create_group()
    if not _accept_joining_member(group, member_id, ctx.config.group_max_size):
        # Kafka removes the refused member (or pending member) and does not rebalance for it.
        remove_member(ctx, group, member_id)
        return ctx.respond(join_response(req, GROUP_MAX_SIZE_REACHED))
    if member_id == "":
        _join_new_member(ctx, group, req, new_member_id)
    else:
        _join_existing_member(ctx, group, req)


def _accept_joining_member(group: ClassicGroup, member_id: str, max_size: int) -> bool:
    """KIP-389: a full group still takes back its own members; pending members do not count."""
    if group.state == EMPTY:
        return True
    member = group.members.get(member_id)
    if group.state == PREPARING:
        return (member is not None and member.join is not None) or group.num_awaiting_join() < max_size
    return member is not None or len(group.members) < max_size


def _protocols(req: JoinGroupRequest) -> list[tuple[str, str]]:
    """(name, metadata) of the protocols a JoinGroup offers, as a member keeps them."""
    return [(p.name, p.metadata) for p in req.protocols]


def _join_new_member(ctx: Context, group: ClassicGroup, req: JoinGroupRequest, new_id: str | None) -> None:
    if not group.supports_protocols(req.protocol_type, _protocols(req)):
        return ctx.respond(join_response(req, INCONSISTENT_GROUP_PROTOCOL))
    instance = req.group_instance_id
    if new_id is None:
        new_id = group.member_id_for(instance if instance is not None else req.client_id, req.request_id,
                                     ctx.now_ms)
    if instance is None and req.version >= 4:
        # KIP-394: hand out the id and wait for the member to come back with it; the group does not change.
        ctx.append(PendingMemberAdded(new_id, group.id_counter + 1))
        ctx.schedule(heartbeat_key(new_id), ctx.now_ms + req.session_timeout_ms)
        return ctx.respond(join_response(req, MEMBER_ID_REQUIRED, member_id=new_id))
    ctx.append(MemberIdIssued(group.id_counter + 1))
    if instance is not None:
        existing = group.static_members.get(instance)
        if existing is None:
            _add_member_then_rebalance_or_complete(ctx, group, req, new_id)
        else:
            try:
                group.authorize(existing, req.principal)  # taking over a static member acts on it
            except CoordinatorError as exc:
                return ctx.respond(join_response(req, exc.code))
            _replace_static_member_then_rebalance_or_complete(ctx, group, req, existing, new_id)
    else:
        _add_member_then_rebalance_or_complete(ctx, group, req, new_id)


def _join_existing_member(ctx: Context, group: ClassicGroup, req: JoinGroupRequest) -> None:
    member_id = req.member_id
    protocols = _protocols(req)
    if not group.supports_protocols(req.protocol_type, protocols):
        return ctx.respond(join_response(req, INCONSISTENT_GROUP_PROTOCOL, member_id=member_id))
    if member_id in group.pending_members:
        if req.group_instance_id is not None:
            # Kafka never makes a static member pending; it throws here. We answer instead of failing.
            return ctx.respond(join_response(req, INVALID_REQUEST, member_id=member_id))
        return _add_member_then_rebalance_or_complete(ctx, group, req, member_id)
    try:
        group.validate_member(member_id, req.group_instance_id, req.principal)
    except CoordinatorError as exc:
        return ctx.respond(join_response(req, exc.code, member_id=member_id))
    member = group.members[member_id]
    if group.state == PREPARING:
        _update_member_then_rebalance_or_complete(ctx, group, member, req)
    elif group.state == COMPLETING:
        if member.matches(protocols):
            # The member lost the JoinGroup response: give it the current generation again.
            ctx.respond(_current_generation_join_response(group, req, member_id,
                                                          with_members=group.leader == member_id))
        else:
            _update_member_then_rebalance_or_complete(ctx, group, member, req)
    elif group.leader == member_id or not member.matches(protocols):
        # Stable (an Empty group has no members to validate). A leader's JoinGroup always rebalances: it is
        # how a leader asks for a new assignment.
        _update_member_then_rebalance_or_complete(ctx, group, member, req)
    else:
        ctx.respond(_current_generation_join_response(group, req, member_id, with_members=False))


def _current_generation_join_response(group: ClassicGroup, req: JoinGroupRequest, member_id: str, *,
                                      with_members: bool, leader: str | None = None,
                                      skip_assignment: bool = False) -> JoinGroupResponse:
    return join_response(
        req, NONE, generation_id=group.generation, protocol_type=group.protocol_type,
        protocol_name=group.protocol_name, leader=(group.leader if leader is None else leader) or "",
        skip_assignment=skip_assignment, member_id=member_id,
        members=_members_metadata(group) if with_members else (),
    )


def _members_metadata(group: ClassicGroup) -> tuple[JoinGroupResponseMember, ...]:
    return tuple(JoinGroupResponseMember(m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                 for m in group.members.values())


def _topic_partitions(req: JoinGroupRequest) -> list[tuple[str, int]]:
    return [(t.name, t.partitions) for t in req.topic_partitions]


def _new_member(req: JoinGroupRequest, member_id: str) -> Member:
    return Member(
        member_id, req.group_instance_id, req.client_id, req.client_host, req.rebalance_timeout_ms,
        req.session_timeout_ms, req.protocol_type, _protocols(req),
        join=Parked(req.request_id, req.version), is_new=True, topic_partitions=_topic_partitions(req),
        principal=req.principal,
    )


def _update_member(ctx: Context, member: Member, req: JoinGroupRequest) -> None:
    """The member as this JoinGroup describes it, its JoinGroup parked."""
    ctx.append(MemberUpdated(member.member_id, _protocols(req), req.rebalance_timeout_ms, req.session_timeout_ms,
                             _topic_partitions(req), Parked(req.request_id, req.version)))


def _add_member_then_rebalance_or_complete(ctx: Context, group: ClassicGroup, req: JoinGroupRequest,
                                           member_id: str) -> None:
    member = _new_member(req, member_id)
    if group.state == PREPARING and group.previous_state == EMPTY and not group.new_member_added:
        # Java: any member added during a rebalance that started from Empty extends the initial delay
        # (Scala only while generation == 0).
        ctx.append(JoinPhaseChanged(True, group.initial_delay))
    ctx.append(MemberAdded(member))
    # New members cannot heartbeat yet; they are cut after the new-member join timeout instead.
    reschedule_heartbeat(ctx, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
    _maybe_prepare_rebalance_or_complete_join(ctx, group)


def _update_member_then_rebalance_or_complete(ctx: Context, group: ClassicGroup, member: Member,
                                              req: JoinGroupRequest) -> None:
    _update_member(ctx, member, req)
    _maybe_prepare_rebalance_or_complete_join(ctx, group)


def _replace_static_member_then_rebalance_or_complete(ctx: Context, group: ClassicGroup, req: JoinGroupRequest,
                                                      old_id: str, new_id: str) -> None:
    """KIP-345: a restarted static member takes over its old member id's place, assignment included; the old
    incarnation is fenced at once if it still waits for an answer."""
    current_leader = group.leader
    old = group.members[old_id]
    _answer_parked(ctx, group, old, FENCED_INSTANCE_ID, member_id=old_id)
    new = Member(new_id, old.group_instance_id, old.client_id, old.client_host, old.rebalance_timeout_ms,
                 old.session_timeout_ms, old.protocol_type, old.protocols, old.assignment,
                 topic_partitions=old.topic_partitions, principal=req.principal)
    ctx.append(StaticMemberReplaced(old_id, new))
    ctx.cancel(heartbeat_key(old_id))
    # Re-armed with the old session timeout, before the request's timeouts are stored (as Kafka).
    reschedule_heartbeat(ctx, new)
    _update_member(ctx, new, req)
    if group.state == STABLE:
        if group.protocol_name == group.select_protocol():
            # No rebalance: persist the new member id and answer at once at the current generation.
            ctx.append(JoinParked(new_id, None))
            ctx.append(group_record(group, persist=True))
            skip = req.version >= 9
            is_leader = group.leader == new_id
            ctx.respond(_current_generation_join_response(
                group, req, new_id, with_members=skip and is_leader,
                leader=group.leader if skip else current_leader, skip_assignment=skip and is_leader,
            ))
        else:
            prepare_rebalance(ctx, group)
    elif group.state == COMPLETING:
        prepare_rebalance(ctx, group)
    else:
        maybe_complete_join_phase(ctx, group)


# -- the join phase ----------------------------------------------------------------------------------------------

def _maybe_prepare_rebalance_or_complete_join(ctx: Context, group: ClassicGroup) -> None:
    if group.can_rebalance():
        prepare_rebalance(ctx, group)
    else:
        maybe_complete_join_phase(ctx, group)


def prepare_rebalance(ctx: Context, group: ClassicGroup) -> None:
    if group.state == COMPLETING:
        _reset_and_propagate_assignment_with_error(ctx, group, REBALANCE_IN_PROGRESS)
    if group.pending_sync:
        ctx.append(PendingSyncCleared())
    ctx.cancel(SYNC)
    initial = group.state == EMPTY
    ctx.append(StateChanged(PREPARING, ctx.now_ms))
    if initial:
        # KIP-134: hold the first rebalance of an Empty group so that more members can join it.
        delay = ctx.config.group_initial_rebalance_delay_ms
        ctx.append(JoinPhaseChanged(group.new_member_added, (delay, max(group.rebalance_timeout_ms() - delay, 0))))
        ctx.schedule(JOIN, ctx.now_ms + delay)
    elif group.has_all_members_joined():
        complete_join(ctx, group)
    else:
        if group.initial_delay is not None:
            ctx.append(JoinPhaseChanged(group.new_member_added, None))
        ctx.schedule(JOIN, ctx.now_ms + group.rebalance_timeout_ms())


def maybe_complete_join_phase(ctx: Context, group: ClassicGroup) -> None:
    """Complete as soon as everyone re-joined, except during the initial delay, which is never cut short."""
    if group.state == PREPARING and group.has_all_members_joined() and group.previous_state != EMPTY:
        complete_join(ctx, group)


def on_join_timer(ctx: Context, group: ClassicGroup) -> None:
    """The join phase's deadline: extend the initial delay while members keep coming (KIP-134), else complete.
    A timer that outlived its join phase does nothing."""
    if group.state != PREPARING:
        return
    if group.initial_delay is not None:
        delay, remaining = group.initial_delay
        if group.new_member_added and remaining != 0:
            new_delay = min(ctx.config.group_initial_rebalance_delay_ms, remaining)
            ctx.append(JoinPhaseChanged(False, (new_delay, max(remaining - delay, 0))))
            ctx.schedule(JOIN, ctx.now_ms + new_delay)
            return
    complete_join(ctx, group)


def complete_join(ctx: Context, group: ClassicGroup) -> None:
    """Kafka's completeClassicGroupJoin: drop dynamic members that did not re-join, start the next generation."""
    ctx.cancel(JOIN)
    if group.initial_delay is not None:
        ctx.append(JoinPhaseChanged(group.new_member_added, None))
    for member in [m for m in group.members.values() if m.join is None and m.group_instance_id is None]:
        remove_member(ctx, group, member.member_id)
    leader = group.joined_leader()
    if leader is None and group.members:
        # Only static members that did not re-join are left: wait another rebalance timeout for them.
        ctx.schedule(JOIN, ctx.now_ms + group.rebalance_timeout_ms())
        return
    if leader is not None and leader != group.leader:
        ctx.append(LeaderElected(leader))
    assignment: dict[str, str] | None = None
    if group.members:
        protocol = group.select_protocol()
        if server_assignment.is_server_protocol(protocol):
            assignment, error, message = server_assignment.compute(group, protocol)
            if assignment is None:
                _fail_members(ctx, group, error, message)
    if group.pending_sync:
        ctx.append(PendingSyncCleared())
    if not group.members:
        ctx.append(GenerationStarted(group.generation + 1, None))
        ctx.append(StateChanged(EMPTY, ctx.now_ms))
        ctx.append(group_record(group, persist=True))
        return
    ctx.append(GenerationStarted(group.generation + 1, group.select_protocol()))
    ctx.append(StateChanged(COMPLETING, ctx.now_ms))
    if assignment is not None:
        return _complete_with_server_assignment(ctx, group, assignment)
    leader_members = _members_metadata(group)
    for member in group.members.values():
        if member.join is not None:
            ctx.respond(parked_join_response(
                group.group_id, member.join.request_id, NONE, generation_id=group.generation,
                protocol_type=group.protocol_type, protocol_name=group.protocol_name, leader=group.leader or "",
                member_id=member.member_id, members=leader_members if member.member_id == group.leader else [],
            ))
        reschedule_heartbeat(ctx, member)
    ctx.append(JoinCompleted(await_sync=True))
    ctx.schedule(SYNC, ctx.now_ms + group.rebalance_timeout_ms())


def _complete_with_server_assignment(ctx: Context, group: ClassicGroup, assignment: dict[str, str]) -> None:
    """Our extension: the coordinator assigned, so the group is Stable at once and nobody needs to sync first."""
    ctx.append(AssignmentsSet(assignment))
    for member in group.members.values():
        if member.join is not None:
            ctx.respond(parked_join_response(
                group.group_id, member.join.request_id, NONE, generation_id=group.generation,
                protocol_type=group.protocol_type, protocol_name=group.protocol_name, leader=group.leader or "",
                skip_assignment=True, member_id=member.member_id,
            ))
        reschedule_heartbeat(ctx, member)
    ctx.append(JoinCompleted(await_sync=False))
    ctx.append(StateChanged(STABLE, ctx.now_ms))
    ctx.append(group_record(group, persist=True))


def _fail_members(ctx: Context, group: ClassicGroup, error: int, message: str) -> None:
    """The server assignor could not run: answer every parked JoinGroup with the error and empty the group,
    since no member can be given an assignment in this generation."""
    for member in list(group.members.values()):
        if member.join is not None:
            ctx.respond(parked_join_response(group.group_id, member.join.request_id, error,
                                             member_id=member.member_id, error_message=message))
            ctx.append(JoinParked(member.member_id, None))
        remove_member(ctx, group, member.member_id)


# -- SyncGroup ---------------------------------------------------------------------------------------------------

def handle_sync(ctx: Context, req: SyncGroupRequest) -> None:
    gid, rid = req.group_id, req.request_id
    group = ctx.group
    if group is None:
        return ctx.respond(sync_response(gid, rid, UNKNOWN_MEMBER_ID))
    member_id = req.member_id
    try:
        group.validate_member(member_id, req.group_instance_id, req.principal)
        if req.generation_id != group.generation:
            raise CoordinatorError(ILLEGAL_GENERATION)
        if _inconsistent(req.protocol_type, group.protocol_type) or _inconsistent(req.protocol_name,
                                                                                  group.protocol_name):
            raise CoordinatorError(INCONSISTENT_GROUP_PROTOCOL)
    except CoordinatorError as exc:
        return ctx.respond(sync_response(gid, rid, exc.code))
    member = group.members[member_id]
    if group.state == PREPARING:
        ctx.respond(sync_response(gid, rid, REBALANCE_IN_PROGRESS))
    elif group.state == COMPLETING:
        ctx.append(SyncParked(member_id, Parked(rid, req.version)))  # which also ends its pending sync
        if not group.pending_sync:
            ctx.cancel(SYNC)
        if group.leader == member_id:
            ctx.append(AssignmentsSet({a.member_id: a.assignment for a in req.assignments}))
            _propagate_assignment(ctx, group, NONE)
            ctx.append(StateChanged(STABLE, ctx.now_ms))
            ctx.append(group_record(group, persist=True))
    else:
        # Stable (an Empty group has no members to validate). Java does not reset the session here (Scala does).
        _remove_pending_sync_member(ctx, group, member_id)
        ctx.respond(sync_response(gid, rid, NONE, group.protocol_type, group.protocol_name, member.assignment))


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


def _remove_pending_sync_member(ctx: Context, group: ClassicGroup, member_id: str) -> None:
    if member_id in group.pending_sync:
        ctx.append(SyncReceived(member_id))
    if not group.pending_sync:
        ctx.cancel(SYNC)


def _propagate_assignment(ctx: Context, group: ClassicGroup, error: int) -> None:
    ok = error == NONE
    for member in group.members.values():
        if member.sync is not None:
            ctx.respond(sync_response(
                group.group_id, member.sync.request_id, error, group.protocol_type if ok else None,
                group.protocol_name if ok else None, member.assignment,
            ))
            # A member whose session ran out while it waited here was kept; it gets a fresh session now.
            reschedule_heartbeat(ctx, member)
    ctx.append(ParkedSyncsAnswered())


def _reset_and_propagate_assignment_with_error(ctx: Context, group: ClassicGroup, error: int) -> None:
    ctx.append(AssignmentsSet({}))
    _propagate_assignment(ctx, group, error)


def on_sync_timer(ctx: Context, group: ClassicGroup) -> None:
    """Members that did not sync within the rebalance timeout after the join phase are removed. A timer that
    outlived its sync phase (nobody left to wait for) does nothing."""
    if group.state in (COMPLETING, STABLE) and group.pending_sync:
        for member_id in list(group.pending_sync):
            remove_member(ctx, group, member_id)
            ctx.members_expired += 1
        prepare_rebalance(ctx, group)


# -- Heartbeat and session expiry --------------------------------------------------------------------------------

def heartbeat(group: ClassicGroup | None, req: HeartbeatRequest, env: Env,
              heard_ms: int | None = None) -> CoordinatorResult:
    """Kafka's classicGroupHeartbeat (`rules.heartbeat_error`): an answer and a timer reschedule, no record. The
    session of a member it accepts restarts from `heard_ms` when the heartbeat was answered before now (by a gateway,
    from the group's view, and reported in a Liveness request)."""
    error = rules.heartbeat_error(group, req)
    response = simple_response(req, error)
    if not rules.restarts_session(error):
        return answer(response)
    member = group.members[req.member_id]  # type: ignore[union-attr]
    late = 0 if heard_ms is None else max(env.now_ms - heard_ms, 0)
    return answer(response, session(member, env, member.session_timeout_ms - late))


def session(member: Member, env: Env, timeout_ms: int | None = None) -> Schedule:
    """The member's session timer, restarted now (with its session timeout unless `timeout_ms` says otherwise)."""
    return Schedule(heartbeat_key(member.member_id),
                    env.now_ms + (member.session_timeout_ms if timeout_ms is None else timeout_ms))


def reschedule_heartbeat(ctx: Context, member: Member, timeout_ms: int | None = None) -> None:
    ctx.schedule(heartbeat_key(member.member_id),
                 ctx.now_ms + (member.session_timeout_ms if timeout_ms is None else timeout_ms))


def on_heartbeat_timer(ctx: Context, group: ClassicGroup, member_id: str) -> None:
    """A session ran out: the member (or pending member) is removed, unless it is waiting on the group."""
    if member_id in group.pending_members:
        remove_member(ctx, group, member_id)
        ctx.members_expired += 1
        # Java: an expiry completes even an initial rebalance when everyone left has joined.
        if group.state == PREPARING and group.has_all_members_joined():
            complete_join(ctx, group)
        return
    member = group.members.get(member_id)
    if member is None:  # the member left already: nothing to expire
        return
    # Members parked in JoinGroup or SyncGroup are waiting on the group, not failing; new members are not.
    if not member.is_new and (member.join is not None or member.sync is not None):
        return
    remove_member(ctx, group, member_id)
    ctx.members_expired += 1
    if group.state in (STABLE, COMPLETING):
        prepare_rebalance(ctx, group)
    elif group.state == PREPARING and group.has_all_members_joined():
        complete_join(ctx, group)


def remove_member(ctx: Context, group: ClassicGroup, member_id: str) -> None:
    """Remove a member or pending member and drop its session timer; what it has parked is answered with
    UNKNOWN_MEMBER_ID, so that it re-joins if it is alive. Nothing happens for an id the group does not have."""
    member = group.members.get(member_id)
    if member is not None:
        _answer_parked(ctx, group, member, UNKNOWN_MEMBER_ID)
    elif member_id not in group.pending_members:
        return
    ctx.append(MemberRemoved(member_id))
    ctx.cancel(heartbeat_key(member_id))


def _answer_parked(ctx: Context, group: ClassicGroup, member: Member, error: int, member_id: str = "") -> None:
    if member.join is not None:
        ctx.respond(parked_join_response(group.group_id, member.join.request_id, error, member_id=member_id))
    if member.sync is not None:
        ctx.respond(sync_response(group.group_id, member.sync.request_id, error))


# -- LeaveGroup --------------------------------------------------------------------------------------------------

def handle_leave(ctx: Context, req: LeaveGroupRequest) -> None:
    group = ctx.group
    results = []
    removed_any = False
    for entry in req.members:  # type: ignore[union-attr]
        member_id, instance = entry.member_id, entry.group_instance_id
        error = NONE
        if group is None:
            error = UNKNOWN_MEMBER_ID
        elif member_id == "" and instance is not None:
            # Admin removal of a static member by its instance id.
            target = group.static_members.get(instance)
            try:
                if target is None:
                    raise CoordinatorError(UNKNOWN_MEMBER_ID)
                group.authorize(target, req.principal)
                remove_member(ctx, group, target)
                removed_any = True
            except CoordinatorError as exc:
                error = exc.code
        elif member_id in group.pending_members:
            remove_member(ctx, group, member_id)
            removed_any = True
        else:
            try:
                group.validate_member(member_id, instance, req.principal)
                remove_member(ctx, group, member_id)
                removed_any = True
            except CoordinatorError as exc:
                error = exc.code
        results.append(MemberResponse(member_id, instance, error))
    # Java: remove every leaving member first, then rebalance once (a leaving pending member counts too).
    if group is not None and removed_any:
        if group.state in (STABLE, COMPLETING):
            prepare_rebalance(ctx, group)
        else:
            maybe_complete_join_phase(ctx, group)
    if req.version <= 2:
        ctx.respond(simple_response(req, results[0].error_code))
    else:
        ctx.respond(simple_response(req, NONE, members=tuple(results)))

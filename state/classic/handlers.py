"""JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the membership timers: Kafka's classic rebalance protocol.

Follows the Java coordinator (`GroupMetadataManager.classicGroup*`); where Kafka's Scala and Java differ, the
Java behaviour is taken and marked "Java:". Requests Kafka parks (JoinGroup until the join phase completes,
SyncGroup until the leader's assignment) are kept on the member (`Member.join`/`Member.sync`) and answered when
the group gets there, from whichever request or timer gets it there.

The handlers have the one shape (`state.handling.step`): (group, request, env) -> `CoordinatorResult`. They
decide and change nothing themselves: they read the group and return records (`state.records`), responses and
timer operations. Where Kafka's classic code reads what it just changed (a JoinGroup adds a member, then asks
whether everyone has joined), the sub-results are composed with `then`, which replays one onto the group before
the next is decided. The group-id check and the API-level checks come before any of them, in
`state.runtime.coordinator`.
"""

from __future__ import annotations

from typing import Callable

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
from state.classic.replay import then
from state.handling.step import NOTHING, CoordinatorResult, Env, answer
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
    group_record,
)
from state.handling.timers import JOIN, OFFSETS_EXPIRATION, SYNC, Cancel, Schedule, heartbeat_key, next_retention_check
from state.wire import join_response, parked_join_response, simple_response, sync_response

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE


# -- the small results every handler here is made of ---------------------------------------------------------

def _records(*records) -> CoordinatorResult:
    return CoordinatorResult(list(records))


def _timer(key: str, deadline_ms: int) -> CoordinatorResult:
    """Arm the timer `key` at `deadline_ms`, replacing its deadline if it is armed (CoordinatorTimer.schedule)."""
    return CoordinatorResult([], [], [Schedule(key, deadline_ms)])


def _cancel(group: ClassicGroup | None, key: str) -> CoordinatorResult:
    """Cancel the timer `key` if it is armed (a cancel of a timer that is not is no operation)."""
    return CoordinatorResult([], [], [Cancel(key)]) if group is not None and key in group.timers else NOTHING


def _session(member: Member, env: Env, timeout_ms: int | None = None) -> CoordinatorResult:
    return CoordinatorResult([], [], [session(member, env, timeout_ms)])


def create_group(group_id: str, env: Env) -> CoordinatorResult:
    """A new Empty group (generation 0), as Kafka's getOrMaybeCreateClassicGroup, with its retention check
    scheduled. Its first written record (Java writes an empty GroupMetadata record for a group a JoinGroup creates)
    comes from the directory sync (`state.runtime.directory.sync_directory`)."""
    return CoordinatorResult([GroupCreated(group_id, env.now_ms)], [],
                             [Schedule(OFFSETS_EXPIRATION, next_retention_check(env.now_ms, env.config))])


# -- JoinGroup ---------------------------------------------------------------------------------------------------

def join(group: ClassicGroup | None, req: JoinGroupRequest, env: Env,
         new_member_id: str | None = None) -> CoordinatorResult:
    """`new_member_id`: the id a new member gets instead of a generated one (a member-id round the gateway
    answered, `state.classic.member_id_round`)."""
    member_id = req.member_id
    session_timeout = req.session_timeout_ms
    if not env.config.group_min_session_timeout_ms <= session_timeout <= env.config.group_max_session_timeout_ms:
        return answer(join_response(req, INVALID_SESSION_TIMEOUT, member_id=member_id))
    done = NOTHING
    if group is None:
        if member_id != "":
            return answer(join_response(req, UNKNOWN_MEMBER_ID, member_id=member_id))
        group, done = then(group, done, create_group(req.group_id, env))
    if not _accept_joining_member(group, member_id, env.config.group_max_size):
        # Kafka removes the refused member (or pending member) and does not rebalance for it.
        return done + remove_member(group, member_id) + answer(join_response(req, GROUP_MAX_SIZE_REACHED))
    if member_id == "":
        return done + _join_new_member(group, req, env, new_member_id)
    return done + _join_existing_member(group, req, env)


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


def _join_new_member(group: ClassicGroup, req: JoinGroupRequest, env: Env, new_id: str | None) -> CoordinatorResult:
    if not group.supports_protocols(req.protocol_type, _protocols(req)):
        return answer(join_response(req, INCONSISTENT_GROUP_PROTOCOL))
    instance = req.group_instance_id
    if new_id is None:
        new_id = group.member_id_for(instance if instance is not None else req.client_id, req.request_id,
                                     env.now_ms)
    if instance is None and req.version >= 4:
        # KIP-394: hand out the id and wait for the member to come back with it; the group does not change.
        return CoordinatorResult([PendingMemberAdded(new_id, group.id_counter + 1)],
                                 [join_response(req, MEMBER_ID_REQUIRED, member_id=new_id)],
                                 [Schedule(heartbeat_key(new_id), env.now_ms + req.session_timeout_ms)])
    group, done = then(group, NOTHING, _records(MemberIdIssued(group.id_counter + 1)))
    if instance is not None:
        existing = group.static_members.get(instance)
        if existing is None:
            return done + _add_member_then_rebalance_or_complete(group, req, new_id, env)
        try:
            group.authorize(existing, req.principal)  # taking over a static member acts on it
        except CoordinatorError as exc:
            return done + answer(join_response(req, exc.code))
        return done + _replace_static_member_then_rebalance_or_complete(group, req, existing, new_id, env)
    return done + _add_member_then_rebalance_or_complete(group, req, new_id, env)


def _join_existing_member(group: ClassicGroup, req: JoinGroupRequest, env: Env) -> CoordinatorResult:
    member_id = req.member_id
    protocols = _protocols(req)
    if not group.supports_protocols(req.protocol_type, protocols):
        return answer(join_response(req, INCONSISTENT_GROUP_PROTOCOL, member_id=member_id))
    if member_id in group.pending_members:
        if req.group_instance_id is not None:
            # Kafka never makes a static member pending; it throws here. We answer instead of failing.
            return answer(join_response(req, INVALID_REQUEST, member_id=member_id))
        return _add_member_then_rebalance_or_complete(group, req, member_id, env)
    try:
        group.validate_member(member_id, req.group_instance_id, req.principal)
    except CoordinatorError as exc:
        return answer(join_response(req, exc.code, member_id=member_id))
    member = group.members[member_id]
    if group.state == PREPARING:
        return _update_member_then_rebalance_or_complete(group, member, req, env)
    if group.state == COMPLETING:
        if member.matches(protocols):
            # The member lost the JoinGroup response: give it the current generation again.
            return answer(_current_generation_join_response(group, req, member_id,
                                                            with_members=group.leader == member_id))
        return _update_member_then_rebalance_or_complete(group, member, req, env)
    if group.leader == member_id or not member.matches(protocols):
        # Stable (an Empty group has no members to validate). A leader's JoinGroup always rebalances: it is
        # how a leader asks for a new assignment.
        return _update_member_then_rebalance_or_complete(group, member, req, env)
    return answer(_current_generation_join_response(group, req, member_id, with_members=False))


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


def _update_member(member: Member, req: JoinGroupRequest) -> CoordinatorResult:
    """The member as this JoinGroup describes it, its JoinGroup parked."""
    return _records(MemberUpdated(member.member_id, _protocols(req), req.rebalance_timeout_ms,
                                  req.session_timeout_ms, _topic_partitions(req), Parked(req.request_id, req.version)))


def _add_member_then_rebalance_or_complete(group: ClassicGroup, req: JoinGroupRequest, member_id: str,
                                           env: Env) -> CoordinatorResult:
    member = _new_member(req, member_id)
    added = []
    if group.state == PREPARING and group.previous_state == EMPTY and not group.new_member_added:
        # Java: any member added during a rebalance that started from Empty extends the initial delay
        # (Scala only while generation == 0).
        added.append(JoinPhaseChanged(True, group.initial_delay))
    added.append(MemberAdded(member))
    # New members cannot heartbeat yet; they are cut after the new-member join timeout instead.
    group, done = then(group, NOTHING, CoordinatorResult(added, [], [session(member, env, NEW_MEMBER_JOIN_TIMEOUT_MS)]))
    return done + _maybe_prepare_rebalance_or_complete_join(group, env)


def _update_member_then_rebalance_or_complete(group: ClassicGroup, member: Member, req: JoinGroupRequest,
                                              env: Env) -> CoordinatorResult:
    group, done = then(group, NOTHING, _update_member(member, req))
    return done + _maybe_prepare_rebalance_or_complete_join(group, env)


def _replace_static_member_then_rebalance_or_complete(group: ClassicGroup, req: JoinGroupRequest, old_id: str,
                                                      new_id: str, env: Env) -> CoordinatorResult:
    """KIP-345: a restarted static member takes over its old member id's place, assignment included; the old
    incarnation is fenced at once if it still waits for an answer."""
    current_leader = group.leader
    old = group.members[old_id]
    done = _answer_parked(group, old, FENCED_INSTANCE_ID, member_id=old_id)
    new = Member(new_id, old.group_instance_id, old.client_id, old.client_host, old.rebalance_timeout_ms,
                 old.session_timeout_ms, old.protocol_type, old.protocols, old.assignment,
                 topic_partitions=old.topic_partitions, principal=req.principal)
    group, done = then(group, done, _records(StaticMemberReplaced(old_id, new)))
    group, done = then(group, done, _cancel(group, heartbeat_key(old_id)))
    # Re-armed with the old session timeout, before the request's timeouts are stored (as Kafka).
    group, done = then(group, done, _session(new, env))
    group, done = then(group, done, _update_member(new, req))
    if group.state == STABLE:
        if group.protocol_name == group.select_protocol():
            # No rebalance: persist the new member id and answer at once at the current generation.
            group, done = then(group, done, _records(JoinParked(new_id, None)))
            group, done = then(group, done, _records(group_record(group, persist=True)))
            skip = req.version >= 9
            is_leader = group.leader == new_id
            return done + answer(_current_generation_join_response(
                group, req, new_id, with_members=skip and is_leader,
                leader=group.leader if skip else current_leader, skip_assignment=skip and is_leader,
            ))
        return done + prepare_rebalance(group, env)
    if group.state == COMPLETING:
        return done + prepare_rebalance(group, env)
    return done + maybe_complete_join_phase(group, env)


# -- the join phase ----------------------------------------------------------------------------------------------

def _maybe_prepare_rebalance_or_complete_join(group: ClassicGroup, env: Env) -> CoordinatorResult:
    if group.can_rebalance():
        return prepare_rebalance(group, env)
    return maybe_complete_join_phase(group, env)


def prepare_rebalance(group: ClassicGroup, env: Env) -> CoordinatorResult:
    done = NOTHING
    if group.state == COMPLETING:
        group, done = then(group, done, _reset_and_propagate_assignment_with_error(group, REBALANCE_IN_PROGRESS,
                                                                                 env))
    if group.pending_sync:
        group, done = then(group, done, _records(PendingSyncCleared()))
    group, done = then(group, done, _cancel(group, SYNC))
    initial = group.state == EMPTY
    group, done = then(group, done, _records(StateChanged(PREPARING, env.now_ms)))
    if initial:
        # KIP-134: hold the first rebalance of an Empty group so that more members can join it.
        delay = env.config.group_initial_rebalance_delay_ms
        phase = JoinPhaseChanged(group.new_member_added, (delay, max(group.rebalance_timeout_ms() - delay, 0)))
        return then(group, done, CoordinatorResult([phase], [], [Schedule(JOIN, env.now_ms + delay)]))[1]
    if group.has_all_members_joined():
        return done + complete_join(group, env)
    if group.initial_delay is not None:
        group, done = then(group, done, _records(JoinPhaseChanged(group.new_member_added, None)))
    return done + _timer(JOIN, env.now_ms + group.rebalance_timeout_ms())


def maybe_complete_join_phase(group: ClassicGroup, env: Env) -> CoordinatorResult:
    """Complete as soon as everyone re-joined, except during the initial delay, which is never cut short."""
    if group.state == PREPARING and group.has_all_members_joined() and group.previous_state != EMPTY:
        return complete_join(group, env)
    return NOTHING


def on_join_timer(group: ClassicGroup, env: Env) -> CoordinatorResult:
    """The join phase's deadline: extend the initial delay while members keep coming (KIP-134), else complete.
    A timer that outlived its join phase does nothing."""
    if group.state != PREPARING:
        return NOTHING
    if group.initial_delay is not None:
        delay, remaining = group.initial_delay
        if group.new_member_added and remaining != 0:
            new_delay = min(env.config.group_initial_rebalance_delay_ms, remaining)
            return CoordinatorResult([JoinPhaseChanged(False, (new_delay, max(remaining - delay, 0)))], [],
                                     [Schedule(JOIN, env.now_ms + new_delay)])
    return complete_join(group, env)


def complete_join(group: ClassicGroup, env: Env) -> CoordinatorResult:
    """Kafka's completeClassicGroupJoin: drop dynamic members that did not re-join, start the next generation."""
    group, done = then(group, NOTHING, _cancel(group, JOIN))
    if group.initial_delay is not None:
        group, done = then(group, done, _records(JoinPhaseChanged(group.new_member_added, None)))
    for member in [m for m in group.members.values() if m.join is None and m.group_instance_id is None]:
        group, done = then(group, done, remove_member(group, member.member_id))
    leader = group.joined_leader()
    if leader is None and group.members:
        # Only static members that did not re-join are left: wait another rebalance timeout for them.
        return done + _timer(JOIN, env.now_ms + group.rebalance_timeout_ms())
    if leader is not None and leader != group.leader:
        group, done = then(group, done, _records(LeaderElected(leader)))
    assignment: dict[str, str] | None = None
    if group.members:
        protocol = group.select_protocol()
        if server_assignment.is_server_protocol(protocol):
            assignment, error, message = server_assignment.compute(group, protocol)
            if assignment is None:
                group, done = then(group, done, _fail_members(group, error, message))
    if group.pending_sync:
        group, done = then(group, done, _records(PendingSyncCleared()))
    if not group.members:
        group, done = then(group, done, _records(GenerationStarted(group.generation + 1, None)))
        group, done = then(group, done, _records(StateChanged(EMPTY, env.now_ms)))
        return then(group, done, _records(group_record(group, persist=True)))[1]
    group, done = then(group, done, _records(GenerationStarted(group.generation + 1, group.select_protocol())))
    group, done = then(group, done, _records(StateChanged(COMPLETING, env.now_ms)))
    if assignment is not None:
        return done + _complete_with_server_assignment(group, assignment, env)
    leader_members = _members_metadata(group)
    joined = _joins_answered(group, env, lambda member: {
        "members": leader_members if member.member_id == group.leader else []})
    return done + joined + CoordinatorResult([JoinCompleted(await_sync=True)], [],
                                             [Schedule(SYNC, env.now_ms + group.rebalance_timeout_ms())])


def _joins_answered(group: ClassicGroup, env: Env, fields_of: Callable[[Member], dict]) -> CoordinatorResult:
    """Every parked JoinGroup answered with the new generation (`fields_of`: what only some members are told),
    and every member's session restarted."""
    responses = [parked_join_response(
        group.group_id, member.join.request_id, NONE, generation_id=group.generation,
        protocol_type=group.protocol_type, protocol_name=group.protocol_name, leader=group.leader or "",
        member_id=member.member_id, **fields_of(member),
    ) for member in group.members.values() if member.join is not None]
    return CoordinatorResult([], responses, [session(member, env) for member in group.members.values()])


def _complete_with_server_assignment(group: ClassicGroup, assignment: dict[str, str],
                                     env: Env) -> CoordinatorResult:
    """Our extension: the coordinator assigned, so the group is Stable at once and nobody needs to sync first."""
    group, done = then(group, NOTHING, _records(AssignmentsSet(assignment)))
    joined = _joins_answered(group, env, lambda member: {"skip_assignment": True})
    group, done = then(group, done, joined + _records(JoinCompleted(await_sync=False)))
    group, done = then(group, done, _records(StateChanged(STABLE, env.now_ms)))
    return then(group, done, _records(group_record(group, persist=True)))[1]


def _fail_members(group: ClassicGroup, error: int, message: str) -> CoordinatorResult:
    """The server assignor could not run: answer every parked JoinGroup with the error and empty the group,
    since no member can be given an assignment in this generation."""
    done = NOTHING
    for member in list(group.members.values()):
        if member.join is not None:
            failed = answer(parked_join_response(group.group_id, member.join.request_id, error,
                                                 member_id=member.member_id, error_message=message))
            group, done = then(group, done, failed + _records(JoinParked(member.member_id, None)))
        group, done = then(group, done, remove_member(group, member.member_id))
    return done


# -- SyncGroup ---------------------------------------------------------------------------------------------------

def sync(group: ClassicGroup | None, req: SyncGroupRequest, env: Env) -> CoordinatorResult:
    gid, rid = req.group_id, req.request_id
    if group is None:
        return answer(sync_response(gid, rid, UNKNOWN_MEMBER_ID))
    member_id = req.member_id
    try:
        group.validate_member(member_id, req.group_instance_id, req.principal)
        if req.generation_id != group.generation:
            raise CoordinatorError(ILLEGAL_GENERATION)
        if _inconsistent(req.protocol_type, group.protocol_type) or _inconsistent(req.protocol_name,
                                                                                  group.protocol_name):
            raise CoordinatorError(INCONSISTENT_GROUP_PROTOCOL)
    except CoordinatorError as exc:
        return answer(sync_response(gid, rid, exc.code))
    member = group.members[member_id]
    if group.state == PREPARING:
        return answer(sync_response(gid, rid, REBALANCE_IN_PROGRESS))
    if group.state == COMPLETING:
        group, done = then(group, NOTHING, _records(SyncParked(member_id, Parked(rid, req.version))))  # which also ends its pending sync
        if not group.pending_sync:
            group, done = then(group, done, _cancel(group, SYNC))
        if group.leader == member_id:
            group, done = then(group, done, _records(AssignmentsSet({a.member_id: a.assignment
                                                                     for a in req.assignments})))
            group, done = then(group, done, _propagate_assignment(group, NONE, env))
            group, done = then(group, done, _records(StateChanged(STABLE, env.now_ms)))
            group, done = then(group, done, _records(group_record(group, persist=True)))
        return done
    # Stable (an Empty group has no members to validate). Java does not reset the session here (Scala does).
    return _remove_pending_sync_member(group, member_id) + answer(
        sync_response(gid, rid, NONE, group.protocol_type, group.protocol_name, member.assignment))


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


def _remove_pending_sync_member(group: ClassicGroup, member_id: str) -> CoordinatorResult:
    done = NOTHING
    if member_id in group.pending_sync:
        group, done = then(group, done, _records(SyncReceived(member_id)))
    if not group.pending_sync:
        group, done = then(group, done, _cancel(group, SYNC))
    return done


def _propagate_assignment(group: ClassicGroup, error: int, env: Env) -> CoordinatorResult:
    ok = error == NONE
    responses = []
    sessions = []
    for member in group.members.values():
        if member.sync is not None:
            responses.append(sync_response(
                group.group_id, member.sync.request_id, error, group.protocol_type if ok else None,
                group.protocol_name if ok else None, member.assignment,
            ))
            # A member whose session ran out while it waited here was kept; it gets a fresh session now.
            sessions.append(session(member, env))
    return CoordinatorResult([ParkedSyncsAnswered()], responses, sessions)


def _reset_and_propagate_assignment_with_error(group: ClassicGroup, error: int, env: Env) -> CoordinatorResult:
    group, done = then(group, NOTHING, _records(AssignmentsSet({})))
    return then(group, done, _propagate_assignment(group, error, env))[1]


def on_sync_timer(group: ClassicGroup, env: Env) -> CoordinatorResult:
    """Members that did not sync within the rebalance timeout after the join phase are removed. A timer that
    outlived its sync phase (nobody left to wait for) does nothing."""
    if group.state not in (COMPLETING, STABLE) or not group.pending_sync:
        return NOTHING
    done = NOTHING
    for member_id in list(group.pending_sync):
        group, done = then(group, done, remove_member(group, member_id) + CoordinatorResult(members_expired=1))
    return done + prepare_rebalance(group, env)


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


def on_heartbeat_timer(group: ClassicGroup, member_id: str, env: Env) -> CoordinatorResult:
    """A session ran out: the member (or pending member) is removed, unless it is waiting on the group."""
    expired = CoordinatorResult(members_expired=1)
    if member_id in group.pending_members:
        group, done = then(group, NOTHING, remove_member(group, member_id) + expired)
        # Java: an expiry completes even an initial rebalance when everyone left has joined.
        if group.state == PREPARING and group.has_all_members_joined():
            return done + complete_join(group, env)
        return done
    member = group.members.get(member_id)
    if member is None:  # the member left already: nothing to expire
        return NOTHING
    # Members parked in JoinGroup or SyncGroup are waiting on the group, not failing; new members are not.
    if not member.is_new and (member.join is not None or member.sync is not None):
        return NOTHING
    group, done = then(group, NOTHING, remove_member(group, member_id) + expired)
    if group.state in (STABLE, COMPLETING):
        return done + prepare_rebalance(group, env)
    if group.state == PREPARING and group.has_all_members_joined():
        return done + complete_join(group, env)
    return done


def remove_member(group: ClassicGroup, member_id: str) -> CoordinatorResult:
    """Remove a member or pending member and drop its session timer; what it has parked is answered with
    UNKNOWN_MEMBER_ID, so that it re-joins if it is alive. Nothing happens for an id the group does not have."""
    member = group.members.get(member_id)
    if member is not None:
        parked = _answer_parked(group, member, UNKNOWN_MEMBER_ID)
    elif member_id in group.pending_members:
        parked = NOTHING
    else:
        return NOTHING
    return parked + _records(MemberRemoved(member_id)) + _cancel(group, heartbeat_key(member_id))


def _answer_parked(group: ClassicGroup, member: Member, error: int, member_id: str = "") -> CoordinatorResult:
    responses = []
    if member.join is not None:
        responses.append(parked_join_response(group.group_id, member.join.request_id, error, member_id=member_id))
    if member.sync is not None:
        responses.append(sync_response(group.group_id, member.sync.request_id, error))
    return CoordinatorResult([], responses)


# -- LeaveGroup --------------------------------------------------------------------------------------------------

def leave(group: ClassicGroup | None, req: LeaveGroupRequest, env: Env) -> CoordinatorResult:
    results = []
    removed_any = False
    done = NOTHING
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
                group, done = then(group, done, remove_member(group, target))
                removed_any = True
            except CoordinatorError as exc:
                error = exc.code
        elif member_id in group.pending_members:
            group, done = then(group, done, remove_member(group, member_id))
            removed_any = True
        else:
            try:
                group.validate_member(member_id, instance, req.principal)
                group, done = then(group, done, remove_member(group, member_id))
                removed_any = True
            except CoordinatorError as exc:
                error = exc.code
        results.append(MemberResponse(member_id, instance, error))
    # Java: remove every leaving member first, then rebalance once (a leaving pending member counts too).
    if group is not None and removed_any:
        if group.state in (STABLE, COMPLETING):
            group, done = then(group, done, prepare_rebalance(group, env))
        else:
            group, done = then(group, done, maybe_complete_join_phase(group, env))
    if req.version <= 2:
        return done + answer(simple_response(req, results[0].error_code))
    return done + answer(simple_response(req, NONE, members=tuple(results)))

"""DescribeGroups: a classic group as Kafka's describeGroups answers it."""

from __future__ import annotations

from schemas.messages import NO_AUTHORIZED_OPERATIONS, DescribedGroupMember, DescribeGroupsRequest
from state.classic.group import ClassicGroup, GroupState
from state.errors import NONE
from state.handling.step import CoordinatorResult, Env, answer
from state.wire import simple_response


def describe(group: object, req: DescribeGroupsRequest, env: Env) -> CoordinatorResult:
    """A classic group's state, protocol and members (their metadata and assignments only when Stable). No group,
    or (below DescribeGroups v6) a consumer group: Kafka's answer, Dead and nothing else."""
    if not isinstance(group, ClassicGroup):
        return answer(simple_response(req, NONE))
    stable = group.state == GroupState.STABLE
    members = tuple(
        DescribedGroupMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                             m.metadata(group.protocol_name) if stable else "", m.assignment if stable else "")
        for m in group.members.values()
    )
    return answer(simple_response(
        req, NONE, group_state=group.state.value, protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "", members=members,
        authorized_operations=NO_AUTHORIZED_OPERATIONS,
    ))

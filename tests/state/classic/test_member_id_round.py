"""The member-id round a gateway answers (`state.classic.member_id_round`): the coordinator keeps the member it named
exactly as it keeps one it named itself, and refuses what it would have refused."""

from __future__ import annotations

import json

import pytest

from state.api import PENDING_MEMBER, CoordinatorConfig, encode, is_member_id_round, member_id_required, pending_member_id
from state.errors import Errors
from state.classic.group import GroupState
from tests.state.context import GroupContext


def pending(ctx: GroupContext, **kw) -> dict:
    """The request a gateway appends for a member-id round it answered: the JoinGroup, as `PendingMember`."""
    return {**ctx.join_request(**kw), "api": PENDING_MEMBER}


def test_the_coordinator_keeps_the_member_the_gateway_named_and_answers_as_the_gateway_did():
    ctx = GroupContext()
    request = pending(ctx, client_id="cli")
    (response,) = ctx.step(request, valid=False)
    member_id = pending_member_id("g", "cli", request["request_id"])
    assert member_id.startswith("cli-")
    assert response == json.loads(encode(member_id_required("g", request["request_id"], member_id)))
    assert list(ctx.group.pending_members) == [member_id]
    assert ctx.group.state == GroupState.EMPTY and ctx.group.generation == 0
    ctx.join(member_id)
    assert ctx.group.state == GroupState.PREPARING_REBALANCE and member_id in ctx.group.members


def test_a_named_member_expires_after_its_session_timeout_as_any_pending_member():
    ctx = GroupContext()
    request = pending(ctx, session=10_000)
    ctx.step(request, valid=False)
    ctx.sleep(10_000)
    assert ctx.group.pending_members == {}
    (response,) = ctx.join(pending_member_id("g", "client", request["request_id"]))
    assert response["error_code"] == Errors.UNKNOWN_MEMBER_ID


def test_a_group_that_refuses_the_newcomer_refuses_its_rejoin_the_same_way():
    ctx = GroupContext(CoordinatorConfig(group_initial_rebalance_delay_ms=0))
    ctx.stable_group(1)
    request = pending(ctx, protocol_type="connect")
    (response,) = ctx.step(request, valid=False)
    assert response["error_code"] == Errors.INCONSISTENT_GROUP_PROTOCOL
    (rejoin,) = ctx.join(pending_member_id("g", "client", request["request_id"]), protocol_type="connect")
    assert rejoin["error_code"] == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert len(ctx.group.members) == 1


def test_an_invalid_join_is_answered_as_the_joingroup_it_is():
    ctx = GroupContext()
    request = pending(ctx)
    del request["protocols"]
    (response,) = ctx.step(request, valid=False)
    assert response["api"] == "JoinGroup" and response["error_code"] == Errors.INVALID_REQUEST


@pytest.mark.parametrize("version, member_id, instance, session, config, expected", [
    (4, "", None, 10_000, CoordinatorConfig(), True),
    (3, "", None, 10_000, CoordinatorConfig(), False),  # before KIP-394 the id comes with the joined answer
    (9, "m-1", None, 10_000, CoordinatorConfig(), False),  # a known member joins the group
    (9, "", "instance-1", 10_000, CoordinatorConfig(), False),  # a static member is added at once
    (9, "", None, 5_999, CoordinatorConfig(), False),  # INVALID_SESSION_TIMEOUT
    (9, "", None, 10_000, CoordinatorConfig(group_max_size=10), False),  # a full group refuses instead
])
def test_which_joins_are_a_member_id_round(version, member_id, instance, session, config, expected):
    assert is_member_id_round(version, "g", member_id, instance, session, config) is expected

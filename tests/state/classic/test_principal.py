"""A member is bound to the principal that joined it (our rule, for requests the gateway authenticated).

The gateway stamps `principal` on every control request of an authenticated client. A request that acts on a
member (JoinGroup with its id or its static instance id, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit with its
id) from another principal is answered Errors.GROUP_AUTHORIZATION_FAILED (30) and changes nothing. Requests without a
principal (written to the control topic directly) are not checked, as before the rule.
"""

from __future__ import annotations

import json

from state.errors import Errors
from state.batch import load_group
from state.config import CoordinatorConfig
from state.classic.group import GroupState
from tests.state.context import GroupContext, assignment

NO_DELAY = CoordinatorConfig(group_initial_rebalance_delay_ms=0)
ALICE, MALLORY = "User:alice", "User:mallory"


def alice_and_bob(ctx: GroupContext, instance: str | None = None) -> tuple[str, str]:
    """A Stable group of two: alice's member (static when `instance`) leads, bob's follows."""
    b = ctx.new_member(client_id="b", principal="User:bob")
    if instance is None:
        a = ctx.new_member(client_id="a", principal=ALICE)
        ctx.step(ctx.join_request(a, client_id="a", principal=ALICE),
                 ctx.join_request(b, client_id="b", principal="User:bob"))
    else:
        ctx.step(ctx.join_request(instance=instance, client_id="a", principal=ALICE),
                 ctx.join_request(b, client_id="b", principal="User:bob"))
    responses = ctx.sleep(0)
    a = next(r["member_id"] for r in responses if r["member_id"] != b)
    ctx.step(dict(ctx.sync_request(b, 1), principal="User:bob"))
    ctx.step(dict(ctx.sync_request(a, 1, {a: assignment(("t", (0,))), b: assignment(("t", (1,)))},
                                   instance=instance), principal=ALICE))
    assert ctx.group.state == GroupState.STABLE
    return a, b


def heartbeat(ctx: GroupContext, member_id: str, principal: str | None, instance: str | None = None) -> dict:
    (response,) = ctx.step({"api": "Heartbeat", "request_id": ctx.request_id(), "group_id": ctx.group_id,
                            "generation_id": 1, "member_id": member_id, "group_instance_id": instance,
                            "principal": principal})
    return response


class TestBinding:
    def test_the_member_records_the_principal_that_joined_it(self):
        ctx = GroupContext(NO_DELAY)
        a, b = alice_and_bob(ctx)
        assert ctx.group.members[a].principal == ALICE and ctx.group.members[b].principal == "User:bob"

    def test_its_own_principal_and_requests_without_one_are_served(self):
        ctx = GroupContext(NO_DELAY)
        a, _ = alice_and_bob(ctx)
        assert heartbeat(ctx, a, ALICE)["error_code"] == Errors.NONE
        assert heartbeat(ctx, a, None)["error_code"] == Errors.NONE

    def test_a_member_joined_without_a_principal_refuses_an_authenticated_stranger(self):
        ctx = GroupContext()
        (a,) = ctx.stable_group(1)
        assert heartbeat(ctx, a, MALLORY)["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED


class TestAnotherPrincipal:
    def test_heartbeat_is_refused_and_keeps_nothing_alive(self):
        ctx = GroupContext(NO_DELAY)
        a, _ = alice_and_bob(ctx)
        deadline = ctx.group.timers[f"heartbeat:{a}"] if f"heartbeat:{a}" in ctx.group.timers else None
        assert heartbeat(ctx, a, MALLORY)["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED
        assert ctx.last.records == [] and ctx.group.timers.get(f"heartbeat:{a}") == deadline

    def test_sync_is_refused(self):
        ctx = GroupContext(NO_DELAY)
        a, _ = alice_and_bob(ctx)
        (response,) = ctx.step(dict(ctx.sync_request(a, 1), principal=MALLORY))
        assert response["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED and response["assignment"] == ""

    def test_join_with_the_member_id_is_refused_without_a_rebalance(self):
        ctx = GroupContext(NO_DELAY)
        a, _ = alice_and_bob(ctx)
        (response,) = ctx.join(a, client_id="x", principal=MALLORY)
        assert response["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED
        assert ctx.group.state == GroupState.STABLE and ctx.group.generation == 1

    def test_leave_is_refused_per_member_and_the_others_leave(self):
        ctx = GroupContext(NO_DELAY)
        a, b = alice_and_bob(ctx)
        (response,) = ctx.step({"api": "LeaveGroup", "request_id": ctx.request_id(), "group_id": ctx.group_id,
                                "principal": "User:bob",
                                "members": [{"member_id": a, "group_instance_id": None},
                                            {"member_id": b, "group_instance_id": None}]})
        assert [m["error_code"] for m in response["members"]] == [Errors.GROUP_AUTHORIZATION_FAILED, Errors.NONE]
        assert list(ctx.group.members) == [a]

    def test_commit_is_refused_on_every_partition_and_stores_nothing(self):
        ctx = GroupContext(NO_DELAY)
        a, _ = alice_and_bob(ctx)
        (response,) = ctx.commit({("t", 0): 5, ("t", 1): 6}, member_id=a, generation=1, principal=MALLORY)
        assert response["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED
        assert [p["error_code"] for p in response["topics"][0]["partitions"]] == [Errors.GROUP_AUTHORIZATION_FAILED] * 2
        assert ctx.committed() == {}
        (response,) = ctx.commit({("t", 0): 5}, member_id=a, generation=1, principal=ALICE)
        assert response["error_code"] == Errors.NONE and ctx.committed() == {("t", 0): 5}

    def test_a_static_instance_is_not_taken_over_by_another_principal(self):
        ctx = GroupContext(NO_DELAY)
        a, _ = alice_and_bob(ctx, instance="app-1")
        (response,) = ctx.join(instance="app-1", client_id="x", principal=MALLORY)
        assert response["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED
        assert ctx.group.static_members["app-1"] == a
        (response,) = ctx.step({"api": "LeaveGroup", "request_id": ctx.request_id(), "group_id": ctx.group_id,
                                "principal": MALLORY, "members": [{"member_id": "", "group_instance_id": "app-1"}]})
        assert response["members"][0]["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED and a in ctx.group.members

    def test_its_own_principal_still_replaces_the_static_member(self):
        ctx = GroupContext(NO_DELAY)
        a, _ = alice_and_bob(ctx, instance="app-1")
        (response,) = ctx.join(instance="app-1", client_id="a", principal=ALICE)
        assert response["error_code"] == Errors.NONE and response["member_id"] != a
        assert ctx.group.members[response["member_id"]].principal == ALICE


class TestDurability:
    def test_the_binding_survives_a_load_from_the_records(self):
        ctx = GroupContext(NO_DELAY)
        a, b = alice_and_bob(ctx)
        (record,) = [json.loads(v) for k, v in ctx.records if json.loads(k)["version"] == 2
                     and v is not None and json.loads(v)["members"]][-1:]
        assert {m["member_id"]: m.get("principal") for m in record["members"]} == {a: ALICE, b: "User:bob"}
        loaded = GroupContext(NO_DELAY, now_ms=ctx.now_ms)
        loaded.state = load_group(ctx.group_id, ctx.records, ctx.now_ms, NO_DELAY)
        loaded.records = list(ctx.records)
        assert heartbeat(loaded, a, MALLORY)["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED
        assert heartbeat(loaded, a, ALICE)["error_code"] == Errors.NONE

    def test_members_without_a_principal_write_the_records_as_before(self):
        ctx = GroupContext()
        ctx.stable_group(2)
        values = [json.loads(v) for _, v in ctx.records if v is not None and b'"members"' in v]
        assert all("principal" not in m for value in values for m in value["members"])

    def test_a_principal_that_is_not_a_string_is_an_invalid_request(self):
        ctx = GroupContext(NO_DELAY)
        (response,) = ctx.step(dict(ctx.join_request(), principal=7), valid=False)
        assert response["error_code"] == Errors.INVALID_REQUEST

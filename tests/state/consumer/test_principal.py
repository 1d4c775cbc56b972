"""A consumer group's member is bound to the principal that joined it, as a classic group's (tests/state/
test_principal.py; our rule, `state.rules.authorize`).

A request a gateway authenticated carries `principal`. One that acts on a member of a consumer group from another
principal is answered GROUP_AUTHORIZATION_FAILED (30) and changes nothing: ConsumerGroupHeartbeat (a heartbeat, a
rejoin with epoch 0 and the member's id, a leave, a static member's temporary leave, taking over a static member's
instance id), OffsetCommit and OffsetFetch naming the member, and, for a member of the classic protocol served
inside a consumer group, JoinGroup, SyncGroup, Heartbeat and LeaveGroup. The principal is kept in the member's
metadata record (our extension, left out when there is none, so such records are written as before), survives a
rebuild from the records and both conversions between the protocols, and the gateway's fast path answers a
heartbeat from the view only for the member's own principal.
"""

from __future__ import annotations

import json

from schemas.consumer_group import ConsumerGroupHeartbeatRequest
from state.consumer.group import ConsumerGroup
from state.errors import Errors
from state.views.fast_answers import consumer_heartbeat_from_view
from state.classic.group import ClassicGroup
from state.runtime.load import load
from state.handling.timers import consumer_session_timeout_key
from state.views.published import decode_view, encode_view, view_of
from tests.state.consumer.support import topic_id
from tests.state.context import GroupContext

T = topic_id("t")
ALICE, BOB, MALLORY = "User:alice", "User:bob", "User:mallory"
AUTHZ = Errors.GROUP_AUTHORIZATION_FAILED


def context() -> GroupContext:
    ctx = GroupContext(now_ms=1_000)
    ctx.publish_topics(1, (T, "t", 6))
    return ctx


def alice_joined(ctx: GroupContext, **fields) -> dict:
    response = ctx.consumer_join("A", principal=ALICE, **fields)
    assert response["error_code"] == Errors.NONE and ctx.group.members["A"].principal == ALICE
    return response


def member_records(ctx: GroupContext) -> list[dict]:
    """The member-metadata records (type 5) written so far, tombstones left out."""
    return [json.loads(v) for k, v in ctx.records if json.loads(k)["version"] == 5 and v is not None]


def commit(ctx: GroupContext, epoch: int, principal: str | None) -> dict:
    (response,) = ctx.commit({("t", 0): 5}, member_id="A", generation=epoch, version=9, principal=principal)
    return response


def fetch(ctx: GroupContext, epoch: int, principal: str | None) -> dict:
    (response,) = ctx.step({"api": "OffsetFetch", "api_version": 9, "request_id": ctx.request_id(),
                            "group_id": ctx.group_id, "topics": None, "member_id": "A", "member_epoch": epoch,
                            "principal": principal})
    return response


class TestBinding:
    def test_the_member_metadata_record_carries_the_principal_and_none_without_one(self):
        ctx = context()
        alice_joined(ctx)
        ctx.consumer_join("B")
        assert [r.get("principal", "absent") for r in member_records(ctx)] == [ALICE, "absent"]
        assert ctx.group.members["B"].principal is None

    def test_its_own_principal_and_a_request_without_one_are_served(self):
        ctx = context()
        alice_joined(ctx)
        assert ctx.consumer_heartbeat("A", 1, principal=ALICE)["error_code"] == Errors.NONE
        assert ctx.consumer_heartbeat("A", 1)["error_code"] == Errors.NONE
        assert ctx.group.members["A"].principal == ALICE

    def test_a_member_joined_without_a_principal_refuses_an_authenticated_stranger(self):
        ctx = context()
        ctx.consumer_join("A")
        assert ctx.consumer_heartbeat("A", 1, principal=MALLORY)["error_code"] == AUTHZ


class TestAnotherPrincipal:
    def test_a_heartbeat_is_refused_and_keeps_nothing_alive(self):
        ctx = context()
        alice_joined(ctx)
        deadline = ctx.group.timers[consumer_session_timeout_key("A")]
        ctx.now_ms += 1_000
        response = ctx.consumer_heartbeat("A", 1, principal=MALLORY)
        assert response["error_code"] == AUTHZ and response["error_message"] == "member A belongs to another principal"
        assert ctx.last.records == [] and ctx.group.timers[consumer_session_timeout_key("A")] == deadline

    def test_a_rejoin_with_the_member_id_is_refused(self):
        ctx = context()
        alice_joined(ctx)
        assert ctx.consumer_join("A", principal=MALLORY)["error_code"] == AUTHZ
        assert ctx.last.records == [] and ctx.group.members["A"].member_epoch == 1

    def test_a_leave_is_refused_and_the_member_stays(self):
        ctx = context()
        alice_joined(ctx)
        assert ctx.consumer_heartbeat("A", -1, principal=MALLORY)["error_code"] == AUTHZ
        assert "A" in ctx.group.members and ctx.group.group_epoch == 1
        assert ctx.consumer_heartbeat("A", -1, principal=ALICE)["error_code"] == Errors.NONE
        assert ctx.group.members == {}

    def test_a_static_member_s_instance_is_neither_left_nor_taken_over(self):
        ctx = context()
        alice_joined(ctx, instance_id="app-1")
        assert ctx.consumer_heartbeat("A", -2, instance_id="app-1", principal=MALLORY)["error_code"] == AUTHZ
        assert ctx.consumer_heartbeat("A", -2, instance_id="app-1", principal=ALICE)["error_code"] == Errors.NONE
        # it left for a while: only its own principal may come back as the instance, under a new member id
        assert ctx.consumer_join("X", instance_id="app-1", principal=MALLORY)["error_code"] == AUTHZ
        assert set(ctx.group.members) == {"A"}
        assert ctx.consumer_join("A2", instance_id="app-1", principal=ALICE)["error_code"] == Errors.NONE
        assert set(ctx.group.members) == {"A2"} and ctx.group.members["A2"].principal == ALICE

    def test_a_commit_and_a_fetch_naming_the_member_are_refused(self):
        ctx = context()
        alice_joined(ctx)
        refused = commit(ctx, 1, MALLORY)
        assert refused["error_code"] == AUTHZ
        assert [p["error_code"] for p in refused["topics"][0]["partitions"]] == [AUTHZ]
        assert fetch(ctx, 1, MALLORY)["error_code"] == AUTHZ
        assert commit(ctx, 1, ALICE)["error_code"] == Errors.NONE
        assert fetch(ctx, 1, ALICE)["topics"][0]["partitions"][0]["committed_offset"] == 5
        # an admin's fetch names no member and is not a member's act
        assert ctx.committed() == {("t", 0): 5}


class TestDurability:
    def test_the_binding_survives_a_rebuild_from_the_records(self):
        ctx = context()
        alice_joined(ctx)
        rebuilt = load(ctx.group_id, ctx.records, ctx.now_ms, ctx.config).group
        assert isinstance(rebuilt, ConsumerGroup) and rebuilt.members["A"].principal == ALICE

    def test_a_record_without_the_principal_loads_as_a_member_without_one(self):
        """A record written before the extension: the same bytes as one of a member without a principal."""
        ctx = context()
        ctx.consumer_join("A")
        rebuilt = load(ctx.group_id, ctx.records, ctx.now_ms, ctx.config).group
        assert rebuilt.members["A"].principal is None and b"principal" not in b"".join(
            v for _, v in ctx.records if v is not None)


class TestClassicMembersInAConsumerGroup:
    """A classic group of alice's member upgraded by bob's consumer-protocol member (`state.consumer.migration`)."""

    def upgraded(self) -> tuple[GroupContext, str]:
        """The upgrade keeps the classic member's principal."""
        ctx = context()
        member_id = ctx.new_member(principal=ALICE)
        ctx.join(member_id, principal=ALICE)
        ctx.sleep(ctx.config.group_initial_rebalance_delay_ms)
        ctx.step(dict(ctx.sync_request(member_id, 1), principal=ALICE))
        assert ctx.consumer_join("B", principal=BOB)["error_code"] == Errors.NONE
        assert isinstance(ctx.group, ConsumerGroup) and ctx.group.members[member_id].principal == ALICE
        return ctx, member_id

    def test_its_join_sync_heartbeat_commit_and_leave_are_refused_to_another_principal(self):
        ctx, a = self.upgraded()
        assert ctx.join(a, principal=MALLORY)[0]["error_code"] == AUTHZ
        assert ctx.step(dict(ctx.sync_request(a, 1), principal=MALLORY))[0]["error_code"] == AUTHZ
        assert ctx.step({"api": "Heartbeat", "request_id": ctx.request_id(), "group_id": ctx.group_id,
                         "generation_id": 1, "member_id": a, "group_instance_id": None,
                         "principal": MALLORY})[0]["error_code"] == AUTHZ
        (refused,) = ctx.commit({("t", 0): 5}, member_id=a, generation=1, principal=MALLORY)
        assert refused["error_code"] == AUTHZ
        (left,) = ctx.step({"api": "LeaveGroup", "request_id": ctx.request_id(), "group_id": ctx.group_id,
                            "principal": MALLORY, "members": [{"member_id": a, "group_instance_id": None}]})
        assert left["members"][0]["error_code"] == AUTHZ and a in ctx.group.members
        (ok,) = ctx.commit({("t", 0): 5}, member_id=a, generation=1, principal=ALICE)
        assert ok["error_code"] == Errors.NONE

    def test_the_downgrade_keeps_the_principal(self):
        ctx, a = self.upgraded()
        assert ctx.consumer_heartbeat("B", -1, principal=BOB)["error_code"] == Errors.NONE
        assert isinstance(ctx.group, ClassicGroup) and ctx.group.members[a].principal == ALICE


class TestTheFastPath:
    def test_the_view_answers_a_heartbeat_only_for_the_member_s_own_principal(self):
        ctx = context()
        alice_joined(ctx)
        published = decode_view(encode_view(view_of(ctx.group, ctx.config)))
        assert published.members["A"].principal == ALICE

        def answer(principal: str | None):
            return consumer_heartbeat_from_view(published, ConsumerGroupHeartbeatRequest(
                request_id="f", group_id=ctx.group_id, member_id="A", member_epoch=1, principal=principal))

        assert answer(ALICE) is not None and answer(None) is not None
        assert answer(MALLORY) is None  # the coordinator answers it: GROUP_AUTHORIZATION_FAILED

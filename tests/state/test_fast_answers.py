"""Answers from a group's published view: the view each step publishes, the rules read on it as on the group, and
how the coordinator checks what a gateway answered (commits carrying their answer, coalesced Liveness requests)."""

from __future__ import annotations

import json

import msgspec
import pytest

from schemas.messages import CommitAnswer, HeartbeatRequest, OffsetCommitRequest
from state.config import CoordinatorConfig
from state.errors import Errors
from state.views.fast_answers import commit_from_view, commit_response, heartbeat_from_view
from state.classic.group import GroupState
from state.offsets.handlers import fetch_from_view
from state.rules import commit_error, heartbeat_error
from state.views.published import PublishedGroup, decode_view, encode_view, view_of
from state.wire import decode_request
from tests.state.context import GroupContext

NO_DELAY = CoordinatorConfig(group_initial_rebalance_delay_ms=0)


def published(ctx: GroupContext) -> PublishedGroup:
    """The group's view as a gateway decodes it from the views topic."""
    return decode_view(encode_view(view_of(ctx.group, ctx.config)))


def heartbeat(ctx: GroupContext, member_id: str, generation: int, instance: str | None = None,
              principal: str | None = None) -> HeartbeatRequest:
    return decode_request(json.dumps({"api": "Heartbeat", "request_id": "h", "group_id": ctx.group_id,
                                      "generation_id": generation, "member_id": member_id,
                                      "group_instance_id": instance, "principal": principal}).encode())


def commit(ctx: GroupContext, member_id: str, generation: int, metadata: str = "", version: int = 8,
           **extra) -> OffsetCommitRequest:
    return decode_request(json.dumps({
        "api": "OffsetCommit", "api_version": version, "request_id": ctx.request_id(), "group_id": ctx.group_id,
        "generation_id_or_member_epoch": generation, "member_id": member_id,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 10,
                                                 "committed_metadata": metadata},
                                                {"partition_index": 1, "committed_offset": 11}]}], **extra}).encode())


def answered_commit(ctx: GroupContext, req: OffsetCommitRequest, answer) -> dict:
    """The commit as a gateway appends it after answering it itself."""
    return {**json.loads(msgspec.json.encode(req)), "answered": json.loads(msgspec.json.encode(answer))}


class TestTheView:
    """Every step of every core test checks that a view that changed is published (tests/state/context.py)."""

    def test_a_step_that_changes_the_group_publishes_its_view_and_heartbeats_and_commits_do_not(self):
        ctx = GroupContext(NO_DELAY)
        member = ctx.new_member()  # the JoinGroup creates the group
        assert json.loads(ctx.last.view)["group_state"] == "Empty"
        ctx.join(member)
        assert ctx.last.publish_view and json.loads(ctx.last.view)["group_state"] == "PreparingRebalance"
        (joined,) = ctx.sleep(0)
        assert json.loads(ctx.last.view)["group_state"] == "CompletingRebalance"
        ctx.sync(member, joined["generation_id"], {member: ""})
        view = json.loads(ctx.last.view)
        assert view == {"group_state": "Stable", "generation": 1, "protocol_type": "consumer", "protocol_name": "range",
                        "leader": member, "members": [{"member_id": member, "group_instance_id": None,
                                                       "principal": None, "session_timeout_ms": 10_000,
                                                       "rebalance_timeout_ms": 30_000}],
                        "offsets": [], "position": {"partition": 0, "offset": ctx.requests_topic_end - 1}}
        ctx.heartbeat(member, 1)
        assert (ctx.last.view, ctx.last.publish_view) == (None, False)
        ctx.commit({("t", 0): 5}, member, 1)
        assert (ctx.last.view, ctx.last.publish_view) == (None, False)

    def test_a_deleted_group_publishes_its_removal(self, ctx):
        ctx.commit({("t", 0): 5})
        assert json.loads(ctx.last.view)["group_state"] == "Empty"
        ctx.step({"api": "DeleteGroups", "request_id": "d", "group_id": "g"})
        assert (ctx.last.view, ctx.last.publish_view) == (None, True)

    def test_a_resumed_call_publishes_the_view_again(self, ctx):
        ctx.commit({("t", 0): 5})
        ctx.step(resumed=True)
        assert ctx.last.publish_view and json.loads(ctx.last.view)["group_state"] == "Empty"

    def test_a_session_expiry_publishes_the_smaller_group(self):
        ctx = GroupContext()
        leader, follower = ctx.stable_group(2)
        ctx.now_ms += 9_000
        ctx.heartbeat(leader, 1)
        ctx.sleep(1_000)
        view = json.loads(ctx.last.view)
        assert view["group_state"] == "PreparingRebalance" and [m["member_id"] for m in view["members"]] == [leader]


class TestOffsetFetchFromTheView:
    """A Stable group's view carries its offsets as of the last request the step applied (`position`); an
    OffsetFetch is answered from them only while that request is the last one written to the group's requests-topic
    partition, and then exactly as the coordinator answers it."""

    def formed_after_a_commit(self) -> tuple[GroupContext, str]:
        ctx = GroupContext(NO_DELAY)
        ctx.commit({("t", 0): 5, ("t", 2): 7})  # before the group forms, as an admin tool may
        member = ctx.new_member()
        ctx.join(member)
        ctx.sleep(0)
        ctx.sync(member, 1, {member: ""})
        return ctx, member

    def fetch(self, ctx: GroupContext, topics: dict[str, list[int]] | None):
        return decode_request(json.dumps({
            "api": "OffsetFetch", "api_version": 7, "request_id": "", "group_id": ctx.group_id, "require_stable": True,
            "topics": None if topics is None else [{"name": t, "partition_indexes": p} for t, p in topics.items()],
        }).encode())

    @pytest.mark.parametrize("topics", [None, {"t": [0, 1, 2]}, {"other": [0]}])
    def test_answered_as_the_coordinator_answers_while_nothing_was_written_after_the_view(self, topics):
        ctx, member = self.formed_after_a_commit()
        view = decode_view(ctx.last.view)
        assert view.state == "Stable" and view.position.offset == ctx.requests_topic_end - 1
        answer = json.loads(msgspec.json.encode(fetch_from_view(view, self.fetch(ctx, topics), ctx.requests_topic_end)))
        assert answer == {**ctx.fetch(topics), "request_id": ""}

    def test_a_request_written_after_the_view_sends_the_fetch_to_the_coordinator(self):
        ctx, member = self.formed_after_a_commit()
        view = decode_view(ctx.last.view)
        req = self.fetch(ctx, None)
        ctx.commit({("t", 0): 9}, member, 1)  # acknowledged: it is in the requests topic, after the view's request
        assert (ctx.last.publish_view, ctx.committed()[("t", 0)]) == (False, 9)
        assert fetch_from_view(view, req, ctx.requests_topic_end) is None
        assert fetch_from_view(view, req, None) is None

    def test_a_view_carries_no_offsets_outside_stable_or_where_retention_could_remove_one(self):
        ctx = GroupContext(NO_DELAY)
        # KIP-496: a Stable consumer group's offsets of topics it does not subscribe to expire.
        ctx.commit({("t", 0): 5, ("unsubscribed", 0): 1})
        assert "offsets" not in json.loads(ctx.last.view)  # Empty: its offsets expire
        member = ctx.new_member()
        ctx.join(member)
        ctx.sleep(0)
        assert json.loads(ctx.last.view)["group_state"] == "CompletingRebalance"
        assert "offsets" not in json.loads(ctx.last.view)
        ctx.sync(member, 1, {member: ""})
        view = decode_view(ctx.last.view)
        assert view.state == "Stable" and (view.offsets, view.position) == (None, None)
        assert fetch_from_view(view, self.fetch(ctx, None), ctx.requests_topic_end) is None


class TestTheRulesReadTheViewAsTheGroup:
    """Every answer the view gives is the one the group gives: the rules read the same attributes of both."""

    def cases(self, ctx: GroupContext, member: str, static_id: str, static: str) -> list:
        return [
            (member, 1, None, None), (member, 2, None, None), ("nobody", 1, None, None), (member, 1, None, "User:x"),
            (static_id, 1, static, None), (member, 1, static, None), (static_id, 1, "other", None),
            (static_id, 1, static, "User:alice"), (static_id, 0, static, "User:alice"),
        ]

    @pytest.mark.parametrize("state", ["Stable", "CompletingRebalance", "PreparingRebalance"])
    def test_heartbeats_and_commits(self, state):
        ctx = GroupContext()
        member = ctx.new_member()
        ctx.step(ctx.join_request(member), dict(ctx.join_request(instance="static-1"), principal="User:alice"))
        while ctx.group.state != GroupState.COMPLETING_REBALANCE:
            ctx.sleep(ctx.config.group_initial_rebalance_delay_ms)
        static_id = next(m for m in ctx.group.members if m != member)
        if state != "CompletingRebalance":
            ctx.sync(ctx.group.leader, 1, {member: "", static_id: ""})
        if state == "PreparingRebalance":
            ctx.join(ctx.new_member(client_id="newcomer"))
        assert ctx.group.state.value == state
        view, group = published(ctx), ctx.group
        for member_id, generation, instance, principal in self.cases(ctx, member, static_id, "static-1"):
            req = heartbeat(ctx, member_id, generation, instance, principal)
            assert heartbeat_error(view, req) == heartbeat_error(group, req), req
            req = commit(ctx, member_id, generation, group_instance_id=instance, principal=principal)
            assert commit_error(view, req) == commit_error(group, req), req

    def test_an_empty_group_takes_commits_without_a_generation(self, ctx):
        ctx.commit({("t", 0): 5})
        assert commit_from_view(published(ctx), commit(ctx, "", -1), 4096) == CommitAnswer(Errors.NONE)
        assert commit_from_view(published(ctx), commit(ctx, "m", 3), 4096) is None
        assert commit_from_view(None, commit(ctx, "", -1), 4096) is None  # no view: the coordinator creates it

    def test_only_positive_answers_come_from_the_view(self):
        ctx = GroupContext()
        leader, follower = ctx.stable_group(2)
        view = published(ctx)
        assert heartbeat_from_view(view, heartbeat(ctx, leader, 1)) == Errors.NONE
        assert heartbeat_from_view(view, heartbeat(ctx, leader, 0)) is None
        assert heartbeat_from_view(view, heartbeat(ctx, "nobody", 1)) is None
        assert heartbeat_from_view(None, heartbeat(ctx, leader, 1)) is None
        ctx.join(ctx.new_member(client_id="newcomer"))
        assert heartbeat_from_view(published(ctx), heartbeat(ctx, leader, 1)) == Errors.REBALANCE_IN_PROGRESS

    def test_metadata_too_large_is_answered_on_its_partition_only(self):
        ctx = GroupContext()
        leader, _ = ctx.stable_group(2)
        req = commit(ctx, leader, 1, metadata="x" * 5000)
        answer = commit_from_view(published(ctx), req, 4096)
        response = msgspec.to_builtins(commit_response(req, answer))
        assert [p["error_code"] for p in response["topics"][0]["partitions"]] == [
            Errors.OFFSET_METADATA_TOO_LARGE, Errors.NONE]


class TestAnsweredCommits:
    def test_an_accepted_commit_is_stored_and_not_answered_again(self):
        ctx = GroupContext()
        leader, _ = ctx.stable_group(2)
        req = commit(ctx, leader, 1, metadata="x" * 5000)
        assert ctx.step(answered_commit(ctx, req, commit_from_view(published(ctx), req, 4096))) == []
        (checked,) = ctx.last.fast_answers
        assert (checked.api, checked.member_id, checked.mispredicted) == ("OffsetCommit", leader, False)
        assert ctx.committed() == {("t", 1): 11}

    def test_a_commit_the_view_accepted_and_the_group_refuses_is_counted_and_leaves_the_offsets(self):
        ctx = GroupContext()
        leader, follower = ctx.stable_group(2)
        ctx.commit({("t", 0): 3, ("t", 1): 4}, leader, 1)
        stale = published(ctx)  # the view a gateway still has
        ctx.leave(follower)  # generation 2 is on its way
        ctx.sleep(0)
        req = commit(ctx, follower, 1)
        assert ctx.step(answered_commit(ctx, req, commit_from_view(stale, req, 4096))) == []
        (checked,) = ctx.last.fast_answers
        assert checked.mispredicted and (checked.answered, checked.decided) == (Errors.NONE, Errors.UNKNOWN_MEMBER_ID)
        assert ctx.committed() == {("t", 0): 3, ("t", 1): 4}


class TestLiveness:
    def liveness(self, ctx: GroupContext, *heard: tuple[str, int, int, int]) -> dict:
        return {"api": "Liveness", "request_id": "gw-1", "group_id": ctx.group_id,
                "members": [{"member_id": m, "generation_id": g, "heard_ms": at, "answered": answered}
                            for m, g, at, answered in heard]}

    def test_members_heard_keep_their_session_from_when_they_were_heard(self):
        ctx = GroupContext()
        leader, follower = ctx.stable_group(2)  # sessions of 10 s from now
        start = ctx.now_ms
        ctx.now_ms = start + 9_000
        assert ctx.step(self.liveness(ctx, (leader, 1, start + 6_000, 0), (follower, 1, start + 8_000, 0)),
                        valid=False) == []  # internal: no published schema
        assert [a.mispredicted for a in ctx.last.fast_answers] == [False, False]
        ctx.now_ms = start + 15_999
        ctx.step()
        assert set(ctx.group.members) == {leader, follower}
        ctx.now_ms = start + 16_000  # the leader heard at 6 s, with a 10 s session
        ctx.step()
        assert set(ctx.group.members) == {follower} and ctx.group.state == GroupState.PREPARING_REBALANCE

    def test_a_heartbeat_answered_in_a_rebalance_restarts_the_session_and_a_refused_one_is_counted(self):
        ctx = GroupContext()
        leader, follower = ctx.stable_group(2)
        ctx.join(ctx.new_member(client_id="newcomer"))
        ctx.now_ms += 5_000
        ctx.step(self.liveness(ctx, (leader, 1, ctx.now_ms, Errors.REBALANCE_IN_PROGRESS),
                               ("gone", 1, ctx.now_ms, Errors.NONE)), valid=False)
        right, wrong = ctx.last.fast_answers
        assert not right.mispredicted and ctx.group.timers[f"heartbeat:{leader}"] == ctx.now_ms + 10_000
        assert wrong.mispredicted and wrong.decided == Errors.UNKNOWN_MEMBER_ID and ctx.last.responses == []

    def test_a_malformed_liveness_request_is_a_dead_letter(self, ctx):
        ctx.commit({("t", 0): 5})
        ctx.step({"api": "Liveness", "request_id": "x", "group_id": "g", "members": "nope"}, valid=False)
        assert [i for i, _ in ctx.last.dead_letters] == [0]

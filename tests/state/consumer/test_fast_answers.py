"""A consumer group's OffsetCommit and OffsetFetch answered from its published view (docs/gateway.md, "Fast
answers"): the view carries every member's epoch, and its offsets as of the last request the step applied; a
gateway answers with the consumer group's own rules (`state.consumer.offsets`) only what they accept, and the
coordinator checks every commit it answered."""

from __future__ import annotations

import json

import msgspec

from state.errors import Errors
from state.views.fast_answers import commit_from_view
from state.offsets.handlers import fetch_from_view
from state.views.published import PublishedConsumerGroup, decode_view, encode_view, view_of
from state.wire import decode_request
from tests.state.consumer.test_step import T, assigned, consumer_context, two_members
from tests.state.context import GroupContext

MAX_METADATA = 4096


def published(ctx: GroupContext) -> PublishedConsumerGroup:
    """The view the last step published, as a gateway decodes it from the views topic."""
    return decode_view(ctx.last.view)


def commit(ctx: GroupContext, member_id: str, epoch: int, partitions: tuple[int, ...] = (0, 1), version: int = 9,
           **extra):
    return decode_request(json.dumps({
        "api": "OffsetCommit", "api_version": version, "request_id": ctx.request_id(), "group_id": "g",
        "generation_id_or_member_epoch": epoch, "member_id": member_id,
        "topics": [{"name": "t", "partitions": [{"partition_index": p, "committed_offset": 10 + p}
                                                for p in partitions]}], **extra}).encode())


def as_written(req, answer) -> dict:
    """The commit as a gateway appends it after answering it itself."""
    return {**json.loads(msgspec.json.encode(req)), "answered": json.loads(msgspec.json.encode(answer))}


def fetch(member_id: str | None = None, epoch: int = -1, topics: dict[str, list[int]] | None = None) -> dict:
    return {"api": "OffsetFetch", "api_version": 9, "request_id": "", "group_id": "g", "member_id": member_id,
            "member_epoch": epoch, "require_stable": True,
            "topics": None if topics is None else [{"name": t, "partition_indexes": p} for t, p in topics.items()]}


def from_view(ctx: GroupContext, view: PublishedConsumerGroup, body: dict) -> dict | None:
    answer = fetch_from_view(view, decode_request(json.dumps(body).encode()), ctx.requests_topic_end)
    return None if answer is None else json.loads(msgspec.json.encode(answer))


class TestCommitsFromTheView:
    def test_a_member_at_its_epoch_is_answered_and_the_coordinator_stores_it_without_answering_again(self):
        ctx = consumer_context()
        keeps = two_members(ctx)
        req = commit(ctx, "A", 2, tuple(sorted(keeps)))
        answer = commit_from_view(published(ctx), req, MAX_METADATA)
        assert (answer.error_code, answer.partition_errors) == (Errors.NONE, ())
        assert ctx.step(as_written(req, answer)) == []
        (checked,) = ctx.last.fast_answers
        assert (checked.api, checked.member_id, checked.mispredicted) == ("OffsetCommit", "A", False)
        assert ctx.committed() == {("t", p): 10 + p for p in keeps}

    def test_a_member_revoking_partitions_commits_from_the_view(self):
        """librdkafka acknowledges a revocation only after its commit in flight completes: the commit must not
        wait for a micro-batch. A member revoking keeps its epoch until it acknowledges; its heartbeat is not
        answered from the view, its commit is."""
        ctx = consumer_context()
        ctx.consumer_join("A")
        ctx.consumer_join("B")
        keeps = assigned(ctx.consumer_heartbeat("A", 1))  # A is told to revoke the rest
        assert ctx.group.members["A"].partitions_pending_revocation
        view = published(ctx)
        assert "A" not in view.members
        req = commit(ctx, "A", 1, tuple(sorted(set(range(6)) - keeps)))
        assert commit_from_view(view, req, MAX_METADATA) is not None
        assert ctx.step(as_written(req, commit_from_view(view, req, MAX_METADATA))) == []
        assert not ctx.last.fast_answers[0].mispredicted

    def test_only_what_the_rule_accepts_for_every_partition_is_answered(self):
        """Refusals are the coordinator's to give; so is a commit one epoch behind, whose partitions KIP-1251
        checks one by one (the view does not carry them)."""
        ctx = consumer_context()
        keeps = two_members(ctx)
        view = published(ctx)
        assert commit_from_view(view, commit(ctx, "A", 3), MAX_METADATA) is None  # STALE_MEMBER_EPOCH
        assert commit_from_view(view, commit(ctx, "unknown", 2), MAX_METADATA) is None  # UNKNOWN_MEMBER_ID
        assert commit_from_view(view, commit(ctx, "A", 2, version=8), MAX_METADATA) is None  # UNSUPPORTED_VERSION
        assert commit_from_view(view, commit(ctx, "", -1), MAX_METADATA) is None  # an admin's, to a live group
        one_behind = commit(ctx, "A", 1, tuple(sorted(keeps)))
        assert commit_from_view(view, one_behind, MAX_METADATA) is None
        (response,) = ctx.step(json.loads(msgspec.json.encode(one_behind)))
        assert {p["error_code"] for p in response["topics"][0]["partitions"]} == {Errors.NONE}

    def test_metadata_too_large_is_answered_on_its_partition_only(self):
        ctx = consumer_context()
        ctx.consumer_join("A")
        req = decode_request(json.dumps({
            "api": "OffsetCommit", "api_version": 9, "request_id": "c", "group_id": "g",
            "generation_id_or_member_epoch": 1, "member_id": "A", "topics": [{"name": "t", "partitions": [
                {"partition_index": 0, "committed_offset": 1, "committed_metadata": "x" * 5000},
                {"partition_index": 1, "committed_offset": 2}]}]}).encode())
        answer = commit_from_view(published(ctx), req, MAX_METADATA)
        assert [(e.partition, e.error_code) for e in answer.partition_errors] == [(0, Errors.OFFSET_METADATA_TOO_LARGE)]
        assert ctx.step(as_written(req, answer)) == [] and not ctx.last.fast_answers[0].mispredicted
        assert ctx.committed() == {("t", 1): 2}

    def test_a_commit_the_view_accepted_and_the_group_refuses_is_counted_and_stores_nothing(self):
        ctx = consumer_context()
        ctx.consumer_join("A")
        stale = published(ctx)  # the view a gateway still has
        ctx.consumer_heartbeat("A", -1)  # A left
        req = commit(ctx, "A", 1)
        assert ctx.step(as_written(req, commit_from_view(stale, req, MAX_METADATA))) == []
        (checked,) = ctx.last.fast_answers
        assert checked.mispredicted and (checked.answered, checked.decided) == (Errors.NONE, Errors.UNKNOWN_MEMBER_ID)
        assert ctx.committed() == {}

    def test_a_view_without_members_epochs_answers_no_commit(self):
        """A view written by an older release lacks `committers`: its group's commits wait for the coordinator."""
        ctx = consumer_context()
        ctx.consumer_join("A")
        older = json.loads(encode_view(view_of(ctx.group, ctx.config)))
        del older["committers"]
        assert commit_from_view(decode_view(json.dumps(older).encode()), commit(ctx, "A", 1), MAX_METADATA) is None


class TestFetchesFromTheView:
    """A consumer group's view carries its offsets and `position` as a classic Stable group's does, where none of
    them could expire (each is of a subscribed topic); an OffsetFetch is answered from them while the view's
    request is the last written to the group's requests-topic partition (read your writes), after the member and
    epoch it names are checked as the coordinator checks them (OffsetFetch v9+)."""

    def committed_then_joined(self) -> GroupContext:
        ctx = consumer_context()
        ctx.consumer_join("A")
        ctx.commit({("t", 0): 5, ("t", 2): 7}, member_id="A", generation=1, version=9)
        ctx.consumer_join("B")  # a step that publishes the view, after the commit
        return ctx

    def test_answered_as_the_coordinator_answers_while_nothing_was_written_after_the_view(self):
        ctx = self.committed_then_joined()
        view = published(ctx)
        assert view.position.offset == ctx.requests_topic_end - 1
        bodies = (fetch(), fetch("A", 1), fetch("B", 2), fetch("A", 1, {"t": [0, 1, 2]}), fetch(topics={"x": [0]}))
        answers = [from_view(ctx, view, body) for body in bodies]  # a fetch answered so is written nowhere
        assert answers[0]["topics"] == [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1, "metadata": "",
             "error_code": 0},
            {"partition_index": 2, "committed_offset": 7, "committed_leader_epoch": -1, "metadata": "",
             "error_code": 0}]}]
        for body, answer in zip(bodies, answers):
            (coordinators,) = ctx.step({**body, "request_id": ctx.request_id()})
            assert answer == {**coordinators, "request_id": ""}

    def test_the_member_and_its_epoch_are_checked_and_a_refusal_is_the_coordinators(self):
        ctx = self.committed_then_joined()
        view = published(ctx)
        assert from_view(ctx, view, fetch("A", 2)) is None  # STALE_MEMBER_EPOCH
        assert from_view(ctx, view, fetch("C", 1)) is None  # UNKNOWN_MEMBER_ID

    def test_a_commit_written_after_the_view_sends_the_fetch_to_the_coordinator(self):
        ctx = self.committed_then_joined()
        view = published(ctx)
        ctx.commit({("t", 0): 9}, member_id="A", generation=1, version=9)
        assert (ctx.last.publish_view, ctx.committed()[("t", 0)]) == (False, 9)
        assert from_view(ctx, view, fetch("A", 1)) is None

    def test_a_view_carries_no_offsets_where_retention_could_remove_one(self):
        """A consumer group's offsets of a topic no member subscribes to expire from their commit (Kafka 3.7+)."""
        ctx = consumer_context()
        ctx.consumer_join("A")
        ctx.commit({("t", 0): 5, ("other", 0): 1}, member_id="A", generation=1, version=9)
        ctx.consumer_join("B")
        view = published(ctx)
        assert (view.offsets, view.position) == (None, None)
        assert from_view(ctx, view, fetch()) is None

    def test_the_view_lists_every_member_with_its_epoch(self):
        ctx = consumer_context()
        two_members(ctx)
        ctx.consumer_join("C")  # A and B are told to revoke at their next heartbeat; C waits
        view = published(ctx)
        assert {m: (c.member_epoch, c.uses_classic_protocol) for m, c in view.committers.items()} == {
            "A": (2, False), "B": (2, False), "C": (3, False)}


    def test_a_heartbeat_the_coordinator_answers_publishes_the_view_so_the_fetch_that_follows_is_answered(self):
        """librdkafka fetches its offsets as soon as a heartbeat's answer gives it partitions, and acknowledges them
        in its next heartbeat: a view published only when the group changed would be behind that heartbeat."""
        ctx = consumer_context()
        ctx.consumer_join("A")
        ctx.commit({("t", 0): 5}, member_id="A", generation=1, version=9)
        ctx.consumer_heartbeat("A", 1, topic_partitions=[{"topic_id": T, "partitions": list(range(6))}])
        assert ctx.last.records == [] and ctx.last.publish_view  # it changed nothing
        assert published(ctx).position.offset == ctx.requests_topic_end - 1
        assert from_view(ctx, published(ctx), fetch("A", 1))["topics"][0]["partitions"][0]["committed_offset"] == 5

    def test_a_view_read_after_the_fetch_arrived_and_past_its_end_answers_it(self):
        """What the fetch must see is every request written before it arrived: a later view has them too."""
        ctx = self.committed_then_joined()
        end_when_it_arrived = ctx.requests_topic_end
        ctx.consumer_heartbeat("A", 1)
        body = fetch("A", 1)
        answer = fetch_from_view(published(ctx), decode_request(json.dumps(body).encode()), end_when_it_arrived)
        assert answer is not None and answer.topics[0].partitions[0].committed_offset == 5


def test_only_the_principal_a_member_is_bound_to_commits_and_fetches_for_it_from_the_view():
    """The view carries each member's principal (cp-members' binding); another principal's commit or fetch naming
    the member is the coordinator's to refuse (GROUP_AUTHORIZATION_FAILED)."""
    ctx = consumer_context()
    ctx.consumer_join("A", principal="User:alice")
    ctx.commit({("t", 0): 5}, member_id="A", generation=1, version=9, principal="User:alice")
    ctx.consumer_join("B", principal="User:alice")
    view = published(ctx)
    assert commit_from_view(view, commit(ctx, "A", 1, principal="User:alice"), MAX_METADATA) is not None
    assert commit_from_view(view, commit(ctx, "A", 1, principal="User:mallory"), MAX_METADATA) is None
    assert from_view(ctx, view, {**fetch("A", 1), "principal": "User:alice"}) is not None
    assert from_view(ctx, view, {**fetch("A", 1), "principal": "User:mallory"}) is None
    (refused,) = ctx.step({**fetch("A", 1), "request_id": "f", "principal": "User:mallory"})
    assert refused["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED

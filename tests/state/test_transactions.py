"""Transactional offset commits (TxnOffsetCommit and the transaction's end marker), after Kafka's
OffsetMetadataManagerTest: pending until COMMIT, dropped on ABORT, invisible to a require_stable fetch (88), the
member checks of a transactional commit, and the precedence of a later plain commit."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from state.api import (TRANSACTIONS_GROUP, decode_open_transactions, deliver_markers, marker_request, open_transactions,
                       txn_commit_from_view)
from state.offsets.transactions import TRANSACTION_MAX_TIMEOUT_MS
from state.views.published import decode_view, encode_view, view_of
from state.wire import decode_request
from state.config import CoordinatorConfig
from state.errors import Errors
from state.runtime.load import load
from tests.state.consumer.support import topic_id
from tests.state.context import GroupContext, durable_view

NO_DELAY = CoordinatorConfig(group_initial_rebalance_delay_ms=0)
PID = 4000


def txn_commit(ctx: GroupContext, offsets: dict[tuple[str, int], int], producer_id: int = PID,
               generation: int = -1, member_id: str = "", instance: str | None = None, version: int = 4,
               metadata: str | None = None) -> dict:
    topics: dict[str, list] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                             "committed_metadata": metadata})
    responses = ctx.step({
        "api": "TxnOffsetCommit", "api_version": version, "request_id": ctx.request_id(), "group_id": ctx.group_id,
        "transactional_id": "tx", "producer_id": producer_id, "producer_epoch": 0, "generation_id": generation,
        "member_id": member_id, "group_instance_id": instance,
        "topics": [{"name": t, "partitions": p} for t, p in topics.items()]})
    (response,) = [r for r in responses if r["api"] == "TxnOffsetCommit"]
    return response


def marker(ctx: GroupContext, committed: bool, producer_id: int = PID) -> list[dict]:
    return ctx.step({"api": "TransactionMarker", "group_id": ctx.group_id, "producer_id": producer_id,
                     "producer_epoch": 0, "committed": committed}, valid=False)


def errors(response: dict) -> list[int]:
    return [p["error_code"] for t in response["topics"] for p in t["partitions"]]


def stable_fetch(ctx: GroupContext, topics: dict[str, list[int]] | None = None) -> dict[Any, tuple[int, int]]:
    (response,) = ctx.step({"api": "OffsetFetch", "api_version": 8, "request_id": ctx.request_id(),
                            "group_id": ctx.group_id, "require_stable": True,
                            "topics": None if topics is None else
                            [{"name": t, "partition_indexes": p} for t, p in topics.items()]})
    return {(t["name"], p["partition_index"]): (p["committed_offset"], p["error_code"])
            for t in response["topics"] for p in t["partitions"]}


class TestPendingUntilTheMarker:
    def test_offsets_are_pending_until_commit(self):
        ctx = GroupContext()
        response = txn_commit(ctx, {("t", 0): 10, ("t", 1): 11})
        assert errors(response) == [Errors.NONE, Errors.NONE]
        assert ctx.committed() == {}
        assert marker(ctx, committed=True) == []
        assert ctx.committed() == {("t", 0): 10, ("t", 1): 11}
        assert ctx.group.offsets.pending == {}

    def test_abort_drops_them(self):
        ctx = GroupContext()
        ctx.commit({("t", 0): 5})
        txn_commit(ctx, {("t", 0): 10})
        marker(ctx, committed=False)
        assert ctx.committed() == {("t", 0): 5}
        assert ctx.group.offsets.pending == {}

    def test_retry_after_abort_commits(self):
        ctx = GroupContext()
        txn_commit(ctx, {("t", 0): 10})
        marker(ctx, committed=False)
        txn_commit(ctx, {("t", 0): 10})
        marker(ctx, committed=True)
        assert ctx.committed() == {("t", 0): 10}

    def test_a_marker_of_another_producer_changes_nothing(self):
        ctx = GroupContext()
        txn_commit(ctx, {("t", 0): 10})
        marker(ctx, committed=True, producer_id=PID + 1)
        assert ctx.committed() == {} and len(ctx.group.offsets.pending) == 1
        marker(ctx, committed=True)
        marker(ctx, committed=False)  # seen twice (a replayed batch): nothing left to change
        assert ctx.committed() == {("t", 0): 10}

    def test_two_producers_each_decide_their_own(self):
        ctx = GroupContext()
        txn_commit(ctx, {("t", 0): 10}, producer_id=1)
        txn_commit(ctx, {("t", 1): 20}, producer_id=2)
        marker(ctx, committed=False, producer_id=1)
        marker(ctx, committed=True, producer_id=2)
        assert ctx.committed() == {("t", 1): 20}

    def test_a_plain_commit_after_the_transactional_one_stays(self):
        """Kafka keeps the commit with the later record offset when the transaction commits."""
        ctx = GroupContext()
        txn_commit(ctx, {("t", 0): 10, ("t", 1): 11})
        ctx.commit({("t", 0): 7})
        marker(ctx, committed=True)
        assert ctx.committed() == {("t", 0): 7, ("t", 1): 11}

    def test_a_plain_commit_before_it_is_replaced(self):
        ctx = GroupContext()
        ctx.commit({("t", 0): 7})
        txn_commit(ctx, {("t", 0): 10})
        marker(ctx, committed=True)
        assert ctx.committed() == {("t", 0): 10}

    def test_metadata_too_large_fails_only_that_partition(self):
        ctx = GroupContext(CoordinatorConfig(offset_metadata_max_bytes=4))
        response = txn_commit(ctx, {("t", 0): 1}, metadata="toolong")
        assert errors(response) == [Errors.OFFSET_METADATA_TOO_LARGE]
        assert ctx.group.offsets.pending == {}


class TestRequireStable:
    def test_pending_partitions_answer_unstable_offset_commit(self):
        ctx = GroupContext()
        ctx.commit({("t", 0): 5, ("t", 1): 6})
        txn_commit(ctx, {("t", 0): 10})
        assert stable_fetch(ctx, {"t": [0, 1]}) == {("t", 0): (-1, Errors.UNSTABLE_OFFSET_COMMIT),
                                                    ("t", 1): (6, Errors.NONE)}
        assert stable_fetch(ctx) == {("t", 0): (-1, Errors.UNSTABLE_OFFSET_COMMIT), ("t", 1): (6, Errors.NONE)}
        assert ctx.committed() == {("t", 0): 5, ("t", 1): 6}  # without require_stable: the last committed
        marker(ctx, committed=True)
        assert stable_fetch(ctx, {"t": [0, 1]}) == {("t", 0): (10, Errors.NONE), ("t", 1): (6, Errors.NONE)}

    def test_after_abort_the_committed_offset(self):
        ctx = GroupContext()
        ctx.commit({("t", 0): 5})
        txn_commit(ctx, {("t", 0): 10})
        marker(ctx, committed=False)
        assert stable_fetch(ctx, {"t": [0]}) == {("t", 0): (5, Errors.NONE)}


class TestMemberChecks:
    @pytest.mark.parametrize("generation, member, error", [
        (-1, "", Errors.NONE),  # v0-2: no member fields, accepted whatever the state
        (1, "leader", Errors.NONE),
        (0, "leader", Errors.ILLEGAL_GENERATION),
        (1, "nobody", Errors.UNKNOWN_MEMBER_ID),
    ])
    def test_classic_group(self, generation, member, error):
        ctx = GroupContext()
        a, _ = ctx.stable_group(2)
        response = txn_commit(ctx, {("t", 0): 3}, generation=generation,
                              member_id=a if member == "leader" else member)
        assert errors(response) == [error] and response["error_code"] == error
        assert len(ctx.group.offsets.pending) == (1 if error == Errors.NONE else 0)

    def test_a_static_member_replaced_is_fenced(self):
        ctx = GroupContext(NO_DELAY)
        ctx.join(instance="i")
        member = next(iter(ctx.group.members))
        response = txn_commit(ctx, {("t", 0): 3}, generation=1, member_id="someone-else", instance="i")
        assert errors(response) == [Errors.FENCED_INSTANCE_ID]
        assert errors(txn_commit(ctx, {("t", 0): 3}, generation=1, member_id=member, instance="i")) == [Errors.NONE]

    def test_missing_group_with_a_generation_is_illegal_generation(self):
        ctx = GroupContext()
        assert errors(txn_commit(ctx, {("t", 0): 3}, generation=2, member_id="m")) == [Errors.ILLEGAL_GENERATION]
        assert ctx.group is None

    def test_consumer_group_stale_member_epoch_is_illegal_generation(self):
        ctx = GroupContext()
        ctx.publish_topics(1, (topic_id("t"), "t", 2))
        member = "m1"
        ctx.consumer_join(member, ("t",))
        epoch = ctx.group.members[member].member_epoch
        response = txn_commit(ctx, {("t", 0): 3}, generation=epoch + 1, member_id=member)
        assert errors(response) == [Errors.ILLEGAL_GENERATION]
        response = txn_commit(ctx, {("t", 0): 3}, generation=epoch, member_id=member)
        assert errors(response) == [Errors.NONE]
        marker(ctx, committed=True)
        assert ctx.committed() == {("t", 0): 3}


def txn_body(ctx: GroupContext, offsets: dict[tuple[str, int], int], generation: int = -1, member_id: str = "",
             instance: str | None = None, metadata: str | None = None) -> dict:
    return {"api": "TxnOffsetCommit", "api_version": 4, "request_id": ctx.request_id(), "group_id": ctx.group_id,
            "transactional_id": "tx", "producer_id": PID, "producer_epoch": 0, "generation_id": generation,
            "member_id": member_id, "group_instance_id": instance,
            "topics": [{"name": t, "partitions": [{"partition_index": p, "committed_offset": o,
                                                   "committed_metadata": metadata}]}
                       for (t, p), o in offsets.items()]}


def published(ctx: GroupContext):
    """The view of the group as a gateway decodes it from the views topic."""
    return decode_view(encode_view(view_of(ctx.group, ctx.config)))


def answered_by(ctx: GroupContext, view, body: dict) -> dict | None:
    """The TxnOffsetCommit as a gateway writes it after answering it from `view`; None: the view does not decide
    it (the gateway waits for the coordinator)."""
    answer = txn_commit_from_view(view, decode_request(json.dumps(body).encode()), 4096)
    return None if answer is None else {**body, "answered": json.loads(msgspec.json.encode(answer))}


class TestAnsweredFromTheView:
    """A gateway answers a TxnOffsetCommit the group's view accepts, once it is written inside the transaction;
    the coordinator checks it as it checks an answered OffsetCommit (`state.views.fast_answers`)."""

    @pytest.mark.parametrize("generation, member, instance", [
        (-1, "", None), (1, "leader", None), (0, "leader", None), (2, "leader", None), (1, "nobody", None),
        (1, "leader", "i"), (1, "static", "i"), (1, "static", "other"), (1, "nobody", "i"),
    ])
    def test_the_view_answers_what_the_group_accepts_and_nothing_else(self, generation, member, instance):
        ctx = GroupContext(NO_DELAY)
        leader = ctx.new_member()
        ctx.step(ctx.join_request(leader), ctx.join_request(instance="i"))
        static = next(m for m in ctx.group.members if m != leader)
        ctx.sync(ctx.group.leader, 1, {leader: "", static: ""})
        named = {"leader": leader, "static": static}.get(member, member)
        body = txn_body(ctx, {("t", 0): 3}, generation, named, instance)
        written = answered_by(ctx, published(ctx), body)
        decided = errors(txn_commit(ctx, {("t", 0): 3}, generation=generation, member_id=named, instance=instance))
        assert (written is not None) == (decided == [Errors.NONE])
        if written is not None:
            (decided_answer,) = ctx.step(written)  # sent: the gateway holds the EndTxn(COMMIT) on it
            assert errors(decided_answer) == [Errors.NONE]
            (checked,) = ctx.last.fast_answers
            assert (checked.api, checked.mispredicted) == ("TxnOffsetCommit", False)

    def test_an_answered_commit_is_pending_until_its_marker(self):
        ctx = GroupContext()
        leader, _ = ctx.stable_group(2)
        (decided,) = ctx.step(answered_by(ctx, published(ctx), txn_body(ctx, {("t", 0): 7}, 1, leader)))
        assert errors(decided) == [Errors.NONE] and ctx.committed() == {}
        assert stable_fetch(ctx, {"t": [0]})[("t", 0)][1] == Errors.UNSTABLE_OFFSET_COMMIT
        marker(ctx, committed=True)
        assert ctx.committed() == {("t", 0): 7}

    def test_metadata_too_large_is_answered_on_its_partition(self):
        ctx = GroupContext()
        leader, _ = ctx.stable_group(2)
        written = answered_by(ctx, published(ctx), txn_body(ctx, {("t", 0): 7}, 1, leader, metadata="x" * 5000))
        assert written["answered"]["partition_errors"] == [
            {"topic": "t", "partition": 0, "error_code": Errors.OFFSET_METADATA_TOO_LARGE}]
        (decided,) = ctx.step(written)
        assert errors(decided) == [Errors.OFFSET_METADATA_TOO_LARGE] and not ctx.last.fast_answers[0].mispredicted
        assert ctx.group.offsets.pending == {}

    def test_a_stale_view_is_counted_its_refusal_sent_and_its_offsets_never_become_pending(self):
        ctx = GroupContext()
        leader, follower = ctx.stable_group(2)
        stale = published(ctx)  # the view a gateway still has
        ctx.leave(follower)
        ctx.sleep(0)
        (decided,) = ctx.step(answered_by(ctx, stale, txn_body(ctx, {("t", 0): 7}, 1, follower)))
        assert errors(decided) == [Errors.UNKNOWN_MEMBER_ID]  # the gateway aborts the transaction on it
        (checked,) = ctx.last.fast_answers
        assert checked.mispredicted and (checked.answered, checked.decided) == (Errors.NONE,
                                                                                Errors.UNKNOWN_MEMBER_ID)
        marker(ctx, committed=True)
        assert ctx.committed() == {} and ctx.group.offsets.pending == {}

    def test_a_consumer_group_member_at_its_epoch_and_not_behind_or_ahead(self):
        ctx = GroupContext()
        ctx.publish_topics(1, (topic_id("t"), "t", 2))
        ctx.consumer_join("m1", ("t",))
        epoch = ctx.group.members["m1"].member_epoch
        view = decode_view(ctx.last.view)
        assert answered_by(ctx, view, txn_body(ctx, {("t", 0): 3}, epoch + 1, "m1")) is None
        assert answered_by(ctx, view, txn_body(ctx, {("t", 0): 3}, epoch, "nobody")) is None
        (decided,) = ctx.step(answered_by(ctx, view, txn_body(ctx, {("t", 0): 3}, epoch, "m1")))
        assert errors(decided) == [Errors.NONE] and not ctx.last.fast_answers[0].mispredicted
        marker(ctx, committed=True)
        assert ctx.committed() == {("t", 0): 3}

    def test_no_view_no_answer(self, ctx):
        assert answered_by(ctx, None, txn_body(ctx, {("t", 0): 3})) is None


class TestDurability:
    def test_records_rebuild_committed_and_pending(self):
        ctx = GroupContext()
        txn_commit(ctx, {("t", 0): 10}, producer_id=1)
        marker(ctx, committed=True, producer_id=1)
        txn_commit(ctx, {("t", 0): 20, ("t", 1): 21}, producer_id=2)
        ctx.commit({("t", 1): 30})
        rebuilt = load("g", ctx.records, ctx.now_ms, ctx.config).group
        assert durable_view(rebuilt) == durable_view(ctx.group)
        assert sorted(rebuilt.offsets.pending) == [(2, "t", 0), (2, "t", 1)]
        assert rebuilt.offsets.pending[(2, "t", 1)].superseded

    def test_offset_delete_and_group_delete_take_the_pending_offsets(self):
        ctx = GroupContext()
        txn_commit(ctx, {("t", 0): 10, ("t", 1): 11})
        (response,) = ctx.step({"api": "OffsetDelete", "request_id": ctx.request_id(), "group_id": "g",
                                "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]})
        assert sorted(ctx.group.offsets.pending) == [(PID, "t", 1)]
        (response,) = ctx.step({"api": "DeleteGroups", "request_id": ctx.request_id(), "group_id": "g"})
        assert response["error_code"] == Errors.NONE and ctx.group is None
        marker(ctx, committed=True)
        assert ctx.committed() == {}

    def test_retention_keeps_a_group_with_an_open_transaction(self):
        ctx = GroupContext(CoordinatorConfig(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000))
        txn_commit(ctx, {("t", 0): 10})
        ctx.sleep(600_000)
        assert ctx.group is not None
        marker(ctx, committed=True)
        assert ctx.committed() == {("t", 0): 10}

    def test_a_share_group_ignores_a_marker(self):
        ctx = GroupContext()
        assert marker(ctx, committed=True) == [] and ctx.group is None


class TestDeliverMarkers:
    """Which groups of a bucket a marker is for: a TxnOffsetCommit of its producer before it in the partition."""

    @staticmethod
    def txn(group: str, offset: int, producer_id: int = PID, partition: int = 0, timestamp: int = 1_000,
            **fields) -> tuple:
        return (group, partition, offset, timestamp,
                json.dumps({"api": "TxnOffsetCommit", "producer_id": producer_id, **fields}).encode())

    @staticmethod
    def end(offset: int, producer_id: int = PID, partition: int = 0, committed: bool = True) -> tuple:
        return (partition, offset, marker_request(TRANSACTIONS_GROUP, producer_id, 0, committed))

    def test_a_marker_goes_to_the_groups_committed_before_it_even_in_an_earlier_call(self):
        index, added = deliver_markers(None, [self.txn("a", 1), self.txn("b", 2, producer_id=9)], [])
        assert added == [] and index is not None
        index, added = deliver_markers(index, [self.txn("c", 5)], [self.end(4), self.end(6)])
        assert [(g, o) for g, _, o, _ in added] == [("a", 4), ("c", 6)]
        assert json.loads(added[0][3])["group_id"] == "a"
        index, added = deliver_markers(index, [], [self.end(8, producer_id=9, committed=False)])
        assert [(g, json.loads(v)["committed"]) for g, _, _, v in added] == [("b", False)] and index is None

    def test_a_marker_of_another_partition_or_producer_is_for_nobody(self):
        index, added = deliver_markers(None, [self.txn("a", 1)], [self.end(2, partition=1), self.end(3, producer_id=1)])
        assert added == [] and index is not None

    def test_the_open_transactions_say_when_each_times_out_until_its_marker(self):
        """What a bucket publishes for the gateways to abort at the upstream: per transaction its id, producer,
        epoch and deadline (its first TxnOffsetCommit's timestamp plus the timeout the gateway stamped, else
        Kafka's transaction.max.timeout.ms); a marker takes it away."""
        index, _ = deliver_markers(None, [
            self.txn("a", 1, timestamp=5_000, transactional_id="tx-a", producer_epoch=3, transaction_timeout_ms=4_000),
            self.txn("b", 2, timestamp=6_000, transactional_id="tx-a", producer_epoch=3, transaction_timeout_ms=4_000),
            self.txn("c", 3, producer_id=9, timestamp=7_000, transactional_id="tx-c", producer_epoch=0)], [])
        published = decode_open_transactions(open_transactions(index))
        assert [(t.transactional_id, t.producer_id, t.producer_epoch, t.deadline_ms) for t in published] == [
            ("tx-a", PID, 3, 9_000), ("tx-c", 9, 0, 7_000 + TRANSACTION_MAX_TIMEOUT_MS)]
        index, added = deliver_markers(index, [], [self.end(4, committed=False)])
        assert [g for g, *_ in added] == ["a", "b"]
        assert [t.transactional_id for t in decode_open_transactions(open_transactions(index))] == ["tx-c"]
        index, _ = deliver_markers(index, [], [self.end(5, producer_id=9)])
        assert index is None and decode_open_transactions(open_transactions(index)) == ()

    def test_an_index_of_an_older_release_still_delivers_its_markers_and_publishes_nothing_it_cannot_time(self):
        """An index stored before the transactions carried their ids (partition -> producer -> groups): its
        markers still reach their groups; it has no deadline to publish."""
        older = json.dumps({"0": {str(PID): ["a"]}}).encode()
        assert decode_open_transactions(open_transactions(older)) == ()
        index, added = deliver_markers(older, [self.txn("b", 5, transactional_id="tx", producer_epoch=1)],
                                       [self.end(6)])
        assert [g for g, *_ in added] == ["a", "b"] and index is None

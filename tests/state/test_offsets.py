"""OffsetCommit, OffsetFetch, OffsetDelete and retention, after Kafka's OffsetMetadataManagerTest."""

from __future__ import annotations

import pytest

from state.config import CoordinatorConfig
from state.errors import Errors
from state.classic.group import GroupState
from tests.state.context import GroupContext, subscription

NO_DELAY = CoordinatorConfig(group_initial_rebalance_delay_ms=0)
DAY = 24 * 3600 * 1000
WEEK = 7 * DAY


def errors(response: dict) -> list[int]:
    return [p["error_code"] for t in response["topics"] for p in t["partitions"]]


class TestOffsetCommit:
    def test_commit_without_generation_creates_a_simple_group(self):
        ctx = GroupContext()
        (response,) = ctx.commit({("t", 0): 10, ("t", 1): 11, ("u", 0): 5})
        assert errors(response) == [Errors.NONE, Errors.NONE, Errors.NONE]
        group = ctx.group
        assert group.state == GroupState.EMPTY and group.protocol_type is None
        assert ctx.committed() == {("t", 0): 10, ("t", 1): 11, ("u", 0): 5}
        keys = [r for r in ctx.records if b'"version":1' in r[0]]
        assert len(keys) == 3

    @pytest.mark.parametrize("version, error", [(8, Errors.ILLEGAL_GENERATION), (9, Errors.GROUP_ID_NOT_FOUND)])
    def test_commit_with_generation_to_a_missing_group(self, version, error):
        ctx = GroupContext()
        (response,) = ctx.commit({("t", 0): 1}, member_id="m", generation=1, version=version)
        assert errors(response) == [error] and response["error_code"] == error
        assert ctx.group is None

    @pytest.mark.parametrize(
        "name, state, member, generation, error",
        [
            ("stable_member_commits", "stable", "leader", 1, Errors.NONE),
            ("stable_wrong_generation", "stable", "leader", 0, Errors.ILLEGAL_GENERATION),
            ("stable_unknown_member", "stable", "nobody", 1, Errors.UNKNOWN_MEMBER_ID),
            ("stable_no_generation_no_member", "stable", "", -1, Errors.UNKNOWN_MEMBER_ID),
            ("stable_member_without_generation_is_illegal", "stable", "leader", -1, Errors.ILLEGAL_GENERATION),
            ("completing_is_rebalance_in_progress", "completing", "leader", 1, Errors.REBALANCE_IN_PROGRESS),
            ("completing_wrong_generation_first", "completing", "leader", 3, Errors.ILLEGAL_GENERATION),
            ("preparing_accepts_current_generation", "preparing", "follower", 1, Errors.NONE),
            ("empty_accepts_without_generation", "empty", "", -1, Errors.NONE),
            ("empty_with_generation_is_unknown_member", "empty", "leader", 2, Errors.UNKNOWN_MEMBER_ID),
        ],
    )
    def test_commit_by_state(self, name, state, member, generation, error):
        ctx = GroupContext(NO_DELAY)
        a, b = ctx.new_member(), ctx.new_member()
        ctx.join_all(a, b)
        leader = ctx.sleep(0)[0]["leader"]
        follower = b if leader == a else a
        if state in ("stable", "preparing", "empty"):
            ctx.sync(leader, 1)
        if state == "preparing":
            ctx.join(leader)
        if state == "empty":
            ctx.leave(leader, follower)
        member_id = {"leader": leader, "follower": follower}.get(member, member)
        (response,) = ctx.commit({("t", 0): 42}, member_id=member_id, generation=generation)
        assert errors(response) == [error]
        assert ctx.committed().get(("t", 0)) == (42 if error == 0 else None)

    def test_commit_in_stable_resets_the_member_session(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2)
        ctx.sleep(9_000)
        ctx.heartbeat(b, 1)
        ctx.commit({("t", 0): 1}, member_id=a, generation=1)
        ctx.sleep(9_000)
        assert a in ctx.group.members

    def test_metadata_too_large_fails_only_that_partition(self):
        ctx = GroupContext(CoordinatorConfig(offset_metadata_max_bytes=5))
        req = {"api": "OffsetCommit", "request_id": "x", "group_id": "g", "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_metadata": "123456"},
            {"partition_index": 1, "committed_offset": 2, "committed_metadata": "12345"},
        ]}]}
        (response,) = ctx.step(req)
        assert errors(response) == [Errors.OFFSET_METADATA_TOO_LARGE, Errors.NONE]
        assert ctx.committed() == {("t", 1): 2}

    def test_null_metadata_is_stored_as_empty_and_leader_epoch_defaults(self):
        ctx = GroupContext()
        ctx.commit({("t", 0): 3}, metadata=None)
        (p,) = ctx.fetch({"t": [0]})["topics"][0]["partitions"]
        assert p == {"partition_index": 0, "committed_offset": 3, "committed_leader_epoch": -1, "metadata": "",
                     "error_code": 0}

    def test_v1_commit_timestamp_and_v2_retention_are_honoured(self):
        ctx = GroupContext(now_ms=1_000)
        ctx.commit({("t", 0): 3}, version=2, retention_time_ms=5_000)
        assert ctx.group.offsets[("t", 0)].expire_timestamp == 6_000
        ctx.commit({("t", 1): 3}, version=8, retention_time_ms=5_000)
        assert ctx.group.offsets[("t", 1)].expire_timestamp is None


class TestOffsetFetch:
    def test_unknown_group_gives_minus_one_for_asked_partitions(self):
        ctx = GroupContext()
        response = ctx.fetch({"t": [0, 1]})
        assert [p["committed_offset"] for p in response["topics"][0]["partitions"]] == [-1, -1]
        assert ctx.fetch()["topics"] == []
        assert ctx.group is None

    def test_fetch_all_lists_every_committed_partition_sorted(self):
        ctx = GroupContext()
        ctx.commit({("u", 1): 2, ("t", 0): 1})
        response = ctx.fetch()
        assert [t["name"] for t in response["topics"]] == ["t", "u"]


class TestOffsetDelete:
    def test_missing_group_is_group_id_not_found(self):
        ctx = GroupContext()
        (response,) = ctx.step({"api": "OffsetDelete", "request_id": "x", "group_id": "g",
                                "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]})
        assert response["error_code"] == Errors.GROUP_ID_NOT_FOUND

    def test_empty_group_deletes_and_tombstones(self):
        ctx = GroupContext()
        ctx.commit({("t", 0): 1, ("t", 1): 2})
        (response,) = ctx.step({"api": "OffsetDelete", "request_id": "x", "group_id": "g",
                                "topics": [{"name": "t", "partitions": [{"partition_index": 0},
                                                                        {"partition_index": 7}]}]})
        assert response["error_code"] == Errors.NONE and errors(response) == [Errors.NONE, Errors.NONE]
        assert ctx.last.records == [(b'{"version":1,"group":"g","topic":"t","partition":0}', None)]
        assert ctx.committed() == {("t", 1): 2}

    def test_live_consumer_group_keeps_subscribed_topics(self):
        ctx = GroupContext()
        a, = ctx.stable_group(1, protocols=[("range", subscription("t"))])
        ctx.commit({("t", 0): 1, ("old", 0): 2}, member_id=a, generation=1)
        (response,) = ctx.step({"api": "OffsetDelete", "request_id": "x", "group_id": "g", "topics": [
            {"name": "t", "partitions": [{"partition_index": 0}]},
            {"name": "old", "partitions": [{"partition_index": 0}]}]})
        assert errors(response) == [Errors.GROUP_SUBSCRIBED_TO_TOPIC, Errors.NONE]
        assert ctx.committed() == {("t", 0): 1}

    def test_live_group_of_another_protocol_type_is_non_empty(self):
        ctx = GroupContext()
        ctx.stable_group(1, protocol_type="connect")
        (response,) = ctx.step({"api": "OffsetDelete", "request_id": "x", "group_id": "g",
                                "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]})
        assert response["error_code"] == Errors.NON_EMPTY_GROUP

    def test_unparsable_subscriptions_count_as_subscribed(self):
        ctx = GroupContext()
        ctx.stable_group(1, protocols=[("range", "AAE=")])
        (response,) = ctx.step({"api": "OffsetDelete", "request_id": "x", "group_id": "g",
                                "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]})
        assert errors(response) == [Errors.GROUP_SUBSCRIBED_TO_TOPIC]


class TestRetention:
    """KIP-211: the periodic check (every offsets.retention.check.interval.ms) expires offsets by group state."""

    def test_simple_group_offsets_expire_a_retention_after_commit(self):
        ctx = GroupContext()
        ctx.commit({("t", 0): 1})
        ctx.sleep(WEEK - 1)
        assert ctx.committed() == {("t", 0): 1}
        ctx.sleep(1)  # the check at exactly a retention after the commit expires it (Kafka: now - base >= retention)
        assert ctx.group is None  # last offset gone from an Empty group: the group is deleted
        assert ctx.committed() == {}

    def test_empty_consumer_group_expires_from_when_it_became_empty(self):
        ctx = GroupContext(CoordinatorConfig(coordinator_session_reset_lateness_ms=0))  # a week's sleep, as Kafka
        (a,) = ctx.stable_group(1)
        ctx.commit({("t", 0): 1}, member_id=a, generation=1)
        ctx.sleep(WEEK)  # the member has been gone (session expired at 10s) ...
        assert ctx.group.state == GroupState.EMPTY
        empty_since = ctx.group.state_timestamp
        ctx.sleep(empty_since + WEEK + 600_000 - ctx.now_ms)
        assert ctx.group is None

    def test_stable_consumer_group_keeps_subscribed_topics_and_expires_others(self):
        ctx = GroupContext(CoordinatorConfig(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000))
        a, = ctx.stable_group(1, protocols=[("range", subscription("t"))], session=600_000)
        ctx.commit({("t", 0): 1, ("old", 0): 2}, member_id=a, generation=1)
        for _ in range(3):
            ctx.sleep(30_000)
            ctx.heartbeat(a, 1)
        assert ctx.committed() == {("t", 0): 1}
        assert ctx.group.state == GroupState.STABLE

    def test_rebalancing_group_expires_nothing(self):
        ctx = GroupContext(CoordinatorConfig(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000))
        a, b = ctx.stable_group(2, session=600_000, rebalance=600_000)
        ctx.commit({("old", 0): 2}, member_id=a, generation=1)
        ctx.join(a, session=600_000, rebalance=600_000)
        ctx.sleep(120_000)
        assert ctx.group.state == GroupState.PREPARING_REBALANCE
        assert ctx.committed() == {("old", 0): 2}

    def test_explicit_expire_timestamp_wins(self):
        ctx = GroupContext()
        ctx.commit({("t", 0): 1}, version=2, retention_time_ms=1_000)
        ctx.commit({("t", 1): 1})
        ctx.sleep(600_000)
        assert ctx.committed() == {("t", 1): 1}

    def test_empty_group_without_offsets_is_deleted_by_the_check(self):
        ctx = GroupContext()
        pending = ctx.new_member()  # creates the group (MEMBER_ID_REQUIRED), no offsets
        ctx.sleep(600_000)
        assert ctx.group is None
        assert ctx.last.records == [(b'{"version":2,"group":"g"}', None)]
        # Java's ClassicGroup.isEmpty() is the Empty state, pending members or not: the handshake's second JoinGroup
        # finds no group, and the client starts over with an empty member id.
        (response,) = ctx.join(pending)
        assert response["error_code"] == Errors.UNKNOWN_MEMBER_ID

"""A consumer group through the core's public contract (`state.batch.step_group`), as the Spark job runs it: stored
and decoded between calls, its timers called back at `next_deadline_ms`, the bucket's topic metadata passed in,
loaded from the records topic, answered offline. Every step is checked by `GroupContext` (deterministic, only
replay changes the group, the records written so far rebuild it)."""

from __future__ import annotations

import json

from schemas.consumer_group import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatRequestTopicPartitions
from state.batch import LOAD_GROUP, TOPIC_METADATA_GROUP, load_group, route, step_group
from state.config import CoordinatorConfig
from state.consumer.group import ConsumerGroup
from state.errors import Errors
from state.classic.group import ClassicGroup
from state.views.directory import GroupDirectory
from state.views.fast_answers import consumer_heartbeat_from_view
from state.offline import answer, list_groups
from state.handling.timers import OFFSETS_EXPIRATION, consumer_rebalance_timeout_key, consumer_session_timeout_key
from state.views.published import decode_view, encode_view, view_of
from tests.state.consumer.support import topic_id
from tests.state.context import GroupContext

T = topic_id("t")
SESSION = 45_000


def consumer_context(partitions: int = 6, check_replay: bool = True) -> GroupContext:
    ctx = GroupContext(now_ms=1_000, check_replay=check_replay)
    ctx.publish_topics(1, (T, "t", partitions), (topic_id("other"), "other", 1))
    return ctx


def assigned(response: dict) -> set[int]:
    (topic,) = response["assignment"]["topic_partitions"]
    assert topic["topic_id"] == T
    return set(topic["partitions"])


def test_a_member_joins_gets_every_partition_and_the_group_is_stored_as_a_consumer_group():
    ctx = consumer_context()
    response = ctx.consumer_join("A")
    assert (response["error_code"], response["member_epoch"], response["heartbeat_interval_ms"]) == (0, 1, 5000)
    assert assigned(response) == set(range(6))
    assert isinstance(ctx.group, ConsumerGroup) and json.loads(ctx.state.metadata).keys() == {"v", "consumer"}
    assert ctx.last.next_deadline_ms == ctx.now_ms + SESSION  # the member's session, before the retention check
    assert OFFSETS_EXPIRATION not in ctx.group.timers  # no offsets to remove: no retention check (issue 35)
    # ListGroups' directory follows the group: its group-epoch record carries the state
    assert json.loads(ctx.last.records[-1][1])["directory"] == {"group_state": "Stable", "member_count": 1}


def test_a_second_member_gets_partitions_once_the_first_revoked_them():
    ctx = consumer_context()
    ctx.consumer_join("A")
    joined = ctx.consumer_join("B")
    assert (joined["member_epoch"], assigned(joined) if joined["assignment"]["topic_partitions"] else set()) == (
        2, set())
    revoke = ctx.consumer_heartbeat("A", 1)
    keeps = assigned(revoke)
    assert len(keeps) == 3 and revoke["member_epoch"] == 1  # still at its epoch until it has revoked
    acked = ctx.consumer_heartbeat("A", 1, topic_partitions=[{"topic_id": T, "partitions": sorted(keeps)}])
    assert acked["member_epoch"] == 2
    gets = ctx.consumer_heartbeat("B", 2)
    assert assigned(gets) == set(range(6)) - keeps
    group = ctx.group
    assert group.state.value == "Stable" and group.group_epoch == 2


def test_a_member_whose_session_runs_out_is_fenced_and_its_partitions_move():
    ctx = consumer_context()
    ctx.consumer_join("A")
    ctx.consumer_join("B")
    ctx.now_ms += 1_000
    ctx.consumer_heartbeat("A", 1)
    ctx.now_ms = ctx.group.timers[consumer_session_timeout_key("B")]
    ctx.step()  # the shell calls the group back at its deadline
    assert ctx.last.members_expired == 1 and set(ctx.group.members) == {"A"}
    assert ctx.group.group_epoch == 3


def test_the_records_topic_rebuilds_the_group_with_fresh_sessions():
    ctx = consumer_context()
    ctx.consumer_join("A")
    ctx.consumer_join("B")
    before = ctx.group
    loaded = load_group("g", ctx.records, 500_000, ctx.config)
    ctx.state, ctx.now_ms = loaded, 500_000
    group = ctx.group
    assert group.group_epoch == before.group_epoch and set(group.members) == {"A", "B"}
    assert group.members["B"].member_epoch == before.members["B"].member_epoch
    assert group.timers[consumer_session_timeout_key("A")] == 500_000 + SESSION
    assert ctx.consumer_heartbeat("A", 1)["error_code"] == Errors.NONE


def test_a_load_request_loads_a_consumer_group():
    source = consumer_context()
    source.consumer_join("A")
    ctx = consumer_context(check_replay=False)  # a load writes no records: the ones it loads are the log
    records = [{"key": k.decode(), "value": None if v is None else v.decode()} for k, v in source.records]
    ctx.step({"api": LOAD_GROUP, "request_id": "", "group_id": "g", "records": records}, valid=False)
    assert isinstance(ctx.group, ConsumerGroup) and set(ctx.group.members) == {"A"}


def test_a_resumed_call_restarts_every_session():
    ctx = consumer_context()
    ctx.consumer_join("A")
    ctx.now_ms += 100_000  # past the session: a coordinator that was down
    ctx.step(resumed=True)
    assert set(ctx.group.members) == {"A"}
    assert ctx.group.timers[consumer_session_timeout_key("A")] == ctx.now_ms + SESSION


def test_a_classic_group_without_members_becomes_a_consumer_group_and_keeps_its_offsets():
    ctx = consumer_context()
    ctx.commit({("t", 0): 42})
    assert isinstance(ctx.group, ClassicGroup)
    ctx.consumer_join("A")
    assert json.loads(ctx.last.records[0][0]) == {"version": 2, "group": "g"} and ctx.last.records[0][1] is None
    assert isinstance(ctx.group, ConsumerGroup) and ctx.committed() == {("t", 0): 42}


def test_a_classic_group_with_members_of_another_protocol_type_is_not_a_consumer_group():
    ctx = consumer_context()
    ctx.stable_group(1, protocol_type="connect")
    response = ctx.consumer_join("A")
    assert response["error_code"] == Errors.GROUP_ID_NOT_FOUND


def test_a_join_group_replaces_a_consumer_group_without_members():
    ctx = consumer_context()
    ctx.commit({("t", 0): 7})
    ctx.consumer_join("A")
    ctx.consumer_heartbeat("A", -1)
    assert isinstance(ctx.group, ConsumerGroup) and not ctx.group.members
    (response,) = ctx.join()
    assert response["error_code"] == Errors.MEMBER_ID_REQUIRED and isinstance(ctx.group, ClassicGroup)
    assert ctx.committed() == {("t", 0): 7}


def test_deleting_a_consumer_group():
    ctx = consumer_context()
    ctx.consumer_join("A")
    delete = {"api": "DeleteGroups", "request_id": "d", "group_id": "g"}
    assert ctx.step(delete)[0]["error_code"] == Errors.NON_EMPTY_GROUP
    ctx.consumer_heartbeat("A", -1)
    assert ctx.step(dict(delete, request_id="d2"))[0]["error_code"] == Errors.NONE
    assert ctx.state is None
    # what the leave left of the group, in Kafka's order: assignment epoch, subscription metadata, group epoch
    assert [json.loads(k)["version"] for k, _ in ctx.last.records] == [6, 4, 3]


def test_the_topic_metadata_row_is_reserved():
    assert route(b"k", b'{"api":"TopicMetadata","request_id":"","version":1,"topics":[]}').kind == "topics"
    refused = route(b"k", json.dumps({"api": "ConsumerGroupDescribe", "request_id": "r",
                                      "group_id": TOPIC_METADATA_GROUP}).encode())
    assert refused.kind == "reject" and json.loads(refused.response)["error_code"] == Errors.INVALID_GROUP_ID


def test_an_older_or_unreadable_topic_metadata_changes_nothing():
    ctx = consumer_context()
    before = ctx.topics
    ctx.publish_topics(1, (T, "t", 12))  # the same version again: not newer
    assert ctx.topics == before
    step = step_group(TOPIC_METADATA_GROUP, None, [b'{"api":"TopicMetadata"}'], 0, ctx.config)
    assert step.metadata is None and len(step.dead_letters) == 1


def test_a_stopped_querys_consumer_group_is_described_and_listed():
    ctx = consumer_context()
    ctx.consumer_join("A")
    described = json.loads(answer("g", ctx.state, json.dumps({
        "api": "ConsumerGroupDescribe", "request_id": "o", "group_id": "g"}).encode(), topics=ctx.topics))
    (member,) = described["members"]
    assert (described["group_state"], member["member_id"], member["member_epoch"]) == ("Stable", "A", 1)
    assert member["assignment"]["topic_partitions"][0]["partitions"] == list(range(6))
    listed = json.loads(list_groups([("g", ctx.state)], b'{"api":"ListGroups","request_id":"l"}'))
    assert listed["groups"] == [{"group_id": "g", "protocol_type": "consumer", "group_state": "Stable",
                                 "group_type": "consumer"}]


def test_list_groups_filters_by_type_and_state_across_both_kinds():
    """KIP-848's ListGroups v5 TypesFilter (case-insensitive, an unknown type matches nothing) and a consumer
    group's states (Kafka: testListGroups)."""
    directory = GroupDirectory()
    consumer = consumer_context()
    consumer.consumer_join("A")
    consumer.consumer_join("B")  # Reconciling: A has partitions to revoke
    classic = GroupContext(group_id="c")
    classic.stable_group(1)
    for key, value in consumer.records + classic.records:
        directory.apply(key, value)

    def listed(**filters: list[str]) -> list[tuple[str, str, str]]:
        request = {"api": "ListGroups", "request_id": "l", **filters}
        return [(g["group_id"], g["group_state"], g["group_type"])
                for g in json.loads(directory.answer(json.dumps(request).encode()))["groups"]]

    assert listed() == [("c", "Stable", "classic"), ("g", "Reconciling", "consumer")]
    assert listed(types_filter=["CONSUMER"]) == [("g", "Reconciling", "consumer")]
    assert listed(types_filter=["classic"], states_filter=["stable"]) == [("c", "Stable", "classic")]
    assert listed(types_filter=["share"]) == []
    assert listed(states_filter=["reconciling"]) == [("g", "Reconciling", "consumer")]
    assert directory.count_by_state()["Reconciling"] == 1


def test_describe_groups_answers_dead_for_a_consumer_group():
    """Kafka's DescribeGroups below v6 for a consumer group: no error, state Dead."""
    ctx = consumer_context()
    ctx.consumer_join("A")
    (response,) = ctx.step({"api": "DescribeGroups", "api_version": 5, "request_id": "d", "group_id": "g"})
    assert (response["error_code"], response["group_state"], response["members"]) == (0, "Dead", [])


# -- offsets (Kafka's ConsumerGroup.validateOffsetCommit / validateOffsetFetch, OffsetMetadataManagerTest) ----------

def commit_codes(ctx: GroupContext, member_id: str, epoch: int, partitions: list[int], version: int = 9) -> set:
    (response,) = ctx.commit({("t", p): 10 for p in partitions}, member_id=member_id, generation=epoch,
                             version=version)
    return {p["error_code"] for t in response["topics"] for p in t["partitions"]}


def two_members(ctx: GroupContext) -> set[int]:
    """A at epoch 2 holding three partitions, B at epoch 2 with the rest; A's partitions."""
    ctx.consumer_join("A")
    ctx.consumer_join("B")
    keeps = assigned(ctx.consumer_heartbeat("A", 1))
    ctx.consumer_heartbeat("A", 1, topic_partitions=[{"topic_id": T, "partitions": sorted(keeps)}])
    ctx.consumer_heartbeat("B", 2)
    return keeps


def test_a_member_commits_with_its_epoch_and_a_wrong_one_is_stale():
    """Kafka: testConsumerGroupOffsetCommitWithStaleMemberEpoch, ...WithUnknownMemberId, ...WithVersionSmallerThanVersion9."""
    ctx = consumer_context()
    keeps = two_members(ctx)
    assert commit_codes(ctx, "A", 2, sorted(keeps)) == {Errors.NONE}
    assert commit_codes(ctx, "A", 3, sorted(keeps)) == {Errors.STALE_MEMBER_EPOCH}
    assert commit_codes(ctx, "unknown", 2, sorted(keeps)) == {Errors.UNKNOWN_MEMBER_ID}
    assert commit_codes(ctx, "A", 2, sorted(keeps), version=8) == {Errors.UNSUPPORTED_VERSION}
    assert commit_codes(ctx, "", -1, [0]) == {Errors.UNKNOWN_MEMBER_ID}  # an admin's commit, to a group with members


def test_a_member_one_epoch_behind_commits_only_partitions_it_held_since():
    """KIP-1251 (Kafka 4.3): A's epoch moved from 1 to 2 while it kept three partitions."""
    ctx = consumer_context()
    keeps = two_members(ctx)
    assert commit_codes(ctx, "A", 1, sorted(keeps)) == {Errors.NONE}
    assert commit_codes(ctx, "B", 1, [min(set(range(6)) - keeps)]) == {Errors.STALE_MEMBER_EPOCH}


def test_a_fetch_naming_a_member_checks_its_epoch():
    """Kafka: testConsumerGroupOffsetFetchWithStaleMemberEpoch, ...WithUnknownMemberId."""
    ctx = consumer_context()
    ctx.consumer_join("A")
    fetch = {"api": "OffsetFetch", "api_version": 9, "group_id": "g", "topics": None}
    assert ctx.step({**fetch, "request_id": "f1"})[0]["error_code"] == Errors.NONE
    assert ctx.step({**fetch, "request_id": "f2", "member_id": "A", "member_epoch": 1})[0]["error_code"] == Errors.NONE
    assert ctx.step({**fetch, "request_id": "f3", "member_id": "A", "member_epoch": 2})[0][
        "error_code"] == Errors.STALE_MEMBER_EPOCH
    assert ctx.step({**fetch, "request_id": "f4", "member_id": "B", "member_epoch": 1})[0][
        "error_code"] == Errors.UNKNOWN_MEMBER_ID


def test_offsets_of_topics_no_member_subscribes_to_expire_and_an_empty_group_without_offsets_goes():
    ctx = consumer_context()
    ctx.config = CoordinatorConfig(offsets_retention_minutes=1, offsets_retention_check_interval_ms=30_000)
    ctx.consumer_join("A")
    ctx.commit({("t", 0): 1, ("other", 0): 2}, member_id="A", generation=1, version=9)
    for _ in range(3):  # a minute and a half, the member heartbeating
        ctx.now_ms += 30_000
        ctx.consumer_heartbeat("A", 1)
    assert ctx.committed() == {("t", 0): 1}  # `other` is not subscribed: expired; `t` is kept
    ctx.consumer_heartbeat("A", -1)
    ctx.now_ms += 90_000
    ctx.step()
    assert ctx.state is None


def test_a_new_partition_published_to_the_bucket_changes_the_target_at_the_next_heartbeat():
    """Kafka's onNewMetadataImage: the image changes no group by itself; the group's next heartbeat sees the
    subscribed topic's metadata hash change, bumps the group epoch and assigns the new partitions."""
    ctx = consumer_context(partitions=2)
    ctx.consumer_join("A")
    ctx.publish_topics(2, (T, "t", 4), (topic_id("other"), "other", 1))
    assert ctx.group.group_epoch == 1
    response = ctx.consumer_heartbeat("A", 1)
    assert response["member_epoch"] == 2 and assigned(response) == {0, 1, 2, 3}


# -- the fast path: heartbeats answered from the group's view (docs/gateway.md, "Fast answers") -------------------

def view(ctx: GroupContext):
    return decode_view(encode_view(view_of(ctx.group, ctx.config)))


def heartbeat_request(member_id: str, epoch: int, **fields) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(request_id="f", group_id="g", member_id=member_id, member_epoch=epoch,
                                         **fields)


def liveness(ctx: GroupContext, member_id: str, epoch: int, heard_ms: int) -> list[dict]:
    return ctx.step({"api": "Liveness", "request_id": ctx.request_id(), "group_id": "g", "members": [
        {"member_id": member_id, "generation_id": epoch, "heard_ms": heard_ms, "answered": 0}]}, valid=False)


def test_a_heartbeat_that_changes_nothing_is_answered_from_the_view_and_restarts_the_session():
    ctx = consumer_context()
    ctx.consumer_join("A")
    published = view(ctx)
    answered = consumer_heartbeat_from_view(published, heartbeat_request("A", 1))
    assert (answered.error_code, answered.member_epoch, answered.heartbeat_interval_ms, answered.assignment) == (
        0, 1, 5000, None)
    # another epoch, a subscription, another member: the coordinator's
    assert consumer_heartbeat_from_view(published, heartbeat_request("A", 0)) is None
    assert consumer_heartbeat_from_view(published, heartbeat_request("A", 1, subscribed_topic_names=("t",))) is None
    assert consumer_heartbeat_from_view(published, heartbeat_request("B", 1)) is None
    heard = ctx.now_ms + 2_000
    ctx.now_ms += 3_000
    assert liveness(ctx, "A", 1, heard) == []  # no answer: the gateway gave it
    assert ctx.last.records == [] and not ctx.last.fast_answers[0].mispredicted
    assert ctx.group.timers[consumer_session_timeout_key("A")] == heard + SESSION


def owned(*partitions: int) -> tuple[ConsumerGroupHeartbeatRequestTopicPartitions, ...]:
    return (ConsumerGroupHeartbeatRequestTopicPartitions(T, partitions),)


def test_a_reconciled_members_acknowledgement_is_answered_from_the_view_as_the_coordinator_answers_it():
    """librdkafka acknowledges a new assignment in the heartbeat it sends at once after it (its owned partitions,
    nothing else): for a member reconciled to the target the coordinator answers it as a regular heartbeat, so the
    view does too, whatever partitions it names. Only the epoch and membership still decide."""
    ctx = consumer_context()
    ctx.consumer_join("A", client_id="rdkafka", client_host="/127.0.0.1")
    published = view(ctx)
    heard = ctx.now_ms + 1_000
    ctx.now_ms += 2_000
    assert liveness(ctx, "A", 1, heard) == []  # the gateway answered an acknowledgement: checked as a heartbeat
    assert ctx.last.records == [] and not ctx.last.fast_answers[0].mispredicted
    assert "A" in view(ctx).members
    for partitions in ((0, 1, 2, 3, 4, 5), (), (0, 1)):
        ack = heartbeat_request("A", 1, topic_partitions=owned(*partitions))
        answered = consumer_heartbeat_from_view(published, ack)
        decided = ctx.consumer_heartbeat("A", 1, topic_partitions=[{"topic_id": T, "partitions": list(partitions)}],
                                         client_id="rdkafka", client_host="/127.0.0.1")
        assert (answered.error_code, answered.member_epoch, answered.heartbeat_interval_ms, answered.assignment) == (
            decided["error_code"], decided["member_epoch"], decided["heartbeat_interval_ms"],
            decided.get("assignment")) == (0, 1, 5000, None)
        assert ctx.last.records == []
    # a stale or future epoch, an acknowledgement with a rebalance timeout (a full request): the coordinator's
    for req in (heartbeat_request("A", 0, topic_partitions=owned(0)),
                heartbeat_request("A", 2, topic_partitions=owned(0)),
                heartbeat_request("A", 1, topic_partitions=owned(0), rebalance_timeout_ms=300_000)):
        assert consumer_heartbeat_from_view(published, req) is None


def test_an_acknowledgement_of_a_member_that_must_revoke_is_the_coordinators():
    """B's join moves partitions from A: A's acknowledgement of what it revoked changes the group, and A is not in
    the view until it is reconciled."""
    ctx = consumer_context()
    ctx.consumer_join("A")
    ctx.consumer_join("B")
    assert consumer_heartbeat_from_view(view(ctx), heartbeat_request("A", 1, topic_partitions=owned(0, 1, 2))) is None
    response = ctx.consumer_heartbeat("A", 1, topic_partitions=[{"topic_id": T, "partitions": [0, 1, 2]}])
    assert response["member_epoch"] == 2 and "A" in view(ctx).members


def test_a_heartbeat_answered_from_a_stale_view_makes_the_member_heartbeat_the_coordinator():
    """The topics changed since the view: the coordinator would have bumped the epoch and assigned more. Nothing of
    that is applied (the member was told nothing changed); it owes a heartbeat, leaves the view, and its next one
    gets the answer."""
    ctx = consumer_context(partitions=2)
    ctx.consumer_join("A")
    published = view(ctx)
    ctx.publish_topics(2, (T, "t", 4))
    assert consumer_heartbeat_from_view(published, heartbeat_request("A", 1)) is not None
    heard = ctx.now_ms + 1_000
    ctx.now_ms += 2_000
    assert liveness(ctx, "A", 1, heard) == []
    assert ctx.last.records == [] and ctx.last.fast_answers[0].mispredicted
    assert ctx.group.group_epoch == 1 and "A" not in view(ctx).members
    # it was alive all the same: its session restarts, or a second stale answer before its view leaves the
    # gateway would let the session run out
    assert ctx.group.timers[consumer_session_timeout_key("A")] == heard + SESSION
    response = ctx.consumer_heartbeat("A", 1)
    assert response["member_epoch"] == 2 and assigned(response) == {0, 1, 2, 3}
    assert "A" in view(ctx).members


def test_members_that_are_still_reconciling_are_not_in_the_view():
    """B's join moves partitions from A: until both reached the new target, neither heartbeat is the view's."""
    ctx = consumer_context()
    ctx.consumer_join("A")
    assert set(view(ctx).members) == {"A"}
    ctx.consumer_join("B")
    assert ctx.group.group_epoch == 2 and set(view(ctx).members) == set()
    assert consumer_heartbeat_from_view(view(ctx), heartbeat_request("A", 1)) is None


# -- the rebuild from the records topic (streaming.recovery.rebuild): compacted, one LoadGroup per group -------------

def compacted(records: list[tuple[bytes, bytes | None]]) -> list[dict]:
    """The records as the rebuild hands them to a LoadGroup: the last value per key (what compaction leaves),
    tombstones dropped, in key order (`streaming.recovery.rebuild.load_requests`), not in the order written."""
    latest = dict(records)
    return [{"key": k.decode(), "value": v.decode()} for k, v in sorted(latest.items()) if v is not None]


def rebuilt(source: GroupContext, after_ms: int) -> GroupContext:
    ctx = GroupContext(now_ms=source.now_ms + after_ms, check_replay=False)  # a load writes no records
    ctx.topics = source.topics  # the driver publishes the cluster's topics at every start
    assert ctx.step({"api": LOAD_GROUP, "request_id": "rebuild:g", "group_id": "g",
                     "records": compacted(source.records)}, valid=False) == []
    assert ctx.last.dead_letters == []
    return ctx


def members_of(group: ConsumerGroup) -> dict:
    return {m.member_id: (m.member_epoch, m.previous_member_epoch, m.state, m.assigned_partitions,
                          m.partitions_pending_revocation, m.subscribed_topic_names, m.instance_id)
            for m in group.members.values()}


def test_a_rebuild_loads_a_reconciling_consumer_group_as_it_was_and_it_carries_on():
    """As Kafka's onLoaded: group epoch, target assignment and its epoch, every member's epochs, assignment and
    partitions pending revocation, offsets; fresh sessions, and the revocation deadline of a member that revokes.
    A member that left (its records tombstoned) does not come back."""
    source = consumer_context()
    source.consumer_join("A")
    source.commit({("t", 0): 5, ("t", 4): 9}, member_id="A", generation=1, version=9)
    source.consumer_join("C", instance_id="static-c")
    source.consumer_heartbeat("C", -1)  # leaves: its records are tombstones, compacted away
    source.consumer_join("B")
    revoking = source.consumer_heartbeat("A", source.group.members["A"].member_epoch)  # told to revoke
    before = source.group
    assert before.members["A"].partitions_pending_revocation and before.state.value == "Reconciling"

    ctx = rebuilt(source, after_ms=600_000)  # long after every session would have run out
    group = ctx.group
    assert isinstance(group, ConsumerGroup) and set(group.members) == {"A", "B"}
    assert (group.group_epoch, group.assignment_epoch, group.state) == (
        before.group_epoch, before.assignment_epoch, before.state)
    assert group.target_assignment == before.target_assignment
    assert members_of(group) == members_of(before)
    assert group.partition_epochs == before.partition_epochs
    assert ctx.committed() == {("t", 0): 5, ("t", 4): 9}
    assert group.timers[consumer_session_timeout_key("B")] == ctx.now_ms + SESSION
    assert consumer_rebalance_timeout_key("A", before.members["A"].member_epoch) in group.timers

    # The members carry on: A acknowledges the revocation, B gets what A released; C is not known.
    keeps = assigned(revoking)
    acked = ctx.consumer_heartbeat("A", before.members["A"].member_epoch,
                                   topic_partitions=[{"topic_id": T, "partitions": sorted(keeps)}])
    assert acked["error_code"] == Errors.NONE and acked["member_epoch"] == before.group_epoch
    gets = ctx.consumer_heartbeat("B", before.group_epoch)
    assert assigned(gets) == set(range(6)) - keeps and ctx.group.state.value == "Stable"
    assert ctx.consumer_heartbeat("C", 3)["error_code"] == Errors.UNKNOWN_MEMBER_ID
    assert commit_codes(ctx, "A", before.group_epoch, [0]) == {Errors.NONE}


def test_a_rebuild_loads_a_group_that_changed_protocol_as_the_last_protocol_left_it():
    """A classic group's offsets, then a consumer group, then a classic group again: compaction leaves the live
    records of the last one (the conversions tombstone the other kind's), whatever order the keys sort in."""
    source = consumer_context()
    source.commit({("t", 1): 3})
    source.consumer_join("A")
    source.consumer_heartbeat("A", -1)
    source.stable_group(2)
    before = source.group
    group = rebuilt(source, after_ms=60_000).group
    assert isinstance(group, ClassicGroup) and set(group.members) == set(before.members)
    assert group.generation == before.generation and group.offsets[("t", 1)].offset == 3

"""A ConsumerGroupHeartbeat answer the member never read (issue 26; docs/wire-format.md, "Lost heartbeat answers").

Kafka's coordinator tells a member its assignment only when it changes, or in the answer to a join or a full
request (GroupMetadataManager.consumerGroupHeartbeat). A member that lost the answer carrying a new assignment must
ask again with a full request: Kafka's Java consumer does so after any failed attempt (AbstractHeartbeatRequestManager
.onFailure resets the heartbeat state). librdkafka does not after a timed-out heartbeat: it retries the very same
request (rd_kafka_cgrp_handle_ConsumerGroupHeartbeat: __TIMED_OUT is a retry, only a coordinator or transport error
sets RD_KAFKA_CGRP_CONSUMER_F_SEND_FULL_REQUEST). These tests pin down what the coordinator then does: Kafka's
answers, so what a member without a full request is left with is the client's to fix."""

from __future__ import annotations

from state.consumer.group import ConsumerGroupMember, MemberState
from tests.state.consumer.context import CLIENT_HOST, CLIENT_ID, ConsumerContext, build_group, fields, ok
from tests.state.consumer.support import assignment, epochs, image

M1, M2 = "member-1", "member-2"
ALL, LOW, HIGH = ("foo", (0, 1, 2, 3, 4, 5)), ("foo", (0, 1, 2)), ("foo", (3, 4, 5))


def _regrouping() -> ConsumerContext:
    """Member 1 owns all of foo at epoch 10; member 2 joins (epoch 11: the low half stays with member 1, the high
    half goes to member 2) and waits for it; member 1's next heartbeat is told to give up the high half, and that
    answer is the one that gets lost."""
    ctx = ConsumerContext(image=image(("foo", 6)))
    build_group(ctx, 10, [ConsumerGroupMember(
        M1, member_epoch=10, previous_member_epoch=9, state=MemberState.STABLE, rebalance_timeout_ms=5000,
        client_id=CLIENT_ID, client_host=CLIENT_HOST, subscribed_topic_names=("foo",), server_assignor_name="range",
        assigned_partitions=epochs(10, ALL))])
    ctx.assignor.prepare({M1: assignment(LOW), M2: assignment(HIGH)})
    assert fields(ctx.join(M2, topics=("foo",)).response) == {**ok(M2, 11), "assignment": {"topic_partitions": []}}
    lost = ctx.heartbeat(M1, 10)
    assert fields(lost.response) == ok(M1, 10, assigned=[LOW])
    assert ctx.member(M1).state is MemberState.UNREVOKED_PARTITIONS
    return ctx


def test_a_repeated_regular_heartbeat_is_not_told_the_revocation_again():
    """librdkafka's retry of the request whose answer timed out: nothing changed, so no assignment; the member keeps
    all of foo and member 2 gets nothing until the revocation deadline fences member 1 (then it gets its half)."""
    ctx = _regrouping()
    for _ in range(3):
        assert fields(ctx.heartbeat(M1, 10).response) == ok(M1, 10)
        assert fields(ctx.heartbeat(M2, 11).response) == ok(M2, 11)
    assert ctx.member(M1).state is MemberState.UNREVOKED_PARTITIONS
    assert ctx.member(M2).state is MemberState.UNRELEASED_PARTITIONS
    assert ctx.rebalance_deadline(M1, 10) == 5000
    ctx.sleep(5000)
    assert M1 not in ctx.group.members
    assert fields(ctx.heartbeat(M2, 11).response)["assignment"] == ok(M2, 11, assigned=[HIGH])["assignment"]


def test_a_full_request_is_told_the_revocation_again_and_the_rebalance_goes_on():
    """Kafka's Java consumer after a failed attempt: the full request (rebalance timeout, subscription, owned
    partitions) is answered with the assignment, the member revokes, and member 2 gets its half."""
    ctx = _regrouping()
    full = ctx.heartbeat(M1, 10, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",), owned=[ALL])
    assert fields(full.response) == ok(M1, 10, assigned=[LOW])
    assert fields(ctx.heartbeat(M1, 10, owned=[LOW]).response) == ok(M1, 11)
    assert fields(ctx.heartbeat(M2, 11).response) == ok(M2, 11, assigned=[HIGH])
    assert ctx.member(M2).state is MemberState.STABLE


def test_a_lost_answer_that_gave_released_partitions_is_not_repeated_and_nothing_times_out():
    """The answer that moves member 2 from waiting to its partitions (same epoch) is lost: its repeated regular
    heartbeat is answered without an assignment, the member is stable for the coordinator and no deadline is
    armed: only a full request tells it its partitions again."""
    ctx = _regrouping()
    ctx.heartbeat(M1, 10, owned=[LOW])
    lost = ctx.heartbeat(M2, 11)
    assert fields(lost.response) == ok(M2, 11, assigned=[HIGH])
    assert fields(ctx.heartbeat(M2, 11).response) == ok(M2, 11)
    assert ctx.member(M2).state is MemberState.STABLE and ctx.rebalance_deadline(M2, 11) is None
    full = ctx.heartbeat(M2, 11, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",), owned=[])
    assert fields(full.response) == ok(M2, 11, assigned=[HIGH])

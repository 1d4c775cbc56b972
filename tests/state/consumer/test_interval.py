"""The heartbeat interval the coordinator tells consumer-protocol members
(`state.consumer.heartbeat.heartbeat_interval_ms`): Kafka's `group.consumer.heartbeat.interval.ms`, lengthened when a
heartbeat waited long for its batch, so that librdkafka, which times a heartbeat out after the interval, still gets
the answers of batches that run long."""

from __future__ import annotations

from state.config import CoordinatorConfig
from state.consumer.heartbeat import heartbeat_interval_ms
from state.views.fast_answers import consumer_heartbeat_from_view
from state.views.published import decode_view
from tests.state.consumer.test_step import consumer_context, heartbeat_request

KAFKA = CoordinatorConfig()
"""Kafka's defaults: a 5 s interval, at most 15 s, a 45 s session."""


def test_a_heartbeat_that_waited_little_is_told_the_configured_interval():
    assert heartbeat_interval_ms(KAFKA, 0) == 5_000
    assert heartbeat_interval_ms(KAFKA, 1_250) == 5_000  # 4 x 1.25 s is not longer


def test_a_heartbeat_that_waited_long_is_told_four_waits_in_whole_seconds():
    assert heartbeat_interval_ms(KAFKA, 1_251) == 6_000
    assert heartbeat_interval_ms(KAFKA, 2_100) == 9_000


def test_the_interval_told_is_at_most_the_max_interval_and_a_third_of_the_session():
    assert heartbeat_interval_ms(KAFKA, 60_000) == 15_000  # group.consumer.max.heartbeat.interval.ms
    short_session = CoordinatorConfig(group_consumer_min_session_timeout_ms=6_000,
                                      group_consumer_session_timeout_ms=12_000)
    assert heartbeat_interval_ms(short_session, 60_000) == 5_000  # 12 s / 3 = 4 s < the configured 5 s: 5 s
    long_session = CoordinatorConfig(group_consumer_session_timeout_ms=30_000,
                                     group_consumer_min_session_timeout_ms=30_000)
    assert heartbeat_interval_ms(long_session, 60_000) == 10_000


def test_a_shorter_configured_interval_grows_from_its_own_value():
    fast = CoordinatorConfig(group_consumer_heartbeat_interval_ms=1_000, group_consumer_min_heartbeat_interval_ms=1_000)
    assert [heartbeat_interval_ms(fast, w) for w in (0, 200, 251, 900, 3_000)] == [1_000, 1_000, 2_000, 4_000, 12_000]


def heartbeat_at(ctx, member_id: str, epoch: int, arrived_ms: int) -> dict:
    """A heartbeat whose record reached the control topic at `arrived_ms`, handled by a batch at `ctx.now_ms`."""
    (response,) = ctx.step({"api": "ConsumerGroupHeartbeat", "request_id": ctx.request_id(), "group_id": "g",
                            "member_id": member_id, "member_epoch": epoch}, times=[arrived_ms])
    return response


def test_the_wait_is_the_batch_time_minus_the_heartbeats_arrival_so_a_replay_tells_the_same():
    ctx = consumer_context()
    ctx.consumer_join("A")
    ctx.now_ms += 10_000
    assert heartbeat_at(ctx, "A", 1, ctx.now_ms - 100)["heartbeat_interval_ms"] == 5_000
    ctx.now_ms += 10_000
    assert heartbeat_at(ctx, "A", 1, ctx.now_ms - 2_100)["heartbeat_interval_ms"] == 9_000
    # GroupContext ran each step twice from the same inputs and checked they gave the same output


def test_the_view_published_with_a_long_wait_tells_the_longer_interval_as_the_coordinator_did():
    """A gateway's answer from the view tells what the coordinator told in the call that published it: the longest
    of its heartbeats' intervals, so that the member's next heartbeat, which may need a batch, gets its time."""
    ctx = consumer_context()
    ctx.consumer_join("A")
    ctx.consumer_join("B")
    ctx.now_ms += 3_000
    revoke = heartbeat_at(ctx, "A", 1, ctx.now_ms - 3_000)
    keeps = revoke["assignment"]["topic_partitions"][0]["partitions"]
    assert revoke["heartbeat_interval_ms"] == 12_000
    (acked,) = ctx.step({"api": "ConsumerGroupHeartbeat", "request_id": ctx.request_id(), "group_id": "g",
                         "member_id": "A", "member_epoch": 1,
                         "topic_partitions": [{"topic_id": revoke["assignment"]["topic_partitions"][0]["topic_id"],
                                               "partitions": keeps}]},
                        times=[ctx.now_ms - 1_500])
    assert (acked["member_epoch"], acked["heartbeat_interval_ms"]) == (2, 6_000)
    assert ctx.last.publish_view
    answered = consumer_heartbeat_from_view(decode_view(ctx.last.view), heartbeat_request("A", 2))
    assert answered.heartbeat_interval_ms == 6_000

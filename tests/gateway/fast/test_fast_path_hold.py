"""The gateway's hold on a consumer group's heartbeats (docs/gateway.md, "No heartbeat answered from a view older
than a request the gateway forwarded"), without a broker: which forwarded requests hold the group, and until when.
The view follower is the product's, not started; its rounds are what `read_as_of` says, or what the test ends
(`end_round`)."""

from __future__ import annotations

import asyncio
import time

from gateway.fast.fast_path import FastPath, Heartbeats
from gateway.fast.views import ViewFollower

REGULAR = {"api": "ConsumerGroupHeartbeat", "api_version": 1, "group_id": "g", "member_id": "m", "member_epoch": 3}
JOIN = {**REGULAR, "member_id": "n", "member_epoch": 0, "subscribed_topic_names": ["t"], "rebalance_timeout_ms": 1}
ACKNOWLEDGEMENT = {**REGULAR, "topic_partitions": [{"topic_id": "AAAAAAAAAAAAAAAAAAAAAA", "partitions": [0]}]}


def fast_path() -> FastPath:
    follower = ViewFollower("127.0.0.1:9", "views", "requests", {}, bound_ms=2000)  # never started
    return FastPath(follower, None, Heartbeats(None, 5000, asyncio.new_event_loop()), 4096)  # type: ignore[arg-type]


def test_a_heartbeat_that_declares_something_holds_the_groups_heartbeats_until_a_round_after_its_answer():
    for declaring in (JOIN, ACKNOWLEDGEMENT, {**REGULAR, "member_epoch": -1}):
        fast = fast_path()
        fast.before_request("ConsumerGroupHeartbeat", declaring)
        assert fast._holds("g") and not fast._holds("other")
        fast.after_request("ConsumerGroupHeartbeat", declaring)
        assert fast._holds("g")  # answered, but no round of the follower has begun since
        fast.follower.read_as_of = time.monotonic()
        assert not fast._holds("g")


def test_what_holds_nothing():
    """A regular heartbeat forwarded (held, or unknown to the view) must not hold the group again, or members
    heartbeating would keep it held; commits, fetches and classic requests hold nothing (the coordinator checks
    commits, fetches have their own rule, a classic JoinGroup is answered only when its join phase ends)."""
    fast = fast_path()
    for api, body in (("ConsumerGroupHeartbeat", REGULAR), ("OffsetCommit", {"group_id": "g"}),
                      ("OffsetFetch", {"group_id": "g"}), ("JoinGroup", {"group_id": "g"}),
                      ("Heartbeat", {"group_id": "g"}), ("ConsumerGroupHeartbeat", {"group_id": "g", "bad": 1})):
        fast.before_request(api, body)
        assert not fast._holds("g"), api


def test_two_forwarded_at_once_hold_until_both_are_answered():
    fast = fast_path()
    fast.before_request("ConsumerGroupHeartbeat", JOIN)
    fast.before_request("ConsumerGroupHeartbeat", ACKNOWLEDGEMENT)
    fast.after_request("ConsumerGroupHeartbeat", JOIN)
    fast.follower.read_as_of = time.monotonic()
    assert fast._holds("g")
    fast.after_request("ConsumerGroupHeartbeat", ACKNOWLEDGEMENT)
    fast.follower.read_as_of = time.monotonic()
    assert not fast._holds("g")


def test_a_held_request_waits_for_the_round_that_ends_the_hold_and_no_longer():
    """The wait is woken by each round's end (not a poll), and ends with the first round begun after the answer."""
    async def scenario() -> None:
        fast = fast_path()
        fast.before_request("ConsumerGroupHeartbeat", JOIN)
        fast.after_request("ConsumerGroupHeartbeat", JOIN)
        waiting = asyncio.ensure_future(fast._hold_ended("g"))
        await asyncio.sleep(0.05)
        fast.follower.end_round(time.monotonic() - 60)  # a round begun before the answer: still held
        await asyncio.sleep(0.05)
        assert not waiting.done()
        fast.follower.end_round(time.monotonic())
        assert await asyncio.wait_for(waiting, 5) is True

    asyncio.run(scenario())

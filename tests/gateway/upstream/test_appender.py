"""The gateway's one producer of control requests (`gateway.upstream.appender`) against a real broker: the
delivery reports of one poll reach the event loop together, and every append's future says what became of it."""

from __future__ import annotations

import asyncio

import pytest
from kafka import KafkaConsumer, TopicPartition

from gateway.upstream.appender import AppendFailed, Appender
from tests.support.kafka import create_topic

pytestmark = [pytest.mark.broker]


def _values(broker: str, topic: str, count: int) -> dict[str, list[int]]:
    """Each group's values in `topic`, in log order, once `count` records are read."""
    consumer = KafkaConsumer(bootstrap_servers=broker, auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    try:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        by_group: dict[str, list[int]] = {}
        for record in consumer:
            by_group.setdefault(record.key.decode(), []).append(int(record.value))
            if sum(map(len, by_group.values())) == count:
                break
    finally:
        consumer.close()
    return by_group


def test_appends_in_flight_together_are_each_acknowledged_and_in_the_topic_in_order(broker):
    """200 appends of two groups sent at once (they go out in a few Produce requests, their reports handed over in
    a few batches): every future completes without error, and each group's records are in its partition in the
    order they were appended."""
    topic = create_topic(broker, 2, prefix="appender")

    async def scenario() -> list[object]:
        appender = Appender(broker, topic, {}, asyncio.get_running_loop())
        try:
            futures = [appender.append(f"group-{n % 2}", f"{n}".encode()) for n in range(200)]
            return await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), 30)
        finally:
            appender.close()

    results = asyncio.run(scenario())
    assert results == [None] * 200
    assert _values(broker, topic, 200) == {"group-0": list(range(0, 200, 2)), "group-1": list(range(1, 200, 2))}


def test_appends_the_broker_never_takes_fail_with_append_failed():
    """No broker there: each append's future fails with AppendFailed once the message times out, every one of a
    batch (none left waiting for ever)."""

    async def scenario() -> list[object]:
        appender = Appender("127.0.0.1:1", "requests", {}, asyncio.get_running_loop(), timeout_ms=300)
        try:
            futures = [appender.append("g", b"x") for _ in range(5)]
            return await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), 20)
        finally:
            appender.close(timeout_s=1)

    results = asyncio.run(scenario())
    assert len(results) == 5 and all(isinstance(r, AppendFailed) for r in results), results


def test_a_move_to_a_new_generation_waits_for_the_records_in_flight_and_keeps_each_groups_order(broker):
    """`move_to` while 100 appends are in flight (common.generations): the 100 after it go to the new topic, and
    only once every earlier one is acknowledged (each future of the first 100 completes before any of the rest),
    so a group's requests are in the order appended across the two topics."""
    old = create_topic(broker, 2, prefix="appender")
    new = create_topic(broker, 2, prefix="appender")
    completed: list[int] = []

    async def scenario() -> list[object]:
        appender = Appender(broker, old, {}, asyncio.get_running_loop())
        try:
            futures = []
            for n in range(200):
                if n == 100:
                    appender.move_to(new)
                futures.append(appender.append(f"group-{n % 2}", f"{n}".encode()))
                futures[-1].add_done_callback(lambda _, n=n: completed.append(n))
            results = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), 30)
            assert appender.topic == new
            return results
        finally:
            appender.close()

    assert asyncio.run(scenario()) == [None] * 200
    assert max(completed.index(n) for n in range(100)) < min(completed.index(n) for n in range(100, 200))
    assert _values(broker, old, 100) == {"group-0": list(range(0, 100, 2)), "group-1": list(range(1, 100, 2))}
    assert _values(broker, new, 100) == {"group-0": list(range(100, 200, 2)), "group-1": list(range(101, 200, 2))}


def test_records_wait_for_the_first_generation_the_views_name(broker):
    """`follow_generations`: appends made before the view follower's first round are written nowhere until it names
    the generation to write to, then there, in order."""
    base = create_topic(broker, 2, prefix="appender")
    named = create_topic(broker, 2, prefix="appender")

    async def scenario() -> tuple[bool, list[object]]:
        appender = Appender(broker, base, {}, asyncio.get_running_loop())
        try:
            appender.follow_generations()
            futures = [appender.append("group-0", f"{n}".encode()) for n in range(5)]
            await asyncio.sleep(1.0)
            waiting = not any(f.done() for f in futures)
            appender.move_to(named)
            return waiting, await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), 30)
        finally:
            appender.close()

    waiting, results = asyncio.run(scenario())
    assert waiting and results == [None] * 5
    assert _values(broker, named, 5) == {"group-0": [0, 1, 2, 3, 4]}
    assert _values(broker, base, 1) == {}

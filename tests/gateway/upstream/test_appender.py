"""The gateway's appender of control requests (`gateway.upstream.appender`, its own idempotent producer on the event
loop) against a real broker: appends in flight together are each acknowledged and in order, a batch whose answer
was lost is written once, one of unknown fate at its deadline does not make later ones be taken for duplicates, and
every append's future says what became of it. A proxy in front of the broker loses answers on purpose."""

from __future__ import annotations

import asyncio
import struct
import time
from typing import Callable

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.protocol.metadata.metadata import MetadataResponse

from gateway.upstream.appender import MAX_RECORD_BYTES, AppendFailed, Appender
from gateway.upstream.broker import UpstreamSecurity
from gateway.upstream.control import from_json, to_json
from state.api import Errors
from tests.support.kafka import create_topic

pytestmark = [pytest.mark.broker]

PRODUCE, METADATA = 0, 3


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
        appender = Appender(broker, topic, UpstreamSecurity(), asyncio.get_running_loop())
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
        appender = Appender("127.0.0.1:1", "requests", UpstreamSecurity(), asyncio.get_running_loop(), timeout_ms=300)
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
        appender = Appender(broker, old, UpstreamSecurity(), asyncio.get_running_loop())
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
        appender = Appender(broker, base, UpstreamSecurity(), asyncio.get_running_loop())
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


async def _answer_losing_proxy(broker: str, lose: Callable[[list[int]], bool]
                               ) -> tuple[asyncio.AbstractServer, list[int]]:
    """A TCP proxy to `broker` that names itself for every broker in Metadata answers (so the appender's connections
    to the partition leader come through it too) and, while `lose(lost)`, closes the connection instead of passing a
    Produce answer on: the batch was written, the appender cannot know it. Returns the server and `lost`, the
    answers lost so far (one entry each)."""
    host, _, port = broker.rpartition(":")
    lost: list[int] = []

    async def serve(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        broker_reader, broker_writer = await asyncio.open_connection(host, int(port))
        asked: dict[int, tuple[int, int]] = {}

        async def frame(reader: asyncio.StreamReader) -> bytes:
            size = await reader.readexactly(4)
            return await reader.readexactly(int.from_bytes(size, "big"))

        async def upwards() -> None:
            while True:
                request = await frame(client_reader)
                api_key, version, correlation = struct.unpack_from(">hhi", request)
                asked[correlation] = (api_key, version)
                broker_writer.write(len(request).to_bytes(4, "big") + request)

        async def downwards() -> None:
            while True:
                answer = await frame(broker_reader)
                api_key, version = asked.pop(struct.unpack_from(">i", answer)[0])
                if api_key == PRODUCE and lose(lost):
                    lost.append(1)
                    return
                if api_key == METADATA:
                    doc = to_json(MetadataResponse.decode(answer, version=version, header=True), version)
                    for entry in doc["brokers"]:
                        entry["host"], entry["port"] = "127.0.0.1", server.sockets[0].getsockname()[1]
                    metadata = from_json(MetadataResponse, version, doc)
                    metadata.with_header(correlation_id=struct.unpack_from(">i", answer)[0])
                    answer = bytes(metadata.encode(header=True))
                client_writer.write(len(answer).to_bytes(4, "big") + answer)

        ways = [asyncio.ensure_future(upwards()), asyncio.ensure_future(downwards())]
        await asyncio.wait(ways, return_when=asyncio.FIRST_COMPLETED)
        for way in ways:
            way.cancel()
        await asyncio.gather(*ways, return_exceptions=True)  # a side closed: the connection ends
        client_writer.close()
        broker_writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, lost


def test_a_batch_whose_answer_was_lost_is_sent_again_and_written_once(broker):
    """The connection breaks after the broker wrote a batch and before its answer arrived: the appender sends the
    same batch again (the same producer id and sequence numbers) on a new connection, the broker knows it has it,
    and every record is in the topic once, in order, each append acknowledged."""
    topic = create_topic(broker, 2, prefix="appender")

    async def scenario() -> tuple[list[object], int]:
        server, lost = await _answer_losing_proxy(broker, lambda lost: len(lost) < 2)
        appender = Appender(f"127.0.0.1:{server.sockets[0].getsockname()[1]}", topic, UpstreamSecurity(),
                            asyncio.get_running_loop())
        try:
            futures = [appender.append(f"group-{n % 2}", f"{n}".encode()) for n in range(50)]
            await asyncio.sleep(0.2)
            futures += [appender.append(f"group-{n % 2}", f"{n}".encode()) for n in range(50, 100)]
            return await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), 30), len(lost)
        finally:
            appender.close()
            server.close()

    results, lost = asyncio.run(scenario())
    assert lost == 2 and results == [None] * 100
    assert _values(broker, topic, 100) == {"group-0": list(range(0, 100, 2)), "group-1": list(range(1, 100, 2))}
    assert _values(broker, topic, 101) == _values(broker, topic, 100)  # nothing past the 100: no duplicate


def test_after_batches_of_unknown_fate_time_out_later_appends_are_each_written(broker):
    """Every answer is lost for longer than the appender's timeout: those appends fail (AppendFailed), though the
    broker may hold them. The appender then writes as a new producer: appends after it are acknowledged and each
    in the topic (the old producer's next sequence numbers would have been taken for duplicates of what it had
    written and not been answered about)."""
    topic = create_topic(broker, 2, prefix="appender")

    async def scenario() -> tuple[list[object], list[object]]:
        losing_until = time.monotonic() + 1.5
        server, _ = await _answer_losing_proxy(broker, lambda lost: time.monotonic() < losing_until)
        appender = Appender(f"127.0.0.1:{server.sockets[0].getsockname()[1]}", topic, UpstreamSecurity(),
                            asyncio.get_running_loop(), timeout_ms=1000)
        try:
            first = [appender.append("group-0", f"{n}".encode()) for n in range(10)]
            timed_out = await asyncio.wait_for(asyncio.gather(*first, return_exceptions=True), 30)
            await asyncio.sleep(max(losing_until - time.monotonic(), 0))
            later = [appender.append("group-0", f"{n}".encode()) for n in range(10, 20)]
            return timed_out, await asyncio.wait_for(asyncio.gather(*later, return_exceptions=True), 30)
        finally:
            appender.close()
            server.close()

    timed_out, later = asyncio.run(scenario())
    assert all(isinstance(r, AppendFailed) for r in timed_out), timed_out
    assert later == [None] * 10
    (written,) = _values(broker, topic, 1_000).values()
    assert written[-10:] == list(range(10, 20)) and len(set(written)) == len(written), written


def test_a_record_over_the_limit_fails_at_once_with_message_too_large():
    """A record larger than `MAX_RECORD_BYTES` is refused before any broker sees it, with MESSAGE_TOO_LARGE (the
    coordinator's answer to it is then non-retriable, `state.api.append_error`); no broker needed."""

    async def scenario() -> BaseException | None:
        appender = Appender("127.0.0.1:1", "requests", UpstreamSecurity(), asyncio.get_running_loop())
        try:
            return appender.append("g", b"x" * MAX_RECORD_BYTES).exception()
        finally:
            appender.close()

    failure = asyncio.run(scenario())
    assert isinstance(failure, AppendFailed) and failure.code == Errors.MESSAGE_TOO_LARGE

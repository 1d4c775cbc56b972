"""The Kafka source's reader methods called directly (no Spark), against the session's tansu broker."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import uuid

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from common.generations import STRIDE
from streaming.buckets import bucket_of
from streaming.kafka_io import source
from streaming.kafka_io.source import KafkaRange, KafkaStreamReader, cap_rows

pytestmark = pytest.mark.broker


def new_topic(broker: str, prefix: str, partitions: int) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker)
    admin.create_topics([NewTopic(name, partitions, 1)])
    admin.close()
    return name


@pytest.fixture
def topic(broker) -> str:
    return new_topic(broker, "source", 2)


@pytest.fixture(params=["confluent", "kafka-python"])
def client(request) -> str:
    """`kafka.client`: the reading tests run with each client library."""
    return request.param


def publish_deadlines(broker: str, timers: str, deadlines: dict[int, int | None]) -> None:
    """As the state calls publish their buckets' earliest deadlines (`streaming.stateful.call`)."""
    producer = KafkaProducer(bootstrap_servers=broker)
    for bucket, deadline in deadlines.items():
        producer.send(timers, key=str(bucket).encode(), value=None if deadline is None else str(deadline).encode())
    producer.flush()
    producer.close()


def produce(broker: str, topic: str, per_partition: int) -> None:
    producer = KafkaProducer(bootstrap_servers=broker, linger_ms=5)
    for i in range(per_partition):
        for partition in (0, 1):
            producer.send(topic, key=b"k", value=f"{partition}-{i}".encode(), partition=partition)
    producer.flush()
    producer.close()


def reader(broker: str, topic: str, client: str = "auto", **options: str) -> KafkaStreamReader:
    return KafkaStreamReader({"kafka.bootstrap.servers": broker, "kafka.client": client, "subscribe": topic,
                              **options})


def rows_of(batches) -> list[dict]:
    """The rows `read` yields, each by column name (`RAW_ARROW`, `ROUTED_ARROW`)."""
    return [row for batch in batches for row in batch.to_pylist()]


def read_all(r: KafkaStreamReader, start: dict, end: dict) -> list[dict]:
    return [row for part in r.partitions(start, end) for row in rows_of(r.read(part))]


def test_offsets_plan_and_read_every_record_once(broker, topic, client):
    produce(broker, topic, 5)
    r = reader(broker, topic, client)
    start = r.initialOffset()
    assert start == {topic: {"0": 0, "1": 0}, "tick": 0}
    end = r.latestOffset(start, ReadAllAvailable())
    assert end == {topic: {"0": 5, "1": 5}, "tick": 0}
    rows = read_all(r, start, end)
    assert sorted(row["value"] for row in rows) == sorted(f"{p}-{i}".encode() for p in (0, 1) for i in range(5))
    assert r.latestOffset(end, ReadAllAvailable()) == end
    assert r.partitions(end, end) == []


def test_read_is_the_same_on_replay(broker, topic, client):
    produce(broker, topic, 4)
    r = reader(broker, topic, client)
    part = KafkaRange(topic, 1, 1, 3)
    assert rows_of(r.read(part)) == rows_of(r.read(part))
    assert [row["offset"] for row in rows_of(r.read(part))] == [1, 2]


def test_a_range_slow_to_become_readable_is_waited_for_with_a_line_a_wait_and_read_whole(broker, topic, client,
                                                                                        caplog):
    """The planned end is there but its last records are not readable for several wait intervals (as under a broker
    slow to serve them): the read neither fails nor stops early; it says it waits, and yields every record."""
    produce(broker, topic, 3)
    r = reader(broker, topic, client, readWaitLogMs="500")
    late = threading.Timer(2.0, produce, (broker, topic, 2))
    late.start()
    try:
        with caplog.at_level(logging.WARNING, logger="streaming.kafka_io.kafka_clients"):
            rows = rows_of(r.read(KafkaRange(topic, 0, 0, 5)))
    finally:
        late.join()
    assert [row["value"] for row in rows] == [b"0-0", b"0-1", b"0-2", b"0-0", b"0-1"]
    waits = [m for m in caplog.messages if "still waiting" in m]
    assert waits and all(f"{topic}-0" in m and "up to 5" in m for m in waits)


def test_the_newest_records_of_a_partition_of_many_batches_are_read(broker):
    """tansu lists every batch of a partition on each fetch and stops at the fetch's wait: with librdkafka's wait
    fixed at 10 ms, the last records of a partition of 30,000 one-record batches were never returned (the read
    waited for ever, as the long soak's batches did). The wait now grows with the log: they are read."""
    from confluent_kafka import Producer

    topic = new_topic(broker, "batches", 1)
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(30_000):
        producer.produce(topic, f"r-{i}".encode(), partition=0)
        if i % 1000 == 999:
            producer.flush()
    producer.flush()
    r = reader(broker, topic, "confluent", readWaitLogMs="5000")
    rows: list[dict] = []
    read = threading.Thread(target=lambda: rows.extend(rows_of(r.read(KafkaRange(topic, 0, 29_995, 30_000)))),
                            daemon=True)
    read.start()
    read.join(300)  # not a timing: a read that never ends fails here rather than hanging the suite
    assert [row["value"] for row in rows] == [f"r-{i}".encode() for i in range(29_995, 30_000)]


def test_a_read_asks_the_broker_for_about_its_range_not_the_log_after_it(broker):
    """tansu answers a fetch with every batch it holds from the fetch's offset on until the fetch's bytes are spent,
    and while bytes are left it lists the partition again for records that arrived meanwhile: a read asking for
    librdkafka's default (50 MB) held tansu for its whole wait under a steady flow of requests. The read asks for
    the bytes its range took in the read before (rounded up an eighth at most), so the broker's answer ends at the
    range's end and not at the log's, although the log goes on well past it."""
    from confluent_kafka import Producer

    from common.markers import _last_offset, fetch_raw
    from streaming.kafka_io import librdkafka

    topic = new_topic(broker, "sized", 1)
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(1000):  # one record a batch, as the gateway appends requests
        producer.produce(topic, json.dumps({"api": "Heartbeat", "request_id": f"r-{i:04d}"}).encode(), partition=0)
    producer.flush()
    r = reader(broker, topic, "confluent")
    assert [row["offset"] for row in rows_of(r.read(KafkaRange(topic, 0, 0, 200)))] == list(range(200))
    asked = librdkafka.fetch_bytes(topic, 0, 200, 400)
    host, _, port = broker.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sized = _last_offset(fetch_raw(sock, topic, 0, 200, 1, max_bytes=asked))
        unsized = _last_offset(fetch_raw(sock, topic, 0, 200, 2, max_bytes=50 * 1024 * 1024))
    assert unsized == 999  # the whole log after the offset
    # about the range: the size is rounded up an eighth at most, and the read counts a record a few bytes larger
    # than tansu does (the unsized fetch went 600 offsets past the range)
    assert sized is not None and 399 <= sized < 400 + 200 // 4, (sized, asked)
    assert [row["offset"] for row in rows_of(r.read(KafkaRange(topic, 0, 200, 400)))] == list(range(200, 400))


def take_then_queued(config: dict, topic: str, start: int, end: int, wait_s: float) -> tuple[list[int], list[int]]:
    """With the consumer a read of `[start, end)` of partition 0 uses (`librdkafka.range_consumer`), take 50 rows
    as the source takes a range, a few at a time; `wait_s` later, the offsets its local queue holds."""
    from streaming.kafka_io import librdkafka

    with librdkafka.range_consumer("read", config, topic, 0, start, end) as consumer:
        taken: list[int] = []
        deadline = time.monotonic() + 60  # not a timing assert: a bound on a read that never comes
        while len(taken) < 50 and time.monotonic() < deadline:
            taken += [m.offset() for m in consumer.consume(50 - len(taken), 1.0) if m.error() is None]
        time.sleep(wait_s)  # not a timing assert: time for the fetches sent meanwhile, if any, to be answered
        return taken, [m.offset() for m in consumer.consume(10000, 0) if m.error() is None]


def test_a_read_fetches_nothing_past_its_range_while_its_rows_are_taken(broker):
    """On tansu every fetch below a partition's end lists the partition's batches, again for each round that finds
    records; librdkafka's default keeps a fetch in flight while its local queue holds fewer than 100,000 records,
    so a range taken a row at a time was followed by fetches past it. The read's consumer fetches again only once
    its queue is empty: while half the range still waits in the queue, nothing past the first fetch's answer is
    fetched, although the log goes on well past it."""
    from confluent_kafka import Producer

    from streaming.kafka_io import librdkafka

    topic = new_topic(broker, "queued", 1)
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(1000):  # one record a batch, as the gateway appends requests
        producer.produce(topic, json.dumps({"api": "Heartbeat", "request_id": f"r-{i:04d}"}).encode(), partition=0)
    producer.flush()
    config = {"bootstrap_servers": broker}
    assert [row[1] for row in librdkafka.read_range(config, topic, 0, 0, 200, 60)] == list(range(200))
    # the read of [200, 400), its range taken a few rows at a time as the source does
    taken, queued = take_then_queued(config, topic, 200, 400, 1.0)
    assert taken == list(range(200, 250))
    assert queued[:1] == [250]
    # the sized fetch's answer ends a little past the range (test above); one more fetch would have queued the
    # log up to its end, 999 (librdkafka's default queued.min.messages)
    assert max(queued) < 400 + 200 // 4, max(queued)


def test_a_read_of_more_than_one_fetch_fetches_ahead_while_its_rows_are_taken(broker):
    """tansu answers a fetch with at most 5 MiB, so a longer range (the records topic read to its end at a driver's
    start, a batch of a rebuild's loads) takes many fetches. With `QUEUED_MIN_MESSAGES` 1 each came only once the
    queue was empty and then after librdkafka's `fetch.queue.backoff.ms` (1 s): 1.1M records took 75-78 s to read.
    Such a read fetches ahead instead: while most of the first answer still waits in the queue, the rest of the
    range has been fetched behind it."""
    from confluent_kafka import Producer

    from streaming.kafka_io import librdkafka

    topic = new_topic(broker, "bulk", 1)
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 5})
    value = b"v" * 8000
    for i in range(1000):  # ~8 MB: one tansu fetch brings at most 5 MiB of it
        producer.produce(topic, value, key=f"k-{i:04d}".encode(), partition=0)
    producer.flush()
    config = {"bootstrap_servers": broker}
    # a first read learns what an offset takes (8 KB, not the 512 bytes a read assumes before any)
    assert [row[1] for row in librdkafka.read_range(config, topic, 0, 0, 10, 60)] == list(range(10))
    taken, queued = take_then_queued(config, topic, 10, 1000, 2.0)
    assert taken == list(range(10, 60))
    # the first answer ends near 5 MiB (about 650 of these records); a read that fetched only once its queue was
    # empty would have queued nothing past it while 50 of its records were taken
    assert queued == list(range(60, 1000)), (queued[:1], queued[-1:], len(queued))


def test_max_offsets_per_trigger_caps_each_batch_across_partitions(broker, topic):
    produce(broker, topic, 10)
    r = reader(broker, topic, maxOffsetsPerTrigger="6")
    assert r.getDefaultReadLimit() == ReadMaxRows(6)
    start = r.initialOffset()
    end = r.latestOffset(start, ReadMaxRows(6))
    assert end[topic] == {"0": 3, "1": 3}
    assert len(read_all(r, start, end)) == 6


def test_starting_offsets_latest_and_json(broker, topic):
    produce(broker, topic, 3)
    assert reader(broker, topic, startingOffsets="latest").initialOffset()[topic] == {"0": 3, "1": 3}
    given = json.dumps({topic: {"0": 1, "1": -2}})
    assert reader(broker, topic, startingOffsets=given).initialOffset()[topic] == {"0": 1, "1": 0}


def test_new_partitions_are_picked_up_from_their_start(broker, topic):
    """tansu has no CreatePartitions, so the checkpointed offsets play the older topic that had partition 0 only."""
    produce(broker, topic, 2)
    r = reader(broker, topic)
    start = {topic: {"0": 2}, "tick": 0}
    end = r.latestOffset(start, ReadAllAvailable())
    assert end[topic] == {"0": 2, "1": 2}
    assert [part.partition for part in r.partitions(start, end)] == [1]
    assert sorted(row["value"] for row in read_all(r, start, end)) == [b"1-0", b"1-1"]


def test_routing_adds_the_cores_decision(broker, topic, client):
    producer = KafkaProducer(bootstrap_servers=broker)
    producer.send(topic, key=b"g", value=b'{"api":"Heartbeat","request_id":"r1","group_id":"g","member_id":"m",'
                                         b'"generation_id":1}', partition=0)
    producer.send(topic, key=b"x", value=b"not json", partition=0)
    producer.flush()
    r = reader(broker, topic, client, route="true", buckets="8")
    rows = rows_of(r.read(KafkaRange(topic, 0, 0, 2)))
    assert [(row["kind"], row["group_id"]) for row in rows] == [("group", "g"), ("reject", "")]
    assert rows[1]["reason"]
    assert [row["bucket"] for row in rows] == [bucket_of("g", 8), 0]  # the group's state bucket; 0 for the rest


def test_due_buckets_ride_on_the_offset_and_the_first_range(broker, topic):
    timers = new_topic(broker, "timers", 1)
    publish_deadlines(broker, timers, {0: 1})  # before the reader: a schedule starts at the topic's end
    r = reader(broker, topic, timersTopic=timers, route="true", buckets="4")
    start = r.initialOffset()
    assert start == {topic: {"0": 0, "1": 0}, "tick": 0, "buckets": 4}
    first = r.latestOffset(start, ReadAllAvailable())
    assert first == {**start, "tick": 1, "due": [0, 1, 2, 3], "resumed": True}  # a run's first batch calls them all
    # Deadlines are published by a batch before it commits, so before the next plan (which starts where that batch
    # ended): each publish below stands for the batch that ended at the next plan's start.
    now = int(time.time() * 1000)
    publish_deadlines(broker, timers, {1: now + 3_600_000})
    assert r.latestOffset(first, ReadAllAvailable()) == first  # not due yet: no batch
    assert r.latestOffset(first, ReadAllAvailable()) == first
    produce(broker, topic, 2)
    with_data = r.latestOffset(first, ReadAllAvailable())
    while with_data[topic] != {"0": 2, "1": 2}:  # a fetch sent before the records can answer one trigger late
        with_data = r.latestOffset(first, ReadAllAvailable())
    assert "due" not in with_data
    publish_deadlines(broker, timers, {3: now - 1, 2: now - 5})
    ticked = r.latestOffset(with_data, ReadAllAvailable())
    assert ticked == {topic: with_data[topic], "tick": 2, "buckets": 4, "due": [2, 3]}  # only a run's first is resumed
    assert r.latestOffset(ticked, ReadAllAvailable())["tick"] == 3  # still due: the offset must change again
    [part] = r.partitions(with_data, ticked)
    assert (part.start, part.end, part.due) == (0, 0, (2, 3))  # a timer-only batch reads no records
    assert [(row["group_id"], row["bucket"]) for row in rows_of(r.read(part))] == [(None, 2), (None, 3)]
    produce(broker, topic, 2)
    with_more = r.latestOffset(ticked, ReadAllAvailable())
    while with_more[topic] != {"0": 4, "1": 4}:
        with_more = r.latestOffset(ticked, ReadAllAvailable())
    assert with_more["due"] == [2, 3]
    parts = r.partitions(ticked, with_more)
    assert [p.due for p in parts] == [(2, 3), ()]
    assert len(read_all(r, ticked, with_more)) == 2 + 4
    publish_deadlines(broker, timers, {2: None, 3: None})  # tombstones: nothing pending there any more
    assert r.latestOffset(with_more, ReadAllAvailable()) == with_more  # nothing due, nothing to read: no batch


def test_an_idle_reader_reads_the_timers_topic_once_per_start(broker, topic):
    """Only the query's own batches publish deadlines, each before the plan that follows it: a plan whose start has
    not moved since the last read of the timers topic finds nothing new there, so an idle query does not read it ten
    times a second. (What is published without a batch, as here, is seen once a batch has run.)"""
    timers = new_topic(broker, "timers", 1)
    r = reader(broker, topic, timersTopic=timers, route="true", buckets="4")
    first = r.latestOffset(r.initialOffset(), ReadAllAvailable())
    assert r.latestOffset(first, ReadAllAvailable()) == first
    publish_deadlines(broker, timers, {2: int(time.time() * 1000) - 1})
    assert r.latestOffset(first, ReadAllAvailable()) == first  # the same start: not read again
    produce(broker, topic, 1)
    moved = r.latestOffset(first, ReadAllAvailable())
    while moved[topic] == first[topic]:
        moved = r.latestOffset(first, ReadAllAvailable())
    assert r.latestOffset(moved, ReadAllAvailable())["due"] == [2]  # a batch ran: read, and due


def test_the_first_new_batch_of_a_new_reader_is_marked_resumed(broker, topic):
    """A new reader is a restarted (or new) query: its first new batch tells the core so (it restarts sessions).
    A replayed batch never asks `latestOffset`: its offset comes from the log, so it stays unmarked."""
    r = reader(broker, topic, route="true", buckets="4")
    start = r.initialOffset()
    assert r.latestOffset(start, ReadAllAvailable()) == start  # no batch: nothing marked yet
    produce(broker, topic, 1)
    first = r.latestOffset(start, ReadAllAvailable())
    while first == start:  # a fetch sent before the records can answer one trigger late
        first = r.latestOffset(start, ReadAllAvailable())
    assert first["resumed"] is True
    parts = r.partitions(start, first)
    assert parts and all(part.resumed for part in parts)
    marks = [row["resumed"] for row in read_all(r, start, first)]
    assert marks and all(marks)  # every routed row carries it
    produce(broker, topic, 1)
    second = r.latestOffset(first, ReadAllAvailable())
    while second[topic] != {"0": 2, "1": 2}:
        second = r.latestOffset(first, ReadAllAvailable())
    assert "resumed" not in second
    assert not any(part.resumed for part in r.partitions(first, second))


def test_an_unreadable_deadline_is_skipped(broker, topic):
    timers = new_topic(broker, "timers", 1)
    r = reader(broker, topic, timersTopic=timers, route="true", buckets="3")
    first = r.latestOffset(r.initialOffset(), ReadAllAvailable())
    producer = KafkaProducer(bootstrap_servers=broker)
    producer.send(timers, key=b"not a bucket", value=b"1")
    producer.send(timers, key=b"1", value=b"not a deadline")
    producer.send(timers, key=b"2", value=b"1")
    producer.flush()
    producer.close()
    assert r.latestOffset(first, ReadAllAvailable())["due"] == [2]


def test_a_checkpoint_made_with_another_bucket_count_is_refused(broker, topic):
    r = reader(broker, topic, route="true", buckets="4")
    with pytest.raises(ValueError, match="made with state.buckets=8 but the query runs with state.buckets=4"):
        r.latestOffset({topic: {"0": 0, "1": 0}, "tick": 0, "buckets": 8}, ReadAllAvailable())


@pytest.mark.parametrize("available, cap, expected", [
    ({0: 10, 1: 10}, None, {0: 10, 1: 10}),
    ({0: 10, 1: 10}, 6, {0: 3, 1: 3}),
    ({0: 1, 1: 10}, 6, {0: 1, 1: 5}),
    ({0: 0, 1: 10, 2: 10}, 5, {0: 0, 1: 2, 2: 3}),
])
def test_cap_rows_shares_the_budget(available, cap, expected):
    assert cap_rows(available, cap) == expected


def test_a_log_that_ends_before_the_checkpoint_is_data_loss(broker, topic):
    """As after a broker that lost its data: the checkpoint's offsets are beyond what the topic now holds."""
    produce(broker, topic, 2)
    checkpointed = {topic: {"0": 7, "1": 2}, "tick": 0}
    with pytest.raises(RuntimeError, match=rf"data loss: {topic}-0 checkpoint offset 7 but log end 2"):
        reader(broker, topic).latestOffset(checkpointed, ReadAllAvailable())


def test_without_fail_on_data_loss_the_partition_restarts_from_its_log_start(broker, topic, client):
    produce(broker, topic, 2)
    r = reader(broker, topic, client, failOnDataLoss="false")
    start = {topic: {"0": 7, "1": 2}, "tick": 0}
    restarted = r.latestOffset(start, ReadAllAvailable())
    assert restarted == {topic: {"0": 0, "1": 2}, "tick": 0}
    assert read_all(r, start, restarted) == []
    end = r.latestOffset(restarted, ReadAllAvailable())
    assert sorted(row["value"] for row in read_all(r, restarted, end)) == [b"0-0", b"0-1"]


def test_past_rotate_records_a_new_generation_of_the_topic_begins_and_is_read_with_its_stream_partitions(
        broker, topic, client):
    """`rotateRecords` (common.generations): once the newest generation's longest partition holds that many offsets,
    the plan names the next one (`<topic>.1`, created) from offset 0; its records are read as stream partitions
    after generation 0's, and a new checkpoint's first offset finds every generation."""
    produce(broker, topic, 2)
    r = reader(broker, topic, client, rotateRecords="3")
    start = r.initialOffset()
    first = r.latestOffset(start, ReadAllAvailable())
    assert first == {topic: {"0": 2, "1": 2}, "tick": 0}
    produce(broker, topic, 2)
    second = r.latestOffset(first, ReadAllAvailable())
    assert second == {topic: {"0": 4, "1": 4}, f"{topic}.1": {"0": 0, "1": 0}, "tick": 0}
    producer = KafkaProducer(bootstrap_servers=broker)
    producer.send(f"{topic}.1", key=b"k", value=b"new", partition=1)
    producer.flush()
    producer.close()
    third = r.latestOffset(second, ReadAllAvailable())
    assert third == {topic: {"0": 4, "1": 4}, f"{topic}.1": {"0": 0, "1": 1}, "tick": 0}
    assert [(row["partition"], row["offset"], row["value"]) for row in read_all(r, second, third)] == [
        (STRIDE + 1, 0, b"new")]
    assert reader(broker, topic, client).initialOffset() == {topic: {"0": 0, "1": 0}, f"{topic}.1": {"0": 0, "1": 0},
                                                             "tick": 0}


def topics_of(broker: str) -> set[str]:
    admin = KafkaAdminClient(bootstrap_servers=broker)
    try:
        return set(admin.list_topics())
    finally:
        admin.close()


def test_an_older_generation_read_to_its_end_is_retired_and_its_topic_deleted_once_no_start_names_it(
        broker, topic, monkeypatch):
    """`retireAfterMs` (here 0): a generation g > 0 older than the newest, read to its end, whose next generation
    began that long ago is left out of the plan's offsets, and its topic is deleted at a later plan, whose start no
    longer names it. Generation 0 never is. A start that still names the deleted generation (a standby's rehearsal,
    an older checkpoint) plans on without it."""
    monkeypatch.setattr(source, "RETIRED_TOPIC_KEPT_S", 0.0)
    produce(broker, topic, 4)
    r = reader(broker, topic, rotateRecords="3", retireAfterMs="0")
    first = r.latestOffset(r.initialOffset(), ReadAllAvailable())
    assert first == {topic: {"0": 4, "1": 4}, f"{topic}.1": {"0": 0, "1": 0}, "tick": 0}
    producer = KafkaProducer(bootstrap_servers=broker)
    for i in range(3):
        producer.send(f"{topic}.1", key=b"k", value=f"g1-{i}".encode(), partition=0)
    producer.flush()
    second = r.latestOffset(first, ReadAllAvailable())
    assert second == {topic: {"0": 4, "1": 4}, f"{topic}.1": {"0": 3, "1": 0}, f"{topic}.2": {"0": 0, "1": 0},
                      "tick": 0}
    producer.send(f"{topic}.1", key=b"k", value=b"late", partition=1)
    producer.flush()
    producer.close()
    third = r.latestOffset(second, ReadAllAvailable())
    assert third == {topic: {"0": 4, "1": 4}, f"{topic}.1": {"0": 3, "1": 1}, f"{topic}.2": {"0": 0, "1": 0},
                     "tick": 0}  # not read to its end at the start: read on
    retired = r.latestOffset(third, ReadAllAvailable())
    assert retired == {topic: {"0": 4, "1": 4}, f"{topic}.2": {"0": 0, "1": 0}, "tick": 0}
    assert read_all(r, third, retired) == []
    assert f"{topic}.1" in topics_of(broker)  # the batch that left it out has not committed yet
    assert r.latestOffset(retired, ReadAllAvailable()) == retired  # nothing new: no batch
    assert f"{topic}.1" not in topics_of(broker) and {topic, f"{topic}.2"} <= topics_of(broker)
    assert r.latestOffset(third, ReadAllAvailable()) == retired
    assert f"{topic}.1" not in topics_of(broker)


def test_a_new_reader_deletes_the_topic_of_a_generation_an_earlier_run_retired_and_left(broker, topic, monkeypatch):
    """A run that stopped between leaving a generation out and deleting its topic (or a writer that wrote there
    after, which creates the topic again on tansu): the next run's first plan finds the topic no start names, older
    than the newest generation, and deletes it."""
    monkeypatch.setattr(source, "RETIRED_TOPIC_KEPT_S", 0.0)
    produce(broker, topic, 1)
    admin = KafkaAdminClient(bootstrap_servers=broker)
    admin.create_topics([NewTopic(f"{topic}.1", 2, 1), NewTopic(f"{topic}.2", 2, 1)])
    admin.close()
    start = {topic: {"0": 1, "1": 1}, f"{topic}.2": {"0": 0, "1": 0}, "tick": 0}
    r = reader(broker, topic, rotateRecords="1000")
    assert r.latestOffset(start, ReadAllAvailable()) == start
    assert f"{topic}.1" not in topics_of(broker) and f"{topic}.2" in topics_of(broker)

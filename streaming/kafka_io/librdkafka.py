"""The job's hot-path Kafka reads and writes through librdkafka (confluent-kafka), when it is the chosen client.

`kafka.client` (`streaming.kafka_io.kafka_clients.chosen_client`) picks it: the source's `read_range` and the state
task's producer (`streaming.kafka_io.sink.KafkaOutput`) then run here instead of on kafka-python. librdkafka parses
record batches and builds produce requests in C: `bench.latency.transport_bench` measured it 3-4x kafka-python per
record.

Settings: the job's `kafka.*` keys are kafka-python's names (`client_config` makes them keyword arguments);
`common.librdkafka_config.confluent_config` maps them to librdkafka's and refuses, naming it, any that has no
librdkafka equivalent.

tansu specifics handled here: a consumer's fetch is held at the broker for its full wait when there is no data,
and a new assignment waits for the fetch in flight, so the reader's wait is short and it unassigns when its range
is read (no fetch runs between tasks). But tansu's memory storage lists every record batch of the partition on each
fetch and stops listing when the fetch's wait is spent, so a wait shorter than that list returns nothing: the wait
grows with the log (`fetch_wait_ms`; docs/operations-streaming.md "The second cliff").
"""

from __future__ import annotations

import logging
import threading
from typing import Iterator, Mapping, Sequence

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from common.librdkafka_config import confluent_config
from streaming.kafka_io.kafka_clients import ReadWait

log = logging.getLogger(__name__)
"""librdkafka's own log lines (a broker gone, a connection refused) come here rather than to stderr."""
_lock = threading.Lock()
_consumers: dict[tuple, Consumer] = {}
_producers: dict[tuple, Producer] = {}


def _key(purpose: str, config: Mapping[str, object]) -> tuple:
    return (purpose, tuple(sorted((k, str(v)) for k, v in config.items())))


def fetch_wait_ms(end: int) -> int:
    """The fetch wait for reading a partition whose log reaches offset `end`: 10 ms, times 4 until it covers 4 µs
    per offset (at most 2,560 ms). tansu (memory storage) lists all of a partition's batches on every fetch, about
    1 µs each when idle, and cuts the list off when the wait is spent; so a 10 ms wait got nothing once a partition
    held ~20,000 batches (measured). Offsets bound the batches (a batch holds one or more); the steps keep to a few
    consumers per purpose over a run."""
    wait = 10
    while wait < 10 + end * 4 // 1000 and wait < 2560:
        wait *= 4
    return wait


def cached_consumer(purpose: str, config: Mapping[str, object], wait_ms: int = 10) -> Consumer:
    """One consumer per purpose, configuration and fetch wait in this process; assignment is manual, nothing is
    committed."""
    key = _key(purpose, {**config, "fetch.wait.max.ms": wait_ms})
    with _lock:
        consumer = _consumers.get(key)
        if consumer is None:
            consumer = _consumers[key] = Consumer({
                **confluent_config(config), "logger": log, "group.id": f"spark-group-coordinator-{purpose}",
                "enable.auto.commit": False, "enable.auto.offset.store": False, "auto.offset.reset": "error",
                # tansu holds a fetch for its full wait when there is no data, and a new assignment waits for it
                "fetch.wait.max.ms": wait_ms, "enable.partition.eof": True,
                # every record up to the high watermark the driver planned, open transactions' too (read_committed
                # would stop at the last stable offset and never reach it); their outcome is the markers'
                # (`common.markers`)
                "isolation.level": "read_uncommitted"})
        return consumer


def cached_producer(config: Mapping[str, object]) -> Producer:
    """One producer per configuration in this process. `murmur2_random` is Kafka's (and kafka-python's) default
    partitioner for keyed records, so a key lands where it did with kafka-python. Idempotent (as kafka-python's is
    by default): retries neither duplicate nor reorder a partition's records."""
    key = _key("producer", config)
    with _lock:
        producer = _producers.get(key)
        if producer is None:
            producer = _producers[key] = Producer({
                **confluent_config(config), "logger": log, "enable.idempotence": True, "linger.ms": 5,
                "batch.size": 256 * 1024,
                "partitioner": "murmur2_random", "queue.buffering.max.messages": 1_000_000})
        return producer


class OffsetOutOfRange(Exception):
    pass


def read_range(config: Mapping[str, object], topic: str, partition: int, start: int, end: int,
               wait_log_s: float, purpose: str = "read") -> Iterator[tuple]:
    """`(partition, offset, timestamp, key, value)` for offsets in `[start, end)` (see
    `streaming.kafka_io.source.read_range`, which handles `OffsetOutOfRange` and says why the read never gives up),
    with the consumer cached for `purpose`."""
    consumer = cached_consumer(purpose, config, fetch_wait_ms(end))
    consumer.assign([TopicPartition(topic, partition, start)])
    try:
        yield from _consume(consumer, topic, partition, start, end, wait_log_s)
    finally:
        consumer.unassign()


def _consume(consumer: Consumer, topic: str, partition: int, start: int, end: int,
             wait_log_s: float) -> Iterator[tuple]:
    waiting = ReadWait(f"{topic}-{partition}", end, wait_log_s)
    position = -1
    while position + 1 < end:
        # `consume` returns when it has as many messages as asked for, or at its timeout: ask for no more than the
        # range still holds, or every read waits out the timeout (200 ms of each batch's read task, measured).
        wanted = min(10000, end - max(position + 1, start))
        for message in consumer.consume(wanted, 0.2):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    if message.offset() >= end:  # the log ends at `end` with offsets that are no records
                        return
                    continue
                if error.code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET):
                    raise OffsetOutOfRange(str(error))
                if error.fatal() or not error.retriable():
                    raise RuntimeError(f"{topic}-{partition}: {error}")
                continue
            position = message.offset()
            if position >= end:
                return
            yield (partition, position, message.timestamp()[1], message.key(), message.value())
        waiting.check(max(position + 1, start))


def log_start(config: Mapping[str, object], topic: str, partition: int) -> int:
    """The partition's log start offset."""
    low, _ = cached_consumer("read", config).get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    return low


_failures: list[KafkaError] = []
"""Delivery errors of the records produced since the last `flush`, in this process."""


def _delivered(error, _message) -> None:
    if error is not None:
        _failures.append(error)


def produce(config: Mapping[str, object], records: Sequence[tuple]) -> None:
    """Hand `(topic, key, value, headers)` records to the producer (sent in the background); `flush` waits."""
    producer = cached_producer(config)
    for topic, key, value, headers in records:
        while True:
            try:
                producer.produce(topic, value, key, headers=headers, on_delivery=_delivered)
                break
            except BufferError:  # the local queue is full: serve delivery reports and retry
                producer.poll(0.01)


def flush(config: Mapping[str, object]) -> None:
    """Return when every record produced since the last flush is acknowledged; raise if one was not."""
    remaining = cached_producer(config).flush(120)
    failures = list(_failures)
    _failures.clear()
    if remaining:
        raise RuntimeError(f"producing to Kafka failed: {remaining} records not acknowledged within 120 s")
    if failures:
        raise RuntimeError(f"producing to Kafka failed: {failures[0]}")

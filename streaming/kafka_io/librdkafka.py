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
grows with the log (`fetch_wait_ms`; docs/operations-streaming.md "The second cliff"). And a tansu fetch that has
read what was there and still has bytes left lists the partition again for records that arrived meanwhile, as long
as its bytes last: under a steady flow of requests a read asked for 50 MB held tansu for its whole wait. So a read
asks for about the bytes of its range (`fetch_bytes`), learnt from the reads before it.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import Iterator, Mapping, Sequence

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from common.librdkafka_config import confluent_config
from streaming.kafka_io.read_wait import ReadWait

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


RECORD_OVERHEAD = 10
"""Bytes a record adds to its key and value as tansu counts a fetch's bytes: its record data, not the batches'
61-byte headers (one-record batches of a 42-byte value counted 51 bytes each, measured; on the wire they are 112).
Kafka counts whole batches, so there a sized fetch is smaller than the range and the read fetches again, which
costs Kafka nothing more than a fetch."""
FETCH_BYTES_MIN, FETCH_BYTES_MAX = 4 * 1024, 16 * 1024 * 1024
"""Above 5 MiB tansu gives 5 MiB (a rebuild's read of the records topic); Kafka gives up to the asked."""
_bytes_per_offset: dict[tuple[str, int], float] = {}
"""(topic, partition) -> bytes an offset took in the last read of it in this process."""


def _range_bytes(topic: str, partition: int, start: int, end: int) -> float:
    """The bytes offsets `[start, end)` are expected to take: what an offset took in the last read of the partition
    in this process (as tansu counts them, `RECORD_OVERHEAD`), 512 before the first read."""
    return (end - start) * _bytes_per_offset.get((topic, partition), 512.0)


def fetch_bytes(topic: str, partition: int, start: int, end: int) -> int:
    """The fetch size (librdkafka's `fetch.max.bytes`) for reading offsets `[start, end)`: the range's expected bytes
    (`_range_bytes`) rounded up to the next of steps an eighth apart (a consumer per step and purpose), between
    `FETCH_BYTES_MIN` and `FETCH_BYTES_MAX`. Rounded up: a fetch that asks for less than the range needs a second
    one, which starts at the log's end with bytes left and lists the partition for new records until they are spent;
    a little more than the range is most often taken by records already past its end (they arrive while the batch
    is planned), at no extra list."""
    wanted = _range_bytes(topic, partition, start, end)
    size = FETCH_BYTES_MIN
    while size < wanted and size < FETCH_BYTES_MAX:
        size = size * 9 // 8
    return min(size, FETCH_BYTES_MAX)


QUEUED_MIN_MESSAGES = 1
"""A sized read's consumer fetches again only once its local queue is empty (librdkafka's default, 100,000, keeps
a fetch in flight while the queue holds fewer). A range arrives whole in its sized fetch and is then taken a row at a
time into Arrow and the state call; with the default, librdkafka meanwhile fetched past the range, and on tansu
each such fetch lists the partition again every time new records arrive until its bytes or its wait are spent: a
read of ~200 records on a partition of 40,000 one-record batches, 250 arriving a second, cost tansu 308 ms of CPU
with the default (docs/operations-streaming.md, "A range read fetches nothing past its range").
It holds for a range one fetch brings, not for a bulk read (`BULK_BYTES`): librdkafka postpones a partition's next
fetch by `fetch.queue.backoff.ms` whenever its queue holds `queued.min.messages` or more, so with 1 every further
fetch of a range waits for the queue to empty and then that backoff (at librdkafka's 1,000 ms, issue 35: the records
topic's 1.1M records, read at a driver's start, took 75-78 s for 4.5 s of CPU; hence `QUEUE_BACKOFF_MS`)."""

BULK_BYTES = 5 * 1024 * 1024
"""A range expected to take more bytes than this (`_range_bytes`) is a bulk read: more than one fetch brings, as
tansu answers a fetch with at most 5 MiB whatever it asks for (Kafka with up to `FETCH_BYTES_MAX`). Bulk reads are
a driver's read of the records topic to its end (`kafka_clients.catch_up`: the rebuild's, and the group watch's
first, which a standby makes before it stands by) and the batches of a rebuild's loads."""

QUEUE_BACKOFF_MS = 10
"""How soon a range's consumer looks again whether to fetch once its queue held too many records to fetch
(`fetch.queue.backoff.ms`; librdkafka's default 1,000 ms): the queue is taken in well under a second.

A sized read's consumer (`QUEUED_MIN_MESSAGES`) so fetches the rest of a range one fetch did not bring 10 ms after
its rows are taken, not a second later: the source's ranges are sized from the bytes per offset learnt so far, and a
range that outgrew its fetch paid that second in its micro-batch. `bench.stream_bench --rate 4000`, alternating
(2026-12-06, load 2-3.5): p50 at the fixed rate 772 ms with it, 1,907 ms without. A bisect with the same bench put
the p50 at 6.1-7.7 Spark floors before the merge that brought `d3e39e9` (`queued.min.messages` 1) and 11.0-15.0 from
it on.

A bulk read's consumer keeps librdkafka's default `queued.min.messages` (it fetches ahead while its queue holds
fewer than 100,000 records: the next 5 MiB is on its way while the last is taken) and, once the queue is that full,
fetches again 10 ms later. Measured on the records topic of 100,000 groups x 10 (1.1M records, 2 partitions,
in-process, load 2-3): 5.8-6.0 s, against 7.4-10.1 s with the default backoff, 6.6-6.8 s with `QUEUED_MIN_MESSAGES`
and this backoff, and 75-78 s as a sized read. Reading ahead, it can fetch past its range at its end, the cost
`QUEUED_MIN_MESSAGES` avoids: paid once per read of many fetches, where the pause was paid at every fetch. A bulk
read has a consumer of its own, closed aside when the read is done: its last fetch is often at the log's end, which
tansu holds for the whole wait (up to 2,560 ms), and the next assignment of a kept consumer waited for it (the
records topic's two partitions read one after the other: 3.7 s on one consumer, 1.1-1.2 s on one each; in-process,
load 0.7)."""

SIZED_KEPT = 8
"""Consumers of a sized fetch kept per purpose in a process (the most recently used): a run's ranges take a few sizes
at a time. Per purpose, because the driver reads for several purposes from threads of their own: one purpose's
reads never close a consumer another is reading with."""
_sized: dict[str, OrderedDict[tuple, None]] = {}


def _learn(topic: str, partition: int, offsets: int, size: int) -> None:
    if offsets > 0:
        _bytes_per_offset[(topic, partition)] = size / offsets


def _fetch_sized(max_bytes: int) -> dict[str, object]:
    return {"fetch.max.bytes": max_bytes, "max.partition.fetch.bytes": max_bytes,
            "message.max.bytes": max(1000, min(max_bytes, 1_000_000))}


def cached_consumer(purpose: str, config: Mapping[str, object], wait_ms: int = 10,
                    max_bytes: int | None = None) -> Consumer:
    """One consumer per purpose, configuration, fetch wait and fetch size (`max_bytes`; librdkafka's default when
    None) in this process; assignment is manual, nothing is committed."""
    sized: dict[str, object] = {} if max_bytes is None else {
        **_fetch_sized(max_bytes),
        # no fetch while the range's records wait in the local queue (`QUEUED_MIN_MESSAGES`), and the next one
        # as soon as they are taken (`QUEUE_BACKOFF_MS`)
        "queued.min.messages": QUEUED_MIN_MESSAGES, "fetch.queue.backoff.ms": QUEUE_BACKOFF_MS}
    key = _key(purpose, {**config, "fetch.wait.max.ms": wait_ms, **sized})
    with _lock:
        consumer = _consumers.get(key)
        if sized:
            kept = _sized.setdefault(purpose, OrderedDict())
            kept[key] = None
            kept.move_to_end(key)
            while len(kept) > SIZED_KEPT:  # the least recently used size goes; closed aside (a fetch in flight)
                old = _consumers.pop(kept.popitem(last=False)[0], None)
                if old is not None:
                    _close_aside(old)
        if consumer is None:
            consumer = _consumers[key] = _consumer(purpose, config, wait_ms, sized)
        return consumer


def _consumer(purpose: str, config: Mapping[str, object], wait_ms: int, settings: Mapping[str, object]) -> Consumer:
    return Consumer({
        **confluent_config(config), **settings, "logger": log,
        "group.id": f"spark-group-coordinator-{purpose}",
        "enable.auto.commit": False, "enable.auto.offset.store": False, "auto.offset.reset": "error",
        # tansu holds a fetch for its full wait when there is no data, and a new assignment waits for it
        "fetch.wait.max.ms": wait_ms, "enable.partition.eof": True,
        # every record up to the high watermark the driver planned, open transactions' too (read_committed
        # would stop at the last stable offset and never reach it); their outcome is the markers'
        # (`common.markers`)
        "isolation.level": "read_uncommitted"})


def _close_aside(consumer: Consumer) -> None:
    """Close in a thread of its own: closing waits for a fetch in flight."""
    threading.Thread(target=consumer.close, daemon=True).start()


MAX_RECORD_BYTES = 64 * 1024 * 1024
"""The largest record the job produces (librdkafka's default, 1,000,000 bytes, was below a big group's record)."""


def cached_producer(config: Mapping[str, object]) -> Producer:
    """One producer per configuration in this process. `murmur2_random` is Kafka's (and kafka-python's) default
    partitioner for keyed records, so a key lands where it did with kafka-python. Idempotent (as kafka-python's is
    by default): retries neither duplicate nor reorder a partition's records. `message.max.bytes` is
    `MAX_RECORD_BYTES`: librdkafka refuses a larger record itself, before any broker sees it (issue 35: the group
    metadata record of a 5,000-member group is 1.7 MB of JSON, and the refusal stopped the query); the topic's
    own `max.message.bytes` is then the limit, as `__consumer_offsets`' is Kafka's."""
    key = _key("producer", config)
    with _lock:
        producer = _producers.get(key)
        if producer is None:
            producer = _producers[key] = Producer({
                **confluent_config(config), "logger": log, "enable.idempotence": True, "linger.ms": 5,
                "batch.size": 256 * 1024, "message.max.bytes": MAX_RECORD_BYTES,
                "partitioner": "murmur2_random", "queue.buffering.max.messages": 1_000_000})
        return producer


class OffsetOutOfRange(Exception):
    pass


@contextmanager
def range_consumer(purpose: str, config: Mapping[str, object], topic: str, partition: int, start: int,
                   end: int) -> Iterator[Consumer]:
    """The consumer of a read of offsets `[start, end)`, assigned at `start`: its wait grows with the log
    (`fetch_wait_ms`) and it asks for about the range's bytes (`fetch_bytes`). A range of one fetch is read on the
    purpose's kept consumer of that size (`cached_consumer`), unassigned afterwards; a range of more than one fetch
    (`BULK_BYTES`) on a consumer of its own that reads ahead, closed aside afterwards (`QUEUE_BACKOFF_MS`)."""
    wait, size = fetch_wait_ms(end), fetch_bytes(topic, partition, start, end)
    bulk = _range_bytes(topic, partition, start, end) > BULK_BYTES
    if bulk:
        ahead = {**_fetch_sized(size), "fetch.queue.backoff.ms": QUEUE_BACKOFF_MS}  # queued.min.messages: default
        consumer = _consumer(purpose, config, wait, ahead)
    else:
        consumer = cached_consumer(purpose, config, wait, size)
    consumer.assign([TopicPartition(topic, partition, start)])
    try:
        yield consumer
    finally:
        if bulk:
            _close_aside(consumer)
        else:
            consumer.unassign()


def read_range(config: Mapping[str, object], topic: str, partition: int, start: int, end: int,
               wait_log_s: float, purpose: str = "read") -> Iterator[tuple]:
    """`(partition, offset, timestamp, key, value)` for offsets in `[start, end)` (see
    `streaming.kafka_io.source.read_range`, which handles `OffsetOutOfRange` and says why the read never gives up),
    with the consumer `range_consumer` gives for `purpose`."""
    size = [0]
    with range_consumer(purpose, config, topic, partition, start, end) as consumer:
        yield from _consume(consumer, topic, partition, start, end, wait_log_s, size)
        _learn(topic, partition, end - start, size[0])


def _consume(consumer: Consumer, topic: str, partition: int, start: int, end: int,
             wait_log_s: float, size: list[int] | None = None) -> Iterator[tuple]:
    """The records of `[start, end)`; `size[0]` adds up their bytes as tansu counts a fetch's (`RECORD_OVERHEAD`)."""
    waiting = ReadWait(f"{topic}-{partition}", end, wait_log_s)
    size = size if size is not None else [0]
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
            key, value = message.key(), message.value()
            headers = message.headers()
            size[0] += RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0) + (
                sum(len(k) + len(v or b"") + 2 for k, v in headers) if headers else 0)
            yield (partition, position, message.timestamp()[1], key, value)
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

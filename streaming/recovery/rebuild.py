"""Rebuild after a lost checkpoint: every group back from the records topic, as Kafka loads `__consumer_offsets`.

`applyInPandasWithState` cannot be seeded with an initial state, so the state travels the way requests do: for each
group in the records topic (the latest value per key, what compaction leaves) one internal `LoadGroup` request
carrying its records is published to the control topic, and the query starts reading the control topic at the
offsets it had just before them. The requests handled under the lost checkpoint are thus not handled again (their
effects are in the records), the loads come first in every partition, and the core loads each group exactly as
`state.batch.load_group` does: Stable or Empty, with its offsets and fresh session timers. What the lost checkpoint
held beyond the records (parked JoinGroup/SyncGroup requests, pending members) is lost, as in a Kafka failover:
clients re-join.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable, Mapping, NamedTuple

import msgspec
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from common.generations import generations, topic_of
from schemas.messages import LoadedRecord, LoadGroup
from state.api import decode_key, encode
from streaming.kafka_io.kafka_clients import catch_up, high_watermarks

log = logging.getLogger("coordinator.rebuild")

MAX_LOAD_BYTES = 16 * 1024 * 1024
"""The producer's request cap for LoadGroup records; the broker's own limit (message.max.bytes) may be lower, and
a group whose load it rejects is reported by name."""


def checkpoint_has_progress(checkpoint: str) -> bool:
    """A checkpoint that has committed a batch carries the state; rebuilding into it would only be ignored."""
    offsets = Path(checkpoint) / "offsets"
    return offsets.is_dir() and any(offsets.iterdir())


class Latest(NamedTuple):
    """A key's last value in the records topic (None: a tombstone) and where it was read."""

    value: bytes | None
    partition: int
    offset: int


def latest_records(client: Mapping[str, object], topic: str, reader: str = "kafka-python",
                   positions: dict[int, int] | None = None) -> dict[bytes, Latest]:
    """The records topic as compaction leaves it: the last value per key, read to the high watermark of each
    partition (tansu neither compacts nor reports log ends reliably), with `reader` (`kafka_clients.catch_up`'s
    `client`). `positions` (partition -> next offset) is filled with where the read ended."""
    latest: dict[bytes, Latest] = {}

    def take(record) -> None:
        if record.key is not None:
            latest[record.key] = Latest(record.value, record.partition, record.offset)

    catch_up("rebuild", client, topic, {} if positions is None else positions, take, reader)
    return latest


class RecordsRead(NamedTuple):
    """What `read_ahead` read of the records topic (the latest per key, and where the read ended: partition -> next
    offset) and the loads they make (`load_requests`)."""

    latest: dict[bytes, Latest]
    positions: dict[int, int]
    loads: dict[str, bytes]


def read_ahead(client: Mapping[str, object], topic: str, reader: str,
               seen: Callable[[Iterable[tuple[bytes, bytes | None]], dict[int, int]], None] | None = None
               ) -> RecordsRead:
    """The records topic read, `seen` given its records and the loads made, while the driver's Spark session starts
    and it watches the lease (none of it changes anything): `rebuild(ahead=...)` then reads only what was written
    since, and makes loads again only if something was. At 1,000,000 members making the loads and seeding the group
    watch took ~10 s of the driver's own time after the read, which its session's start (~11 s) can hide.
    `coordinator run` publishes the loads before it takes the lease too, once it has seen that no other driver
    holds it."""
    started = time.monotonic()
    positions: dict[int, int] = {}
    latest = latest_records(client, topic, reader, positions)
    log.info("rebuild: read %d key(s) from %s ahead, in %.1f s", len(latest), topic, time.monotonic() - started)
    started = time.monotonic()
    if seen is not None:
        seen(_in_topic_order(latest), dict(positions))
    loads = load_requests(latest)
    log.info("rebuild: made %d load(s) ahead, in %.1f s", len(loads), time.monotonic() - started)
    return RecordsRead(latest, positions, loads)


def _in_topic_order(latest: Mapping[bytes, Latest]) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of each key's latest record, in the order they were written (partition by partition)."""
    return [(k, v.value) for k, v in sorted(latest.items(), key=lambda kv: kv[1][1:])]


def load_requests(latest: Mapping[bytes, Latest]) -> dict[str, bytes]:
    """group_id -> its LoadGroup request, for every group that still has a live record, in group id order, each
    with its records in key order. Each record carries where it was read, so the core names one it cannot decode by
    its partition and offset; a value that is not UTF-8 cannot travel as JSON text and is reported here, by the
    same (in key order). The records are grouped before they are sorted: sorting 1,100,000 keys took 1.4 s of a
    million members' loads, sorting each group's few after its id a fraction of that."""
    by_group: dict[str, list[tuple[bytes, Latest]]] = defaultdict(list)
    unreadable: list[tuple[bytes, Latest, Exception]] = []
    for key, read in latest.items():
        if read.value is None:
            continue  # compaction would have removed the key's earlier values and, later, the tombstone
        try:
            group_id = decode_key(key).group_id
        except msgspec.DecodeError as exc:
            unreadable.append((key, read, exc))
            continue
        by_group[group_id].append((key, read))
    loads: dict[str, bytes] = {}
    for group_id in sorted(by_group):
        records = []
        for key, read in sorted(by_group[group_id]):
            try:
                text = read.value.decode()
            except UnicodeDecodeError as exc:
                unreadable.append((key, read, exc))
                continue
            records.append(LoadedRecord(key.decode(), text, read.partition, read.offset))
        if records:
            loads[group_id] = encode(LoadGroup(request_id=f"rebuild:{group_id}", group_id=group_id,
                                               records=tuple(records)))
    for key, (_, partition, offset), exc in sorted(unreadable, key=lambda u: u[0]):
        log.error("records topic partition %d offset %d (key %r) is not a coordinator record, not loaded: %s",
                  partition, offset, key[:200], exc)
    return loads


def rebuild(client: Mapping[str, object], records_topic: str, requests_topic: str, reader: str = "kafka-python",
            seen: Callable[[Iterable[tuple[bytes, bytes | None]], dict[int, int]], None] | None = None,
            ahead: RecordsRead | None = None) -> str:
    """Publish the loads and return the `startingOffsets` JSON the query must start from (just before them).
    `seen` is given the records read (the latest per key, in topic order) and where the read ended: the driver's
    group watch starts from them instead of reading the topic again. `ahead`: what `read_ahead` read before this
    driver held the lease (while its Spark session started; `seen` was given it then); the read continues from
    where it ended, and `seen` is given only what was written since."""
    started = time.monotonic()
    latest, positions = (ahead.latest, ahead.positions) if ahead is not None else ({}, {})
    since = latest_records(client, records_topic, reader, positions)
    if seen is not None:
        seen(_in_topic_order(since), positions)
    if ahead is not None and not since:
        loads = ahead.loads
    else:
        latest.update(since)
        loads = load_requests(latest)
    log.info("rebuild: read %d key(s) from %s in %.1f s", len(latest), records_topic, time.monotonic() - started)
    started = time.monotonic()
    consumer = KafkaConsumer(**{"enable_auto_commit": False, "group_id": None, **client})
    try:
        # every generation of the requests topic (common.generations): the new checkpoint reads each from here
        parts = [TopicPartition(topic_of(requests_topic, g), p)
                 for g in generations(requests_topic, consumer.topics()) or [0]
                 for p in sorted(consumer.partitions_for_topic(topic_of(requests_topic, g)) or ())]
        starting = high_watermarks(consumer, {tp: 0 for tp in parts})
    finally:
        consumer.close()
    failed = (_publish_librdkafka if reader == "confluent" else _publish_kafka_python)(client, requests_topic, loads)
    if failed:
        raise RuntimeError("could not publish the load of some groups: " + "; ".join(failed))
    offsets: dict[str, dict[str, int]] = {}
    for tp, o in sorted(starting.items()):
        offsets.setdefault(tp.topic, {})[str(tp.partition)] = o
    log.info("rebuild: published %d load(s) to %s in %.1f s; reading it from %s", len(loads), requests_topic,
             time.monotonic() - started, offsets)
    return json.dumps(offsets)


def _publish_kafka_python(client: Mapping[str, object], topic: str, loads: Mapping[str, bytes]) -> list[str]:
    """Publish every load, keyed by its group (so it lands in the group's partition); `group: why` of each that was
    not acknowledged."""
    producer = KafkaProducer(**{"acks": "all", "max_request_size": MAX_LOAD_BYTES, **client})
    failed = []
    try:
        sent = {g: producer.send(topic, key=g.encode(), value=raw) for g, raw in loads.items()}
        producer.flush()
        for group_id, future in sent.items():
            try:
                future.get(timeout=30)
            except Exception as exc:  # noqa: BLE001 - reported per group
                failed.append(f"{group_id}: {exc}")
    finally:
        producer.close()
    return failed


def _publish_librdkafka(client: Mapping[str, object], topic: str, loads: Mapping[str, bytes]) -> list[str]:
    """`_publish_kafka_python` through librdkafka, which builds the produce requests in C. Its partitioner is
    `murmur2_random`, kafka-python's and Kafka's for keyed records: a load lands in its group's partition."""
    from confluent_kafka import Producer

    from common.librdkafka_config import confluent_config

    producer = Producer({**confluent_config(client), "acks": "all", "enable.idempotence": True, "linger.ms": 20,
                         "message.max.bytes": MAX_LOAD_BYTES, "partitioner": "murmur2_random",
                         "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1 << 21})
    failed: list[str] = []

    def delivered(error, message) -> None:
        if error is not None:
            failed.append(f"{message.key().decode(errors='replace')}: {error}")

    for group_id, raw in loads.items():
        while True:
            try:
                producer.produce(topic, raw, group_id.encode(), on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: serve delivery reports and retry
                producer.poll(0.05)
        producer.poll(0)
    remaining = producer.flush(120)
    if remaining:
        failed.append(f"{remaining} load(s) not acknowledged within 120 s")
    return failed

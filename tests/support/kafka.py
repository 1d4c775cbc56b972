"""Small kafka-python helpers: produce JSON requests, read topics up to their high watermark, wait for responses.

Never trust `end_offsets()` against tansu (it under-reports the log end after batched produces): reads here go up to
the high watermark carried in fetch responses.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.consumer.fetcher import ConsumerRecord

from streaming.kafka_io.kafka_clients import high_watermarks


def create_topic(bootstrap: str, partitions: int, name: str | None = None, prefix: str = "data") -> str:
    """A topic of `partitions` partitions (`name`, or `prefix` and a fresh suffix), created on the broker directly;
    returns its name."""
    name = name or f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()
    return name


def producer(bootstrap: str) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=bootstrap, linger_ms=1)


def send_requests(prod: KafkaProducer, topic: str, requests: Iterable[dict[str, Any]]) -> None:
    """Publish requests as the wire format says: value = UTF-8 JSON, key = group_id (absent for ListGroups)."""
    for request in requests:
        key = request.get("group_id")
        prod.send(topic, key=key.encode() if isinstance(key, str) else None,
                  value=json.dumps(request).encode())
    prod.flush()


def send_raw(prod: KafkaProducer, topic: str, value: bytes, key: bytes | None = None) -> None:
    prod.send(topic, key=key, value=value)
    prod.flush()


READ_WAITS_MS = ((10, 20), (500, None))
"""`read_topic`'s fetch waits, each with the polls it gets before the next (None: until the timeout). tansu lists a
partition's batches for every fetch and stops listing when the fetch's wait is spent, and a short read pays a few
whole waits (answers with nothing while a fetch waits). Read alone on a fresh tansu, at load 5-7: one partition of
3,400 one-record batches (as the shared broker's lease topic, renewed every second) and a 2-partition topic of 20
records: 1 ms returns one record a poll (2,400-3,200 of the 3,400 in 20-30 s); 10 ms 0.10-0.18 s and 0.06 s; 100 ms
0.5 s and 0.5 s; 500 ms 1.6-2.1 s and 1.6-2.0 s. So 10 ms first, then 500 ms from where it stopped if 20 polls did
not reach the end (a longer partition, a busier machine): 1 ms then 500 ms that way read the 3,400 in 0.44 s."""


def read_topic(bootstrap: str, topic: str, timeout_s: float = 10.0) -> list[ConsumerRecord]:
    """Every record of `topic` up to its current high watermark, in partition then offset order (fetch waits:
    `READ_WAITS_MS`)."""
    deadline = time.monotonic() + timeout_s
    out: list[ConsumerRecord] = []
    positions: dict[TopicPartition, int] = {}
    ends: dict[TopicPartition, int] = {}
    for wait_ms, polls in READ_WAITS_MS:
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                                 fetch_max_wait_ms=wait_ms)
        try:
            tps = [TopicPartition(topic, p) for p in _partitions(consumer, topic, timeout_s)]
            ends = ends or high_watermarks(consumer, {tp: 0 for tp in tps}, timeout_s)
            consumer.assign(tps)
            for tp in tps:
                consumer.seek(tp, positions.get(tp, 0))
            polled = 0
            while any(consumer.position(tp) < ends[tp] for tp in tps) and polled != polls:
                for tp, records in consumer.poll(timeout_ms=100).items():
                    out.extend(r for r in records if r.offset < ends[tp])
                polled += 1
                if time.monotonic() > deadline:
                    raise TimeoutError(f"could not read {topic} up to {ends}")
            positions = {tp: consumer.position(tp) for tp in tps}
        finally:
            consumer.close()
        if all(positions[tp] >= ends[tp] for tp in tps):
            break
    return sorted(out, key=lambda r: (r.partition, r.offset))


def _partitions(consumer: KafkaConsumer, topic: str, timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while not (parts := consumer.partitions_for_topic(topic)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic} not found")
        time.sleep(0.1)
    return sorted(parts)


@dataclass
class ResponseReader:
    """Follows the responses topic from the beginning and collects responses by `request_id`.

    `duplicates` keeps every copy, so tests can check that repeated deliveries are byte-identical."""

    bootstrap: str
    topic: str
    copies: dict[str, list[bytes]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False, group_id=None,
                                       fetch_max_wait_ms=50)
        tps = [TopicPartition(self.topic, p) for p in _partitions(self._consumer, self.topic, 10)]
        self._consumer.assign(tps)
        for tp in tps:
            self._consumer.seek(tp, 0)

    def poll(self, timeout_ms: int = 100) -> list[dict[str, Any]]:
        """New responses (decoded) since the last poll."""
        new = []
        for records in self._consumer.poll(timeout_ms=timeout_ms).values():
            for record in records:
                body = json.loads(record.value)
                self.copies.setdefault(str(body.get("request_id")), []).append(record.value)
                new.append(body)
        return new

    def wait_for(self, request_id: str, timeout_s: float = 180.0) -> dict[str, Any]:
        """The first response to `request_id`, waiting up to `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while request_id not in self.copies:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no response to {request_id} within {timeout_s} s")
            self.poll()
        return json.loads(self.copies[request_id][0])

    def wait_until(self, predicate, timeout_s: float = 180.0) -> dict[str, Any]:
        """The first new response for which `predicate(response)` holds."""
        deadline = time.monotonic() + timeout_s
        while True:
            for body in self.poll():
                if predicate(body):
                    return body
            if time.monotonic() > deadline:
                raise TimeoutError(f"no matching response within {timeout_s} s")

    def close(self) -> None:
        self._consumer.close()

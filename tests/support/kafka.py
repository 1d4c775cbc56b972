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


def read_topic(bootstrap: str, topic: str, timeout_s: float = 10.0) -> list[ConsumerRecord]:
    """Every record of `topic` up to its current high watermark, in partition then offset order.

    The fetches wait up to 500 ms: tansu stops listing a partition when a fetch's wait is spent and then answers
    nothing, so with a 1 ms wait a partition of a few thousand small batches (a lease topic renewed every second)
    stalled the read short of its end; a fetch below the high watermark is answered as soon as records are found."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             fetch_max_wait_ms=500)
    try:
        parts = _partitions(consumer, topic, timeout_s)
        tps = [TopicPartition(topic, p) for p in parts]
        ends = high_watermarks(consumer, {tp: 0 for tp in tps}, timeout_s)
        out: list[ConsumerRecord] = []
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            for tp, records in consumer.poll(timeout_ms=100).items():
                out.extend(r for r in records if r.offset < ends[tp])
            if time.monotonic() > deadline:
                raise TimeoutError(f"could not read {topic} up to {ends}")
        return sorted(out, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


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

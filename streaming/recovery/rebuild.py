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
from collections import defaultdict
from pathlib import Path
from typing import Mapping, NamedTuple

import msgspec
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from schemas.messages import LoadedRecord, LoadGroup
from state.api import decode_key, encode
from streaming.kafka_io.kafka_clients import high_watermarks

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


def latest_records(client: Mapping[str, object], topic: str) -> dict[bytes, Latest]:
    """The records topic as compaction leaves it: the last value per key, read to the high watermark of each
    partition (tansu neither compacts nor reports log ends reliably)."""
    consumer = KafkaConsumer(**{"enable_auto_commit": False, "group_id": None, "auto_offset_reset": "earliest",
                                **client})
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        ends = high_watermarks(consumer, {tp: 0 for tp in parts})
        latest: dict[bytes, Latest] = {}
        pending = [tp for tp in parts if ends[tp] > 0]
        if pending:
            consumer.assign(pending)
            consumer.seek_to_beginning(*pending)
            while any(consumer.position(tp) < ends[tp] for tp in pending):
                for tp, batch in consumer.poll(timeout_ms=500).items():
                    for record in batch:
                        if record.offset < ends[tp] and record.key is not None:
                            latest[record.key] = Latest(record.value, tp.partition, record.offset)
        return latest
    finally:
        consumer.close()


def load_requests(latest: Mapping[bytes, Latest]) -> dict[str, bytes]:
    """group_id -> its LoadGroup request, for every group that still has a live record. Each record carries where
    it was read, so the core names one it cannot decode by its partition and offset; a value that is not UTF-8
    cannot travel as JSON text and is reported here, by the same."""
    by_group: dict[str, list[LoadedRecord]] = defaultdict(list)
    for key, (value, partition, offset) in sorted(latest.items()):
        if value is None:
            continue  # compaction would have removed the key's earlier values and, later, the tombstone
        try:
            group_id = decode_key(key).group_id
            text = value.decode()
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            log.error("records topic partition %d offset %d (key %r) is not a coordinator record, not loaded: %s",
                      partition, offset, key[:200], exc)
            continue
        by_group[group_id].append(LoadedRecord(key.decode(), text, partition, offset))
    return {g: encode(LoadGroup(request_id=f"rebuild:{g}", group_id=g, records=tuple(recs)))
            for g, recs in sorted(by_group.items())}


def rebuild(client: Mapping[str, object], records_topic: str, requests_topic: str) -> str:
    """Publish the loads and return the `startingOffsets` JSON the query must start from (just before them)."""
    loads = load_requests(latest_records(client, records_topic))
    consumer = KafkaConsumer(**{"enable_auto_commit": False, "group_id": None, **client})
    try:
        parts = [TopicPartition(requests_topic, p)
                 for p in sorted(consumer.partitions_for_topic(requests_topic) or ())]
        starting = high_watermarks(consumer, {tp: 0 for tp in parts})
    finally:
        consumer.close()
    producer = KafkaProducer(**{"acks": "all", "max_request_size": MAX_LOAD_BYTES, **client})
    failed = []
    try:
        sent = {g: producer.send(requests_topic, key=g.encode(), value=raw) for g, raw in loads.items()}
        producer.flush()
        for group_id, future in sent.items():
            try:
                future.get(timeout=30)
            except Exception as exc:  # noqa: BLE001 - reported per group below
                failed.append(f"{group_id}: {exc}")
    finally:
        producer.close()
    if failed:
        raise RuntimeError("could not publish the load of some groups: " + "; ".join(failed))
    log.info("rebuild: %d group(s) loaded from %s; reading %s from %s", len(loads), records_topic,
             requests_topic, {tp.partition: o for tp, o in starting.items()})
    return json.dumps({requests_topic: {str(tp.partition): o for tp, o in sorted(starting.items())}})

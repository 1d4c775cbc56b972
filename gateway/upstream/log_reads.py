"""Reading a partition's log from an upstream broker on one of the gateway's own connections: Fetch (the record
batches as bytes, walked, never decoded) and ListOffsets. One definition for every reader of the gateway: the
share-partitions' holders (`gateway.share.log`, a connection per broker) and the transactional writes reading a
producer's last sequence back (`gateway.upstream.transactions`, the client connection's own). What an error means
is the caller's: a read answers it, and never raises for it. The batches are walked by `gateway.protocol.batches`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse

from gateway.protocol.batches import LogBatch, log_batches
from gateway.upstream.broker import Upstream
from gateway.upstream.control import from_json
from state.api import Errors

FETCH_VERSION = 12
"""Topics by name (every broker since Kafka 3.1 and tansu take it); records as bytes."""
LIST_OFFSETS_VERSION = 7
EARLIEST, LATEST = -2, -1


@dataclass(frozen=True, slots=True)
class LogRead:
    batches: list[LogBatch]
    high_watermark: int
    log_start_offset: int
    error: int = 0
    """The broker's error for the read (the whole request's, or the partition's; 0: none)."""


async def fetch(upstream: Upstream, topic: str, partition: int, offset: int, max_bytes: int,
                isolation_level: int = 0) -> LogRead:
    """The batches of `topic`-`partition` from `offset` on, at most `max_bytes` (the broker returns at least one
    whole batch), without waiting for more."""
    request = from_json(FetchRequest, FETCH_VERSION, {
        # tansu 0.6 answers a fetch with MaxWaitMs 0 with no topics at all: 1 ms, nothing to wait for
        "replica_id": -1, "max_wait_ms": 1, "min_bytes": 0, "max_bytes": max_bytes,
        "isolation_level": isolation_level, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [{
            "partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
            "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": max_bytes}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    response = await upstream.request(request, FETCH_VERSION, FetchResponse)
    if response.error_code:
        return LogRead([], -1, -1, response.error_code)
    for t in response.responses:
        for p in t.partitions:
            if p.partition_index == partition:
                return LogRead(log_batches(bytes(p.records or b"")), p.high_watermark, p.log_start_offset,
                               p.error_code)
    return LogRead([], -1, -1, Errors.UNKNOWN_TOPIC_OR_PARTITION)


async def list_offset(upstream: Upstream, topic: str, partition: int, timestamp: int) -> tuple[int, int]:
    """(error, offset) of ListOffsets: EARLIEST, LATEST, or the first offset at or after a timestamp (ms)."""
    request = from_json(ListOffsetsRequest, LIST_OFFSETS_VERSION, {
        "replica_id": -1, "isolation_level": 0,
        "topics": [{"name": topic, "partitions": [{
            "partition_index": partition, "current_leader_epoch": -1, "timestamp": timestamp}]}]})
    response = await upstream.request(request, LIST_OFFSETS_VERSION, ListOffsetsResponse)
    for t in response.topics:
        for p in t.partitions:
            if p.partition_index == partition:
                return p.error_code, p.offset
    return Errors.UNKNOWN_TOPIC_OR_PARTITION, -1

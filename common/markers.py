"""Transaction markers of a partition, read from the log itself: which producer's transaction ended at which offset,
committed or aborted.

Consumers never deliver control records (librdkafka and kafka-python skip them), and tansu's `read_committed` does
not filter aborted records (docs/shared tansu notes), so neither tells the coordinator a transaction's outcome. The
markers are in the log: each occupies an offset a consumer skips (a gap in the delivered offsets), in a control
batch whose header names the producer and whose one record's key says COMMIT or ABORT. This module fetches such
offsets raw (Kafka's Fetch, read_uncommitted) and parses the batches with kafka-python's record classes. The job's
source turns them into `TransactionMarker` requests (docs/wire-format.md) for the groups the transaction committed
offsets of (issue 32's design (a): the gateway writes a TxnOffsetCommit into the producer's transaction on the
group's control-topic partition, so the upstream's marker lands there after it).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Iterable

from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.record import MemoryRecords

FETCH_VERSION = 11
_FETCH_DEFAULTS = {"replica_id": -1, "max_wait_ms": 100, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                   "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": ""}


@dataclass(frozen=True, slots=True)
class Marker:
    """A transaction's end at `offset`: the producer's id and epoch, and whether it committed."""

    offset: int
    producer_id: int
    producer_epoch: int
    committed: bool


def markers_in(records: bytes | None, start: int = 0, end: int | None = None) -> list[Marker]:
    """The transaction markers among fetched record batches (Kafka's log format v2), at offsets in [start, end)."""
    found = []
    batches = MemoryRecords(records or b"")
    while True:
        batch = batches.next_batch()
        if batch is None:
            return found
        if not getattr(batch, "is_control_batch", False):
            continue
        for record in batch:
            offset = record.offset
            if offset >= start and (end is None or offset < end):
                found.append(Marker(offset, batch.producer_id, batch.producer_epoch, bool(record.commit)))


def gaps(delivered: Iterable[int], start: int, end: int) -> list[int]:
    """The offsets of [start, end) a consumer did not deliver: control records (or records gone)."""
    seen = set(delivered)
    return [offset for offset in range(start, end) if offset not in seen]


def read_markers(bootstrap: str, topic: str, partition: int, offsets: list[int],
                 timeout_s: float = 10.0) -> list[Marker]:
    """The markers at `offsets` of the partition, fetched raw from the first bootstrap server (the partition's
    leader: a one-broker upstream, as the embedded default; a fetch answered with another error raises)."""
    if not offsets:
        return []
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    wanted = set(offsets)
    found: list[Marker] = []
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        position = min(offsets)
        last = max(offsets)
        correlation = 0
        while position <= last:
            correlation += 1
            records = fetch_raw(sock, topic, partition, position, correlation)
            batch_end = _last_offset(records)
            found.extend(m for m in markers_in(records, position, last + 1) if m.offset in wanted)
            if batch_end is None or batch_end < position:
                break
            position = batch_end + 1
    return found


def fetch_raw(sock: socket.socket, topic: str, partition: int, position: int, correlation: int,
              max_bytes: int = 1 << 20, max_wait_ms: int = 100) -> bytes | None:
    """One Fetch (read_uncommitted) of the partition from `position` on the broker connection `sock`: the record
    batches as the log has them, control batches included; a fetch answered with an error raises. tansu stops
    listing a partition when the fetch's wait (`max_wait_ms`) is spent, and then answers nothing: a long partition
    needs a longer wait."""
    request = FetchRequest[FETCH_VERSION](**{**_FETCH_DEFAULTS, "max_bytes": max_bytes, "max_wait_ms": max_wait_ms}, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchTopic.FetchPartition(
            partition=partition, current_leader_epoch=-1, fetch_offset=position, log_start_offset=-1,
            partition_max_bytes=max_bytes)])])
    request.with_header(correlation_id=correlation, client_id="coordinator-markers")
    sock.sendall(request.encode(version=FETCH_VERSION, header=True, framed=True))
    size = struct.unpack(">i", _read(sock, 4))[0]
    response = FetchResponse.decode(_read(sock, size), version=FETCH_VERSION, header=True)
    (answer,) = response.responses[0].partitions
    if answer.error_code:
        raise RuntimeError(f"{topic}-{partition}: fetch at {position} answered error {answer.error_code}")
    return answer.records


def _last_offset(records: bytes | None) -> int | None:
    batches = MemoryRecords(records or b"")
    last = None
    while True:
        batch = batches.next_batch()
        if batch is None:
            return last
        last = batch.base_offset + batch.last_offset_delta


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return data

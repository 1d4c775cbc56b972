"""The gateway's minimal reading of Produce and Fetch requests agrees with kafka-python's full decode, at every
version the gateway may forward."""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.producer.produce import ProduceRequest

from gateway.upstream import peek
from gateway.upstream.control import from_json

TOPIC_IDS = [uuid.UUID(int=7), uuid.UUID(int=8)]


def framed(request, version: int, client_id: str | None = "peek-test") -> bytes:
    request.with_header(correlation_id=42, client_id=client_id)
    return bytes(request.encode(version=version, header=True))


@pytest.mark.parametrize("version", range(3, ProduceRequest.max_version + 1))
@pytest.mark.parametrize("transactional_id", [None, "txn-1"])
def test_produce(version, transactional_id):
    topic = "topic_id" if version >= 13 else "name"
    doc = {"transactional_id": transactional_id, "acks": -1, "timeout_ms": 30000, "topic_data": [
        {topic: str(TOPIC_IDS[i]) if version >= 13 else name,
         "partition_data": [{"index": p, "records": "AAAA" * (p + 1)} for p in range(3)]}
        for i, name in enumerate(["a", "bee"])]}
    frame = framed(from_json(ProduceRequest, version, doc), version)
    summary = peek.produce(frame, version)
    assert summary.acks == -1 == peek.produce_acks(frame, version)
    assert summary.transactional_id == transactional_id
    assert summary.topics == ([t.bytes for t in TOPIC_IDS] if version >= 13 else ["a", "bee"])


@pytest.mark.parametrize("version", range(4, FetchRequest.max_version + 1))
def test_fetch(version):
    topic = "topic_id" if version >= 13 else "topic"
    doc = {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
           "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [], "topics": [
               {topic: str(TOPIC_IDS[i]) if version >= 13 else name,
                "partitions": [{"partition": p, "current_leader_epoch": -1, "fetch_offset": 10,
                                "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20}
                               for p in range(4)]}
               for i, name in enumerate(["a", "bee"])]}
    frame = framed(from_json(FetchRequest, version, doc), version, client_id=None)
    summary = peek.fetch(frame, version)
    assert summary.replica_id == -1
    assert summary.topics == ([t.bytes for t in TOPIC_IDS] if version >= 13 else ["a", "bee"])


def test_a_truncated_request_is_refused():
    frame = framed(from_json(ProduceRequest, 7, {"acks": 1, "timeout_ms": 1, "topic_data": [
        {"name": "a", "partition_data": [{"index": 0, "records": "AAAA"}]}]}), 7)
    with pytest.raises(ValueError):
        peek.produce(frame[:-3], 7)

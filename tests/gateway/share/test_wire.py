"""KIP-932's messages as the gateway encodes and decodes them (`gateway.upstream.kafka_apis`): Kafka's versions, and
the wire traps of the reference (/work/shared/reference/kafka-share-groups.md §2, §7): a nullable struct as an int8
marker, records never null."""

from __future__ import annotations

import pytest

from gateway.upstream.control import from_json, to_json
from gateway.upstream.kafka_apis import (AlterShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequest,
                                DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse,
                                ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest,
                                ShareFetchResponse, ShareGroupDescribeRequest, ShareGroupHeartbeatRequest,
                                ShareGroupHeartbeatResponse)

TOPIC_ID = "01a23d7a-6f51-7800-8978-3b9eb3139098"

FETCH = {"group_id": "g", "member_id": "m" * 22, "share_session_epoch": 3, "max_wait_ms": 500, "min_bytes": 1,
         "max_bytes": 52428800, "max_records": 500, "batch_size": 500,
         "topics": [{"topic_id": TOPIC_ID, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
             {"first_offset": 0, "last_offset": 1, "acknowledge_types": [1]},
             {"first_offset": 2, "last_offset": 2, "acknowledge_types": [2]}]}]}],
         "forgotten_topics_data": [{"topic_id": TOPIC_ID, "partitions": [1]}]}


@pytest.mark.parametrize("cls, version, doc", [
    (ShareFetchRequest, 1, FETCH),
    (ShareFetchRequest, 2, {**FETCH, "share_acquire_mode": 1, "is_renew_ack": False}),
    (ShareAcknowledgeRequest, 1, {k: FETCH[k] for k in ("group_id", "member_id", "share_session_epoch", "topics")}),
    (ShareGroupHeartbeatRequest, 1, {"group_id": "g", "member_id": "m", "member_epoch": 0, "rack_id": None,
                                     "subscribed_topic_names": ["t"]}),
    (ShareGroupDescribeRequest, 1, {"group_ids": ["g"], "include_authorized_operations": True}),
    (DescribeShareGroupOffsetsRequest, 1, {"groups": [{"group_id": "g", "topics": None}]}),
    (AlterShareGroupOffsetsRequest, 0, {"group_id": "g", "topics": [
        {"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": 5}]}]}),
    (DeleteShareGroupOffsetsRequest, 0, {"group_id": "g", "topics": [{"topic_name": "t"}]}),
])
def test_requests_round_trip(cls, version, doc):
    message = from_json(cls, version, doc)
    message.with_header(correlation_id=7, client_id="rdkafka")
    decoded = cls.decode(bytes(message.encode(header=True)), version=version, header=True)
    assert to_json(decoded, version) == to_json(message, version)
    assert decoded.header.correlation_id == 7


def test_versions_are_kafka_4_2s():
    assert (ShareFetchRequest.max_version, ShareAcknowledgeRequest.max_version) == (2, 2)
    assert ShareGroupHeartbeatRequest.max_version == 1
    assert DescribeShareGroupOffsetsResponse.max_version == 1


def test_heartbeat_assignment_is_a_nullable_struct():
    """A null Assignment is the marker -1 alone; a present one the marker 1, then the struct."""
    base = {"throttle_time_ms": 0, "error_code": 0, "member_id": "m", "member_epoch": 1,
            "heartbeat_interval_ms": 5000}
    absent = bytes(from_json(ShareGroupHeartbeatResponse, 1, {**base, "assignment": None}).encode(version=1))
    present = bytes(from_json(ShareGroupHeartbeatResponse, 1, {**base, "assignment": {"topic_partitions": []}})
                    .encode(version=1))
    assert absent.endswith(b"\xff\x00")
    assert present.endswith(b"\x01\x01\x00\x00")
    decoded = ShareGroupHeartbeatResponse.decode(present, version=1)
    assert decoded.assignment is not None and list(decoded.assignment.topic_partitions) == []


def test_fetch_answer_with_no_records_carries_empty_bytes():
    """librdkafka aborts its parse on null records (v1 makes them non-nullable): empty is one byte of length."""
    partition = {"partition_index": 0, "error_code": 0, "acknowledge_error_code": 0,
                 "current_leader": {"leader_id": 1, "leader_epoch": 0}, "records": "",
                 "acquired_records": [{"first_offset": 0, "last_offset": 9, "delivery_count": 1}]}
    doc = {"throttle_time_ms": 0, "error_code": 0, "acquisition_lock_timeout_ms": 30000,
           "responses": [{"topic_id": TOPIC_ID, "partitions": [partition]}], "node_endpoints": []}
    decoded = ShareFetchResponse.decode(bytes(from_json(ShareFetchResponse, 1, doc).encode(version=1)), version=1)
    (topic,) = decoded.responses
    (got,) = topic.partitions
    assert got.records == b""
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in got.acquired_records] == [(0, 9, 1)]
    assert str(topic.topic_id) == TOPIC_ID


def test_acknowledge_answer_v2_has_the_lock_timeout_v1_has_not():
    doc = {"throttle_time_ms": 0, "error_code": 0, "acquisition_lock_timeout_ms": 15000, "responses": [],
           "node_endpoints": []}
    v1 = to_json(ShareAcknowledgeResponse.decode(
        bytes(from_json(ShareAcknowledgeResponse, 1, doc).encode(version=1)), version=1), 1)
    v2 = to_json(ShareAcknowledgeResponse.decode(
        bytes(from_json(ShareAcknowledgeResponse, 2, doc).encode(version=2)), version=2), 2)
    assert "acquisition_lock_timeout_ms" not in v1
    assert v2["acquisition_lock_timeout_ms"] == 15000

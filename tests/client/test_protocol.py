"""Every request the client library builds is valid against the published JSON Schemas (schemas/), and the
response partition is the one Kafka's default partitioner picks."""

import json
from pathlib import Path

import jsonschema
import pytest
from kafka.partitioner.default import DefaultPartitioner

from client import protocol
from client.transport import response_partition

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"

REQUESTS = [
    protocol.join_group("g", "", "i-1", "c", "/127.0.0.1", 10_000, 60_000, [("range", b"\x00\x03"), ("sticky", b"")],
                        reason="joining", topic_partitions={"t": 3}),
    protocol.sync_group("g", 3, "m", None, "range", {"m": b"\x00\x03\x00", "n": b""}),
    protocol.heartbeat("g", 3, "m", "i-1"),
    protocol.leave_group("g", [("m", None), ("", "i-1")], "closing"),
    protocol.offset_commit("g", 3, "m", None, {("t", 0): (10, None), ("u", 2): (4, "meta")}),
    protocol.offset_commit("g", -1, "", None, {("t", 1): (0, "")}),
    protocol.offset_fetch("g"),
    protocol.offset_fetch("g", [("t", 0), ("t", 1)]),
    protocol.offset_delete("g", [("t", 0)]),
    protocol.describe_group("g"),
    protocol.list_groups(["Stable"]),
    protocol.delete_group("g"),
]


@pytest.mark.parametrize("request_body", REQUESTS, ids=lambda r: f"{r['api']}")
def test_requests_match_the_published_schema(request_body):
    schema = json.loads((SCHEMAS / f"{request_body['api']}Request.json").read_text())
    jsonschema.validate({**request_body, "request_id": "r-1"}, schema)


class _Cluster:
    """The slice of kafka-python's ClusterMetadata its DefaultPartitioner reads."""

    def __init__(self, partitions: int) -> None:
        self._partitions = set(range(partitions))

    def topics(self):
        return {"responses"}

    def partitions_for_topic(self, topic):
        return self._partitions

    def available_partitions_for_topic(self, topic):
        return self._partitions


@pytest.mark.parametrize("partitions", [1, 2, 7, 50])
def test_response_partition_is_where_the_coordinators_producer_writes(partitions):
    """The coordinator's sink produces responses with key = group_id and kafka-python's default partitioner."""
    partitioner = DefaultPartitioner()
    for key in ["g", "orders", "group-1", "ünïcode", "x" * 300]:
        raw = key.encode("utf-8")
        expected = partitioner.partition("responses", raw, raw, None, None, _Cluster(partitions))
        assert response_partition(key, partitions) == expected

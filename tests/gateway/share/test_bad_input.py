"""Bad ShareFetch and ShareAcknowledge input gets Kafka's errors, and nothing stops (issue 34; the reference's §2
and §7 wire traps: /work/shared/reference/kafka-share-groups.md). Raw requests to a gateway of its own, in front of
the broker, with no coordinator query: none of these needs a share-partition to be held."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from gateway.front.process import GatewayProcess, start_gateway
from gateway.upstream.control import from_json, to_json
from gateway.upstream.kafka_apis import (ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest,
                                         ShareFetchResponse)
from state.api import Errors
from tests.gateway.front.test_protocol import fresh_topics
from tests.gateway.raw import Connection

pytestmark = pytest.mark.broker
MEMBER = "bad-input-member-000001"


@pytest.fixture(scope="module")
def gateway(broker, tmp_path_factory) -> Iterator[GatewayProcess]:
    process = start_gateway(broker, fresh_topics(broker), args=["--request-timeout-ms", "1000"],
                            log_path=tmp_path_factory.mktemp("gateway") / "gateway.log")
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def topic_id(broker) -> str:
    """A two-partition topic's id (a UUID's text)."""
    name = f"bad-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker)
    admin.create_topics([NewTopic(name, 2, 1)])
    admin.close()
    connection = Connection(broker)
    try:
        request = from_json(MetadataRequest, 12, {"topics": [{"topic_id": None, "name": name}],
                                                  "allow_auto_topic_creation": False,
                                                  "include_topic_authorized_operations": False})
        metadata = connection.call(request, 12, MetadataResponse)
    finally:
        connection.close()
    return str(metadata.topics[0].topic_id)


def fetch(connection: Connection, epoch: int, topics: list[dict], forgotten: list[dict] = (), member: str = MEMBER,
          max_records: int = 500, group: str = "bad-input") -> dict:
    request = from_json(ShareFetchRequest, 1, {
        "group_id": group, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": 0, "min_bytes": 1,
        "max_bytes": 1 << 20, "max_records": max_records, "batch_size": 500, "topics": topics,
        "forgotten_topics_data": list(forgotten)})
    return to_json(connection.call(request, 1, ShareFetchResponse), 1)


def acknowledge(connection: Connection, epoch: int, topics: list[dict], group: str = "bad-input") -> dict:
    request = from_json(ShareAcknowledgeRequest, 1, {
        "group_id": group, "member_id": MEMBER, "share_session_epoch": epoch, "topics": topics})
    return to_json(connection.call(request, 1, ShareAcknowledgeResponse), 1)


def partitions(topic_id: str, *indexes: int, acks: list[tuple[int, int, list[int]]] = ()) -> dict:
    return {"topic_id": topic_id, "partitions": [
        {"partition_index": i, "acknowledgement_batches": [
            {"first_offset": f, "last_offset": last, "acknowledge_types": types} for f, last, types in acks]}
        for i in indexes]}


def by_partition(answer: dict) -> dict[tuple[str, int], dict]:
    return {(t["topic_id"], p["partition_index"]): p for t in answer["responses"] for p in t["partitions"]}


@pytest.fixture
def connection(gateway) -> Iterator[Connection]:
    c = Connection(gateway.bootstrap_servers)
    yield c
    c.close()


def test_the_member_id_must_be_1_to_36_characters(connection, topic_id):
    for member in ("", "m" * 37):
        assert fetch(connection, 0, [partitions(topic_id, 0)], member=member)["error_code"] == Errors.INVALID_REQUEST


def test_session_epochs(connection, topic_id):
    assert fetch(connection, 4, [])["error_code"] == Errors.SHARE_SESSION_NOT_FOUND
    assert acknowledge(connection, 0, [])["error_code"] == Errors.INVALID_SHARE_SESSION_EPOCH
    assert acknowledge(connection, 3, [])["error_code"] == Errors.SHARE_SESSION_NOT_FOUND
    # acknowledgements in the request that opens a session
    opened = fetch(connection, 0, [partitions(topic_id, 0, acks=[(0, 0, [1])])])
    assert opened["error_code"] == Errors.INVALID_REQUEST
    opened = fetch(connection, 0, [partitions(topic_id, 0, 1)])
    assert opened["error_code"] == Errors.NONE
    # a new session's answer names every partition, records empty and never null
    listed = by_partition(opened)
    assert set(listed) == {(topic_id, 0), (topic_id, 1)}
    assert all(p["records"] == "" and p["acquired_records"] == [] for p in listed.values())
    assert fetch(connection, 3, [])["error_code"] == Errors.INVALID_SHARE_SESSION_EPOCH
    assert fetch(connection, 1, [])["error_code"] == Errors.NONE
    assert acknowledge(connection, 2, [])["error_code"] == Errors.NONE
    assert fetch(connection, 2, [])["error_code"] == Errors.INVALID_SHARE_SESSION_EPOCH
    assert fetch(connection, -1, [])["error_code"] == Errors.NONE
    assert fetch(connection, 4, [])["error_code"] == Errors.SHARE_SESSION_NOT_FOUND
    assert fetch(connection, -1, [])["error_code"] == Errors.SHARE_SESSION_NOT_FOUND


def test_unknown_topic_ids_and_duplicate_ids(connection, topic_id):
    unknown = str(uuid.uuid4())
    answer = fetch(connection, 0, [partitions(topic_id, 0), partitions(unknown, 0), partitions(topic_id, 1)])
    assert answer["error_code"] == Errors.NONE
    # one topic id named twice: merged, answered once
    assert [t["topic_id"] for t in answer["responses"]].count(topic_id) == 1
    listed = by_partition(answer)
    assert set(listed) == {(topic_id, 0), (topic_id, 1), (unknown, 0)}
    assert listed[(unknown, 0)]["error_code"] == Errors.UNKNOWN_TOPIC_ID
    assert listed[(topic_id, 1)]["error_code"] == Errors.NONE
    # librdkafka names an id in Topics (with acknowledgements) and in ForgottenTopicsData at once
    answer = fetch(connection, 1, [partitions(topic_id, 1, acks=[(0, 0, [1])])],
                   forgotten=[{"topic_id": topic_id, "partitions": [1]}])
    assert answer["error_code"] == Errors.NONE
    assert by_partition(answer)[(topic_id, 1)]["acknowledge_error_code"] == Errors.INVALID_RECORD_STATE
    fetch(connection, -1, [])


def test_acknowledgements_of_records_never_acquired_and_bad_batches(connection, topic_id):
    assert fetch(connection, 0, [partitions(topic_id, 0, 1)])["error_code"] == Errors.NONE
    never = acknowledge(connection, 1, [partitions(topic_id, 0, acks=[(0, 4, [1])])])
    assert by_partition(never)[(topic_id, 0)]["error_code"] == Errors.INVALID_RECORD_STATE
    bad = {"backwards": [(5, 4, [1])], "overlapping": [(0, 4, [1]), (3, 6, [1])], "no type": [(0, 1, [])],
           "wrong type count": [(0, 3, [1, 1])], "type out of range": [(0, 0, [7])], "renew in v1": [(0, 0, [4])]}
    epoch = 2
    for name, acks in bad.items():
        answer = fetch(connection, epoch, [partitions(topic_id, 1, acks=acks)])
        epoch += 1
        assert by_partition(answer)[(topic_id, 1)]["acknowledge_error_code"] == Errors.INVALID_REQUEST, name
    fetch(connection, -1, [])


@pytest.mark.parametrize("max_records", [-1, 0, (1 << 31) - 1])
def test_absurd_max_records_are_answered(connection, topic_id, max_records):
    answer = fetch(connection, 0, [partitions(topic_id, 0)], max_records=max_records)
    assert answer["error_code"] == Errors.NONE
    assert by_partition(answer)[(topic_id, 0)]["acquired_records"] == []
    fetch(connection, -1, [])


def test_after_all_of_it_the_gateway_serves_on(gateway):
    connection = Connection(gateway.bootstrap_servers)
    try:
        answer: Any = connection.call(ApiVersionsRequest[3](client_software_name="t", client_software_version="1"),
                                      3, ApiVersionsResponse)
    finally:
        connection.close()
    versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert versions[78] == (1, 2) and versions[79] == (1, 2)

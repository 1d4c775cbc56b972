"""The conversion between Kafka's group messages and the control topic, at every version the gateway serves.

Each request is encoded and decoded by kafka-python (flexible versions included), turned into control requests that
must match the JSON Schemas and pass the coordinator's own parser, and answered by the real core (`step_group`);
its answers become the Kafka response, which must encode, decode and keep the core's error codes.
"""

from __future__ import annotations

import base64
import json
import uuid

import pytest

from gateway.upstream.control import GROUP_APIS, GroupApi, control_requests, from_json, to_json, unanswered
from state.batch import step_group
from state.config import CoordinatorConfig
from state.errors import Errors
from state.wire import parse
from tests.state.schemas import validate_request

METADATA = base64.b64encode(b"\x00\x03\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff").decode()
TOPIC_PARTITIONS = [{"name": "t", "partition_indexes": [0, 1]}]
REQUESTS = {
    "JoinGroup": {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 30000, "member_id": "",
                  "group_instance_id": None, "protocol_type": "consumer",
                  "protocols": [{"name": "range", "metadata": METADATA}], "reason": "starting"},
    "SyncGroup": {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None,
                  "protocol_type": "consumer", "protocol_name": "range",
                  "assignments": [{"member_id": "m", "assignment": METADATA}]},
    "Heartbeat": {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None},
    "LeaveGroup": {"group_id": "g", "member_id": "m",
                   "members": [{"member_id": "m", "group_instance_id": None, "reason": "bye"}]},
    "OffsetCommit": {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
                     "retention_time_ms": -1, "topics": [{"name": "t", "partitions": [
                         {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                          "commit_timestamp": -1, "committed_metadata": "m5"}]}]},
    "OffsetFetch": {"group_id": "g", "topics": TOPIC_PARTITIONS, "require_stable": False,
                    "groups": [{"group_id": "g1", "member_id": None, "member_epoch": -1, "topics": TOPIC_PARTITIONS},
                               {"group_id": "g2", "member_id": None, "member_epoch": -1, "topics": None}]},
    "OffsetDelete": {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]},
    "DescribeGroups": {"groups": ["a", "b"], "include_authorized_operations": False},
    "ListGroups": {"states_filter": ["Stable"], "types_filter": ["classic"]},
    "DeleteGroups": {"groups_names": ["a", "b"]},
    "ConsumerGroupHeartbeat": {"group_id": "g", "member_id": "m", "member_epoch": 0, "instance_id": None,
                               "rack_id": None, "rebalance_timeout_ms": 300000, "subscribed_topic_names": ["t"],
                               "subscribed_topic_regex": "", "server_assignor": None, "topic_partitions": []},
    "ConsumerGroupDescribe": {"group_ids": ["a", "b"], "include_authorized_operations": False},
    "ShareGroupHeartbeat": {"group_id": "g", "member_id": "m", "member_epoch": 0, "rack_id": None,
                            "subscribed_topic_names": ["t"]},
    "ShareGroupDescribe": {"group_ids": ["a", "b"], "include_authorized_operations": False},
    "DescribeShareGroupOffsets": {"groups": [{"group_id": "a", "topics": [{"topic_name": "t", "partitions": [0]}]},
                                             {"group_id": "b", "topics": None}]},
    "AlterShareGroupOffsets": {"group_id": "g", "topics": [{"topic_name": "t", "partitions": [
        {"partition_index": 0, "start_offset": 5}]}]},
    "DeleteShareGroupOffsets": {"group_id": "g", "topics": [{"topic_name": "t"}]},
    "TxnOffsetCommit": {"transactional_id": "tx", "group_id": "g", "producer_id": 7, "producer_epoch": 0,
                        "generation_id": 1, "member_id": "m", "group_instance_id": None, "topics": [
                            {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                                          "committed_leader_epoch": -1, "committed_metadata": ""}]}]},
}
LISTED = {"error_code": 0, "groups": [{"group_id": "g", "protocol_type": "consumer", "group_state": "Stable",
                                       "group_type": "classic"}]}


def served() -> list[tuple[GroupApi, int]]:
    return [(api, version) for api in GROUP_APIS.values() for version in range(api.min_version, api.max_version + 1)]


def through_kafka(api: GroupApi, version: int) -> dict:
    """The sample request of `api` as a client would send it at `version`, decoded as the gateway decodes it."""
    request = from_json(api.request, version, REQUESTS[api.name])
    request.with_header(correlation_id=1, client_id="c")
    return to_json(api.request.decode(request.encode(version=version, header=True), version=version, header=True),
                   version)


def answer(body: dict) -> dict:
    """What the coordinator core answers `body` with, as the response topic would carry it."""
    if body["api"] == "ListGroups":
        return LISTED
    config = CoordinatorConfig(group_initial_rebalance_delay_ms=0)
    step = step_group(body["group_id"], None, [json.dumps(body).encode()], 0, config)
    if not step.responses:  # a JoinGroup before v4 is parked until the join phase completes: the next call
        step = step_group(body["group_id"], step.stored(None), [], 0, config)
    (response,) = step.responses
    return json.loads(response)


@pytest.mark.parametrize("api, version", served(), ids=lambda x: getattr(x, "name", x))
def test_requests_become_valid_control_requests_and_answers_valid_responses(api: GroupApi, version: int):
    extra = {"client_id": "c", "client_host": "/127.0.0.1"} if api.name in (
        "JoinGroup", "ConsumerGroupHeartbeat", "ShareGroupHeartbeat") else None
    bodies = control_requests(api, version, through_kafka(api, version), "User:alice", extra)
    fanned = {"DescribeGroups": 2, "DeleteGroups": 2, "OffsetFetch": 2 if version >= 8 else 1,
              "ConsumerGroupDescribe": 2, "ShareGroupDescribe": 2, "DescribeShareGroupOffsets": 2}
    assert len(bodies) == fanned.get(api.name, 1)
    answers = []
    for n, body in enumerate(bodies):
        body["request_id"] = f"r{n}"
        validate_request(body)
        parsed = parse(body)
        assert (parsed.api, parsed.version, parsed.principal) == (api.name, version, "User:alice")
        answers.append(answer(body))
    response = from_json(api.response, version, api.merge(through_kafka(api, version), answers, version))
    decoded = api.response.decode(response.encode(version=version), version=version)
    codes = [a["error_code"] for a in answers]
    if api.name in ("DescribeGroups", "DeleteGroups", "ConsumerGroupDescribe", "ShareGroupDescribe",
                    "DescribeShareGroupOffsets") or (
            api.name == "OffsetFetch" and version >= 8):
        entries = decoded.groups if api.name != "DeleteGroups" else decoded.results
        assert [e.group_id for e in entries] == [b["group_id"] for b in bodies]
        assert [e.error_code for e in entries] == codes
    elif "error_code" in api.response.fields and api.response.fields["error_code"].for_version_q(version):
        assert decoded.error_code == codes[0]


def test_a_group_of_the_core_comes_back_with_its_bytes_and_bitfields():
    api = GROUP_APIS[15]  # DescribeGroups
    described = {"group_id": "g", "error_code": 0, "group_state": "Stable", "protocol_type": "consumer",
                 "protocol_data": "range", "authorized_operations": -2147483648,
                 "members": [{"member_id": "m", "group_instance_id": "i", "client_id": "c", "client_host": "/h",
                              "member_metadata": METADATA, "member_assignment": ""}]}
    decoded = api.response.decode(from_json(api.response, 5, {"groups": [described]}).encode(version=5), version=5)
    (group,) = decoded.groups
    (member,) = group.members
    assert member.member_metadata == base64.b64decode(METADATA) and member.member_assignment == b""
    assert group.authorized_operations is None  # Kafka's INT32_MIN: "not requested"
    assert to_json(decoded, 5)["groups"][0]["authorized_operations"] == -2147483648


def test_an_unanswered_commit_repeats_every_partition_with_the_error():
    body = {"api": "OffsetCommit", "group_id": "g", "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1},
                                     {"partition_index": 3, "committed_offset": 2}]}]}
    response = unanswered(body, Errors.COORDINATOR_NOT_AVAILABLE, "slow")
    not_available = Errors.COORDINATOR_NOT_AVAILABLE
    assert [(p["partition_index"], p["error_code"]) for p in response["topics"][0]["partitions"]] == [
        (0, not_available), (3, not_available)]
    assert response["error_code"] == Errors.COORDINATOR_NOT_AVAILABLE and response["error_message"] == "slow"


def test_a_topic_id_crosses_as_kafkas_uuid_text():
    """A ConsumerGroupHeartbeat's owned partitions name topics by id: the control topic carries Kafka's
    Uuid.toString() (URL-safe base64 without padding), and the answer's ids go back as the same 16 bytes."""
    api = GROUP_APIS[68]
    topic = uuid.UUID("01a219a7-9f19-7430-be8d-c27b50ce980e")
    request = from_json(api.request, 1, {**REQUESTS["ConsumerGroupHeartbeat"], "member_epoch": 3,
                                         "topic_partitions": [{"topic_id": str(topic), "partitions": [1]}]})
    request.with_header(correlation_id=1, client_id="c")
    decoded = api.request.decode(request.encode(version=1, header=True), version=1, header=True)
    assert decoded.topic_partitions[0].topic_id == topic
    (body,) = control_requests(api, 1, to_json(decoded, 1), None)
    assert body["topic_partitions"] == [{"topic_id": "AaIZp58ZdDC-jcJ7UM6YDg", "partitions": [1]}]
    answered = {"error_code": 0, "member_id": "m", "member_epoch": 3, "heartbeat_interval_ms": 5000,
                "assignment": {"topic_partitions": [{"topic_id": "AaIZp58ZdDC-jcJ7UM6YDg", "partitions": [1, 2]}]}}
    response = from_json(api.response, 1, api.merge(to_json(decoded, 1), [answered], 1))
    assert api.response.decode(response.encode(version=1), version=1).assignment.topic_partitions[0].topic_id == topic


def test_an_answer_built_once_is_the_same_bytes_as_one_built_each_time_with_its_own_correlation_id():
    from gateway.front.connection import _answer, _encode

    commit = GROUP_APIS[8]
    doc = {"throttle_time_ms": 0, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 0}]}]}
    for version in (2, 8, 9):
        for correlation in (7, 8, -5, 2**31 - 1):
            assert _answer(commit.response, version, doc, correlation) == _encode(
                from_json(commit.response, version, doc), version, correlation)
    heartbeat = GROUP_APIS[12]
    for code in (0, 27):
        assert _answer(heartbeat.response, 4, {"throttle_time_ms": 0, "error_code": code}, 3) == _encode(
            from_json(heartbeat.response, 4, {"throttle_time_ms": 0, "error_code": code}), 4, 3)

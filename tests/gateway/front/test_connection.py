"""The gateway's protocol edges on one client connection, driven in memory (`tests.gateway.memory`): no broker, no
query, no listener. What it advertises, what it does with frames that break the protocol, what clients get when
the coordinator does not answer, JoinGroup's member-id round (answered here, or left to the coordinator), and
SASL/PLAIN with the principal stamped on control requests. What needs the upstream broker (forwarding, the
listeners it names, TLS, a dead upstream) is in test_protocol.py."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any, Iterator

import pytest
from kafka.protocol.admin.groups import DescribeGroupsRequest, DescribeGroupsResponse
from kafka.protocol.consumer.group import (HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse,
                                           OffsetCommitRequest, OffsetCommitResponse)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                 SaslHandshakeResponse)

from gateway.security.authentication import Authenticator
from gateway.upstream.kafka_apis import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from gateway.security.sasl import PlainAuthenticator
from state.api import PENDING_MEMBER, pending_member_id
from state.errors import Errors
from tests.gateway.memory import TANSU_VERSIONS, MemoryGateway
from tests.gateway.raw import Connection, login


@pytest.fixture
def gateway() -> Iterator[MemoryGateway]:
    """A gateway with no coordinator answering: group requests time out after 200 ms."""
    memory = MemoryGateway(request_timeout_ms=200)
    try:
        yield memory
    finally:
        memory.close()


def api_versions(connection: Connection) -> dict[int, tuple[int, int]]:
    response = connection.call(ApiVersionsRequest[3](client_software_name="t", client_software_version="1"), 3,
                               ApiVersionsResponse)
    assert response.error_code == 0
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


def test_api_versions_advertise_the_coordinator_s_group_apis_and_not_the_other_protocols(gateway):
    ours, upstream = api_versions(gateway.connect()), TANSU_VERSIONS
    assert {k: ours[k] for k in (11, 14, 12, 13, 8, 9, 47, 15, 16, 42, 68, 69, 28)} == {
        11: (0, 9), 14: (0, 5), 12: (0, 4), 13: (0, 5), 8: (0, 9), 9: (0, 9), 47: (0, 0), 15: (0, 5), 16: (0, 5),
        42: (0, 2), 68: (0, 1), 69: (0, 1), 28: (0, 5)}  # TxnOffsetCommit: the coordinator's (issue 32)
    assert 47 not in upstream and 68 not in upstream  # tansu has neither; the gateway serves them anyway
    for missing in (88, 17, 36):  # streams groups, no SASL on this listener
        assert missing not in ours
    assert {k: ours[k] for k in (76, 77, 78, 79)} == {76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2)}  # share groups
    assert ours[2] == upstream[2] and ours[19] == upstream[19]  # forwarded as they are
    assert ours[1][1] <= upstream[1][1] and ours[3][1] <= upstream[3][1]


def test_an_api_versions_request_newer_than_the_gateway_gets_its_versions_at_v0(gateway):
    connection = gateway.connect()
    request = ApiVersionsRequest[3](client_software_name="t", client_software_version="1")
    request.with_header(correlation_id=7, client_id="t")
    frame = bytearray(request.encode(version=3, header=True))
    frame[2:4] = struct.pack(">h", 99)  # a version from the future
    connection.sock.sendall(struct.pack(">i", len(frame)) + frame)
    response = connection.receive(ApiVersionsResponse, 0)
    assert response.error_code == Errors.UNSUPPORTED_VERSION and response.header.correlation_id == 7
    assert {k.api_key for k in response.api_keys} >= {11, 14, 12}


BAD_FRAMES = {
    # 60 random bytes framed as a request (seeded: with a random length prefix too, one run in 40 drew a length
    # the gateway accepts, and it then rightly waited for the rest of the frame until the test timed out)
    "random bytes": struct.pack(">i", 60) + random.Random(33).randbytes(60),
    "a truncated header": struct.pack(">i", 4) + struct.pack(">hh", 18, 0),
    "an unknown API key": struct.pack(">ihhih", 10, 999, 0, 1, -1),
    "a huge length": struct.pack(">i", 0x7FFFFFFF) + b"\0" * 16,
    "a negative length": struct.pack(">i", -5),
    "an API it does not serve": struct.pack(">ihhih", 10, 88, 0, 1, -1),  # StreamsGroupHeartbeat
    "a group API at a version it does not serve": struct.pack(">ihhih", 10, 11, 10, 1, -1),
    "a group request cut short": struct.pack(">ihhihh", 12, 11, 5, 1, -1, 40) + b"g",
}


@pytest.mark.parametrize("name", list(BAD_FRAMES))
def test_a_bad_frame_closes_its_connection_and_the_gateway_serves_on(gateway, name):
    before = gateway.connect()
    bad = gateway.connect()
    bad.sock.sendall(BAD_FRAMES[name])
    assert bad.closed_by_peer()
    # Other connections, old and new, are served.
    assert before.call(ApiVersionsRequest[0](), 0, ApiVersionsResponse).error_code == 0
    assert api_versions(gateway.connect())[11] == (0, 9)
    assert gateway.serving


def commit_v2(member_id: bytes, topic: bytes, topics_count: int = 1) -> bytes:
    """An OffsetCommit v2 frame written by hand, so that its strings and counts can be what no client library
    writes: a string is its int16 length then its bytes (length -1: null), an array its int32 count."""
    def string(value: bytes | None) -> bytes:
        return struct.pack(">h", -1) if value is None else struct.pack(">h", len(value)) + value
    partition = struct.pack(">iq", 0, 5) + string(b"")
    body = (string(b"g") + struct.pack(">i", 1) + string(member_id) + struct.pack(">q", -1)
            + struct.pack(">i", topics_count) + (string(topic) + struct.pack(">i", 1) + partition) * max(0, topics_count))
    frame = struct.pack(">hhi", 8, 2, 1) + string(b"gateway-test") + body
    return struct.pack(">i", len(frame)) + frame


BAD_REQUESTS = {
    "a null member id (v2)": commit_v2(None, b"t"),
    "a null topic name (v2)": commit_v2(b"m", None),
    "a topics count of -1 (v2)": commit_v2(b"m", b"t", topics_count=-1),
    "a topics count of -3 (v2)": commit_v2(b"m", b"t", topics_count=-3),
}


@pytest.mark.parametrize("name", list(BAD_REQUESTS))
def test_a_request_kafka_s_parser_refuses_closes_its_connection_and_reaches_no_coordinator(gateway, name):
    """Kafka's generated readers refuse a null where the field is not nullable (a negative string length or array
    count) and the broker closes the connection; kafka-python would have read them as None or []."""
    bad = gateway.connect()
    bad.sock.sendall(BAD_REQUESTS[name])
    assert bad.closed_by_peer()
    assert gateway.control.requests == []
    assert gateway.serving
    # The same commit, well formed, is a control request.
    gateway.connect().sock.sendall(commit_v2(b"m", b"t"))
    assert gateway.control.wait_for(lambda r: r["api"] == "OffsetCommit")["member_id"] == "m"


def test_a_string_over_32767_bytes_closes_its_connection_as_kafka_s_parser_does(gateway):
    """A flexible version's varint length can carry a string of any size; Kafka's readers refuse one over 32,767
    bytes. One at the bound is a request."""
    topic = OffsetCommitRequest.OffsetCommitRequestTopic

    def commit(member_id: str) -> Any:
        return OffsetCommitRequest[9](group_id="g", generation_id_or_member_epoch=1, member_id=member_id,
                                      group_instance_id=None, topics=[topic(name="t", partitions=[])])

    bad = gateway.connect()
    bad.send(commit("m" * 32_768), 9)
    assert bad.closed_by_peer()
    assert gateway.control.requests == [] and gateway.serving
    gateway.connect().send(commit("m" * 32_767), 9)
    assert len(gateway.control.wait_for(lambda r: r["api"] == "OffsetCommit")["member_id"]) == 32_767


def test_group_requests_the_coordinator_does_not_answer_get_coordinator_not_available(gateway):
    connection = gateway.connect()
    heartbeat = connection.call(HeartbeatRequest[4](group_id="g", generation_id=1, member_id="m",
                                                    group_instance_id=None), 4, HeartbeatResponse)
    assert heartbeat.error_code == Errors.COORDINATOR_NOT_AVAILABLE
    topic = OffsetCommitRequest.OffsetCommitRequestTopic
    partition = topic.OffsetCommitRequestPartition
    commit = connection.call(OffsetCommitRequest[8](
        group_id="g", generation_id_or_member_epoch=1, member_id="m", group_instance_id=None,
        topics=[topic(name="t", partitions=[partition(partition_index=0, committed_offset=5,
                                                      committed_leader_epoch=-1, committed_metadata="")])]),
        8, OffsetCommitResponse)
    assert [(t.name, p.partition_index, p.error_code) for t in commit.topics for p in t.partitions] == [
        ("t", 0, Errors.COORDINATOR_NOT_AVAILABLE)]
    described = connection.call(DescribeGroupsRequest[5](groups=["a", "b"], include_authorized_operations=False),
                                5, DescribeGroupsResponse)
    assert [(g.group_id, g.error_code) for g in described.groups] == [("a", Errors.COORDINATOR_NOT_AVAILABLE),
                                                                      ("b", Errors.COORDINATOR_NOT_AVAILABLE)]


def join_request(rebalance_timeout_ms: int, member_id: str = "m-1") -> Any:
    return JoinGroupRequest[5](group_id="g", session_timeout_ms=6000, rebalance_timeout_ms=rebalance_timeout_ms,
                               member_id=member_id, group_instance_id=None, protocol_type="consumer",
                               protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")])


def test_a_new_member_s_member_id_round_is_answered_without_the_coordinator(gateway):
    """No coordinator answers here, yet a new dynamic member's first JoinGroup gets MEMBER_ID_REQUIRED at once, with
    the id the core derives from the PendingMember request the gateway appended for the coordinator to keep."""
    join = gateway.connect().call(join_request(500, member_id=""), 5, JoinGroupResponse)
    assert join.error_code == Errors.MEMBER_ID_REQUIRED
    assert join.member_id.startswith("gateway-test-")
    (pending,) = [r for r in gateway.control.requests if r["api"] == PENDING_MEMBER
                  and pending_member_id(r["group_id"], r["client_id"], r["request_id"]) == join.member_id]
    assert (pending["group_id"], pending["member_id"], pending["session_timeout_ms"]) == ("g", "", 6000)


def test_the_member_id_round_can_be_left_to_the_coordinator():
    """With `member_id_round_by_coordinator` the same JoinGroup is written as it came, and the client gets the
    coordinator's answer."""
    memory = MemoryGateway(member_id_round_by_coordinator=True)
    try:
        connection = memory.connect()
        sent = connection.send(join_request(0, member_id=""), 5)
        written = memory.control.wait_for(lambda r: r["api"] == "JoinGroup")
        memory.control.answer(written["request_id"], {"error_code": Errors.MEMBER_ID_REQUIRED,
                                                      "member_id": "named-by-the-coordinator"})
        join = connection.receive(JoinGroupResponse, 5)
    finally:
        memory.close()
    assert (join.header.correlation_id, join.error_code, join.member_id) == (
        sent, Errors.MEMBER_ID_REQUIRED, "named-by-the-coordinator")
    assert [r["api"] for r in memory.control.requests] == ["JoinGroup"]


def test_sasl_plain_authenticates_and_stamps_the_principal_on_control_requests(tmp_path: Path):
    """The kafka-python client's own SASL/PLAIN login through a listener is in test_protocol.py."""
    memory = MemoryGateway(request_timeout_ms=200, authenticator=Authenticator(
        ["PLAIN"], PlainAuthenticator({"alice": "alice-secret"})))
    try:
        assert api_versions(memory.connect())[17] == (0, 1)
        unauthenticated = memory.connect()
        unauthenticated.send(MetadataRequest[9](topics=[], allow_auto_topic_creation=False), 9)
        assert unauthenticated.closed_by_peer()

        connection = login(memory.connect(), "alice", "alice-secret")
        heartbeat = connection.call(HeartbeatRequest[4](group_id="g", generation_id=1, member_id="m",
                                                        group_instance_id=None), 4, HeartbeatResponse)
        assert heartbeat.error_code == Errors.COORDINATOR_NOT_AVAILABLE  # no coordinator: the record is what counts
        (record,) = memory.control.requests
        assert (record["api"], record["member_id"], record["principal"]) == ("Heartbeat", "m", "User:alice")

        refused = memory.connect()
        refused.call(SaslHandshakeRequest[1](mechanism="PLAIN"), 1, SaslHandshakeResponse)
        answer = refused.call(SaslAuthenticateRequest[1](auth_bytes=b"\0alice\0wrong"), 1, SaslAuthenticateResponse)
        assert answer.error_code == Errors.SASL_AUTHENTICATION_FAILED and refused.closed_by_peer()  # then closed
    finally:
        memory.close()


def test_a_consumer_group_heartbeat_is_answered_within_the_interval_its_member_was_told():
    """librdkafka gives a ConsumerGroupHeartbeat the interval it was last told to be answered, then drops the answer
    and the connection and never asks again for what the answer said (a revocation lost that way kept three
    consumers at 6/0/0 partitions). A member's first heartbeat may wait the gateway's whole budget; once an answer
    told it 1000 ms, its next, on a new connection, waits at most four fifths of that for the coordinator, then is
    answered COORDINATOR_NOT_AVAILABLE, on which librdkafka sends its next heartbeat in full. Another member's
    heartbeat keeps the whole budget."""
    memory = MemoryGateway(request_timeout_ms=3000)
    try:
        def heartbeat(connection: Connection, member_id: str, epoch: int, **fields: Any) -> Any:
            connection.send(ConsumerGroupHeartbeatRequest[1](group_id="g", member_id=member_id, member_epoch=epoch,
                                                             **fields), 1)
            if epoch == 0:
                join = memory.control.wait_for(lambda r: r["api"] == "ConsumerGroupHeartbeat")
                memory.control.answer(join["request_id"], {
                    "api": "ConsumerGroupHeartbeat", "request_id": join["request_id"], "group_id": "g",
                    "error_code": 0, "error_message": None, "member_id": member_id, "member_epoch": 1,
                    "heartbeat_interval_ms": 1000, "assignment": None})
            return connection.receive(ConsumerGroupHeartbeatResponse, 1)

        first = memory.connect()
        joined = heartbeat(first, "m", 0, rebalance_timeout_ms=300_000, subscribed_topic_names=["t"],
                           topic_partitions=[])
        assert (joined.error_code, joined.member_epoch, joined.heartbeat_interval_ms) == (Errors.NONE, 1, 1000)
        first.close()
        late = heartbeat(memory.connect(), "m", 1)  # nobody answers it
        assert late.error_code == Errors.COORDINATOR_NOT_AVAILABLE and "within 0.8 s" in late.error_message
        other = heartbeat(memory.connect(), "n", 1)
        assert other.error_code == Errors.COORDINATOR_NOT_AVAILABLE and "within 3.0 s" in other.error_message
    finally:
        memory.close()


def test_answers_go_back_in_request_order_whichever_is_ready_first(gateway):
    """Requests sent back to back on one connection: a Heartbeat the coordinator does not answer (its answer ready
    after 200 ms), an ApiVersions answered at once, a DescribeGroups (again 200 ms), another ApiVersions. The
    answers come in the order of the requests, each with its own correlation id, as a Kafka broker answers one
    connection's requests."""
    connection = gateway.connect()
    sent = [
        (connection.send(HeartbeatRequest[4](group_id="g", generation_id=1, member_id="m", group_instance_id=None),
                         4), HeartbeatResponse, 4),
        (connection.send(ApiVersionsRequest[3](client_software_name="t", client_software_version="1"), 3),
         ApiVersionsResponse, 3),
        (connection.send(DescribeGroupsRequest[5](groups=["a"], include_authorized_operations=False), 5),
         DescribeGroupsResponse, 5),
        (connection.send(ApiVersionsRequest[3](client_software_name="t", client_software_version="1"), 3),
         ApiVersionsResponse, 3),
    ]
    answers = [connection.receive(response_class, version) for _, response_class, version in sent]
    assert [a.header.correlation_id for a in answers] == [correlation for correlation, _, _ in sent]
    assert answers[0].error_code == Errors.COORDINATOR_NOT_AVAILABLE and answers[1].error_code == 0
    assert [g.error_code for g in answers[2].groups] == [Errors.COORDINATOR_NOT_AVAILABLE]

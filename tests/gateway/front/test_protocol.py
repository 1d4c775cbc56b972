"""The gateway's protocol edges, with raw Kafka requests (kafka-python's message classes) and no coordinator query.

What it advertises, how it names brokers and coordinators, what it does with frames that break the protocol, what
clients get when the coordinator or the upstream broker does not answer, answers in request order, SASL/PLAIN with
the principal stamped on control requests, and TLS. The coordinator is absent on purpose: group requests then time
out after the gateway's `--request-timeout-ms`.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.admin.groups import DescribeGroupsRequest, DescribeGroupsResponse
from kafka.protocol.consumer.group import (HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse,
                                           OffsetCommitRequest, OffsetCommitResponse)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                 SaslHandshakeResponse)

from common import config as job_config
from common.topics import ensure_topics
from gateway.front.process import GatewayProcess, start_gateway
from state.api import PENDING_MEMBER, pending_member_id
from state.errors import Errors
from streaming.kafka_io.embedded import start_broker
from tests.gateway.raw import Connection, address, login

pytestmark = pytest.mark.broker



def fresh_topics(broker: str) -> dict[str, str]:
    suffix = uuid.uuid4().hex[:8]
    props = job_config.load(overrides={"bootstrap.servers": broker, "topic.requests": f"requests-{suffix}",
                                       "topic.responses": f"responses-{suffix}", "topic.records": f"records-{suffix}",
                                       "topic.dead.letters": f"dead-letters-{suffix}",
                                       "topic.views": f"views-{suffix}"})
    ensure_topics({"bootstrap_servers": broker}, props)
    return {k: v for k, v in props.items() if k.startswith("topic.")}


@pytest.fixture(scope="module")
def topics(broker) -> dict[str, str]:
    return fresh_topics(broker)


@pytest.fixture(scope="module")
def gateway(broker, topics, tmp_path_factory) -> Iterator[GatewayProcess]:
    process = start_gateway(broker, topics, args=["--request-timeout-ms", "1000"],
                            log_path=tmp_path_factory.mktemp("gateway") / "gateway.log")
    try:
        yield process
    finally:
        process.stop()


def round_trip(servers: str, value: bytes, **config: Any) -> list[bytes]:
    """Produce `value` to a new topic and read the topic back, both through `servers`."""
    topic = f"t-{uuid.uuid4().hex[:6]}"
    producer = KafkaProducer(bootstrap_servers=servers, **config)
    producer.send(topic, value, partition=0).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=servers, group_id=None, auto_offset_reset="earliest", **config)
    consumer.assign([TopicPartition(topic, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while not values and time.monotonic() < deadline:
        values += [r.value for records in consumer.poll(timeout_ms=500).values() for r in records]
    consumer.close()
    return values


def api_versions(servers: str) -> dict[int, tuple[int, int]]:
    connection = Connection(servers)
    try:
        response = connection.call(ApiVersionsRequest[3](client_software_name="t", client_software_version="1"), 3,
                                   ApiVersionsResponse)
    finally:
        connection.close()
    assert response.error_code == 0
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


def test_api_versions_advertise_the_coordinator_s_group_apis_and_not_the_other_protocols(gateway, broker):
    ours, upstream = api_versions(gateway.bootstrap_servers), api_versions(broker)
    assert {k: ours[k] for k in (11, 14, 12, 13, 8, 9, 47, 15, 16, 42, 68, 69)} == {
        11: (0, 9), 14: (0, 5), 12: (0, 4), 13: (0, 5), 8: (0, 9), 9: (0, 9), 47: (0, 0), 15: (0, 5), 16: (0, 5),
        42: (0, 2), 68: (0, 1), 69: (0, 1)}
    assert 47 not in upstream and 68 not in upstream  # tansu has neither; the gateway serves them anyway
    for missing in (28, 76, 88, 17, 36):  # TxnOffsetCommit, share and streams groups, no SASL on this listener
        assert missing not in ours
    assert ours[2] == upstream[2] and ours[19] == upstream[19]  # forwarded as they are
    assert ours[1][1] <= upstream[1][1] and ours[3][1] <= upstream[3][1]


def test_without_authorization_the_acl_apis_answer_security_disabled_as_kafka_without_an_authorizer(gateway):
    """Forwarded, CreateAcls would change the upstream's ACLs as the gateway's principal, and tansu's answer aborts
    librdkafka's admin client; Kafka without an authorizer answers SECURITY_DISABLED (54). Both admin clients."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                       ResourcePatternType, ResourceType)
    from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient,
                             ResourcePattern, ResourcePatternFilter)
    from kafka.admin import ResourceType as KpResourceType
    from kafka.errors import SecurityDisabledError

    assert {k: api_versions(gateway.bootstrap_servers)[k] for k in (29, 30, 31)} == {29: (0, 3), 30: (0, 3),
                                                                                     31: (0, 3)}
    admin = AdminClient({"bootstrap.servers": gateway.bootstrap_servers})
    binding = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                         AclPermissionType.ALLOW)
    every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
    for call in (lambda: admin.create_acls([binding])[binding], lambda: admin.delete_acls([every])[every]):
        with pytest.raises(KafkaException) as refused:
            call().result(30)
        assert refused.value.args[0].code() == 54
    assert admin.describe_acls(every).result(30) == []  # librdkafka drops DescribeAcls' error: no bindings
    kp = KafkaAdminClient(bootstrap_servers=gateway.bootstrap_servers)
    try:
        acl = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                  ResourcePattern(KpResourceType.TOPIC, "t"))
        created = kp.create_acls([acl])
        assert created["failed"] == [SecurityDisabledError]  # kafka-python lists the error classes
        with pytest.raises(SecurityDisabledError):
            kp.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                       ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY)))
    finally:
        kp.close()


def test_an_api_versions_request_newer_than_the_gateway_gets_its_versions_at_v0(gateway):
    connection = Connection(gateway.bootstrap_servers)
    try:
        request = ApiVersionsRequest[3](client_software_name="t", client_software_version="1")
        request.with_header(correlation_id=7, client_id="t")
        frame = bytearray(request.encode(version=3, header=True))
        frame[2:4] = struct.pack(">h", 99)  # a version from the future
        connection.sock.sendall(struct.pack(">i", len(frame)) + frame)
        response = connection.receive(ApiVersionsResponse, 0)
        assert response.error_code == Errors.UNSUPPORTED_VERSION and response.header.correlation_id == 7
        assert {k.api_key for k in response.api_keys} >= {11, 14, 12}
    finally:
        connection.close()


def test_metadata_and_find_coordinator_name_the_gateway_s_listeners(gateway, broker):
    connection = Connection(gateway.bootstrap_servers)
    try:
        metadata = connection.call(MetadataRequest[9](topics=[], allow_auto_topic_creation=False), 9,
                                   MetadataResponse)
        (node,) = metadata.brokers
        assert node.host == "127.0.0.1" and node.port not in (address(broker)[1],
                                                                address(gateway.bootstrap_servers)[1])
        for version in (0, 3):
            answer = connection.call(FindCoordinatorRequest[version](key="g1", key_type=0), version,
                                     FindCoordinatorResponse)
            assert (answer.error_code, answer.node_id, answer.host, answer.port) == (0, node.node_id, node.host,
                                                                                    node.port)
        batched = connection.call(FindCoordinatorRequest[4](key_type=0, coordinator_keys=["g1", "g2"]), 4,
                                  FindCoordinatorResponse)
        assert [(c.key, c.node_id, c.port, c.error_code) for c in batched.coordinators] == [
            ("g1", node.node_id, node.port, 0), ("g2", node.node_id, node.port, 0)]
    finally:
        connection.close()
    # The node listener forwards to its broker: a plain client writes and reads through it.
    assert round_trip(gateway.bootstrap_servers, b"hello") == [b"hello"]


BAD_FRAMES = {
    "random bytes": os.urandom(64),
    "a truncated header": struct.pack(">i", 4) + struct.pack(">hh", 18, 0),
    "an unknown API key": struct.pack(">ihhih", 10, 999, 0, 1, -1),
    "a huge length": struct.pack(">i", 0x7FFFFFFF) + b"\0" * 16,
    "a negative length": struct.pack(">i", -5),
    "an API it does not serve": struct.pack(">ihhih", 10, 76, 0, 1, -1),  # ShareGroupHeartbeat
    "a group API at a version it does not serve": struct.pack(">ihhih", 10, 11, 10, 1, -1),
    "a group request cut short": struct.pack(">ihhihh", 12, 11, 5, 1, -1, 40) + b"g",
}


@pytest.mark.parametrize("name", list(BAD_FRAMES))
def test_a_bad_frame_closes_its_connection_and_the_gateway_serves_on(gateway, name):
    before = Connection(gateway.bootstrap_servers)
    bad = Connection(gateway.bootstrap_servers)
    try:
        bad.sock.sendall(BAD_FRAMES[name])
        assert bad.closed_by_peer()
        # Other connections, old and new, are served.
        assert before.call(ApiVersionsRequest[0](), 0, ApiVersionsResponse).error_code == 0
        assert api_versions(gateway.bootstrap_servers)[11] == (0, 9)
    finally:
        bad.close()
        before.close()
    assert gateway.process.poll() is None


def test_group_requests_the_coordinator_does_not_answer_get_coordinator_not_available(gateway):
    connection = Connection(gateway.bootstrap_servers)
    try:
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
    finally:
        connection.close()


def join_request(rebalance_timeout_ms: int, member_id: str = "m-1") -> Any:
    return JoinGroupRequest[5](group_id="g", session_timeout_ms=6000, rebalance_timeout_ms=rebalance_timeout_ms,
                               member_id=member_id, group_instance_id=None, protocol_type="consumer",
                               protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")])


def test_answers_come_in_request_order_a_long_poll_holding_back_the_next(gateway):
    """A JoinGroup waits its rebalance timeout plus the gateway's grace (2 s) for the coordinator; the Metadata
    request sent after it on the same connection is answered after it, as a broker would."""
    connection = Connection(gateway.bootstrap_servers)
    try:
        started = time.monotonic()
        join_id = connection.send(join_request(500), 5)
        metadata_id = connection.send(MetadataRequest[9](topics=[], allow_auto_topic_creation=False), 9)
        join = connection.receive(JoinGroupResponse, 5)
        waited = time.monotonic() - started
        metadata = connection.receive(MetadataResponse, 9)
        assert (join.header.correlation_id, join.error_code) == (join_id, Errors.COORDINATOR_NOT_AVAILABLE)
        assert metadata.header.correlation_id == metadata_id and metadata.brokers
        assert waited >= 2.5  # 500 ms rebalance timeout + 2 s grace: a long poll, not the 1 s request timeout
    finally:
        connection.close()


def appended_requests(broker: str, topic: str) -> list[dict]:
    """Every request in the control topic so far."""
    consumer = KafkaConsumer(bootstrap_servers=broker, group_id=None, auto_offset_reset="earliest",
                             consumer_timeout_ms=2000)
    consumer.assign([TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)])
    try:
        return [json.loads(record.value) for record in consumer]
    finally:
        consumer.close()


def test_a_new_member_s_member_id_round_is_answered_without_the_coordinator(gateway, broker, topics):
    """No coordinator runs here, yet a new dynamic member's first JoinGroup gets MEMBER_ID_REQUIRED at once, with
    the id the core derives from the PendingMember request the gateway appended for the coordinator to keep."""
    connection = Connection(gateway.bootstrap_servers)
    try:
        join = connection.call(join_request(500, member_id=""), 5, JoinGroupResponse)
    finally:
        connection.close()
    assert join.error_code == Errors.MEMBER_ID_REQUIRED
    assert join.member_id.startswith("gateway-test-")
    (pending,) = [r for r in appended_requests(broker, topics["topic.requests"]) if r["api"] == PENDING_MEMBER
                  and pending_member_id(r["group_id"], r["client_id"], r["request_id"]) == join.member_id]
    assert (pending["group_id"], pending["member_id"], pending["session_timeout_ms"]) == ("g", "", 6000)


def test_the_member_id_round_can_be_left_to_the_coordinator(broker, topics, tmp_path):
    process = start_gateway(broker, topics, args=["--request-timeout-ms", "1000", "--member-id-round-by-coordinator"],
                            log_path=tmp_path / "gateway.log")
    connection = Connection(process.bootstrap_servers)
    try:
        join = connection.call(join_request(0, member_id=""), 5, JoinGroupResponse)
    finally:
        connection.close()
        process.stop()
    assert join.error_code == Errors.COORDINATOR_NOT_AVAILABLE


def test_a_dead_upstream_closes_forwarded_connections_and_times_out_group_requests(tmp_path):
    own = start_broker()
    process = None
    try:
        process = start_gateway(own.bootstrap_servers, fresh_topics(own.bootstrap_servers),
                                args=["--request-timeout-ms", "1000"], log_path=tmp_path / "gateway.log")
        connection = Connection(process.bootstrap_servers)
        assert connection.call(MetadataRequest[9](topics=[], allow_auto_topic_creation=False), 9,
                               MetadataResponse).brokers
        own.stop()
        connection.send(MetadataRequest[9](topics=[], allow_auto_topic_creation=False), 9)
        assert connection.closed_by_peer()  # as when a broker dies: the client reconnects elsewhere
        fresh = Connection(process.bootstrap_servers)
        heartbeat = fresh.call(HeartbeatRequest[4](group_id="g", generation_id=1, member_id="m",
                                                   group_instance_id=None), 4, HeartbeatResponse)
        assert heartbeat.error_code == Errors.COORDINATOR_NOT_AVAILABLE
        fresh.close()
        connection.close()
        assert process.process.poll() is None
    finally:
        if process is not None:
            process.stop()
        own.stop()


def control_records(broker: str, topic: str, expected: int) -> list[dict]:
    consumer = KafkaConsumer(bootstrap_servers=broker, group_id=None, auto_offset_reset="earliest",
                             consumer_timeout_ms=3000)
    consumer.subscribe([topic])
    found = []
    deadline = time.monotonic() + 30
    while len(found) < expected and time.monotonic() < deadline:
        found += [json.loads(r.value) for r in consumer]
    consumer.close()
    return found


def test_sasl_plain_authenticates_and_stamps_the_principal_on_control_requests(broker, tmp_path):
    users = tmp_path / "users.properties"
    users.write_text("# username=password\nalice=alice-secret\n")
    topics = fresh_topics(broker)
    process = start_gateway(broker, topics, args=["--sasl-users", str(users), "--request-timeout-ms", "1000"],
                            log_path=tmp_path / "gateway.log")
    sasl = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "request_timeout_ms": 5000}
    try:
        assert api_versions(process.bootstrap_servers)[17] == (0, 1)
        unauthenticated = Connection(process.bootstrap_servers)
        unauthenticated.send(MetadataRequest[9](topics=[], allow_auto_topic_creation=False), 9)
        assert unauthenticated.closed_by_peer()
        unauthenticated.close()

        connection = login(process.bootstrap_servers, "alice", "alice-secret")
        heartbeat = connection.call(HeartbeatRequest[4](group_id="g", generation_id=1, member_id="m",
                                                        group_instance_id=None), 4, HeartbeatResponse)
        assert heartbeat.error_code == Errors.COORDINATOR_NOT_AVAILABLE  # no coordinator: the record is what counts
        connection.close()
        (record,) = control_records(broker, topics["topic.requests"], 1)
        assert (record["api"], record["member_id"], record["principal"]) == ("Heartbeat", "m", "User:alice")

        refused = Connection(process.bootstrap_servers)
        refused.call(SaslHandshakeRequest[1](mechanism="PLAIN"), 1, SaslHandshakeResponse)
        answer = refused.call(SaslAuthenticateRequest[1](auth_bytes=b"\0alice\0wrong"), 1, SaslAuthenticateResponse)
        assert answer.error_code == Errors.SASL_AUTHENTICATION_FAILED and refused.closed_by_peer()  # then closed
        refused.close()
        # kafka-python's own SASL/PLAIN client
        assert round_trip(process.bootstrap_servers, b"as alice", sasl_plain_username="alice",
                          sasl_plain_password="alice-secret", **sasl) == [b"as alice"]
    finally:
        process.stop()


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made with the openssl command."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out",
                    str(cert)], check=True, capture_output=True)
    return cert, key


NEEDS_OPENSSL = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")


@NEEDS_OPENSSL
def test_tls_on_the_listeners(broker, topics, tmp_path):
    cert, key = self_signed(tmp_path)
    process = start_gateway(broker, topics, args=["--ssl-certfile", str(cert), "--ssl-keyfile", str(key)],
                            log_path=tmp_path / "gateway.log")
    try:
        tls = {"security_protocol": "SSL", "ssl_cafile": str(cert)}
        assert round_trip(process.bootstrap_servers, b"over tls", **tls) == [b"over tls"]
    finally:
        process.stop()



def test_sasl_handshake_v0_takes_the_raw_token(broker, tmp_path):
    users = tmp_path / "users.properties"
    users.write_text("bob=bob-secret\n")
    process = start_gateway(broker, fresh_topics(broker), args=["--sasl-users", str(users)],
                            log_path=tmp_path / "gateway.log")
    try:
        connection = Connection(process.bootstrap_servers)
        assert connection.call(SaslHandshakeRequest[0](mechanism="PLAIN"), 0, SaslHandshakeResponse).error_code == 0
        token = b"\0bob\0bob-secret"
        connection.sock.sendall(struct.pack(">i", len(token)) + token)
        assert connection.read(4) == struct.pack(">i", 0)  # an empty frame: authenticated
        assert connection.call(ApiVersionsRequest[0](), 0, ApiVersionsResponse).error_code == 0
        assert connection.call(MetadataRequest[9](topics=[], allow_auto_topic_creation=False), 9,
                               MetadataResponse).brokers
        connection.close()
        refused = Connection(process.bootstrap_servers)
        refused.call(SaslHandshakeRequest[0](mechanism="PLAIN"), 0, SaslHandshakeResponse)
        wrong = b"\0bob\0wrong"
        refused.sock.sendall(struct.pack(">i", len(wrong)) + wrong)
        assert refused.closed_by_peer()
        refused.close()
    finally:
        process.stop()


@NEEDS_OPENSSL
def test_a_gateway_reaches_a_cluster_that_wants_tls_and_sasl(broker, topics, tmp_path):
    """The secured "cluster" is another gateway with TLS and SASL/PLAIN on its listeners: the second gateway's
    control-topic clients and the connections it forwards on both log in with its `kafka.*` settings."""
    cert, key = self_signed(tmp_path)
    users = tmp_path / "users.properties"
    users.write_text("front=front-secret\n")
    secured = start_gateway(broker, topics, args=["--ssl-certfile", str(cert), "--ssl-keyfile", str(key),
                                                  "--sasl-users", str(users)], log_path=tmp_path / "secured.log")
    front = None
    try:
        client = {"kafka.security.protocol": "SASL_SSL", "kafka.ssl.cafile": str(cert),
                  "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.plain.username": "front",
                  "kafka.sasl.plain.password": "front-secret"}
        front = start_gateway(secured.bootstrap_servers, {**topics, **client}, log_path=tmp_path / "front.log")
        assert round_trip(front.bootstrap_servers, b"through two gateways") == [b"through two gateways"]
    finally:
        if front is not None:
            front.stop()
        secured.stop()

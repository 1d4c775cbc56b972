"""The gateway's protocol edges that need the upstream broker, with raw Kafka requests (kafka-python's message
classes) and no coordinator query: how it names brokers and coordinators, answers in request order behind a long
poll, a dead upstream, SASL/PLAIN with kafka-python's own client and SASL's v0 raw tokens, and TLS. The coordinator is
absent on purpose: group requests then time out after the gateway's `--request-timeout-ms`. The decisions one
connection makes without the upstream are tested in memory (test_connection.py).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.consumer.group import (HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse,
                                           OffsetCommitRequest, OffsetCommitResponse)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.sasl import SaslHandshakeRequest, SaslHandshakeResponse

from common import config as job_config
from common.topics import ensure_topics
from gateway.front.process import GatewayProcess, start_gateway
from state.errors import Errors
from streaming.kafka_io.embedded import start_broker
from tests.gateway.raw import Connection, address

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


def test_a_commit_too_large_for_the_control_topic_gets_a_non_retriable_error(gateway):
    """50,000 partitions make a control record over the producer's 1 MB: the log will never take it, so every
    partition gets INVALID_COMMIT_OFFSET_SIZE, as Kafka's coordinator answers a commit its log refuses (not 15,
    which clients retry forever), at once rather than after the request timeout. The connection serves on."""
    topic, partition = OffsetCommitRequest.OffsetCommitRequestTopic, \
        OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    partitions = [partition(partition_index=i, committed_offset=i, committed_leader_epoch=-1, committed_metadata="")
                  for i in range(50_000)]
    connection = Connection(gateway.bootstrap_servers)
    try:
        commit = connection.call(OffsetCommitRequest[8](group_id="g-large", generation_id_or_member_epoch=-1,
                                                        member_id="", group_instance_id=None,
                                                        topics=[topic(name="t", partitions=partitions)]),
                                 8, OffsetCommitResponse)
        errors = {p.error_code for t in commit.topics for p in t.partitions}
        assert errors == {Errors.INVALID_COMMIT_OFFSET_SIZE}
        assert sum(len(t.partitions) for t in commit.topics) == 50_000
        assert connection.call(MetadataRequest[9](topics=[], allow_auto_topic_creation=False), 9,
                               MetadataResponse).brokers
    finally:
        connection.close()


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


def test_kafka_python_s_own_sasl_plain_client_logs_in_and_reads_and_writes(broker, tmp_path):
    """Through a listener with SASL/PLAIN; what the gateway decides on a SASL connection (the handshake, a refused
    password, the principal on control requests) is tested in memory in test_connection.py."""
    users = tmp_path / "users.properties"
    users.write_text("# username=password\nalice=alice-secret\n")
    process = start_gateway(broker, fresh_topics(broker), args=["--sasl-users", str(users)],
                            log_path=tmp_path / "gateway.log")
    sasl = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "request_timeout_ms": 5000}
    try:
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

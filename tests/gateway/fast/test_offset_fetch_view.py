"""OffsetFetch answered by the gateway from a Stable group's view (docs/gateway.md, "Fast answers"), against the
real query: right after the group forms (the consumer's first request after its SyncGroup) it is answered without
a micro-batch, and a commit acknowledged before a fetch, through this gateway or another, is always seen; with
`--offset-fetch-by-coordinator`, the coordinator answers it."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

from gateway.front.process import start_gateway
from state.errors import Errors
from tests.gateway.conftest import GatewayEnv
from tests.gateway.raw import RawMember

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def requests_of(env: GatewayEnv, group: str) -> list:
    return [r for r in env.run.read(env.run.topics.requests) if r.key == group.encode()]


def written_between(env: GatewayEnv, partition: int, after: int, before: int) -> list:
    """The requests-topic records of `partition` strictly between two offsets (any group's)."""
    return [r for r in env.run.read(env.run.topics.requests) if r.partition == partition and after < r.offset < before]


def committed_by_librdkafka(servers: str, group: str, topic: str) -> dict[int, int]:
    """What a librdkafka client of the group reads as committed (an OffsetFetch; the client does not join)."""
    consumer = Consumer({"bootstrap.servers": servers, "group.id": group, "enable.auto.commit": False})
    try:
        return {tp.partition: tp.offset for tp in consumer.committed(
            [TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=30)}
    finally:
        consumer.close()


def test_an_offset_fetch_is_answered_from_the_view_after_forming_and_sees_every_acknowledged_commit(
        gateway_env: GatewayEnv):
    topic = gateway_env.topic(partitions=2)
    name = f"fetch-{uuid.uuid4().hex[:8]}"
    member = RawMember(gateway_env.bootstrap, name)
    elsewhere = RawMember(gateway_env.second.bootstrap_servers, name)  # the same member, through another gateway
    try:
        member.join_and_sync(topic)
        assert member.committed(topic, [0, 1]) == {0: -1, 1: -1}
        written = requests_of(gateway_env, name)
        sync = [r for r in written if json.loads(r.value)["api"] == "SyncGroup"][-1]
        fetched = [r for r in written if json.loads(r.value)["api"] == "OffsetFetch"]
        # Answered by the gateway unless something else (another test's group) was written to the group's
        # partition between the SyncGroup and the fetch: then the coordinator answers it, as it should.
        if not written_between(gateway_env, sync.partition, sync.offset, fetched[0].offset if fetched else 1 << 62):
            assert fetched == []

        # Acknowledged commits are seen by the next fetch of any client, through either gateway.
        assert member.commit({(topic, 0): 7}) == {(topic, 0): Errors.NONE}
        assert member.committed(topic, [0, 1]) == {0: 7, 1: -1}
        assert committed_by_librdkafka(gateway_env.second.bootstrap_servers, name, topic) == {0: 7, 1: -1001}
        elsewhere.member_id, elsewhere.generation = member.member_id, member.generation
        assert elsewhere.commit({(topic, 1): 3}) == {(topic, 1): Errors.NONE}
        assert member.committed(topic, [0, 1]) == {0: 7, 1: 3}
        assert committed_by_librdkafka(gateway_env.bootstrap, name, topic) == {0: 7, 1: 3}
        assert gateway_env.committed(name, topic) == {0: 7, 1: 3}
    finally:
        member.close()
        elsewhere.close()


def test_with_offset_fetch_by_coordinator_the_same_fetch_is_the_coordinator_s(gateway_env: GatewayEnv, tmp_path):
    """The lever's other path: the first fetch after forming, which the test above sees answered from the view, is
    written to the requests topic for the coordinator to answer."""
    props = {k: v for k, v in gateway_env.run.props.items() if k.startswith(("topic.", "group."))}
    gateway = start_gateway(gateway_env.broker, props, args=["--offset-fetch-by-coordinator"],
                            log_path=tmp_path / "gateway.log")
    topic = gateway_env.topic(partitions=2)
    name = f"fetch-by-coordinator-{uuid.uuid4().hex[:8]}"
    member = RawMember(gateway.bootstrap_servers, name)
    try:
        member.join_and_sync(topic)
        assert member.committed(topic, [0, 1]) == {0: -1, 1: -1}
        fetched = [r for r in requests_of(gateway_env, name) if json.loads(r.value)["api"] == "OffsetFetch"]
        assert len(fetched) == 1
    finally:
        member.close()
        gateway.stop()

"""GroupConsumer on a real tansu broker with the coordinator in-process (no Spark): the glue between the group
member and kafka-python's fetching — start from committed offsets, commit before revoking, hand over cleanly."""

from __future__ import annotations

import time
import uuid

import pytest
from kafka import KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from client.consumer import GroupConsumer
from state.config import CoordinatorConfig
from tests.support.loopback import LoopbackCoordinator

pytestmark = pytest.mark.broker


@pytest.fixture
def coordinator():
    c = LoopbackCoordinator(CoordinatorConfig(group_initial_rebalance_delay_ms=50, group_min_session_timeout_ms=100))
    yield c
    c.close()


@pytest.fixture
def topic(broker):
    name = f"data-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker)
    admin.create_topics([NewTopic(name, 4, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker)
    for i in range(40):
        producer.send(name, value=f"v{i}".encode(), partition=i % 4)
    producer.flush()
    producer.close()
    return name


def consumer(broker, coordinator, topic, name, **opts) -> GroupConsumer:
    return GroupConsumer(
        topic, bootstrap_servers=broker, group_id="g", client_id=name, transport=coordinator.transport(),
        session_timeout_ms=1000, heartbeat_interval_ms=50, auto_offset_reset="earliest", **opts,
    )


def drain(c: GroupConsumer, want: int, timeout_s: float = 20.0) -> list[str]:
    out: list[str] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < want and time.monotonic() < deadline:
        for records in c.poll(timeout_ms=100).values():
            out.extend(r.value.decode() for r in records)
    return out


def test_consumes_everything_then_resumes_from_committed_offsets(broker, coordinator, topic):
    c = consumer(broker, coordinator, topic, "c1", enable_auto_commit=False)
    first = drain(c, 40)
    assert sorted(first) == sorted(f"v{i}" for i in range(40))
    c.commit({TopicPartition(topic, 0): 5})
    c.commit()  # positions of everything else... and of partition 0 again: the end of each partition
    assert c.committed(TopicPartition(topic, 0)) == 10
    c.commit({TopicPartition(topic, 0): 5})
    c.close()

    again = consumer(broker, coordinator, topic, "c2", enable_auto_commit=False)
    assert sorted(drain(again, 5)) == sorted(f"v{i}" for i in range(20, 40, 4))
    again.close()


def test_revoked_partitions_are_committed_so_the_next_owner_continues(broker, coordinator, topic):
    a = consumer(broker, coordinator, topic, "a")
    seen_a = drain(a, 40)
    b = consumer(broker, coordinator, topic, "b")
    # Both poll until the group has settled with two owners.
    deadline = time.monotonic() + 20
    seen_b: list[str] = []
    while time.monotonic() < deadline and not (a.assignment() and b.assignment()):
        for c, sink in ((a, seen_a), (b, seen_b)):
            for records in c.poll(timeout_ms=50).values():
                sink.extend(r.value.decode() for r in records)
    assert a.assignment() and b.assignment() and not (a.assignment() & b.assignment())
    for _ in range(10):
        for records in b.poll(timeout_ms=50).values():
            seen_b.extend(r.value.decode() for r in records)
    assert seen_b == []  # b starts where a committed when it gave the partitions up: nothing is read twice
    a.close()
    b.close()

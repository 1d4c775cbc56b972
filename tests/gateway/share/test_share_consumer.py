"""Unmodified confluent-kafka ShareConsumers (KIP-932) through a gateway in front of the real query and broker
(issue 34): members share one partition and every record accepted is delivered once; explicit ACCEPT, RELEASE and
REJECT; the delivery-count limit; a record whose lock runs out comes back; the records of a member that closes, or is
SIGKILLed, come back to another member at once (its share session ends: its records are released, durable, before
the lock would have ended).

Each test has its topic and its group (configured before its first member, as an operator does with
`kafka-configs.sh --entity-type groups`); the query and the gateway are the package's (tests/gateway/conftest.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Iterator

import pytest
from confluent_kafka import AcknowledgeType, Consumer, KafkaError, KafkaException, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from tests.gateway.conftest import ROOT, GatewayEnv, first_error, wait_for

pytestmark = [pytest.mark.broker, pytest.mark.spark]

LOCK_MS = 3000
"""The groups' `share.record.lock.duration.ms` where a lock is meant to run out (the package's query allows 1 s)."""
LONG_LOCK_MS = 60_000
"""Where a lock must not be what brings records back."""
JOINED_WITHIN_S = 90.0
"""How long three members joining a group together may take to all be fetching (a few heartbeat intervals)."""
ROUND_PAUSE_S = 0.5


def share_group(env: GatewayEnv, **configs: object) -> str:
    """A fresh group reading from the earliest offset, with these `share.*` configs (underscores for dots)."""
    group = f"share-{uuid.uuid4().hex[:8]}"
    entries = [ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)]
    entries += [ConfigEntry(k.replace("_", "."), str(v), incremental_operation=AlterConfigOpType.SET)
                for k, v in configs.items()]
    admin = AdminClient({"bootstrap.servers": env.bootstrap})
    for attempt in range(5):
        try:
            for future in admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group,
                                                                          incremental_configs=entries)]).values():
                future.result(timeout=180)
            return group
        except KafkaException as exc:  # a fresh query's first batches may outlast the gateway's request timeout
            if exc.args[0].code() != KafkaError.COORDINATOR_NOT_AVAILABLE or attempt == 4:
                raise
    return group


def produce(env: GatewayEnv, topic: str, values: list[bytes]) -> None:
    """One record per log batch: a share-partition acquires whole batches, so members can split them."""
    producer = Producer({"bootstrap.servers": env.bootstrap})
    for value in values:
        producer.produce(topic, value)
        producer.flush(30)


@dataclass
class Member:
    """A ShareConsumer polling in a thread of the test; `seen`: (offset, value, delivery count) of every delivery."""

    consumer: ShareConsumer
    acks: dict[bytes, AcknowledgeType] | None
    seen: list[tuple[int, bytes, int]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.is_set():
            for message in self.consumer.poll(0.3):
                if message.error() is not None:
                    continue
                self.seen.append((message.offset(), message.value(), message.delivery_count()))
                if self.acks is not None:
                    self.consumer.acknowledge(message, self.acks.get(message.value(), AcknowledgeType.ACCEPT))
                self.stop.wait(0.02)  # some work per record: the others get a turn
        self.consumer.close()


class Members:
    def __init__(self) -> None:
        self.started: list[tuple[Member, threading.Thread]] = []

    def start(self, env: GatewayEnv, group: str, topic: str, acks: dict[bytes, AcknowledgeType] | None = None,
              subscribe: list[str] | None = None, bootstrap: str | None = None, **config: object) -> Member:
        """`acks`: explicit mode, each record acknowledged by its value (ACCEPT if not named); None: implicit.
        `subscribe`: the topics subscribed to, if not `topic` alone; `bootstrap`: another gateway than the first."""
        consumer = ShareConsumer({"bootstrap.servers": bootstrap or env.bootstrap, "group.id": group,
                                  "share.acknowledgement.mode": "implicit" if acks is None else "explicit", **config})
        consumer.subscribe(subscribe or [topic])
        member = Member(consumer, acks)
        thread = threading.Thread(target=member.run, daemon=True)
        thread.start()
        self.started.append((member, thread))
        return member

    def close(self) -> None:
        for member, _ in self.started:
            member.stop.set()
        for _, thread in self.started:
            thread.join(timeout=30)


@pytest.fixture
def members() -> Iterator[Members]:
    started = Members()
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def holding(gateway_env) -> Iterator:
    """`holding(group, topic)`: a member in its own process that sits on what it acquires (a line written to its
    standard input closes it); returns (process, offsets); every one is killed by pid at the end."""
    processes: list[subprocess.Popen] = []

    def start(group: str, topic: str) -> tuple[subprocess.Popen, list[int]]:
        process = subprocess.Popen([sys.executable, "-m", "tests.gateway.share.holding_member", gateway_env.bootstrap,
                                    group, topic], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        processes.append(process)
        return process, json.loads(process.stdout.readline())

    try:
        yield start
    finally:
        for process in processes:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def delivered(group: list[Member]) -> list[tuple[int, bytes, int]]:
    return sorted(s for m in group for s in m.seen)


def test_three_members_share_one_partition_and_each_record_is_delivered_once(gateway_env, members):
    env = gateway_env
    topic, group = env.topic(partitions=1), share_group(env)
    three = [members.start(env, group, topic, **{"max.poll.records": 5}) for _ in range(3)]
    values: list[bytes] = []
    # Rounds until each has joined and got some: a member joining after the group's first target assignment gets
    # the partition with the next one (at most one per `share.assignment.interval.ms`) at its next heartbeat (every
    # `share.heartbeat.interval.ms`, 5 s), as in Kafka; a loaded machine's rounds take 0.4 s, so rounds are timed.
    until = time.monotonic() + JOINED_WITHIN_S
    while not all(m.seen for m in three) and time.monotonic() < until:
        values += [b"r%d" % i for i in range(len(values), len(values) + 10)]
        produce(env, topic, values[-10:])
        wait_for(lambda: len(delivered(three)) >= len(values), 120, "every record delivered")
        time.sleep(ROUND_PAUSE_S)
    # the last poll's implicit acceptance goes with the close; nothing comes again meanwhile
    assert [(o, v, c) for o, v, c in delivered(three)] == [(i, values[i], 1) for i in range(len(values))]
    assert all(m.seen for m in three), [len(m.seen) for m in three]


def test_explicit_accept_release_reject_and_the_delivery_count_limit(gateway_env, members):
    env = gateway_env
    topic, group = env.topic(partitions=1), share_group(env, share_delivery_count_limit=3)
    produce(env, topic, [b"accept-0", b"release", b"reject", b"accept-3"])
    member = members.start(env, group, topic, acks={b"release": AcknowledgeType.RELEASE,
                                                    b"reject": AcknowledgeType.REJECT})
    wait_for(lambda: sum(1 for _, v, _ in member.seen if v == b"release") >= 3, 120,
             "the released record delivered up to the limit")
    produce(env, topic, [b"after"])  # consumed once the limit archived the released record
    wait_for(lambda: any(v == b"after" for _, v, _ in member.seen), 120, "a record produced after")
    assert sorted(member.seen) == [(0, b"accept-0", 1), (1, b"release", 1), (1, b"release", 2), (1, b"release", 3),
                                   (2, b"reject", 1), (3, b"accept-3", 1), (4, b"after", 1)]


def test_a_record_whose_lock_runs_out_comes_back_to_another_member(gateway_env, members, holding):
    env = gateway_env
    topic, group = env.topic(partitions=1), share_group(env, share_record_lock_duration_ms=LOCK_MS)
    produce(env, topic, [b"a", b"b"])
    _, held = holding(group, topic)  # alive, connected, and never acknowledging
    other = members.start(env, group, topic)
    wait_for(lambda: {o for o, _, _ in other.seen} >= set(held), 120, "the held records delivered again")
    assert {(o, c) for o, _, c in other.seen if o in held} == {(o, 2) for o in held}


def test_a_killed_members_records_come_back_to_another_member_at_once(gateway_env, members, holding):
    env = gateway_env
    topic, group = env.topic(partitions=1), share_group(env, share_record_lock_duration_ms=LONG_LOCK_MS)
    produce(env, topic, [b"a", b"b", b"c"])
    process, held = holding(group, topic)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    other = members.start(env, group, topic)
    # released when its connection closed, not when its locks would end (an upper bound below the lock)
    wait_for(lambda: {o for o, _, _ in other.seen} >= set(held), LONG_LOCK_MS / 2000, "the killed member's records")
    assert {(o, c) for o, _, c in other.seen if o in held} == {(o, 2) for o in held}


def test_a_closed_members_records_come_back_to_another_member_at_once(gateway_env, members, holding):
    env = gateway_env
    topic, group = env.topic(partitions=1), share_group(env, share_record_lock_duration_ms=LONG_LOCK_MS)
    produce(env, topic, [b"a", b"b", b"c"])
    process, held = holding(group, topic)
    process.stdin.write("close\n")  # closed by the client, its records never acknowledged
    process.stdin.flush()
    assert process.wait(timeout=60) == 0
    other = members.start(env, group, topic)
    wait_for(lambda: {o for o, _, _ in other.seen} >= set(held), LONG_LOCK_MS / 2000, "the closed member's records")
    assert {(o, c) for o, _, c in other.seen if o in held} == {(o, 2) for o in held}


def test_a_share_group_and_a_consumer_group_on_one_topic_are_independent(gateway_env, members):
    """Each group gets every record of the topic; the consumer group's commits are its own, and the share group's
    acknowledgements move only its share-partition start offset."""
    env = gateway_env
    topic, group = env.topic(partitions=1), share_group(env)
    values = [b"v%d" % i for i in range(10)]
    produce(env, topic, values)
    sharing = members.start(env, group, topic)
    consumer_group = f"consumers-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": env.bootstrap, "group.id": consumer_group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        def consumed() -> bool:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
            return len(got) >= len(values)
        wait_for(consumed, 120, "the consumer group's records")
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    wait_for(lambda: len(sharing.seen) >= len(values), 120, "the share group's records")
    assert got == values
    assert [(v, c) for _, v, c in delivered([sharing])] == [(v, 1) for v in values]
    assert env.committed(consumer_group, topic) == {0: len(values)}


def test_a_group_id_of_one_kind_is_refused_to_the_other(gateway_env, members):
    """A ShareConsumer on a consumer group's id, and a consumer-protocol consumer on a share group's id, get Kafka's
    GROUP_ID_NOT_FOUND (the group exists as another kind; librdkafka makes it fatal), and neither group changes."""
    env = gateway_env
    topic, group = env.topic(partitions=1), share_group(env)
    produce(env, topic, [b"x"])
    sharing = members.start(env, group, topic)
    wait_for(lambda: sharing.seen, 120, "the share group's first record")
    consumer_group = f"consumers-{uuid.uuid4().hex[:8]}"
    owner = Consumer({"bootstrap.servers": env.bootstrap, "group.id": consumer_group, "group.protocol": "consumer",
                      "auto.offset.reset": "earliest"})
    owner.subscribe([topic])
    try:
        wait_for(lambda: (m := owner.poll(0.5)) is not None and m.error() is None, 120, "the consumer group formed")
        intruder = ShareConsumer({"bootstrap.servers": env.bootstrap, "group.id": consumer_group})
        intruder.subscribe([topic])
        try:
            assert_group_id_not_found(first_error(
                lambda: [m.error() for m in intruder.poll(0.5) if m.error() is not None]))
        finally:
            intruder.close()
        owner.commit(asynchronous=False)  # the consumer group still works
    finally:
        owner.close()
    other = Consumer({"bootstrap.servers": env.bootstrap, "group.id": group, "group.protocol": "consumer"})
    other.subscribe([topic])
    try:
        assert_group_id_not_found(first_error(
            lambda: [m.error()] if (m := other.poll(0.5)) is not None and m.error() else []))
    finally:
        other.close()
    produce(env, topic, [b"y"])  # the share group still works
    wait_for(lambda: any(v == b"y" for _, v, _ in sharing.seen), 120, "the share group's next record")
    assert env.committed(consumer_group, topic) == {0: 1}


def assert_group_id_not_found(error: KafkaError | None) -> None:
    """GROUP_ID_NOT_FOUND (69), or librdkafka's fatal error made of it (_FATAL, "The group id does not exist")."""
    assert error is not None and (error.code() == KafkaError.GROUP_ID_NOT_FOUND or (
        error.code() == KafkaError._FATAL and "group id does not exist" in error.str())), error


def test_a_topic_created_after_the_subscription_joins_the_share_assignment(gateway_env, members):
    """The member subscribes to a topic that does not exist yet; once it is created, the query's topic metadata
    refresh bumps the group epoch and the simple assignor gives its partitions to the member (tansu has no
    CreatePartitions, so a new topic stands for a topic's new partitions: the same metadata change)."""
    env = gateway_env
    first, group = env.topic(partitions=1), share_group(env)
    later = f"later-{uuid.uuid4().hex[:8]}"
    produce(env, first, [b"first"])
    member = members.start(env, group, first, subscribe=[first, later])
    wait_for(lambda: member.seen, 120, "the first record")
    env.topic(partitions=2, name=later)
    producer = Producer({"bootstrap.servers": env.broker})
    for partition in (0, 1):
        producer.produce(later, b"later-%d" % partition, partition=partition)
    producer.flush(30)
    wait_for(lambda: {v for _, v, _ in member.seen} >= {b"later-0", b"later-1"}, 120,
             "the records of the topic created later")


def test_a_share_partition_is_served_by_one_gateway_at_a_time(gateway_env, members, holding):
    """A member on a second gateway wants the share-partition a member on the first sits on: the first gateway hands
    it over (after holding it `share.partition.handover.ms`), the held records go to the second gateway's member, and
    the first member's acceptance of them, afterwards, is refused: they were never acquired by both at once."""
    env = gateway_env
    topic, group = env.topic(partitions=1), share_group(env, share_record_lock_duration_ms=LONG_LOCK_MS)
    produce(env, topic, [b"a", b"b", b"c"])
    process, held = holding(group, topic)  # through the first gateway
    other = members.start(env, group, topic, bootstrap=env.second.bootstrap_servers)
    # only a gateway holding the share-partition serves its records: the second one's member gets them once handed over
    wait_for(lambda: {o for o, _, _ in other.seen} >= set(held), 180, "the held records, handed over")
    process.stdin.write("accept\n")
    process.stdin.flush()
    assert json.loads(process.stdout.readline()), "the first member's late acceptance was answered as accepted"

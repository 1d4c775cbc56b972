"""KIP-848 consumer groups end to end: unmodified librdkafka consumers (confluent-kafka 2.16.1) with
`group.protocol=consumer` through the gateway, the real query behind it. The coordinator computes the assignment
(`uniform`) and each member reconciles through its heartbeats: a member joining takes only what moves, nobody stops
consuming, the admin client describes the group as a consumer group with its members' epochs and assignments, a
killed member's partitions move after the session timeout (12 s here, `GATEWAY_PROPERTIES`; heartbeats every 5 s,
Kafka's default), a static member comes back to its partitions, a regex subscription picks up a topic created
later, a classic kafka-python consumer shares a group with a consumer-protocol one (the group converted both
ways, `group.consumer.migration.policy=bidirectional`), and a member refuses another principal's heartbeats."""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient
from kafka import KafkaProducer

from gateway.upstream.kafka_apis import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from state.errors import Errors
from tests.gateway.conftest import (
    KAFKA_PYTHON,
    GatewayEnv,
    Member,
    Members,
    balanced,
    consumed,
    produce,
    wait_for,
)
from tests.gateway.raw import Connection, login

pytestmark = [pytest.mark.spark, pytest.mark.broker]

CLIENT = "confluent-kafka"
CONSUMER = {"group.protocol": "consumer"}


def start(members: Members, env: GatewayEnv, topic: str, group: str, **config) -> Member:
    return members.start(CLIENT, env.bootstrap, topic, group, **CONSUMER, **config)


class Producing:
    """Records into every partition of a topic, continuously, until stopped (through the gateway)."""

    def __init__(self, env: GatewayEnv, topic: str, partitions: int = 6) -> None:
        self._producer = KafkaProducer(bootstrap_servers=env.bootstrap, linger_ms=5)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(topic, partitions), daemon=True)
        self._thread.start()

    def _run(self, topic: str, partitions: int) -> None:
        while not self._stop.is_set():
            for p in range(partitions):
                self._producer.send(topic, value=b"x", partition=p)
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._producer.flush()
        self._producer.close()


def test_three_form_consume_everything_and_a_fourth_takes_only_what_moves(gateway_env: GatewayEnv,
                                                                          members: Members):
    topic = gateway_env.topic()
    group = f"cp-{topic}"
    produce(gateway_env, topic, 20)
    first = [start(members, gateway_env, topic, group) for _ in range(3)]
    wait_for(lambda: balanced(first, 6) and sorted(len(m.owned) for m in first) == [2, 2, 2]
             and sum(consumed(m) for m in first) >= 120, what="3 members own 2 partitions each, 120 consumed",
             group=first)
    wait_for(lambda: gateway_env.committed(group, topic) == {p: 20 for p in range(6)}, what="everything committed",
             group=first)
    before = [set(m.owned) for m in first]
    revokes = [len(m.of("revoke")) for m in first]
    consumed_before = [consumed(m) for m in first]
    producing = Producing(gateway_env, topic)
    try:
        fourth = start(members, gateway_env, topic, group)
        everyone = first + [fourth]
        wait_for(lambda: balanced(everyone, 6) and sorted(len(m.owned) for m in everyone) == [1, 1, 2, 2],
                 what="4 members own 6 partitions", group=everyone)
    finally:
        producing.stop()
    for member, owned, n in zip(first, before, revokes):
        revoked = {p for e in member.of("revoke")[n:] for p in e["partitions"]}
        assert revoked == owned - member.owned, (  # only what moved was revoked: the rest was kept throughout
            [e for e in member.events if e["event"] != "consumed"],
            [e for e in fourth.events if e["event"] != "consumed"])
        assert member.owned <= owned
    # the fewest moves: what the fourth owns, and nothing else (uniform is sticky)
    assert sum(len(owned - m.owned) for m, owned in zip(first, before)) == len(fourth.owned)
    # the group went on consuming while the fourth joined (what each member kept, it never gave up: above)
    assert sum(consumed(m) for m in first) > sum(consumed_before)
    epoch = describe(gateway_env, group, everyone)
    # the heartbeats that changed nothing were answered by the gateway from the group's view (its fast path), and
    # reported to the coordinator in Liveness requests; the group stayed as it was (above)
    wait_for(lambda: any(json.loads(r.value)["api"] == "Liveness" for r in gateway_env.run.read(
        gateway_env.run.topics.requests) if r.key == group.encode()), what="a Liveness request", group=everyone)
    assert {m.member_epoch for m in describe_v1(gateway_env, group).members} == {epoch}


def describe(env: GatewayEnv, group: str, everyone: list[Member]) -> int:
    """The admin client (librdkafka's, which asks ConsumerGroupDescribe first) shows a consumer group, each member
    with what it owns; ConsumerGroupDescribe v1 itself shows the member epochs, which confluent-kafka does not."""
    admin = AdminClient({"bootstrap.servers": env.bootstrap})
    described = wait_for(lambda: (d := admin.describe_consumer_groups([group], request_timeout=30)[group].result())
                         .state.name == "STABLE" and d, what="the group is Stable", group=everyone)
    assert described.type.name == "CONSUMER" and described.partition_assignor == "uniform"
    assert len(described.members) == 4
    assert sorted(sorted(tp.partition for tp in m.assignment.topic_partitions) for m in described.members) == sorted(
        sorted(m.owned) for m in everyone)
    assert all(m.assignment.topic_partitions == m.target_assignment.topic_partitions for m in described.members)
    g = describe_v1(env, group)
    assert g.error_code == 0 and g.group_state == "Stable" and g.group_epoch == g.assignment_epoch >= 4
    assert [m.member_epoch for m in g.members] == [g.group_epoch] * 4
    assert {m.member_type for m in g.members} == {1}  # the consumer protocol's members
    return g.group_epoch


def describe_v1(env: GatewayEnv, group: str):
    connection = Connection(env.bootstrap)
    try:
        request = ConsumerGroupDescribeRequest[1](group_ids=[group], include_authorized_operations=False)
        (described,) = connection.call(request, 1, ConsumerGroupDescribeResponse).groups
    finally:
        connection.close()
    return described


class RegexSubscriber:
    """A member subscribed with a regular expression (KIP-848's SubscribedTopicRegex) to `<prefix>-.*`, and a topic
    of that prefix created once the coordinator resolved the expression (its record written). Kafka resolves a
    group's expressions again when topics were created, at most every 10 s (REGEX_BATCH_REFRESH_MIN_INTERVAL_MS),
    and the member hears of the new target at its next heartbeat (every 5 s): it runs beside a test that waits out
    a session timeout anyway, rather than adding those seconds to the suite."""

    def __init__(self, env: GatewayEnv, members: Members) -> None:
        prefix = f"rx{uuid.uuid4().hex[:6]}"
        self.env, self.group = env, f"cp-regex-{prefix}"
        self.first = env.topic(2, f"{prefix}-a")
        self.member = start(members, env, f"^{prefix}-.*", self.group)
        self.later = f"{prefix}-b"

    def resolved(self) -> bool:
        return any(r.key is not None and json.loads(r.key).get("version") == 16 and self.group in r.key.decode()
                   for r in self.env.run.read(self.env.run.topics.records))

    def create_later_topic(self) -> None:
        wait_for(self.resolved, what="the expression resolved", group=[self.member])
        self.env.topic(3, self.later)
        produce(self.env, self.later, 5, partitions=3)

    def check_picked_up(self) -> None:
        wait_for(lambda: self.env.committed(self.group, self.later) == {0: 5, 1: 5, 2: 5},
                 what=f"{self.later} consumed", group=[self.member])
        assigned = {t for e in self.member.of("assign") for t in e["topics"]}
        assert assigned == {self.first, self.later} and not self.member.of("revoke") and not self.member.of("lost")


def test_a_member_acts_only_for_the_principal_that_joined_it(gateway_env: GatewayEnv):
    """Alice's member joins through a SASL gateway; mallory, who knows its member id and epoch, is refused (30) its
    heartbeat (which the gateway would answer from the view for alice) and its leave, while alice's own heartbeats
    are answered. Raw heartbeats, as librdkafka sends them (a real client's SASL login through the gateway is
    test_kafka_python's)."""
    topic = gateway_env.topic()
    group = f"cp-principal-{topic}"
    member_id = str(uuid.uuid4())

    def heartbeat(connection: Connection, epoch: int, **fields):
        return connection.call(ConsumerGroupHeartbeatRequest[1](group_id=group, member_id=member_id,
                                                                member_epoch=epoch, **fields),
                               1, ConsumerGroupHeartbeatResponse)

    alice = login(gateway_env.sasl.bootstrap_servers, "alice", "alice-secret")
    mallory = login(gateway_env.sasl.bootstrap_servers, "mallory", "mallory-secret")
    try:
        answer = heartbeat(alice, 0, rebalance_timeout_ms=300_000, subscribed_topic_names=[topic],
                           topic_partitions=[])
        for leave in (False, True):
            # alice's heartbeat right before, so that a slow batch cannot end its session in between (its epoch
            # moves on once the driver's topic refresh brings the new topic)
            answer = heartbeat(alice, answer.member_epoch)
            assert answer.error_code == Errors.NONE and answer.member_epoch >= 1
            refused = heartbeat(mallory, -1 if leave else answer.member_epoch)
            assert refused.error_code == Errors.GROUP_AUTHORIZATION_FAILED
    finally:
        alice.close()
        mallory.close()
    assert [m.member_id for m in describe_v1(gateway_env, group).members] == [member_id]


def test_a_killed_member_s_partitions_move_after_the_session_timeout(gateway_env: GatewayEnv, members: Members):
    """A SIGKILLed member's partitions go to the survivor after the session timeout; meanwhile, in another group,
    a regex subscription picks up a topic created later (`RegexSubscriber`)."""
    regex = RegexSubscriber(gateway_env, members)
    topic = gateway_env.topic()
    group = f"cp-kill-{topic}"
    pair = [start(members, gateway_env, topic, group) for _ in range(2)]
    regex.create_later_topic()
    wait_for(lambda: balanced(pair, 6), what="2 members own 6 partitions", group=pair)
    survivor, victim = pair
    kept, revokes = set(survivor.owned), len(survivor.of("revoke"))
    victim.kill()
    wait_for(lambda: survivor.owned == set(range(6)), what="the survivor owns everything", group=pair)
    assert kept < survivor.owned and len(survivor.of("revoke")) == revokes  # it only gained
    regex.check_picked_up()


def test_a_static_member_comes_back_to_its_partitions(gateway_env: GatewayEnv, members: Members):
    topic = gateway_env.topic()
    group = f"cp-static-{topic}"
    other = start(members, gateway_env, topic, group, **{"group.instance.id": "other"})
    static = start(members, gateway_env, topic, group, **{"group.instance.id": "static"})
    wait_for(lambda: balanced([other, static], 6), what="2 static members own 6 partitions", group=[other, static])
    held, kept = set(static.owned), set(other.owned)
    revokes = len(other.of("revoke"))
    static.close()  # a static member's leave (epoch -2): its partitions wait for it
    again = start(members, gateway_env, topic, group, **{"group.instance.id": "static"})
    wait_for(lambda: again.owned == held, what="the restarted member owns its partitions again", group=[again])
    assert other.owned == kept and len(other.of("revoke")) == revokes


def test_a_classic_and_a_consumer_protocol_member_share_a_group_which_goes_back_to_classic(
        gateway_env: GatewayEnv, members: Members):
    """Kafka's online migration: a consumer-protocol member joining a classic group converts it, the classic
    kafka-python member is served inside the consumer group (told to rejoin, its JoinGroup/SyncGroup answered from
    the consumer group's assignment), both consume; when the consumer-protocol member leaves, the group is classic
    again and the kafka-python member takes everything back through an ordinary classic rebalance."""
    topic = gateway_env.topic()
    group = f"cp-migrate-{topic}"
    producing = Producing(gateway_env, topic)
    try:
        classic = members.start("kafka-python", gateway_env.bootstrap, topic, group, **KAFKA_PYTHON.fast)
        wait_for(lambda: classic.owned == set(range(6)), what="the classic member owns everything", group=[classic])
        modern = start(members, gateway_env, topic, group)
        both = [classic, modern]
        wait_for(lambda: balanced(both, 6), what="the two members share the 6 partitions", group=both)
        described = describe_v1(gateway_env, group)  # a consumer group now, with one member of each protocol
        assert described.error_code == 0
        assert sorted(m.member_type for m in described.members) == [0, 1]
        counts = [consumed(m) for m in both]
        wait_for(lambda: all(consumed(m) > n for m, n in zip(both, counts)), what="both consume", group=both)
        modern.close()  # its leave (epoch -1): the last consumer-protocol member is gone
        count = consumed(classic)
        wait_for(lambda: classic.owned == set(range(6)) and consumed(classic) > count,
                 what="the classic member owns and consumes everything again", group=both)
        assert describe_v1(gateway_env, group).error_code == 69  # GROUP_ID_NOT_FOUND: a classic group again
    finally:
        producing.stop()

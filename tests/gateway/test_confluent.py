"""librdkafka (confluent-kafka's Consumer and AdminClient, classic group protocol) through the gateway, unmodified.

The same as with kafka-python, and cooperative-sticky's incremental rebalancing: a member joining a stable group
takes partitions from the others without their giving up the rest.
"""

from __future__ import annotations

import pytest

from tests.gateway.conftest import GatewayEnv, Members, balanced, wait_for
from tests.gateway.test_kafka_python import consumed, produce

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.broker]

CLIENT = "confluent-kafka"
FAST = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 20000}


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_three_consumers_share_six_partitions(gateway_env: GatewayEnv, members: Members, strategy: str):
    topic = gateway_env.topic()
    group = [members.start(CLIENT, gateway_env.bootstrap, topic, f"ck-{strategy}-{topic}",
                           **{"partition.assignment.strategy": strategy}, **FAST) for _ in range(3)]
    wait_for(lambda: balanced(group, 6), what=f"{strategy}: 3 consumers own 6 partitions", group=group)
    assert sorted(len(m.owned) for m in group) == [2, 2, 2]


def test_cooperative_sticky_moves_only_what_the_new_member_takes(gateway_env: GatewayEnv, members: Members):
    topic = gateway_env.topic()
    config = {"partition.assignment.strategy": "cooperative-sticky", **FAST}
    first = [members.start(CLIENT, gateway_env.bootstrap, topic, f"ck-coop-{topic}", **config) for _ in range(2)]
    wait_for(lambda: balanced(first, 6), what="2 consumers own 6 partitions", group=first)
    before = [m.owned for m in first]
    revokes_before = [len(m.of("revoke")) for m in first]
    third = members.start(CLIENT, gateway_env.bootstrap, topic, f"ck-coop-{topic}", **config)
    group = first + [third]
    wait_for(lambda: balanced(group, 6) and sorted(len(m.owned) for m in group) == [2, 2, 2],
             what="3 consumers own 2 partitions each", group=group)
    for member, owned in zip(first, before):
        revoked = {p for e in member.of("revoke")[revokes_before[first.index(member)]:] for p in e["partitions"]}
        # Incremental: each gave up exactly what it lost and kept the rest throughout.
        assert revoked == owned - member.owned and len(revoked) == 1
        assert member.owned < owned


def test_a_killed_consumer_s_partitions_move_after_the_session_timeout(gateway_env: GatewayEnv, members: Members):
    topic = gateway_env.topic()
    group = [members.start(CLIENT, gateway_env.bootstrap, topic, f"ck-kill-{topic}", **FAST) for _ in range(3)]
    wait_for(lambda: balanced(group, 6), what="3 consumers own 6 partitions", group=group)
    group[0].kill()
    wait_for(lambda: balanced(group[1:], 6), what="the 2 survivors own all 6 partitions", group=group[1:])


def test_commits_survive_a_restart_of_the_consumers_and_of_the_query(gateway_env: GatewayEnv, members: Members):
    topic = gateway_env.topic()
    name = f"ck-commits-{topic}"
    produce(gateway_env, topic, 5)
    first = [members.start(CLIENT, gateway_env.bootstrap, topic, name, **FAST) for _ in range(2)]
    wait_for(lambda: sum(consumed(m) for m in first) >= 30, what="30 records consumed and committed", group=first)
    assert sum(consumed(m) for m in first) == 30
    for member in first:
        member.close()
    gateway_env.run.stop()
    gateway_env.run.start()
    produce(gateway_env, topic, 2)
    second = members.start(CLIENT, gateway_env.bootstrap, topic, name, **FAST)
    wait_for(lambda: consumed(second) >= 12, what="the 12 new records consumed", group=[second])
    assert consumed(second) == 12


def test_a_static_member_rejoins_without_a_rebalance(gateway_env: GatewayEnv, members: Members):
    topic = gateway_env.topic()
    name = f"ck-static-{topic}"
    static = {**FAST, "session.timeout.ms": 30000, "max.poll.interval.ms": 30000}
    a = members.start(CLIENT, gateway_env.bootstrap, topic, name, **{"group.instance.id": "a"}, **static)
    b = members.start(CLIENT, gateway_env.bootstrap, topic, name, **{"group.instance.id": "b"}, **static)
    wait_for(lambda: balanced([a, b], 6), what="2 static members own 6 partitions", group=[a, b])
    owned_a, owned_b, b_callbacks = a.owned, b.owned, len(b.of("assign")) + len(b.of("revoke"))
    a.close()  # a static member sends no LeaveGroup
    a2 = members.start(CLIENT, gateway_env.bootstrap, topic, name, **{"group.instance.id": "a"}, **static)
    wait_for(lambda: a2.owned == owned_a, what="the restarted static member got its partitions back", group=[a2, b])
    assert b.owned == owned_b and len(b.of("assign")) + len(b.of("revoke")) == b_callbacks


def test_admin_client_lists_describes_and_deletes_groups_and_lists_and_alters_offsets(gateway_env: GatewayEnv,
                                                                                      members: Members):
    topic = gateway_env.topic()
    name = f"ck-admin-{topic}"
    produce(gateway_env, topic, 3)
    member = members.start(CLIENT, gateway_env.bootstrap, topic, name, **FAST)
    wait_for(lambda: consumed(member) >= 18, what="18 records consumed", group=[member])
    admin = AdminClient({"bootstrap.servers": gateway_env.bootstrap})

    listed = {g.group_id: g for g in admin.list_consumer_groups(request_timeout=30).result().valid}
    assert listed[name].state.name == "STABLE"
    described = admin.describe_consumer_groups([name], request_timeout=30)[name].result()
    assert described.state.name == "STABLE" and described.partition_assignor == "range"
    (described_member,) = described.members
    assert sorted(tp.partition for tp in described_member.assignment.topic_partitions) == list(range(6))
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(name)])[name].result()
    assert {tp.partition: tp.offset for tp in offsets.topic_partitions} == {p: 3 for p in range(6)}

    member.close()
    wait_for(lambda: admin.describe_consumer_groups([name])[name].result().state.name == "EMPTY",
             what="the group is Empty")
    altered = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(name, [TopicPartition(topic, 0, 1)])])[name].result()
    assert [(tp.partition, tp.offset, tp.error) for tp in altered.topic_partitions] == [(0, 1, None)]
    offsets = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(name, [TopicPartition(topic, 0)])])[name].result()
    assert [tp.offset for tp in offsets.topic_partitions] == [1]

    admin.delete_consumer_groups([name], request_timeout=30)[name].result()
    listed = {g.group_id for g in admin.list_consumer_groups(request_timeout=30).result().valid}
    assert name not in listed
    assert admin.describe_consumer_groups([name])[name].result().state.name == "DEAD"

"""librdkafka (confluent-kafka's Consumer and AdminClient, classic group protocol) through the gateway, unmodified:
cooperative-sticky's incremental rebalancing (a member joining a stable group takes partitions from the others
without their giving up the rest) and the AdminClient (its consumer scenarios shared with kafka-python are in
test_consumers.py)."""

from __future__ import annotations

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.gateway.conftest import LIBRDKAFKA, GatewayEnv, Members, balanced, consumed, produce, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.broker]

CLIENT = LIBRDKAFKA.name
FAST = LIBRDKAFKA.fast


def test_cooperative_sticky_moves_only_what_the_new_member_takes(gateway_env: GatewayEnv, members: Members):
    topic = gateway_env.topic()
    config = {**LIBRDKAFKA.strategy("cooperative-sticky"), **FAST}
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

    member.close()  # its LeaveGroup answered: the group is Empty from then on, for every reader
    assert admin.describe_consumer_groups([name])[name].result().state.name == "EMPTY"
    listed = {g.group_id: g for g in admin.list_consumer_groups(request_timeout=30).result().valid}
    assert listed[name].state.name == "EMPTY"
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

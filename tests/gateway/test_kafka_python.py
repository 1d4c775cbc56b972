"""kafka-python 3.0.12's own KafkaConsumer and KafkaAdminClient through the gateway, unmodified.

Three consumers of a 6-partition topic per assignment strategy, a consumer killed with SIGKILL, commits that survive
a restart of the consumers and of the coordinator query, static membership, and the admin client.
"""

from __future__ import annotations

import pytest
from kafka import KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.protocol.consumer.group import LeaveGroupRequest, LeaveGroupResponse
from kafka.structs import OffsetAndMetadata

from gateway.process import start_gateway
from tests.gateway.conftest import GatewayEnv, Members, balanced, wait_for
from tests.gateway.raw import login

pytestmark = [pytest.mark.spark, pytest.mark.broker]

CLIENT = "kafka-python"
GROUP_AUTHORIZATION_FAILED = 30
FAST = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000, "max_poll_interval_ms": 20000}


def produce(env: GatewayEnv, topic: str, per_partition: int, partitions: int = 6) -> None:
    producer = KafkaProducer(bootstrap_servers=env.bootstrap)
    for p in range(partitions):
        for i in range(per_partition):
            producer.send(topic, value=b"%d" % i, partition=p)
    producer.flush()
    producer.close()


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_three_consumers_share_six_partitions(gateway_env: GatewayEnv, members: Members, strategy: str):
    topic = gateway_env.topic()
    group = [members.start(CLIENT, gateway_env.bootstrap, topic, f"kp-{strategy}-{topic}",
                           partition_assignment_strategy=[strategy], **FAST) for _ in range(3)]
    wait_for(lambda: balanced(group, 6), what=f"{strategy}: 3 consumers own 6 partitions", group=group)
    assert sorted(len(m.owned) for m in group) == [2, 2, 2]


def consumed(member) -> int:
    return sum(e["count"] for e in member.of("consumed"))


def test_a_killed_consumer_s_partitions_move_after_the_session_timeout(gateway_env: GatewayEnv, members: Members):
    topic = gateway_env.topic()
    group = [members.start(CLIENT, gateway_env.bootstrap, topic, f"kp-kill-{topic}", **FAST) for _ in range(3)]
    wait_for(lambda: balanced(group, 6), what="3 consumers own 6 partitions", group=group)
    victim, survivors = group[0], group[1:]
    victim.kill()
    wait_for(lambda: balanced(survivors, 6), what="the 2 survivors own all 6 partitions", group=survivors)


def test_commits_survive_a_restart_of_the_consumers_and_of_the_query(gateway_env: GatewayEnv, members: Members):
    topic = gateway_env.topic()
    name = f"kp-commits-{topic}"
    produce(gateway_env, topic, 5)
    first = [members.start(CLIENT, gateway_env.bootstrap, topic, name, **FAST) for _ in range(2)]
    wait_for(lambda: sum(consumed(m) for m in first) >= 30, what="30 records consumed and committed", group=first)
    assert sum(consumed(m) for m in first) == 30
    for member in first:
        member.close()
    gateway_env.run.stop()
    gateway_env.run.start()
    produce(gateway_env, topic, 2)
    (second,) = [members.start(CLIENT, gateway_env.bootstrap, topic, name, **FAST)]
    wait_for(lambda: consumed(second) >= 12, what="the 12 new records consumed", group=[second])
    # It resumed at the committed offsets: only the new records, every partition ending at offset 7.
    assert consumed(second) == 12
    ends = {}
    for event in second.of("consumed"):
        ends.update(event["offsets"])
    assert ends == {str(p): 7 for p in range(6)}


def test_a_static_member_rejoins_without_a_rebalance(gateway_env: GatewayEnv, members: Members):
    topic = gateway_env.topic()
    name = f"kp-static-{topic}"
    static = {**FAST, "session_timeout_ms": 30000}
    a = members.start(CLIENT, gateway_env.bootstrap, topic, name, group_instance_id="a", **static)
    b = members.start(CLIENT, gateway_env.bootstrap, topic, name, group_instance_id="b", **static)
    wait_for(lambda: balanced([a, b], 6), what="2 static members own 6 partitions", group=[a, b])
    owned_a, owned_b, b_callbacks = a.owned, b.owned, len(b.of("assign")) + len(b.of("revoke"))
    a.close()  # a static member sends no LeaveGroup
    a2 = members.start(CLIENT, gateway_env.bootstrap, topic, name, group_instance_id="a", **static)
    wait_for(lambda: a2.owned == owned_a, what="the restarted static member got its partitions back", group=[a2, b])
    assert b.owned == owned_b and len(b.of("assign")) + len(b.of("revoke")) == b_callbacks


def test_admin_client_lists_describes_and_deletes_groups_and_lists_and_alters_offsets(gateway_env: GatewayEnv,
                                                                                      members: Members):
    topic = gateway_env.topic()
    name = f"kp-admin-{topic}"
    produce(gateway_env, topic, 3)
    member = members.start(CLIENT, gateway_env.bootstrap, topic, name, **FAST)
    wait_for(lambda: consumed(member) >= 18, what="18 records consumed", group=[member])
    admin = KafkaAdminClient(bootstrap_servers=gateway_env.bootstrap)
    try:
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[name]["protocol_type"] == "consumer"
        described = admin.describe_groups([name])[name]
        assert described["group_state"] == "Stable" and described["protocol_data"] == "range"
        (described_member,) = described["members"]
        assert described_member["client_host"].startswith("/127.0.0.1")
        committed = admin.list_group_offsets({name: None})[name]
        assert {tp.partition: o.offset for tp, o in committed.items()} == {p: 3 for p in range(6)}

        member.close()
        wait_for(lambda: admin.describe_groups([name])[name]["group_state"] == "Empty", what="the group is Empty")
        result = admin.alter_group_offsets(name, {TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)})
        assert [e.__name__ for e in result.values()] == ["NoError"]
        committed = admin.list_group_offsets({name: [TopicPartition(topic, 0)]})[name]
        assert committed[TopicPartition(topic, 0)].offset == 1

        assert admin.delete_groups([name]) == {name: "OK"}
        assert name not in {g["group_id"] for g in admin.list_groups()}
        assert admin.describe_groups([name])[name]["group_state"] == "Dead"
    finally:
        admin.close()


def test_two_gateways_side_by_side_serve_one_group(gateway_env: GatewayEnv, members: Members, tmp_path):
    second = start_gateway(gateway_env.broker, gateway_env.topics, log_path=tmp_path / "second-gateway.log")
    try:
        topic = gateway_env.topic()
        name = f"kp-two-gateways-{topic}"
        group = [members.start(CLIENT, servers, topic, name, **FAST)
                 for servers in (gateway_env.bootstrap, second.bootstrap_servers, second.bootstrap_servers)]
        wait_for(lambda: balanced(group, 6), what="3 consumers on 2 gateways own 6 partitions", group=group)
        admin = KafkaAdminClient(bootstrap_servers=second.bootstrap_servers)
        assert len(admin.describe_groups([name])[name]["members"]) == 3
        admin.close()
    finally:
        second.stop()


def test_a_member_acts_only_for_the_principal_that_joined_it(gateway_env: GatewayEnv, members: Members, tmp_path):
    users = tmp_path / "users.properties"
    users.write_text("alice=alice-secret\nmallory=mallory-secret\n")
    secured = start_gateway(gateway_env.broker, gateway_env.topics, args=["--sasl-users", str(users)],
                            log_path=tmp_path / "sasl-gateway.log")
    try:
        topic = gateway_env.topic()
        name = f"kp-principal-{topic}"
        alice = members.start(CLIENT, secured.bootstrap_servers, topic, name, security_protocol="SASL_PLAINTEXT",
                              sasl_mechanism="PLAIN", sasl_plain_username="alice",
                              sasl_plain_password="alice-secret", **FAST)
        wait_for(lambda: alice.owned == set(range(6)), what="alice's consumer owns 6 partitions", group=[alice])
        admin = KafkaAdminClient(bootstrap_servers=gateway_env.bootstrap)
        (member,) = admin.describe_groups([name])[name]["members"]
        admin.close()
        # mallory knows the member id and asks for the member to leave: refused, the member stays.
        mallory = login(secured.bootstrap_servers, "mallory", "mallory-secret")
        leave = mallory.call(LeaveGroupRequest[4](group_id=name, members=[
            LeaveGroupRequest.MemberIdentity(member_id=member["member_id"], group_instance_id=None)]), 4,
            LeaveGroupResponse)
        mallory.close()
        assert [m.error_code for m in leave.members] == [GROUP_AUTHORIZATION_FAILED]
        # Answered after the LeaveGroup, so it sees its effect: none.
        admin = KafkaAdminClient(bootstrap_servers=gateway_env.bootstrap)
        described = admin.describe_groups([name])[name]
        admin.close()
        assert described["group_state"] == "Stable"
        assert [m["member_id"] for m in described["members"]] == [member["member_id"]]
    finally:
        secured.stop()

"""kafka-python 3.0.12 through the gateway, unmodified: its KafkaAdminClient and a member that refuses another
principal (its consumer scenarios, one group on two gateways among them, are in test_consumers.py, shared with
librdkafka)."""

from __future__ import annotations

import pytest
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.protocol.consumer.group import LeaveGroupRequest, LeaveGroupResponse
from kafka.structs import OffsetAndMetadata

from state.errors import Errors
from tests.gateway.conftest import KAFKA_PYTHON, GatewayEnv, Members, consumed, produce, wait_for
from tests.gateway.raw import login

pytestmark = [pytest.mark.spark, pytest.mark.broker]

CLIENT = KAFKA_PYTHON.name
FAST = KAFKA_PYTHON.fast


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

        member.close()  # its LeaveGroup answered: the group is Empty from then on, for every reader
        assert admin.describe_groups([name])[name]["group_state"] == "Empty"
        assert {g["group_id"]: g["group_state"] for g in admin.list_groups()}[name] == "Empty"
        result = admin.alter_group_offsets(name, {TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)})
        assert [e.__name__ for e in result.values()] == ["NoError"]
        committed = admin.list_group_offsets({name: [TopicPartition(topic, 0)]})[name]
        assert committed[TopicPartition(topic, 0)].offset == 1

        assert admin.delete_groups([name]) == {name: "OK"}
        assert name not in {g["group_id"] for g in admin.list_groups()}
        assert admin.describe_groups([name])[name]["group_state"] == "Dead"
    finally:
        admin.close()


def test_a_member_acts_only_for_the_principal_that_joined_it(gateway_env: GatewayEnv, members: Members):
    secured = gateway_env.sasl
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
    assert [m.error_code for m in leave.members] == [Errors.GROUP_AUTHORIZATION_FAILED]
    # Answered after the LeaveGroup, so it sees its effect: none.
    admin = KafkaAdminClient(bootstrap_servers=gateway_env.bootstrap)
    described = admin.describe_groups([name])[name]
    admin.close()
    assert described["group_state"] == "Stable"
    assert [m["member_id"] for m in described["members"]] == [member["member_id"]]

"""Unmodified consumers through the gateway: kafka-python 3.0.12's KafkaConsumer and librdkafka's (confluent-kafka)
Consumer on the classic protocol, each in its own process, the same scenarios for both.

Three consumers on two gateways share a 6-partition topic with each of the client's assignment strategies, committing
after every record; a consumer killed with SIGKILL has its partitions moved after the session timeout, while the
others, heartbeating through the gateway's fast path, keep theirs; commits survive a restart of the consumers and
of the coordinator query; a static member rejoins without a rebalance.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.gateway.conftest import (KAFKA_PYTHON, LIBRDKAFKA, Client, GatewayEnv, Members, balanced, consumed,
                                    produce, wait_for)

pytestmark = [pytest.mark.spark, pytest.mark.broker]

CLIENTS = [KAFKA_PYTHON, LIBRDKAFKA]


@pytest.mark.parametrize("client, strategy", [(c, s) for c in CLIENTS for s in c.strategies],
                         ids=lambda x: getattr(x, "name", x))
def test_three_consumers_on_two_gateways_share_six_partitions_and_commit_every_record(
        gateway_env: GatewayEnv, members: Members, client: Client, strategy: str):
    topic = gateway_env.topic()
    name = f"{strategy}-{topic}"
    produce(gateway_env, topic, 10)
    gateways = (gateway_env.bootstrap, gateway_env.second.bootstrap_servers, gateway_env.bootstrap)
    group = [members.start(client.name, servers, topic, name, commit="record", **client.strategy(strategy),
                           **client.fast) for servers in gateways]
    wait_for(lambda: balanced(group, 6) and sorted(len(m.owned) for m in group) == [2, 2, 2],
             what=f"{strategy}: 3 consumers own 2 partitions each", group=group)
    # Every record committed: each partition's committed offset is its end, whoever consumed it.
    wait_for(lambda: gateway_env.committed(name, topic) == {p: 10 for p in range(6)},
             what="every record committed", group=group)
    assert sum(consumed(m) for m in group) >= 60


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.name)
def test_a_killed_consumer_s_partitions_move_after_the_session_timeout(gateway_env: GatewayEnv, members: Members,
                                                                        client: Client):
    topic = gateway_env.topic()
    name = f"kill-{topic}"
    group = [members.start(client.name, gateway_env.bootstrap, topic, name, **client.fast) for _ in range(3)]
    wait_for(lambda: balanced(group, 6), what="3 consumers own 6 partitions", group=group)
    if client is KAFKA_PYTHON:  # once: the gateway coalesces every client's heartbeats alike
        # Members that keep heartbeating keep their partitions past their session timeout (6 s), though the
        # coordinator hears their heartbeats only coalesced, in Liveness requests.
        callbacks = [len(m.of("assign")) + len(m.of("revoke")) + len(m.of("lost")) for m in group]
        time.sleep(7)
        assert [len(m.of("assign")) + len(m.of("revoke")) + len(m.of("lost")) for m in group] == callbacks
        control = [json.loads(r.value) for r in gateway_env.run.read(gateway_env.run.topics.requests)
                   if r.key == name.encode()]
        assert any(r["api"] == "Liveness" for r in control)
    victim, survivors = group[0], group[1:]
    victim.kill()
    wait_for(lambda: balanced(survivors, 6), what="the 2 survivors own all 6 partitions", group=survivors)


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.name)
def test_commits_survive_a_restart_of_the_consumers_and_of_the_query(gateway_env: GatewayEnv, members: Members,
                                                                      client: Client):
    topic = gateway_env.topic()
    name = f"commits-{topic}"
    produce(gateway_env, topic, 5)
    first = [members.start(client.name, gateway_env.bootstrap, topic, name, **client.fast) for _ in range(2)]
    wait_for(lambda: sum(consumed(m) for m in first) >= 30, what="30 records consumed and committed", group=first)
    assert sum(consumed(m) for m in first) == 30
    for member in first:
        member.close()
    gateway_env.run.stop()
    gateway_env.run.start()
    produce(gateway_env, topic, 2)
    second = members.start(client.name, gateway_env.bootstrap, topic, name, **client.fast)
    wait_for(lambda: consumed(second) >= 12, what="the 12 new records consumed", group=[second])
    # It resumed at the committed offsets: only the new records, every partition ending at offset 7.
    assert consumed(second) == 12
    ends = {}
    for event in second.of("consumed"):
        ends.update(event["offsets"])
    assert ends == {str(p): 7 for p in range(6)}


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.name)
def test_a_static_member_rejoins_without_a_rebalance(gateway_env: GatewayEnv, members: Members, client: Client):
    topic = gateway_env.topic()
    name = f"static-{topic}"
    a = members.start(client.name, gateway_env.bootstrap, topic, name, **client.instance("a"), **client.static)
    b = members.start(client.name, gateway_env.bootstrap, topic, name, **client.instance("b"), **client.static)
    wait_for(lambda: balanced([a, b], 6), what="2 static members own 6 partitions", group=[a, b])
    owned_a, owned_b, b_callbacks = a.owned, b.owned, len(b.of("assign")) + len(b.of("revoke"))
    a.close()  # a static member sends no LeaveGroup
    a2 = members.start(client.name, gateway_env.bootstrap, topic, name, **client.instance("a"), **client.static)
    wait_for(lambda: a2.owned == owned_a, what="the restarted static member got its partitions back", group=[a2, b])
    assert b.owned == owned_b and len(b.of("assign")) + len(b.of("revoke")) == b_callbacks

"""Back-pressure through the protocol (issue 26, item 5; docs/wire-format.md, "The heartbeat interval"): when
heartbeats wait long for their micro-batch, the coordinator tells consumer-protocol members a longer heartbeat
interval, and an unmodified librdkafka consumer (which times a heartbeat out after the interval it was told) follows
it and keeps its partitions.

Batches are made long the cheapest honest way: a query of its own whose trigger fires every 1.5 s
(`trigger.interval.ms`), so a request waits up to 1.5 s for its batch, against a configured interval of 1 s and a
15 s session (at most 5 s told: a third of it, which keeps the test short)."""

from __future__ import annotations

import json
import time

import pytest

from gateway.front.process import start_gateway
from tests.gateway.conftest import GATEWAY_PROPERTIES, GatewayEnv, Members, consumed, produce, wait_for
from tests.support.coordinator import new_run

pytestmark = [pytest.mark.spark, pytest.mark.broker]

CONFIGURED_MS = 1_000
SLOW_BATCHES = {
    **GATEWAY_PROPERTIES,
    "trigger.interval.ms": "1500",
    "group.consumer.heartbeat.interval.ms": str(CONFIGURED_MS),
    "group.consumer.min.heartbeat.interval.ms": str(CONFIGURED_MS),
    "group.consumer.session.timeout.ms": "15000",
}
ATTEMPTS = 5
ATTEMPT_S = 15.0
"""A join is about two heartbeats that reach the coordinator (the gateway answers the stable member's from the
group's view), and each waits for its batch anywhere from 0 to the 1.5 s trigger: both within a quarter of the
interval (which tells nothing longer) about one join in 36. A fresh group joins again then, up to `ATTEMPTS`."""


def intervals_told(env: GatewayEnv, group: str) -> list[int]:
    """The heartbeat intervals of the coordinator's ConsumerGroupHeartbeat answers to `group`, in order."""
    answers = [json.loads(r.value) for r in env.run.read(env.run.topics.responses)]
    return [a["heartbeat_interval_ms"] for a in answers
            if a.get("group_id") == group and a.get("heartbeat_interval_ms") is not None]


def heard_by_liveness(env: GatewayEnv, group: str) -> bool:
    """Whether the gateway reported a heartbeat of `group` it answered from the view (a `Liveness` request)."""
    return any(json.loads(r.value).get("api") == "Liveness"
               for r in env.run.read(env.run.topics.requests) if r.key == group.encode())


def test_a_member_is_told_a_longer_interval_when_batches_run_long_and_keeps_its_partitions(
        spark, broker, tmp_path_factory, members: Members):
    run = new_run(spark, broker, tmp_path_factory.mktemp("slow-batches"), SLOW_BATCHES)
    logs = tmp_path_factory.mktemp("slow-batches-log")
    gateway = None
    try:
        gateway = start_gateway(broker, {k: v for k, v in run.props.items() if k.startswith(("topic.", "group."))},
                                log_path=logs / "gateway.log")
        env = GatewayEnv(run, gateway, broker, logs)
        for attempt in range(1, ATTEMPTS + 1):
            topic = env.topic(partitions=2)
            group = f"interval-{topic}"
            produce(env, topic, 5, partitions=2)
            member = members.start("confluent-kafka", env.bootstrap, topic, group, **{"group.protocol": "consumer"})
            wait_for(lambda: member.owned == {0, 1} and consumed(member) >= 10,
                     what="the member owns and consumed both", group=[member])
            try:
                told = wait_for(lambda: [ms for ms in intervals_told(env, group) if ms > CONFIGURED_MS],
                                timeout_s=ATTEMPT_S if attempt < ATTEMPTS else 120.0,
                                what=f"a longer interval told ({attempt} groups joined)", group=[member])
                break
            except TimeoutError:
                if attempt == ATTEMPTS:
                    raise
                member.close()  # its join's heartbeats each met a batch within a quarter of the interval
        assert max(told) <= 5_000  # a third of the session
        # The member heartbeats at the longer interval and stays: after the longest interval told, it still owns
        # both partitions and consumes what is written then; it never gave up or lost a partition.
        time.sleep(max(told) / 1000 + 1)
        produce(env, topic, 5, partitions=2)
        wait_for(lambda: consumed(member) >= 20, what="the records written later consumed", group=[member])
        assert member.owned == {0, 1} and member.of("revoke") == [] and member.of("lost") == []
        # It heartbeat again after the join: answered by the coordinator, or by the gateway from the group's view
        # (whose interval is the coordinator's longer one) and then reported to the coordinator in a Liveness request.
        wait_for(lambda: len(intervals_told(env, group)) >= 2 or heard_by_liveness(env, group),
                 what="a heartbeat after the join", group=[member])
    finally:
        run.close()
        if gateway is not None:
            gateway.stop()

"""The requests topic rotated under a committing consumer (`common.generations`, issue 37): a query that starts a
new generation every 15 offsets, a gateway in front of it, and librdkafka committing each record synchronously,
the records coming in waves a few batches apart (each wave's commits go to the generation the gateway writes then).
Every commit is committed, and the group's requests read generation after generation hold them in the order made.
(No replay of those requests is compared with the records topic, as tests/gateway/test_commit_per_record.py does:
the replay runs at the records' timestamps, and on a loaded machine a join the query applied batches after its
record's time has its member expire in the replay.)"""

from __future__ import annotations

import json
import time
from typing import Iterator

import pytest
from kafka.admin import KafkaAdminClient

from common.generations import generations
from gateway.front.process import start_gateway
from tests.gateway.conftest import GATEWAY_PROPERTIES, GatewayEnv, Members, produce, wait_for
from tests.gateway.fast.test_fast_path import control_records, stored_offsets
from tests.gateway.test_commit_per_record import committed
from tests.support.coordinator import new_run

pytestmark = [pytest.mark.spark, pytest.mark.broker]

WAVES = 4
PER_WAVE = 20
RECORDS = WAVES * PER_WAVE
ROTATE_RECORDS = 15


@pytest.fixture
def rotating_env(spark, broker, tmp_path) -> Iterator[GatewayEnv]:
    run = new_run(spark, broker, tmp_path, {**GATEWAY_PROPERTIES,
                                            "topic.requests.rotate.records": str(ROTATE_RECORDS)})
    gateway = None
    try:
        gateway = start_gateway(broker, {k: v for k, v in run.props.items() if k.startswith(("topic.", "group."))},
                                log_path=tmp_path / "gateway.log")
        yield GatewayEnv(run, gateway, broker, tmp_path)
    finally:
        run.close()
        if gateway is not None:
            gateway.stop()


def test_commits_through_a_gateway_keep_their_order_across_generations_of_the_requests_topic(
        rotating_env: GatewayEnv, members: Members):
    env = rotating_env
    topic = env.topic(partitions=1)
    group = f"rotated-{topic}"
    member = members.start("confluent-kafka", env.bootstrap, topic, group, commit="record",
                           **{"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
    for wave in range(1, WAVES + 1):
        produce(env, topic, PER_WAVE, partitions=1)
        wait_for(lambda: committed(env, group, topic) == {0: wave * PER_WAVE}, what=f"wave {wave} committed",
                 group=[member])
        time.sleep(1.0)
    member.close()
    admin = KafkaAdminClient(bootstrap_servers=env.broker)
    try:
        topics = admin.list_topics()
    finally:
        admin.close()
    assert len(generations(env.run.topics.requests, topics)) >= 3  # the query moved on at least twice
    assert "writing requests to" in (env.logs / "gateway.log").read_text()  # and the gateway with it
    commits = [p["committed_offset"] for r in control_records(env, group)
               if (body := json.loads(r.value))["api"] == "OffsetCommit"
               for t in body["topics"] if t["name"] == topic for p in t["partitions"]]
    assert sorted(set(commits)) == list(range(1, RECORDS + 1))
    assert commits == sorted(commits)
    stored = stored_offsets(env, group)
    assert stored == {(topic, 0): RECORDS}
    assert env.run.query.isActive

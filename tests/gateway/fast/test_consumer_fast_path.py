"""A KIP-848 consumer group's OffsetCommit and OffsetFetch answered by the gateway from the group's view
(docs/gateway.md, "Fast answers"), against the real query, with unmodified librdkafka consumers
(`group.protocol=consumer`) that commit every record synchronously: their commits are acknowledged without a
micro-batch (each written once, carrying the answer given, and checked by the coordinator); a member that takes
over the group's partitions after the first left fetches the first one's last commits from the view the leave
published (read your writes: it consumes only what came after), without a micro-batch where nothing else was
written to the group's requests partition."""

from __future__ import annotations

import json

import pytest

from tests.gateway.conftest import GatewayEnv, Members, consumed, produce, wait_for
from tests.gateway.fast.test_offset_fetch_view import committed_by_librdkafka

pytestmark = [pytest.mark.spark, pytest.mark.broker]

RECORDS = 20


def test_a_consumer_group_s_commits_and_fetches_are_answered_from_its_view(gateway_env: GatewayEnv,
                                                                           members: Members):
    topic = gateway_env.topic(partitions=2)
    group = f"cp-fast-{topic}"
    produce(gateway_env, topic, RECORDS, partitions=2)
    # the coordinator knows the topic before the member joins (else its first assignment waits for a heartbeat)
    wait_for(lambda: any(r.key == b"topic-metadata" and topic.encode() in r.value for r in gateway_env.run.read(
        gateway_env.run.topics.requests)), what="the topic's metadata on the control topic")
    first = start(members, gateway_env, topic, group)
    wait_for(lambda: consumed(first) >= 2 * RECORDS, what="everything consumed", group=[first])
    first.close()  # it leaves: the coordinator's answer publishes a view with every commit before it
    produce(gateway_env, topic, 5, partitions=2)
    second = start(members, gateway_env, topic, group)
    wait_for(lambda: consumed(second) >= 10, what="the new records consumed", group=[second])
    wait_for(lambda: gateway_env.committed(group, topic) == {0: RECORDS + 5, 1: RECORDS + 5},
             what="the new records committed", group=[second])
    # Its fetch read the first member's last commits: it consumed only the new records.
    assert consumed(second) == 10 and first.of("commit_failed") == second.of("commit_failed") == []

    records = gateway_env.run.read(gateway_env.run.topics.requests)
    written = [(r.partition, r.offset, json.loads(r.value)) for r in records if r.key == group.encode()]
    commits = [body for _, _, body in written if body["api"] == "OffsetCommit"]
    # Each commit went to the requests topic once; those the view accepted carry the answer given (here all but
    # those that met a view not fresh enough, on a busy machine), and the coordinator stored them (above).
    assert len(commits) == 2 * RECORDS + 10
    answered = [c for c in commits if "answered" in c]
    assert len(answered) >= RECORDS, f"{len(answered)} of {len(commits)} commits answered from the view"
    assert all(c["answered"] == {"error_code": 0, "partition_errors": []} for c in answered)
    # The second member's fetch, once it got its partitions, was answered from the view (it is written nowhere),
    # unless something other than its own heartbeats went to the group's partition before its first commit.
    partition, joined = [(p, o) for p, o, body in written if body["api"] == "ConsumerGroupHeartbeat"
                         and body["member_epoch"] == 0][-1]
    first_commit = next(o for _, o, body in written if body["api"] == "OffsetCommit" and o > joined)
    others = [r for r in records if r.partition == partition and joined < r.offset < first_commit and (
        r.key != group.encode() or json.loads(r.value)["api"] not in ("ConsumerGroupHeartbeat", "OffsetFetch"))]
    fetches = [o for _, o, body in written if body["api"] == "OffsetFetch" and joined < o < first_commit]
    if not others:
        assert fetches == []
    assert committed_by_librdkafka(gateway_env.bootstrap, group, topic) == {0: RECORDS + 5, 1: RECORDS + 5}


def start(members: Members, env: GatewayEnv, topic: str, group: str):
    return members.start("confluent-kafka", env.bootstrap, topic, group, commit="record",
                         **{"group.protocol": "consumer"})

"""Rebuild after a lost checkpoint, against a real broker: the records topic becomes LoadGroup requests placed
where the new query starts reading, and the core loads each group from them (no Spark needed to check that)."""

from __future__ import annotations

import json
import logging
import uuid

import pytest

from common import config as job_config
from common.topics import ensure_topics
from schemas.messages import OffsetCommitKey
from state.api import encode
from state.batch import decode_state, step_group
from state.config import CoordinatorConfig
from state.classic.group import GroupState
from streaming.monitoring.group_watch import GroupWatch
from streaming.recovery.rebuild import read_ahead, rebuild
from tests.state.context import GroupContext
from tests.support.kafka import producer, read_topic, send_raw


def offset_key(group_id: str, topic: str, partition: int) -> bytes:
    return encode(OffsetCommitKey(group_id, topic, partition))

pytestmark = pytest.mark.broker


def job_topics(broker: str) -> tuple[dict, dict]:
    """The job's properties on fresh topics, created, and the client settings to reach them."""
    suffix = uuid.uuid4().hex[:8]
    props = job_config.load(None, {"bootstrap.servers": broker, "topic.requests": f"req-{suffix}",
                                   "topic.responses": f"resp-{suffix}", "topic.records": f"rec-{suffix}",
                                   "topic.dead.letters": f"dlq-{suffix}", "topic.timers": f"timers-{suffix}",
                                   "topic.views": f"views-{suffix}"})
    client = {"bootstrap_servers": broker}
    ensure_topics(client, props)
    return props, client


@pytest.mark.parametrize("reader", ["kafka-python", "confluent"])
def test_rebuild_publishes_one_load_per_live_group_where_the_query_will_start(broker, caplog, reader):
    """With either client: librdkafka reads the records topic and publishes the loads by default (`kafka.client`),
    kafka-python where librdkafka cannot take the settings."""
    props, client = job_topics(broker)

    live = GroupContext(group_id="live")
    leader, _ = live.stable_group(2)
    live.commit({("t", 0): 7}, leader, live.group.generation)
    deleted = GroupContext(group_id="deleted")
    deleted.commit({("t", 0): 1})  # a simple group ...
    deleted.step({"api": "DeleteGroups", "request_id": "d", "group_id": "deleted"})  # ... deleted since
    prod = producer(broker)
    for key, value in live.records + deleted.records:
        prod.send(props["topic.records"], key=key, value=value)
    not_utf8 = prod.send(props["topic.records"], key=offset_key("live", "t", 1), value=b"\xff{}").get(timeout=30)
    not_json = prod.send(props["topic.records"], key=offset_key("live", "t", 2), value=b"{").get(timeout=30)
    prod.flush()
    send_raw(prod, props["topic.requests"], b'{"api":"Heartbeat"}', key=b"live")  # handled before the loss

    watch = GroupWatch(props["topic.records"], client, reader)
    with caplog.at_level(logging.ERROR, logger="coordinator.rebuild"):
        starting = json.loads(rebuild(client, props["topic.records"], props["topic.requests"], reader,
                                      seen=watch.seed))[props["topic.requests"]]
    assert f"partition {not_utf8.partition} offset {not_utf8.offset} " in caplog.text  # reported, not carried
    # the driver's group watch starts from what the rebuild read, where it ended
    assert {s: n for s, n in watch.count_by_state().items() if n} == {"Stable": 1} and watch.poll() == []

    after_start = [r for r in read_topic(broker, props["topic.requests"]) if r.offset >= starting[str(r.partition)]]
    assert [r.key for r in after_start] == [b"live"]
    load = after_start[0].value
    step = step_group("live", None, [load], live.now_ms + 1_000, CoordinatorConfig())
    assert [reason.split(" cannot")[0] for _, reason in step.dead_letters] == [
        f"LoadGroup: records-topic partition {not_json.partition} offset {not_json.offset}"]
    group = decode_state(step.stored(None))
    assert group.state == GroupState.STABLE and set(group.members) == set(live.group.members)
    assert group.offsets[("t", 0)].offset == 7


def test_rebuild_brings_back_a_consumer_group_with_its_epochs_assignments_and_offsets(broker):
    """KIP-848's records (group epoch, target assignment, members' subscriptions and current assignments) through
    the records topic, read back as compaction leaves them: the loaded group is the one written."""
    from state.consumer.group import ConsumerGroup
    from state.consumer.stored import snapshot
    from tests.state.consumer.test_step import consumer_context

    props, client = job_topics(broker)
    source = consumer_context()
    source.consumer_join("A")
    source.commit({("t", 2): 11}, member_id="A", generation=1, version=9)
    source.consumer_join("B")
    source.consumer_heartbeat("A", 1)  # told to revoke half: the group is Reconciling
    source.consumer_join("C")
    source.consumer_heartbeat("C", -1)  # left: tombstones (the new target comes with the next heartbeat)
    prod = producer(broker)
    for key, value in source.records:
        prod.send(props["topic.records"], key=key, value=value)
    prod.flush()

    starting = json.loads(rebuild(client, props["topic.records"], props["topic.requests"]))[props["topic.requests"]]
    (load,) = [r.value for r in read_topic(broker, props["topic.requests"]) if r.offset >= starting[str(r.partition)]]
    step = step_group("g", None, [load], source.now_ms + 1_000, CoordinatorConfig(), topics=source.topics)
    assert step.dead_letters == []
    group = decode_state(step.stored(None))
    assert isinstance(group, ConsumerGroup) and set(group.members) == {"A", "B"}
    assert [r.encode() for r in snapshot(group)] == [r.encode() for r in snapshot(source.group)]
    assert group.state == source.group.state and group.offsets[("t", 2)].offset == 11
    assert group.members["A"].partitions_pending_revocation  # still revoking, as when the checkpoint was lost


def test_a_rebuild_read_ahead_of_the_lease_takes_what_was_written_since(broker):
    """The driver reads the records topic while its Spark session starts (`read_ahead`); a record written after
    that read (the last holder's, before its lease ran out) is in the load all the same."""
    props, client = job_topics(broker)
    live = GroupContext(group_id="live")
    leader, _ = live.stable_group(2)
    live.commit({("t", 0): 7}, leader, live.group.generation)
    prod = producer(broker)
    for key, value in live.records:
        prod.send(props["topic.records"], key=key, value=value)
    prod.flush()
    watch = GroupWatch(props["topic.records"], client, "confluent")
    ahead = read_ahead(client, props["topic.records"], "confluent", seen=watch.seed)
    assert {s: n for s, n in watch.count_by_state().items() if n} == {"Stable": 1}  # seeded ahead
    written = len(live.records)
    live.commit({("t", 0): 9}, leader, live.group.generation)
    for key, value in live.records[written:]:
        prod.send(props["topic.records"], key=key, value=value)
    prod.flush()

    starting = json.loads(rebuild(client, props["topic.records"], props["topic.requests"], "confluent",
                                  seen=watch.seed, ahead=ahead))[props["topic.requests"]]
    (load,) = [r.value for r in read_topic(broker, props["topic.requests"]) if r.offset >= starting[str(r.partition)]]
    group = decode_state(step_group("live", None, [load], live.now_ms + 1_000, CoordinatorConfig()).stored(None))
    assert group.offsets[("t", 0)].offset == 9
    assert watch.poll() == []  # and the watch was given what was written since: it continues from the end

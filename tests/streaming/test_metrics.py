"""The per-batch JSON line built from a query progress report (a stand-in object; no Spark)."""

from __future__ import annotations

import io
import json
import uuid
from types import SimpleNamespace

import pytest
from kafka import KafkaProducer
from pyspark.sql import Row

from schemas.messages import GroupMetadataKey
from state.records import encode_key
from state.wire import encode
from streaming.metrics import JsonLinesMetrics


def progress() -> SimpleNamespace:
    state = SimpleNamespace(numRowsTotal=12, numRowsUpdated=3, memoryUsedBytes=4096, commitTimeMs=7)
    observed = Row(responses=5, records=2, dead_letters=1, groups_called=3, groups_with_timer=3, members_expired=2,
                   timer_rows=1, groups_to_Stable=1, groups_to_Empty=0, call_us=41_600, produce_us=9_400)
    return SimpleNamespace(name="q", batchId=4, timestamp="t", numInputRows=7, batchDuration=250,
                           durationMs={"addBatch": 200}, stateOperators=[state],
                           observedMetrics={"coordinator": observed})


def test_one_json_line_per_batch_with_counts_durations_and_state():
    out = io.StringIO()
    JsonLinesMetrics(out, "q").onQueryProgress(SimpleNamespace(progress=progress()))
    line = json.loads(out.getvalue())
    assert line["requests_in"] == 6 and line["responses_out"] == 5 and line["dead_letters"] == 1
    assert line["members_expired"] == 2 and line["timer_rows"] == 1  # Spark's 7 input rows include the timer row
    assert (line["state_calls_ms"], line["produce_ms"]) == (42, 9)
    assert line["group_state_changes"] == {"Stable": 1, "Empty": 0}
    assert line["durations_ms"] == {"addBatch": 200} and line["batch_duration_ms"] == 250
    assert line["state_rows"] == 12 and line["state_memory_bytes"] == 4096
    assert "groups_by_state" not in line  # only with a records topic to follow


def test_other_queries_are_ignored():
    out = io.StringIO()
    JsonLinesMetrics(out, "other").onQueryProgress(SimpleNamespace(progress=progress()))
    assert out.getvalue() == ""


@pytest.mark.broker
def test_groups_by_state_follow_the_records_topic(broker):
    """The listener reads the group records the batches wrote, as ListGroups does (the session's tansu broker)."""
    topic = f"records-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(bootstrap_servers=broker)
    for group_id, state in [("a", "Stable"), ("b", "Stable"), ("c", "PreparingRebalance"), ("a", "Empty")]:
        value = {"directory": {"group_state": state, "protocol_type": "consumer"}}
        producer.send(topic, key=encode_key(GroupMetadataKey(group_id)), value=encode(value), partition=0)
    producer.send(topic, key=encode_key(GroupMetadataKey("b")), value=None, partition=0)  # b was deleted
    producer.flush()
    producer.close()
    out = io.StringIO()
    JsonLinesMetrics(out, "q", {"topic": topic, "config": {"bootstrap_servers": broker}}).onQueryProgress(
        SimpleNamespace(progress=progress()))
    assert json.loads(out.getvalue())["groups_by_state"] == {
        "Empty": 1, "PreparingRebalance": 1, "CompletingRebalance": 0, "Stable": 0, "Dead": 0}

"""The per-batch metrics: the JSON line built from a query progress report (a stand-in object; no Spark), the groups
read from a real records topic, and every output of a real query (the JSON-lines file, the Prometheus endpoint, the
console's group lines) agreeing with each other."""

from __future__ import annotations

import io
import json
import logging
import time
import urllib.request
import uuid
from types import SimpleNamespace

import pytest
from kafka import KafkaProducer
from pyspark.sql import Row

from schemas.messages import GroupDirectoryEntry, GroupMetadataKey, GroupMetadataRecord
from state.records import encode_key
from state.wire import encode
from streaming.monitoring.console import Console
from streaming.monitoring.group_watch import GroupWatch
from streaming.monitoring.metrics import CoordinatorMetrics
from streaming.query import stop_between_batches
from tests.support import protocol as p
from tests.support.metrics import samples


def progress() -> SimpleNamespace:
    state = SimpleNamespace(numRowsTotal=12, numRowsUpdated=3, memoryUsedBytes=4096, commitTimeMs=7)
    observed = Row(responses=5, records=2, dead_letters=1, groups_called=3, groups_with_timer=3, members_expired=2,
                   timer_rows=1, groups_to_Stable=1, groups_to_Empty=0, call_us=41_600, produce_us=9_400)
    return SimpleNamespace(name="q", batchId=4, timestamp="t", numInputRows=7, batchDuration=250,
                           durationMs={"addBatch": 200}, stateOperators=[state],
                           observedMetrics={"coordinator": observed})


def test_one_json_line_per_batch_with_counts_durations_and_state():
    out = io.StringIO()
    CoordinatorMetrics("q", json_lines=out).onQueryProgress(SimpleNamespace(progress=progress()))
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
    CoordinatorMetrics("other", json_lines=out).onQueryProgress(SimpleNamespace(progress=progress()))
    assert out.getvalue() == ""


def _write_states(broker: str, topic: str, states: list[tuple[str, str | None]]) -> None:
    """A group record per (group, state) in the records topic's partition 0; state None: the group's tombstone."""
    producer = KafkaProducer(bootstrap_servers=broker)
    for group_id, state in states:
        value = None if state is None else encode(
            GroupMetadataRecord("consumer", 1, None, None, 0, (), GroupDirectoryEntry(state, "consumer", 0)))
        producer.send(topic, key=encode_key(GroupMetadataKey(group_id)), value=value, partition=0)
    producer.flush()
    producer.close()


@pytest.mark.broker
def test_groups_by_state_follow_the_records_topic(broker):
    """The listener reads the group records the batches wrote, as ListGroups does (the session's tansu broker)."""
    topic = f"records-{uuid.uuid4().hex[:8]}"
    _write_states(broker, topic, [("a", "Stable"), ("b", "Stable"), ("c", "PreparingRebalance"), ("a", "Empty"),
                                  ("b", None)])  # b was deleted
    out = io.StringIO()
    groups = GroupWatch(topic, {"bootstrap_servers": broker})
    CoordinatorMetrics("q", json_lines=out, groups=groups).onQueryProgress(SimpleNamespace(progress=progress()))
    assert json.loads(out.getvalue())["groups_by_state"] == {
        "Empty": 1, "PreparingRebalance": 1, "CompletingRebalance": 0, "Stable": 0, "Dead": 0, "Assigning": 0,
        "Reconciling": 0}


@pytest.mark.broker
def test_the_records_topic_is_read_no_more_than_its_share_of_the_time_and_an_idle_report_brings_the_rest(
        broker, console_log):
    """On tansu every read of the records topic lists all its record batches under the lock every produce waits
    for (`metrics.GROUP_WATCH_SHARE`): the batch right after a read does not read again, and what it left is read
    once the watch is due, by a batch or, here, the query's idle report."""
    topic = f"records-{uuid.uuid4().hex[:8]}"
    _write_states(broker, topic, [("a", "Stable")])
    out, (console_out, lines) = io.StringIO(), console_log
    listener = CoordinatorMetrics("q", json_lines=out, console=Console(0, out=console_out),
                                  groups=GroupWatch(topic, {"bootstrap_servers": broker}))
    listener.onQueryProgress(SimpleNamespace(progress=progress()))
    _write_states(broker, topic, [("a", "Empty")])
    listener.onQueryProgress(SimpleNamespace(progress=progress()))  # at once: not due
    first, second = (json.loads(line)["groups_by_state"] for line in out.getvalue().splitlines())
    assert first["Stable"] == 1 and second["Stable"] == 1 and second["Empty"] == 0
    assert lines == ["group a: Stable, generation 1, 0 members"]
    deadline = time.monotonic() + 60
    while len(lines) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
        listener.onQueryIdle(SimpleNamespace())
    assert lines == ["group a: Stable, generation 1, 0 members", "group a: Empty, generation 1, 0 members"]
    listener.onQueryProgress(SimpleNamespace(progress=progress()))
    assert json.loads(out.getvalue().splitlines()[-1])["groups_by_state"]["Empty"] == 1


def test_a_running_query_writes_a_line_per_batch_and_serves_the_same_counts(coordinator, tmp_path, caplog):
    """One group formed through a real query: the JSON-lines file has one line per batch, in order; the Prometheus
    endpoint serves the same totals; the console reports the group's state changes."""
    caplog.set_level(logging.INFO, logger="coordinator")
    run = coordinator(start=False)
    metrics_file = tmp_path / "metrics.jsonl"
    props = {**run.props, "metrics.log": str(metrics_file), "metrics.prometheus.port": "0",
             "metrics.prometheus.host": "127.0.0.1", "console.summary.interval.ms": "0"}
    listener = CoordinatorMetrics.from_properties(props, {"bootstrap_servers": run.bootstrap},
                                                  f"coordinator-{run.topics.requests}")
    run.spark.streams.addListener(listener)
    try:
        run.start()
        # Sessions of 120 s: the first batch of a query on a loaded 2-core machine can take longer than 6 s.
        first = run.request(p.join("metered", session_timeout_ms=120000))
        joined = run.request(p.join("metered", first["member_id"], session_timeout_ms=120000))
        member_id, generation = joined["member_id"], joined["generation_id"]
        assert run.request(p.sync("metered", member_id, generation, {member_id: p.ASSIGNMENT}))["error_code"] == 0
        assert run.request(p.heartbeat("metered", member_id, generation))["error_code"] == 0
        query = run.query
        stop_between_batches(query, timeout_s=120)  # the heartbeat's batch completes and is reported
        batches = query.lastProgress["batchId"] + 1
        lines = run.wait(lambda: len(_lines(metrics_file)) >= batches and _lines(metrics_file))
        # The last batches may have left the records topic unread (`metrics.GROUP_WATCH_SHARE`): the query's
        # termination reads it, and the listener hears of it on Spark's listener thread.
        def scrape() -> dict | None:
            found = samples(urllib.request.urlopen(listener.prometheus.server.url, timeout=10).read().decode())
            return found if found.get('coordinator_groups{state="Stable"}') == 1 else None

        scraped = run.wait(scrape, timeout_s=60)
    finally:
        run.spark.streams.removeListener(listener)
        listener.close()
    assert [line["batch_id"] for line in lines] == list(range(batches))
    assert sum(line["requests_in"] for line in lines) >= 4
    assert scraped["coordinator_batches_total"] == batches
    for name, field in [("requests", "requests_in"), ("responses", "responses_out"), ("records", "records_out"),
                        ("dead_letters", "dead_letters")]:
        assert scraped[f"coordinator_{name}_total"] == sum(line[field] for line in lines), name
    assert scraped['coordinator_groups{state="Stable"}'] == 1
    assert scraped['coordinator_group_state_changes_total{state="Stable"}'] >= 1
    assert scraped['coordinator_batch_duration_seconds_bucket{le="+Inf"}'] == batches
    assert scraped["coordinator_last_batch_id"] == batches - 1
    assert "group metered: Stable, generation 1, 1 member" in caplog.messages


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


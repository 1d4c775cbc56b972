"""The operator's console and the Prometheus text, from metrics lines and records-topic records (no Spark, no
broker): group state changes as one line each, the periodic summary, and the metric names and values."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from schemas.messages import GroupDirectoryEntry, GroupMetadataKey, GroupMetadataRecord, OffsetCommitKey
from state.records import encode_key
from state.wire import encode
from streaming.monitoring.console import MAX_CHANGE_LINES, Console, Window, change_lines, summary_line
from streaming.monitoring.group_watch import GroupChange, GroupWatch
from streaming.monitoring.prometheus import PrometheusMetrics
from tests.support.metrics import samples


def group_record(state: str, members: int, generation: int) -> bytes:
    """A group metadata value as the core writes it: Kafka's GroupMetadataValue plus the directory part."""
    return encode(GroupMetadataRecord("consumer", generation, "range", None, 0, (),
                                      GroupDirectoryEntry(state, "consumer", members)))


def batch(batch_id: int = 0, requests: int = 6, duration_ms: int = 250, dead_letters: int = 0,
          groups: dict[str, int] | None = None) -> dict:
    """A metrics line (`streaming.monitoring.metrics.progress_record`)."""
    return {"query": "q", "batch_id": batch_id, "timestamp": "2026-11-25T13:48:16.496Z", "requests_in": requests,
            "responses_out": requests - 1, "records_out": 2, "dead_letters": dead_letters, "groups_called": 3,
            "groups_with_timer": 3, "members_expired": 1, "timer_rows": 2,
            "group_state_changes": {"Stable": 1, "Empty": 0}, **({"groups_by_state": groups} if groups else {}),
            "fast_answers": {"Heartbeat": 20, "OffsetCommit": 5}, "fast_path_mispredictions": {"Heartbeat": 0,
                                                                                                "OffsetCommit": 1},
            "batch_duration_ms": duration_ms, "state_calls_ms": 40, "produce_ms": 9,
            "durations_ms": {"addBatch": 200, "walCommit": 20}, "state_rows": 12, "state_rows_updated": 3,
            "state_memory_bytes": 4096, "state_commit_ms": 7}


class TestGroupStateChanges:
    def test_a_rebalance_reads_as_the_states_the_group_went_through(self):
        watch = GroupWatch()
        key = encode_key(GroupMetadataKey("billing"))
        changes = [watch.apply(key, group_record(state, members, generation)) for state, members, generation in [
            ("Empty", 0, 0), ("PreparingRebalance", 1, 0), ("CompletingRebalance", 3, 0), ("Stable", 3, 1)]]
        assert [change.line() for change in changes] == [
            "group billing: Empty, generation 0, 0 members",
            "group billing: PreparingRebalance, 1 member",  # the record repeats the last stored generation: not shown
            "group billing: CompletingRebalance, 3 members",
            "group billing: Stable, generation 1, 3 members",
        ]

    def test_records_that_keep_the_state_are_not_changes(self):
        watch = GroupWatch()
        key = encode_key(GroupMetadataKey("billing"))
        assert watch.apply(key, group_record("Stable", 3, 4)) is not None
        assert watch.apply(key, group_record("Stable", 3, 4)) is None  # e.g. a static member replaced in place
        assert watch.apply(encode_key(OffsetCommitKey("billing", "orders", 0)), b'{"offset": 42}') is None
        assert watch.apply(b"not json", b"{") is None

    def test_a_deleted_group_is_a_change_and_leaves_the_counts(self):
        watch = GroupWatch()
        key = encode_key(GroupMetadataKey("old"))
        watch.apply(key, group_record("Empty", 0, 2))
        assert watch.count_by_state()["Empty"] == 1
        assert watch.apply(key, None) == GroupChange("old", None)
        assert watch.apply(key, None) is None  # a second tombstone deletes nothing
        assert GroupChange("old", None).line() == "group old: deleted"
        assert watch.count_by_state()["Empty"] == 0

    def test_a_mass_rebalance_prints_a_bounded_number_of_lines(self):
        changes = [GroupChange(f"g{i}", "PreparingRebalance", 2) for i in range(MAX_CHANGE_LINES + 5)]
        lines = change_lines(changes)
        assert len(lines) == MAX_CHANGE_LINES + 1
        assert lines[-1] == "... and 5 more group state changes in this batch"
        assert len(change_lines(changes[:3])) == 3


class TestSummary:
    def test_the_summary_line_adds_up_the_interval(self):
        window = Window(started=100.0)
        for i, ms in enumerate([300, 500, 1200]):
            window.add(batch(i, requests=10, duration_ms=ms, dead_letters=i,
                             groups={"Empty": 1, "PreparingRebalance": 0, "Stable": 3}))
        assert summary_line(window, now=130.0) == (
            "last 30 s: 3 batches, 30 requests (1.0/s), 27 responses, batch p50 500 ms (max 1.2 s); "
            "groups: 1 Empty, 3 Stable; 3 dead letters, 3 members expired; 12 state rows")

    def test_an_idle_interval_says_so_and_keeps_the_groups(self, console_log):
        out, lines = console_log
        console = Console(30.0, clock=iter([0.0, 10.0, 31.0, 62.0]).__next__, out=out)
        console.batch(batch(0, groups={"Stable": 2}), [GroupChange("g", "Stable", 2, 1)])  # at 10 s
        console.idle()  # at 31 s: the interval is over
        console.idle()  # at 62 s: a second interval, without batches
        assert lines[0] == "group g: Stable, generation 1, 2 members"
        assert lines[1].startswith("last 31 s: 1 batch, 6 requests (0.2/s), 5 responses, batch p50 250 ms")
        assert lines[2] == ("last 31 s: no batches (no requests and no deadlines due); groups: 2 Stable; "
                            "0 dead letters, 0 members expired; 12 state rows")
        assert len(lines) == 3

    def test_changes_after_the_last_report_still_print_and_count_at_stop(self, console_log):
        out, lines = console_log
        console = Console(30.0, clock=iter([0.0, 5.0, 8.0]).__next__, out=out)
        console.batch(batch(0, groups={"Stable": 1}))
        console.changes([GroupChange("g", "Empty", 0, 2)], {"Empty": 1, "Stable": 0})
        console.flush()
        assert lines[0] == "group g: Empty, generation 2, 0 members"
        assert lines[1].startswith("last 8 s: 1 batch, ") and "; groups: 1 Empty; " in lines[1]

    def test_no_summary_with_interval_zero(self, console_log):
        out, lines = console_log
        console = Console(0, clock=iter([0.0, 1000.0, 2000.0]).__next__, out=out)
        console.batch(batch(0))
        console.flush()
        assert lines == []


class TestPrometheusText:
    def test_counters_sum_batches_and_gauges_keep_the_last(self):
        metrics = PrometheusMetrics()
        metrics.observe(batch(0, requests=6, duration_ms=250, groups={"Empty": 1, "Stable": 0}))
        metrics.observe(batch(1, requests=4, duration_ms=3000, dead_letters=2, groups={"Empty": 0, "Stable": 1}))
        scraped = samples(metrics.render())
        assert scraped["coordinator_batches_total"] == 2
        assert scraped["coordinator_requests_total"] == 10
        assert scraped["coordinator_responses_total"] == 8
        assert scraped["coordinator_dead_letters_total"] == 2
        assert scraped["coordinator_members_expired_total"] == 2
        assert scraped['coordinator_group_state_changes_total{state="Stable"}'] == 2
        assert scraped['coordinator_fast_path_answers_total{api="Heartbeat"}'] == 40
        assert scraped['coordinator_fast_path_mispredictions_total{api="OffsetCommit"}'] == 2
        assert scraped['coordinator_fast_path_mispredictions_total{api="Heartbeat"}'] == 0
        assert scraped['coordinator_groups{state="Stable"}'] == 1 and scraped['coordinator_groups{state="Empty"}'] == 0
        assert scraped['coordinator_batch_phase_seconds_total{phase="addBatch"}'] == 0.4
        assert scraped["coordinator_state_calls_seconds_total"] == 0.08
        assert scraped["coordinator_state_rows"] == 12 and scraped["coordinator_last_batch_id"] == 1
        started = datetime(2026, 11, 25, 13, 48, 16, 496000, tzinfo=timezone.utc)  # the lines' timestamp
        assert scraped["coordinator_last_batch_timestamp_seconds"] == started.timestamp()
        assert scraped['coordinator_batch_duration_seconds_bucket{le="0.25"}'] == 1
        assert scraped['coordinator_batch_duration_seconds_bucket{le="2.5"}'] == 1
        assert scraped['coordinator_batch_duration_seconds_bucket{le="5.0"}'] == 2
        assert scraped['coordinator_batch_duration_seconds_bucket{le="+Inf"}'] == 2
        assert scraped["coordinator_batch_duration_seconds_sum"] == 3.25

    def test_every_family_has_help_and_type_and_counters_end_in_total(self):
        metrics = PrometheusMetrics()
        metrics.observe(batch(0))
        text = metrics.render()
        types = dict(line.split()[2:4] for line in text.splitlines() if line.startswith("# TYPE"))
        helps = {line.split()[2] for line in text.splitlines() if line.startswith("# HELP")}
        assert set(types) == helps
        assert all(name.startswith("coordinator_") for name in types)
        assert all(name.endswith("_total") for name, kind in types.items() if kind == "counter")
        assert not any(name.endswith("_total") for name, kind in types.items() if kind != "counter")

"""Deadlines back to the driver through Kafka: each bucket's earliest deadline, as the state calls publish it.

The query runs no batch without input (`spark.sql.streaming.noDataMicroBatches.enabled=false`), so a bucket of
groups is only called when it has requests, or when the source adds a timer row for it. The state calls publish
their buckets' deadlines on the timers topic, produced and flushed like a call's other output before the batch
commits; the source's `latestOffset` catches up with that topic at the first trigger after each batch (nothing
else writes it; `TimerSchedule.due`), checks its deadlines at every trigger and lists the buckets that are due in
the batch's offset, which makes their timer rows, and their calls, part of the offset log (a replayed batch calls
the same). When a call publishes, what a record holds, which buckets are due and which a
batch calls are `streaming.bucket_deadlines`'; this module only carries the records.

Nothing here is a file: it works the same with executors on other hosts and a checkpoint on HDFS or S3.

A schedule starts at the topic's end, not its beginning (tansu does not compact, so the topic's history grows with
every batch), which is why a query run's first new batch calls every bucket (`bucket_deadlines.buckets_to_call`).
"""

from __future__ import annotations

import logging
from typing import Mapping

from kafka import TopicPartition

from streaming.bucket_deadlines import BucketSchedule, read_deadline_record
from streaming.kafka_io.kafka_clients import cached_consumer, catch_up, high_watermarks

log = logging.getLogger(__name__)


class TimerSchedule:
    """The driver's view of the timers topic (a `BucketSchedule`). Lives in the source's reader (one per query run,
    in the planning process); reads the topic from where it stood when the schedule was created."""

    def __init__(self, client_config: Mapping[str, object], topic: str) -> None:
        self._config = dict(client_config)
        self._topic = topic
        self._schedule = BucketSchedule()
        self._positions: dict[int, int] | None = None
        self._read_at: object = None
        """The `start` of the last call that read the topic (`due`)."""

    def due(self, now_ms: int, start: object) -> list[int]:
        """The buckets whose earliest deadline has come at `now_ms`. `start`: where the query's batches stand (the
        plan's start offset). Only those batches write the topic, each before the plan that follows it, so it is
        read again only when `start` moved: an idle query reads it once, not at every trigger (two log-end fetches
        each, about half of an idle query's planning)."""
        if self._positions is None or start != self._read_at:
            self._catch_up()
            if self._positions is not None:  # started (it needs the topic's metadata first)
                self._read_at = start
        return self._schedule.due(now_ms)

    def _catch_up(self) -> None:
        if self._positions is None:
            consumer = cached_consumer("timers-marks", self._config, fetch_max_wait_ms=1,
                                       max_partition_fetch_bytes=1024)
            parts = consumer.partitions_for_topic(self._topic)
            if not parts:
                return  # no metadata yet: the first batch calls every bucket anyway, and the next trigger retries
            ends = high_watermarks(consumer, {TopicPartition(self._topic, p): 0 for p in parts})
            self._positions = {tp.partition: end for tp, end in ends.items()}
        catch_up("timers", self._config, self._topic, self._positions, self._apply)

    def _apply(self, record) -> None:
        try:
            self._schedule.set(*read_deadline_record(record.key, record.value))
        except ValueError:
            log.warning("timers topic %s: unreadable record at offset %d skipped", self._topic, record.offset)

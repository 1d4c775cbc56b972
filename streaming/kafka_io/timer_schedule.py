"""Deadlines back to the driver through Kafka: each bucket's earliest deadline, as the state calls publish it.

The query runs no batch without input (`spark.sql.streaming.noDataMicroBatches.enabled=false`), so a bucket of
groups is only called when it has requests, or when the source adds a timer row for it. Each state call that
changes its bucket's earliest deadline publishes it on the timers topic (key: the bucket number, value: the
deadline in ms as text, or a tombstone when the bucket has none; `streaming.stateful.call`), produced and flushed
like the call's other output before the batch commits. The source's `latestOffset` catches up with that topic on
every trigger (`TimerSchedule.due`) and lists the buckets whose deadline `state.timers.is_due` in the batch's
offset, which makes their timer rows, and their calls, part of the offset log (a replayed batch calls the same).

Nothing here is a file: it works the same with executors on other hosts and a checkpoint on HDFS or S3.

A schedule starts at the topic's end, not its beginning (tansu does not compact, so the topic's history grows
with every batch): instead, the source's first new batch after a (re)start calls every bucket, and every call of a
batch marked `resumed` publishes its bucket's deadline whether or not it changed. A deadline published twice, or
one that turns out early, only costs a call that finds nothing due.
"""

from __future__ import annotations

import logging
from typing import Mapping

from kafka import TopicPartition

from state.api import is_due
from streaming.kafka_io.kafka_clients import cached_consumer, catch_up, high_watermarks

log = logging.getLogger(__name__)


class TimerSchedule:
    """The driver's view of the timers topic: bucket -> earliest deadline. Lives in the source's reader (one per
    query run, in the planning process); reads the topic from where it stood when the schedule was created."""

    def __init__(self, client_config: Mapping[str, object], topic: str) -> None:
        self._config = dict(client_config)
        self._topic = topic
        self._deadlines: dict[int, int] = {}
        self._positions: dict[int, int] | None = None

    def due(self, now_ms: int) -> list[int]:
        """The buckets whose earliest deadline has come at `now_ms`."""
        self._catch_up()
        return sorted(bucket for bucket, deadline in self._deadlines.items() if is_due(deadline, now_ms))

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
            bucket = int(record.key)
            if record.value is None:
                self._deadlines.pop(bucket, None)
            else:
                self._deadlines[bucket] = int(record.value)
        except (TypeError, ValueError):
            log.warning("timers topic %s: unreadable record at offset %d skipped", self._topic, record.offset)

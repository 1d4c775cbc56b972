"""Per-batch metrics from a StreamingQueryListener: a JSON line per micro-batch (`metrics.log`), the Prometheus
endpoint (`streaming.monitoring.prometheus`), and the operator's console (`streaming.monitoring.console`).

Counts of what the batch produced come from the query's observed metrics (`observe("coordinator", ...)` in
`streaming.query`); durations, state rows and memory from Spark's own progress report; groups by state and group
state changes from the records topic (`streaming.monitoring.group_watch`), followed on the driver by the listener, off
the batch's path.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import IO, Any, Mapping

from pyspark.sql.streaming import StreamingQueryListener

from common.config import kafka_options
from streaming.kafka_io.kafka_clients import chosen_client
from streaming.kafka_io.sink import FAST_APIS
from streaming.monitoring.console import Console
from streaming.monitoring.group_watch import GroupChange, GroupWatch
from streaming.monitoring.prometheus import PrometheusMetrics

log = logging.getLogger(__name__)

GROUP_WATCH_SHARE = 0.02
"""The most of the time the group watch may spend reading the records topic: a read that took t is followed by
none for t / GROUP_WATCH_SHARE. On tansu every fetch below a partition's end lists all of the partition's record
batches under the lock every produce waits for, and the records topic only grows (tansu does not compact): read at
every batch, the watch cost 97-114 ms a read at 10,000-20,000 batches a partition, and a synchronous idempotent
producer beside it (the gateway appending commits) lost 12-16% of its rate; a soak's commits/s fell with it all
hour (issue 37, docs/operations-streaming.md, "The group watch"). So the watch reads at every batch while the topic
is short, and every few seconds once it is long; groups by state and state changes come that much later."""


class CoordinatorMetrics(StreamingQueryListener):
    """One listener for every output, so that each batch's figures are gathered (and the records topic read) once.

    Listener callbacks run on the driver's listener thread: nothing here may raise into Spark, and a failure to
    read the records topic costs the groups' figures, not the metrics line.
    """

    def __init__(self, query_name: str | None = None, json_lines: IO[str] | None = None,
                 prometheus: PrometheusMetrics | None = None, console: Console | None = None,
                 groups: GroupWatch | None = None) -> None:
        self.query_name = query_name
        self.json_lines = json_lines
        self.prometheus = prometheus
        self.console = console
        self.groups = groups
        self._groups_failing = False
        self._groups_due = 0.0
        """`time.monotonic()` before which a batch's report does not read the records topic (`GROUP_WATCH_SHARE`)."""

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryIdle(self, event) -> None:
        if time.monotonic() >= self._groups_due:  # what the last batches left unread (`GROUP_WATCH_SHARE`)
            self._groups_between_batches()
        if self.console is not None:
            self.console.idle()

    def onQueryTerminated(self, event) -> None:
        self._groups_between_batches()  # where the groups were left, whatever the last batches left unread

    def _groups_between_batches(self) -> None:
        try:
            changes = self._group_changes()
            if self.groups is None or self._groups_failing:
                return
            by_state = self.groups.count_by_state()
            if self.console is not None:
                self.console.changes(changes, by_state)
            if self.prometheus is not None:
                self.prometheus.groups(by_state)
        except Exception:  # noqa: BLE001 - the listener thread is Spark's: log, never raise into it
            log.exception("groups between batches")

    @classmethod
    def from_properties(cls, props: Mapping[str, str], client: Mapping[str, Any],
                        query_name: str, groups: GroupWatch | None = None) -> "CoordinatorMetrics":
        """The outputs `props` ask for (conf/coordinator.properties, "Metrics and the console"): `metrics.log`,
        `metrics.prometheus.port` / `.host`, `console.summary.interval.ms`; the groups come from `topic.records`
        read with `client` (kafka-python settings), from its end now, so that the console reports changes made
        from here on."""
        target = props["metrics.log"]
        json_lines = None if not target else sys.stdout if target == "-" else open(target, "a")
        prometheus = None
        if props["metrics.prometheus.port"]:
            prometheus = PrometheusMetrics()
            host, port = props["metrics.prometheus.host"], int(props["metrics.prometheus.port"])
            try:
                prometheus.serve(host, port)
            except OSError as exc:
                raise SystemExit(f"metrics.prometheus.port: cannot listen on {host}:{port}: {exc.strerror}")
        console = Console(int(props["console.summary.interval.ms"]) / 1000)
        watch = groups or GroupWatch(props["topic.records"], client, chosen_client(kafka_options(props)))
        listener = cls(query_name, json_lines, prometheus, console, watch)
        listener._group_changes()  # what the records topic holds now is where changes start from
        return listener

    def where(self) -> str:
        """Where the metrics go, for the start-up lines: `metrics: prometheus=http://host:9464/metrics
        json-lines=var/metrics.log`."""
        parts = []
        if self.prometheus is not None and self.prometheus.server is not None:
            parts.append(f"prometheus={self.prometheus.server.url}")
        if self.json_lines is not None:
            parts.append(f"json-lines={'stdout' if self.json_lines is sys.stdout else self.json_lines.name}")
        return "metrics: " + (" ".join(parts) or "off (metrics.log, metrics.prometheus.port)")

    def close(self) -> None:
        """Stop serving and close the metrics file; the console prints the group state changes of the batches that
        ran while the query stopped (their reports no longer reach the listener) and what the last interval saw."""
        if self.console is not None:
            self._groups_between_batches()
            self.console.flush()
        if self.prometheus is not None and self.prometheus.server is not None:
            self.prometheus.server.close()
        if self.json_lines not in (None, sys.stdout):
            self.json_lines.close()

    def onQueryProgress(self, event) -> None:
        p = event.progress
        if self.query_name and p.name != self.query_name:
            return
        try:
            self._report(p)
        except Exception:  # noqa: BLE001 - the listener thread is Spark's: log, never raise into it
            log.exception("metrics of batch %s", p.batchId)

    def _report(self, p) -> None:
        changes = self._group_changes() if time.monotonic() >= self._groups_due else []
        record = progress_record(p, self.groups.count_by_state() if self.groups and not self._groups_failing
                                 else None)
        if self.json_lines is not None:
            self.json_lines.write(json.dumps(record, separators=(",", ":")) + "\n")
            self.json_lines.flush()
        if self.prometheus is not None:
            self.prometheus.observe(record, p)
        if self.console is not None:
            self.console.batch(record, changes)

    def _group_changes(self) -> list[GroupChange]:
        if self.groups is None:
            return []
        started = time.monotonic()
        try:
            changes = self.groups.poll()
        except Exception as exc:  # a metrics line without the groups beats none, and the query must not notice
            if not self._groups_failing:
                log.warning("groups by state unavailable (reading %s): %r", self.groups.topic, exc)
            self._groups_failing = True
            return []
        if self._groups_failing:
            log.info("groups by state available again")
        self._groups_failing = False
        now = time.monotonic()
        self._groups_due = now + (now - started) / GROUP_WATCH_SHARE
        return changes


def progress_record(p, groups_by_state: dict[str, int] | None = None) -> dict:
    """One JSON object per micro-batch from a `StreamingQueryProgress`; `groups_by_state` when known."""
    observed = p.observedMetrics.get("coordinator")
    counts = observed.asDict() if observed is not None else {}
    state_ops = p.stateOperators or []
    return {
        "query": p.name,
        "batch_id": p.batchId,
        "timestamp": p.timestamp,
        # Spark's input rows include one timer row per bucket called because a deadline was due.
        "requests_in": p.numInputRows - counts.get("timer_rows", 0),
        "responses_out": counts.get("responses", 0),
        "records_out": counts.get("records", 0),
        "dead_letters": counts.get("dead_letters", 0),
        "groups_called": counts.get("groups_called", 0),
        "groups_with_timer": counts.get("groups_with_timer", 0),
        "members_expired": counts.get("members_expired", 0),
        "timer_rows": counts.get("timer_rows", 0),
        # Group state changes this batch, from the group metadata records; entering CompletingRebalance is a
        # completed join phase (a rebalance's first half), entering Stable a completed rebalance.
        "group_state_changes": {k[len("groups_to_"):]: v for k, v in counts.items() if k.startswith("groups_to_")},
        # Requests a gateway answered from a group's view, by api, as the coordinator checked them; and those it
        # decided otherwise (the gateway's view was stale: the client got another answer, nothing else differed).
        "fast_answers": {api: counts.get(f"fast_{name}", 0) for api, name in FAST_APIS.items()},
        "fast_path_mispredictions": {api: counts.get(f"mispredicted_{name}", 0) for api, name in FAST_APIS.items()},
        # How many groups are in each state, as of the records written by the batches before this line.
        **({"groups_by_state": groups_by_state} if groups_by_state is not None else {}),
        "batch_duration_ms": p.batchDuration,
        # The state calls' own time and their producing (summed over calls; calls of one task run one after the
        # other): the rest of addBatch is reading, routing, the shuffle and Spark's per-key work.
        "state_calls_ms": round(counts.get("call_us", 0) / 1000),
        "produce_ms": round(counts.get("produce_us", 0) / 1000),
        "durations_ms": dict(p.durationMs or {}),
        "state_rows": sum(op.numRowsTotal for op in state_ops),
        "state_rows_updated": sum(op.numRowsUpdated for op in state_ops),
        "state_memory_bytes": sum(op.memoryUsedBytes for op in state_ops),
        "state_commit_ms": sum(op.commitTimeMs for op in state_ops),
    }

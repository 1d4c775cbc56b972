"""Per-batch metrics as JSON lines, from a StreamingQueryListener.

Counts of what the batch produced come from the query's observed metrics (`observe("coordinator", ...)` in
`streaming.query`); durations, state rows and memory from Spark's own progress report; groups by state from the
records topic (`streaming.directory`: the latest group record per group, as ListGroups sees them), followed on the
driver by the listener, off the batch's path.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import IO, Any

from pyspark.sql.streaming import StreamingQueryListener


log = logging.getLogger(__name__)


class JsonLinesMetrics(StreamingQueryListener):
    def __init__(self, out: IO[str] | None = None, query_name: str | None = None,
                 records_source: dict[str, Any] | None = None) -> None:
        """`records_source` = {"topic": records topic, "config": kafka-python settings} adds `groups_by_state`."""
        self.out = out or sys.stdout
        self.query_name = query_name
        self.records_source = records_source

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        p = event.progress
        if self.query_name and p.name != self.query_name:
            return
        self.out.write(json.dumps(progress_record(p, self._groups_by_state()), separators=(",", ":")) + "\n")
        self.out.flush()

    def _groups_by_state(self) -> dict[str, int] | None:
        if self.records_source is None:
            return None
        from streaming.directory import current_directory

        try:
            return current_directory(self.records_source).count_by_state()
        except Exception as exc:  # a metrics line without it beats none, and the query must not notice
            log.warning("groups_by_state unavailable: %r", exc)
            return None


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

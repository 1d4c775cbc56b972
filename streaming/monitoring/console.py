"""What `coordinator run` tells its operator while the query runs: group state changes as they happen, and a
one-line summary every `console.summary.interval.ms`.

Per-batch figures go to tools instead (`metrics.log`, the Prometheus endpoint: `streaming.monitoring.metrics`); the
console keeps what a person reads. Both are fed by the metrics listener, one micro-batch at a time (`batch`), and by the
query's idle events (`idle`), so an idle coordinator still says so.
"""

from __future__ import annotations

import logging
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

from streaming.monitoring.group_watch import GroupChange

log = logging.getLogger("coordinator")

MAX_CHANGE_LINES = 20
"""Group state changes printed per micro-batch; beyond them, one line says how many more (a mass rebalance of
thousands of groups is one event for the operator, and the summary has the counts)."""


@dataclass
class Window:
    """What the batches of one summary interval added up to."""

    started: float
    batches: int = 0
    requests: int = 0
    responses: int = 0
    dead_letters: int = 0
    members_expired: int = 0
    batch_ms: list[int] = field(default_factory=list)
    groups_by_state: dict[str, int] | None = None
    state_rows: int | None = None

    def add(self, record: dict) -> None:
        """One micro-batch's metrics line (`streaming.monitoring.metrics.progress_record`)."""
        self.batches += 1
        self.requests += record["requests_in"]
        self.responses += record["responses_out"]
        self.dead_letters += record["dead_letters"]
        self.members_expired += record["members_expired"]
        self.batch_ms.append(record["batch_duration_ms"])
        self.groups_by_state = record.get("groups_by_state", self.groups_by_state)
        self.state_rows = record["state_rows"]


def summary_line(window: Window, now: float) -> str:
    """`last 30 s: 62 batches, 372 requests (12.4/s), 370 responses, batch p50 480 ms (max 1.2 s); groups: 3 Stable,
    1 Empty; 0 dead letters, 0 members expired; 9 state rows`."""
    seconds = max(now - window.started, 1e-3)
    head = f"last {seconds:.0f} s: "
    if window.batches:
        parts = [f"{window.batches} batch{'es' if window.batches != 1 else ''}, {window.requests} requests "
                 f"({window.requests / seconds:.1f}/s), {window.responses} responses, batch p50 "
                 f"{_duration(statistics.median_low(window.batch_ms))} (max {_duration(max(window.batch_ms))})"]
    else:
        parts = ["no batches (no requests and no deadlines due)"]
    if window.groups_by_state is not None:
        parts.append("groups: " + (", ".join(f"{n} {state}" for state, n in window.groups_by_state.items() if n)
                                   or "none"))
    parts.append(f"{window.dead_letters} dead letters, {window.members_expired} members expired")
    if window.state_rows is not None:
        parts.append(f"{window.state_rows} state rows")
    return head + "; ".join(parts)


def _duration(ms: int) -> str:
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def change_lines(changes: Iterable[GroupChange], limit: int = MAX_CHANGE_LINES) -> list[str]:
    """One line per group state change, at most `limit`, then how many more."""
    changes = list(changes)
    lines = [change.line() for change in changes[:limit]]
    if len(changes) > limit:
        lines.append(f"... and {len(changes) - limit} more group state changes in this batch")
    return lines


class Console:
    def __init__(self, summary_interval_s: float, clock: Callable[[], float] = time.monotonic,
                 out: logging.Logger = log) -> None:
        """`summary_interval_s` 0: no summary lines (group state changes still print)."""
        self.interval = summary_interval_s
        self.clock = clock
        self.out = out
        self.window = Window(clock())

    def batch(self, record: dict, changes: Iterable[GroupChange] = ()) -> None:
        self.changes(changes)
        self.window.add(record)
        self.idle()

    def changes(self, changes: Iterable[GroupChange], groups_by_state: dict[str, int] | None = None) -> None:
        """Group state changes seen outside a batch's report (at stop: those of the batches no longer reported)."""
        for line in change_lines(changes):
            self.out.info("%s", line)
        if groups_by_state is not None:
            self.window.groups_by_state = groups_by_state

    def idle(self) -> None:
        """Print the summary if the interval is over (the query reports idle periods too, so this runs without
        batches as well)."""
        now = self.clock()
        if self.interval and now - self.window.started >= self.interval:
            self.flush(now)

    def flush(self, now: float | None = None) -> None:
        """Print the summary of the interval so far and start the next one (at a stop: what the last one saw)."""
        now = self.clock() if now is None else now
        if self.interval:
            self.out.info("%s", summary_line(self.window, now))
        self.window = Window(now, groups_by_state=self.window.groups_by_state, state_rows=self.window.state_rows)

"""The job's metrics in Prometheus' text format, served by the driver (`metrics.prometheus.port`).

Fed by the metrics listener with each micro-batch's metrics line (`streaming.monitoring.metrics.progress_record`) and
Spark's progress report for it. Why not Spark's own `PrometheusServlet`: it is served by the Spark UI, which the job
turns off (`spark.ui.enabled=false`: the UI's listeners and its web server cost the driver CPU on every batch), and it
carries only Spark's figures; the coordinator's counters (requests, responses, dead letters, groups by state) exist
only in the query's observed metrics and the records topic, which this listener already reads. Why not the
`prometheus_client` package: the driver is the only process that serves, its figures come from one listener, and
the exposition format is a few lines of text; one dependency less in every deployment (the `--py-files` zip, the
image).

Names follow Prometheus' conventions: a `coordinator_` prefix, base units (seconds, bytes), `_total` on counters.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

BATCH_SECONDS_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Batch durations: a few hundred milliseconds when idle on 2 cores, seconds under load, 10 s and more at 100,000
groups (docs/operations.md, "Sizing")."""


@dataclass(frozen=True)
class Family:
    name: str
    kind: str  # counter, gauge
    help: str
    label: str | None = None


# Counters summed from the metrics line's field of the same meaning (field, factor to base units).
COUNTERS: dict[str, tuple[Family, str, float]] = {f.name: (f, field, factor) for f, field, factor in [
    (Family("coordinator_requests_total", "counter", "Requests read from the requests topic"), "requests_in", 1),
    (Family("coordinator_responses_total", "counter", "Responses written to the responses topic"),
     "responses_out", 1),
    (Family("coordinator_records_total", "counter",
            "Records written to the records topic (group metadata, offsets, tombstones)"), "records_out", 1),
    (Family("coordinator_dead_letters_total", "counter",
            "Requests rejected to the dead-letter topic (unparseable, invalid, internal error)"), "dead_letters", 1),
    (Family("coordinator_members_expired_total", "counter",
            "Members removed because their session or sync deadline ran out"), "members_expired", 1),
    (Family("coordinator_group_calls_total", "counter", "Calls of the coordinator for one group"),
     "groups_called", 1),
    (Family("coordinator_timer_rows_total", "counter",
            "State buckets called because a group deadline in them was due"), "timer_rows", 1),
    (Family("coordinator_state_calls_seconds_total", "counter",
            "Time in the state calls (reading rows, the coordinator, writing rows), summed over calls"),
     "state_calls_ms", 1e-3),
    (Family("coordinator_produce_seconds_total", "counter",
            "Time the state calls spent producing and flushing their output, summed over calls"),
     "produce_ms", 1e-3),
    (Family("coordinator_state_rows_updated_total", "counter", "State store rows written (Spark)"),
     "state_rows_updated", 1),
    (Family("coordinator_state_commit_seconds_total", "counter", "State store commit time (Spark)"),
     "state_commit_ms", 1e-3),
]}
STATE_CHANGES = Family("coordinator_group_state_changes_total", "counter",
                       "Group metadata records by the state they put a group in", "state")
FAST_ANSWERS = Family("coordinator_fast_path_answers_total", "counter",
                      "Requests a gateway answered from a group's view, checked by the coordinator", "api")
MISPREDICTIONS = Family("coordinator_fast_path_mispredictions_total", "counter",
                        "Requests a gateway answered from a stale view that the coordinator decided otherwise (the "
                        "client's answer differed; offsets and sessions are the coordinator's)", "api")
PHASES = Family("coordinator_batch_phase_seconds_total", "counter",
                "Spark's split of batch time (durationMs: latestOffset, queryPlanning, addBatch, walCommit, "
                "commitOffsets, ...)", "phase")
BATCHES = Family("coordinator_batches_total", "counter", "Micro-batches run")
INPUT_ROWS = Family("coordinator_input_rows_total", "counter",
                    "Rows the query read (Spark's numInputRows: requests plus timer rows)")
# Gauges: the latest batch's value.
GAUGES: dict[str, tuple[Family, str, float]] = {f.name: (f, field, factor) for f, field, factor in [
    (Family("coordinator_state_rows", "gauge", "Rows in the state store (Spark)"), "state_rows", 1),
    (Family("coordinator_state_memory_bytes", "gauge", "State store memory (Spark)"), "state_memory_bytes", 1),
    (Family("coordinator_last_batch_id", "gauge", "The latest micro-batch's id"), "batch_id", 1),
]}
GROUPS = Family("coordinator_groups", "gauge",
                "Groups in each state, from the records topic as ListGroups sees them", "state")
LAST_BATCH_TIME = Family("coordinator_last_batch_timestamp_seconds", "gauge",
                         "When the latest micro-batch started (Unix time): alert on time() minus this")
RATES = {"inputRowsPerSecond": Family("coordinator_input_rows_per_second", "gauge",
                                      "Spark's input rate over the latest batch"),
         "processedRowsPerSecond": Family("coordinator_processed_rows_per_second", "gauge",
                                          "Spark's processing rate over the latest batch (below the input rate "
                                          "for long: falling behind)")}
BATCH_SECONDS = Family("coordinator_batch_duration_seconds", "histogram", "Micro-batch duration")


class PrometheusMetrics:
    """Counters and gauges kept from the metrics lines; `render` is the text a scrape gets."""

    def __init__(self) -> None:
        self.server: MetricsServer | None = None
        """Set by whoever serves these metrics (`serve`), so that they can be stopped with them."""
        self._lock = threading.Lock()
        self._counters: dict[str, float] = dict.fromkeys(COUNTERS, 0.0)
        self._state_changes: dict[str, float] = {}
        self._fast_answers: dict[str, float] = {}
        self._mispredictions: dict[str, float] = {}
        self._phases: dict[str, float] = {}
        self._input_rows = 0.0
        self._gauges: dict[str, float] = {}
        self._groups: dict[str, int] = {}
        self._rates: dict[str, float] = {}
        self._last_batch_time: float | None = None
        self._buckets = [0] * len(BATCH_SECONDS_BUCKETS)
        self._batch_seconds_sum = 0.0
        self._batches = 0

    def groups(self, groups_by_state: dict[str, int]) -> None:
        """Groups by state read between batches (the query idle or stopped: `metrics.GROUP_WATCH_SHARE`)."""
        with self._lock:
            self._groups = dict(groups_by_state)

    def observe(self, record: dict, progress: Any = None) -> None:
        """One micro-batch: its metrics line and, for Spark's own rates and input rows, its progress report."""
        with self._lock:
            for name, (_, field, factor) in COUNTERS.items():
                self._counters[name] += factor * record[field]
            for state, n in record["group_state_changes"].items():
                self._state_changes[state] = self._state_changes.get(state, 0) + n
            for api, n in record["fast_answers"].items():
                self._fast_answers[api] = self._fast_answers.get(api, 0) + n
            for api, n in record["fast_path_mispredictions"].items():
                self._mispredictions[api] = self._mispredictions.get(api, 0) + n
            for phase, ms in record["durations_ms"].items():
                self._phases[phase] = self._phases.get(phase, 0) + ms / 1000
            for name, (_, field, factor) in GAUGES.items():
                self._gauges[name] = factor * record[field]
            if record.get("groups_by_state") is not None:
                self._groups = dict(record["groups_by_state"])
            seconds = record["batch_duration_ms"] / 1000
            self._batch_seconds_sum += seconds
            self._batches += 1
            for i, bound in enumerate(BATCH_SECONDS_BUCKETS):
                if seconds <= bound:
                    self._buckets[i] += 1
            self._last_batch_time = _unix_time(record["timestamp"]) or self._last_batch_time
            if progress is not None:
                self._input_rows += progress.numInputRows
                for key in RATES:
                    value = getattr(progress, key, None)
                    if value is not None:
                        self._rates[key] = float(value)

    def render(self) -> str:
        with self._lock:
            out: list[str] = []
            _family(out, BATCHES, [("", self._batches)])
            for name, (family, _, _) in COUNTERS.items():
                _family(out, family, [("", self._counters[name])])
            _family(out, INPUT_ROWS, [("", self._input_rows)])
            _family(out, STATE_CHANGES, sorted(self._state_changes.items()))
            _family(out, FAST_ANSWERS, sorted(self._fast_answers.items()))
            _family(out, MISPREDICTIONS, sorted(self._mispredictions.items()))
            _family(out, PHASES, sorted(self._phases.items()))
            for name, (family, _, _) in GAUGES.items():
                if name in self._gauges:
                    _family(out, family, [("", self._gauges[name])])
            if self._groups:
                _family(out, GROUPS, sorted(self._groups.items()))
            if self._last_batch_time is not None:
                _family(out, LAST_BATCH_TIME, [("", self._last_batch_time)])
            for key, family in RATES.items():
                if key in self._rates:
                    _family(out, family, [("", self._rates[key])])
            out.append(f"# HELP {BATCH_SECONDS.name} {BATCH_SECONDS.help}")
            out.append(f"# TYPE {BATCH_SECONDS.name} histogram")
            for bound, count in zip(BATCH_SECONDS_BUCKETS, self._buckets):
                out.append(f'{BATCH_SECONDS.name}_bucket{{le="{bound}"}} {count}')
            out.append(f'{BATCH_SECONDS.name}_bucket{{le="+Inf"}} {self._batches}')
            out.append(f"{BATCH_SECONDS.name}_sum {_number(self._batch_seconds_sum)}")
            out.append(f"{BATCH_SECONDS.name}_count {self._batches}")
            return "\n".join(out) + "\n"

    def serve(self, host: str, port: int) -> "MetricsServer":
        """Serve `render()` at `/metrics` on `host:port` (port 0: a free one; host "": every interface) from a
        daemon thread."""
        metrics = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path.split("?")[0] not in ("/metrics", "/"):
                    self.send_error(404, "the metrics are at /metrics")
                    return
                body = metrics.render().encode()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
                pass  # a scrape every 15 s is not news

        server = self.server = MetricsServer((host, port), Handler)
        threading.Thread(target=server.serve_forever, name="prometheus-metrics", daemon=True).start()
        return server


class MetricsServer(ThreadingHTTPServer):
    daemon_threads = True

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        """Where to scrape: this host's name when listening on every interface."""
        host = self.server_address[0]
        if host in ("", "0.0.0.0", "::"):
            host = socket.gethostname()
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


def _family(out: list[str], family: Family, samples: list[tuple[str, float]]) -> None:
    out.append(f"# HELP {family.name} {family.help}")
    out.append(f"# TYPE {family.name} {family.kind}")
    for label, value in samples:
        labels = f'{{{family.label}="{_escape(label)}"}}' if family.label else ""
        out.append(f"{family.name}{labels} {_number(value)}")


def _number(value: float) -> str:
    """Integers as such; seconds to the microsecond (sums of milliseconds collect binary fractions)."""
    return str(int(value)) if float(value).is_integer() else repr(round(float(value), 6))


def _escape(label: str) -> str:
    return label.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _unix_time(timestamp: str) -> float | None:
    """Spark's progress timestamp (`2026-11-25T13:48:16.496Z`) as Unix seconds."""
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except (AttributeError, ValueError):
        return None

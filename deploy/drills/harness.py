"""What every drill needs: a broker, the job's topics, the job as a separate process that can be kill -9'd, and a
view of its checkpoint.

The job runs as `python -m coordinator.cli run ...` (local mode by default, or any `--master` through `--conf`) in its
own process group, so `kill()` is a real driver crash: SIGKILL to the Python driver, its JVM and its Python workers
at once, by the process-group id this harness started. Nothing is ever stopped by name.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

ROOT = Path(__file__).resolve().parents[2]
STANDBY_LINE = "standby: "

DRILL_PROPERTIES = {
    "group.initial.rebalance.delay.ms": "500",
    "trigger.interval.ms": "200",
    "topic.requests.partitions": "2",
    "topic.responses.partitions": "2",
    "topic.records.partitions": "2",
    "topic.dead.letters.partitions": "1",
}


def topic_names(prefix: str) -> dict[str, str]:
    return {"topic.requests": f"{prefix}-requests", "topic.responses": f"{prefix}-responses",
            "topic.records": f"{prefix}-records", "topic.dead.letters": f"{prefix}-dead-letters",
            "topic.views": f"{prefix}-views"}


def job_properties(bootstrap: str, checkpoint: Path, prefix: str | None = None,
                   overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The job's full property set for a drill: its defaults, the drill's settings, fresh topic names."""
    from common import config as job_config

    prefix = prefix or f"drill-{uuid.uuid4().hex[:8]}"
    return job_config.load(overrides={**DRILL_PROPERTIES, **topic_names(prefix), "bootstrap.servers": bootstrap,
                                      "checkpoint.location": str(checkpoint), **(overrides or {})})


def create_topics(props: Mapping[str, str]) -> None:
    from common.topics import ensure_topics

    ensure_topics({"bootstrap_servers": props["bootstrap.servers"]}, props)


def delete_topics(props: Mapping[str, str]) -> None:
    from kafka import KafkaAdminClient

    from common.config import Topics

    topics = Topics.from_properties(props)
    admin = KafkaAdminClient(bootstrap_servers=props["bootstrap.servers"])
    try:
        admin.delete_topics([topics.requests, topics.responses, topics.records, topics.dead_letters])
    finally:
        admin.close()


@dataclass
class JobProcess:
    """`coordinator run` as a child process group. `props` are passed as --set flags (the job still reads
    conf/coordinator.properties first), `spark_conf` as --conf flags."""

    props: Mapping[str, str]
    workdir: Path
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    python: str = sys.executable
    proc: subprocess.Popen | None = None
    starts: int = 0
    log_path: Path | None = None
    metrics_path: Path | None = None
    extra_args: list[str] = field(default_factory=list)

    def command(self) -> list[str]:
        cmd = [self.python, "-m", "coordinator.cli", "run", "--metrics-log", str(self.metrics_path), *self.extra_args]
        for key, value in self.props.items():
            if key != "metrics.log":
                cmd += ["--set", f"{key}={value}"]
        for key, value in {"spark.ui.enabled": "false", **self.spark_conf}.items():
            cmd += ["--conf", f"{key}={value}"]
        return cmd

    def start(self) -> "JobProcess":
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        self.log_path = self.workdir / f"job-{self.starts}.log"
        self.metrics_path = self.workdir / "metrics.jsonl"
        out = open(self.log_path, "wb")
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "SPARK_LOCAL_IP": "127.0.0.1"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(self.command(), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        out.close()
        return self

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def wait_running(self, timeout_s: float = 240.0) -> None:
        """Until the job printed its 'running' line (the query has started)."""
        self._wait_for("group coordinator running", timeout_s)

    def _wait_for(self, line: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while line not in self.log_text():
            if self.proc is None or self.proc.poll() is not None:
                code = self.proc and self.proc.returncode
                raise RuntimeError(f"job exited ({code}); log:\n{self.log_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {line!r} from the job within {timeout_s} s; log:\n{self.log_text()[-3000:]}")
            time.sleep(0.2)

    def wait_standby(self, timeout_s: float = 240.0) -> None:
        """Until the job said it is a warm standby (another driver holds the checkpoint's lease)."""
        self._wait_for(STANDBY_LINE, timeout_s)

    def is_standby(self) -> bool:
        return STANDBY_LINE in self.log_text()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """kill -9 the driver: the whole process group this harness started (Python driver, JVM, workers)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        """Graceful stop (SIGTERM: the job stops its query), then SIGKILL whatever is left of the group."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)

    def metrics(self) -> list[dict]:
        if not self.metrics_path or not self.metrics_path.exists():
            return []
        out = []
        for line in self.metrics_path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out


@dataclass
class Checkpoint:
    """Read-only view of a Structured Streaming checkpoint's offset and commit logs."""

    path: Path

    def _ids(self, log: str) -> list[int]:
        d = self.path / log
        return sorted(int(f.name) for f in d.iterdir() if f.name.isdigit()) if d.exists() else []

    def last_offset_batch(self) -> int | None:
        ids = self._ids("offsets")
        return ids[-1] if ids else None

    def last_committed_batch(self) -> int | None:
        ids = self._ids("commits")
        return ids[-1] if ids else None

    def batch_in_flight(self) -> bool:
        """An offsets entry without its commit: a micro-batch is planned and running (or was, at a crash)."""
        planned, committed = self.last_offset_batch(), self.last_committed_batch()
        return planned is not None and (committed is None or planned > committed)


class Broker:
    """A tansu broker for a drill (the job's own embedded-broker code), restartable on the same port."""

    def __init__(self) -> None:
        from streaming.kafka_io.embedded import start_broker

        self._start = start_broker
        self.embedded = start_broker()
        self.port = self.embedded.port

    @property
    def bootstrap(self) -> str:
        return self.embedded.bootstrap_servers

    def restart_empty(self) -> None:
        """tansu keeps everything in memory: a restart comes back with no topics at all."""
        self.embedded.stop()
        self.embedded = self._start(port=self.port)

    def stop(self) -> None:
        self.embedded.stop()


class Environment:
    """A broker (embedded tansu unless `bootstrap` is given), fresh topics, a checkpoint directory, and the job
    process; `close()` stops the job and the broker this environment started, by pid."""

    def __init__(self, workdir: Path, bootstrap: str | None = None, props: Mapping[str, str] | None = None,
                 spark_conf: Mapping[str, str] | None = None) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.broker = None if bootstrap else Broker()
        self.bootstrap = bootstrap or self.broker.bootstrap
        self.checkpoint = self.workdir / "checkpoint"
        self.props = job_properties(self.bootstrap, self.checkpoint, overrides=props)
        create_topics(self.props)
        self.job = JobProcess(self.props, self.workdir, dict(spark_conf or {}))

    @property
    def topics(self):
        from common.config import Topics

        return Topics.from_properties(self.props)

    def wire(self):
        from deploy.drills.fleet import Wire

        return Wire(self.bootstrap, self.topics.requests, self.topics.responses)

    def close(self) -> None:
        try:
            self.job.stop()
        finally:
            if self.broker is not None:
                self.broker.stop()


def cli_supports(*args: str, needle: str) -> bool:
    """Whether `coordinator <args> --help` mentions `needle` (drills adapt to what this build offers)."""
    proc = subprocess.run([sys.executable, "-m", "coordinator.cli", *args, "--help"], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return proc.returncode == 0 and needle in proc.stdout


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

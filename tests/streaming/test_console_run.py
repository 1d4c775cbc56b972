"""`coordinator run` on the embedded default as an operator runs it: start, a Kafka consumer through the gateway,
Ctrl-C. The console says where clients connect and where the metrics go, reports the group's state changes, and
has no WARN or ERROR line, from start to stop.

Slow (a Spark, a broker and a gateway of its own, in a subprocess): the one test of its kind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.admin import NewTopic

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.xdist_group("driver-jvm")]  # tests/conftest.py

NOT_QUIET = re.compile(r"\b(WARN|WARNING|ERROR|FATAL|Exception|Traceback)\b")


def wait_for_line(path: Path, pattern: str, process: subprocess.Popen, timeout_s: float) -> re.Match:
    """The first match of `pattern` in the file the process writes its console to (an upper bound, not a timing
    expectation)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = re.search(pattern, path.read_text(errors="replace"))
        if found:
            return found
        if process.poll() is not None:
            raise AssertionError(f"coordinator run exited with {process.returncode}:\n{path.read_text()}")
        time.sleep(0.5)
    raise TimeoutError(f"no {pattern!r} within {timeout_s} s")


def test_a_clean_start_a_consumer_and_ctrl_c_leave_no_warning_on_the_console(tmp_path):
    console = tmp_path / "console.txt"
    with open(console, "wb") as out:
        # Its own process group, as a shell gives a command; the Ctrl-C below goes to that whole group.
        process = subprocess.Popen(
            [sys.executable, "-m", "coordinator.cli", "run", "--metrics-log", "metrics.jsonl", "--metrics-port", "0",
             "--set", "metrics.prometheus.host=127.0.0.1"],
            cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        broker = wait_for_line(console, r"group coordinator running: bootstrap.servers=(\S+)", process, 600)[1]
        gateway = wait_for_line(console, r"kafka clients: bootstrap.servers=(\S+)", process, 60)[1]
        admin = KafkaAdminClient(bootstrap_servers=broker)
        admin.create_topics([NewTopic("orders", 2, 1)])
        admin.close()
        consumer = KafkaConsumer("orders", bootstrap_servers=gateway, group_id="console", session_timeout_ms=60000,
                                 heartbeat_interval_ms=3000)
        deadline = time.monotonic() + 300
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=500)
        assert consumer.assignment(), "the consumer got no partitions through the gateway"
        consumer.close()
        wait_for_line(console, r"group console: Empty, generation 2, 0 members", process, 300)
        os.killpg(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        assert process.wait(timeout=180) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    text = console.read_text(errors="replace")
    assert [line for line in text.splitlines() if NOT_QUIET.search(line)] == [], text
    assert re.search(r"^metrics: prometheus=http://127\.0\.0\.1:\d+/metrics json-lines=metrics.jsonl$", text, re.M)
    assert "group console: Stable, generation 1, 1 member" in text
    # Its own broker and a throwaway checkpoint: no lease, which nothing could share and a loaded machine's slow
    # renewal would lose, halting the driver and the broker with it (issue 37).
    assert "the lease on" not in text, text  # neither taken, renewed nor released
    assert re.search(r"INFO coordinator: last \d+ s: \d+ batch", text), "the summary of the last interval at stop"
    assert text.rstrip().endswith("INFO coordinator: embedded broker stopped")
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [line["batch_id"] for line in lines] == list(range(len(lines))) and lines

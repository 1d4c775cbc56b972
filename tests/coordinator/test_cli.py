"""`coordinator` given what a new user may give it: each mistake is said in one line, with a non-zero exit, never a
traceback. Fast: nothing here reaches a broker or starts Spark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def coordinator(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "coordinator.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=120)


def test_run_against_a_cluster_it_cannot_reach_says_so_in_one_line(tmp_path):
    # Nothing listens on port 1; the client's bootstrap timeout is shortened so the test does not wait 30 s for it.
    ran = coordinator("run", "--bootstrap-servers", "127.0.0.1:1", "--checkpoint-location", str(tmp_path / "cp"),
                      "--set", "kafka.bootstrap.timeout.ms=300", cwd=tmp_path)
    assert ran.returncode != 0
    assert "Traceback" not in ran.stderr, ran.stderr
    last = ran.stderr.strip().splitlines()[-1]
    assert last.startswith("the coordinator cannot reach the cluster's topics at 127.0.0.1:1: "), ran.stderr
    assert "Unable to bootstrap" in last

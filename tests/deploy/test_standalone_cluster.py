"""The job on a real Spark standalone cluster (a master and two workers on loopback, from the pyspark installation),
launched the way operators launch it (deploy/spark/submit-client.sh: the --py-files zip, merged properties, log4j2):
the same scripted requests get the same responses as in local mode, and killing one worker mid-stream does not
stop the query.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from deploy.drills.fleet import Wire
from deploy.standalone.cluster import StandaloneCluster
from state.errors import Errors
from tests.support import protocol as p
from tests.support.coordinator import NO_RETENTION_CHECK_MS, RELAXED_LEASE, release_lease

# Generous: on a 2-core machine shared with other Spark jobs one JVM start can take minutes.
pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.timeout(1500),
              pytest.mark.xdist_group("driver-jvm")]  # tests/conftest.py

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {"group.initial.rebalance.delay.ms": "500", "trigger.interval.ms": "100",
            "offsets.retention.check.interval.ms": NO_RETENTION_CHECK_MS, **RELAXED_LEASE}  # tests/support/coordinator.py
GROUP = "deploy-standalone"
SESSION_MS = 120_000  # a loaded 2-core machine can take tens of seconds per batch while executors start


def script_first_half(member: str, generation: int) -> list[dict]:
    return [p.sync(GROUP, member, generation, {member: p.ASSIGNMENT}), p.heartbeat(GROUP, member, generation),
            p.commit(GROUP, member, generation, {("orders", 0): 10}), p.fetch(GROUP)]


def script_second_half(member: str, generation: int) -> list[dict]:
    return [p.heartbeat(GROUP, member, generation), p.commit(GROUP, member, generation, {("orders", 0): 20}),
            p.fetch(GROUP), {"api": "DescribeGroups", "group_id": GROUP}, p.leave(GROUP, member), p.fetch(GROUP)]


def play(ask, between=None) -> list[dict]:
    """The scripted conversation; `ask(request) -> response`; `between()` runs after the first half."""
    join = p.join(GROUP, session_timeout_ms=SESSION_MS)
    out = [ask({**join, "request_id": "s-join-1"})]
    member = out[0]["member_id"]
    out.append(ask({**p.join(GROUP, member, session_timeout_ms=SESSION_MS), "request_id": "s-join-2"}))
    generation = out[-1]["generation_id"]
    for i, request in enumerate(script_first_half(member, generation)):
        out.append(ask({**request, "request_id": f"s-a{i}"}))
    if between is not None:
        between()
    for i, request in enumerate(script_second_half(member, generation)):
        out.append(ask({**request, "request_id": f"s-b{i}"}))
    return out


def normalized(responses: list[dict]) -> list[dict]:
    """Member ids embed the batch time (deterministic per run, different across runs): name them by appearance."""
    names: dict[str, str] = {}
    text = json.dumps(responses, sort_keys=True)
    for r in responses:
        for mid in [r.get("member_id"), r.get("leader")] + [m.get("member_id") for m in r.get("members", [])]:
            if mid and mid not in names:
                names[mid] = f"member-{len(names)}"
    for real, name in names.items():
        text = text.replace(real, name)
    return json.loads(text)


def test_standalone_cluster_matches_local_mode_and_survives_a_worker_loss(coordinator, broker, tmp_path):
    # Local mode first (the test session's SparkSession), then stop it: one query at a time on 2 cores.
    local = coordinator(props=SETTINGS)
    local_responses = play(lambda req: local.request(req, timeout_s=300))
    local.close()
    assert [r["error_code"] for r in local_responses[:3]] == [Errors.MEMBER_ID_REQUIRED, Errors.NONE, Errors.NONE]

    prefix = f"sa-{uuid.uuid4().hex[:8]}"
    topics = {"topic.requests": f"{prefix}-requests", "topic.responses": f"{prefix}-responses",
              "topic.records": f"{prefix}-records", "topic.dead.letters": f"{prefix}-dead-letters"}
    with StandaloneCluster(tmp_path / "cluster", workers=2) as cluster:
        props = {**SETTINGS, **topics, "metrics.log": str(tmp_path / "metrics.jsonl")}
        run_flags = [x for k, v in props.items() for x in ("--set", f"{k}={v}")]
        # A driver of this checkpoint stopped cleanly before: the job takes the lease at once.
        release_lease(broker, {**props, "checkpoint.location": str(tmp_path / "checkpoint")})
        log_path = tmp_path / "job.log"
        with open(log_path, "wb") as out:
            job = subprocess.Popen(
                [str(ROOT / "deploy/spark/submit-client.sh"), "--master", cluster.master_url,
                 "--checkpoint-location", str(tmp_path / "checkpoint"), "--bootstrap-servers", broker,
                 "--", *run_flags],
                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                env={**os.environ, "COORDINATOR_ZIP": str(tmp_path / "coordinator-pyfiles.zip")})
        try:
            deadline = time.monotonic() + 300
            while "group coordinator running" not in log_path.read_text(errors="replace"):
                assert job.poll() is None, log_path.read_text(errors="replace")[-3000:]
                assert time.monotonic() < deadline, "job did not start"
                time.sleep(0.5)
            wire = Wire(broker, topics["topic.requests"], topics["topic.responses"])

            def ask(request: dict) -> dict:
                wire.send(request)
                wire.flush()
                end = time.monotonic() + 300
                while time.monotonic() < end:
                    for raw in wire.poll(100):
                        body = json.loads(raw)
                        if body.get("request_id") == request["request_id"]:
                            return body
                raise TimeoutError(f"no response to {request['request_id']}")

            def lose_a_worker() -> None:
                cluster.kill_worker(0)
                end = time.monotonic() + 120
                while cluster.alive_workers() != 1 and time.monotonic() < end:
                    time.sleep(0.5)

            cluster_responses = play(ask, between=lose_a_worker)
            wire.close()
            assert job.poll() is None, "the query stopped after a worker was lost"
            assert cluster.alive_workers() == 1
        finally:
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGKILL)
            job.wait(timeout=30)

    assert normalized(cluster_responses) == normalized(local_responses)

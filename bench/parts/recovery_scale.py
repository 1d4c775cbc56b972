"""Recovery at scale (issue 35): a preloaded population, then the two ways a driver comes back, timed end to end.

- rebuild: `coordinator run --rebuild-from-records` on a new checkpoint, from the process's start to the first answer
  that needed a loaded group (a Heartbeat of the last group's first member, sent every `PROBE_EVERY_S` from the
  start: answered with no error only once that group is loaded). Its phases come from the job's log (reading the
  records topic, publishing the loads, the query's start) and its metrics log (the loading batches).
- takeover: a driver serving the population is killed -9 while a standby waits on the same checkpoint; the time from
  the kill to the first answer to a probe sent after it.

The population is written to the records topic as the job writes it (a group record and one offset record per
member, `bench.state_scale.template_group` copied under G group ids), so both paths load what a rebuild loads. The
job runs as in the drills (`deploy.drills.harness.JobProcess`: its own process group, killed by that id).
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from deploy.drills.harness import Environment, JobProcess
from state.batch import StoredGroup, decode_state
from state.classic.records import group_record
from state.records import offset_record

PROBE_EVERY_S = 0.25


def preload(bootstrap: str, topic: str, template: StoredGroup, groups: int) -> int:
    """`groups` copies of the template group in the records topic (as the job writes them); returns the records."""
    group = decode_state(template)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                         "queue.buffering.max.messages": 1_000_000, "compression.type": "none"})
    written = 0
    for g in range(groups):
        group.group_id = f"g{g}"
        records = [group_record(group, persist=True).encode()]
        records += [offset_record(group.group_id, t, p, o).encode() for (t, p), o in sorted(group.offsets.items())]
        for key, value in records:
            while True:
                try:
                    producer.produce(topic, key=key, value=value)
                    break
                except BufferError:
                    producer.poll(0.05)
        written += len(records)
        producer.poll(0)
    if producer.flush(300):
        raise RuntimeError("the records topic's preload was not acknowledged")
    return written


@dataclass
class Prober:
    """Sends a Heartbeat of one member every `PROBE_EVERY_S` and notes when the first is answered with no error."""

    bootstrap: str
    requests: str
    responses: str
    group: str
    member: str
    generation: int
    answered: dict = field(default_factory=dict)
    sent: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0})
        self.consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"probe-{uuid.uuid4().hex}",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 10})
        parts = self.consumer.list_topics(self.responses, timeout=30).topics[self.responses].partitions
        high = {p: self.consumer.get_watermark_offsets(TopicPartition(self.responses, p), timeout=30)[1]
                for p in parts}
        self.consumer.assign([TopicPartition(self.responses, p, high[p]) for p in parts])
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        next_send = 0.0
        while self.running:
            now = time.monotonic()
            if now >= next_send:
                rid = f"probe-{uuid.uuid4().hex}"
                self.sent[rid] = now
                body = {"api": "Heartbeat", "request_id": rid, "group_id": self.group, "member_id": self.member,
                        "generation_id": self.generation, "group_instance_id": None}
                self.producer.produce(self.requests, key=self.group.encode(), value=json.dumps(body).encode())
                self.producer.poll(0)
                next_send = now + PROBE_EVERY_S
            message = self.consumer.poll(0.05)
            if message is None or message.error():
                continue
            try:
                body = json.loads(message.value())
            except ValueError:
                continue
            rid = body.get("request_id")
            if rid in self.sent and rid not in self.answered:
                self.answered[rid] = (time.monotonic(), body.get("error_code"))

    def first_ok_after(self, since: float, timeout_s: float) -> float:
        """When the first probe sent after `since` was answered with no error."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ok = [at for rid, (at, code) in list(self.answered.items()) if code == 0 and self.sent[rid] >= since]
            if ok:
                return min(ok)
            time.sleep(0.05)
        raise TimeoutError(f"no probe sent after the start was answered within {timeout_s:.0f} s")

    def close(self) -> None:
        self.running = False
        self.thread.join()
        self.consumer.close()
        self.producer.flush(10)


LOG_PHASES = {
    "records_read": re.compile(r"rebuild: read (\d+) key\(s\) .* in ([\d.]+) s"),
    "loads_published": re.compile(r"rebuild: published (\d+) load\(s\) .* in ([\d.]+) s"),
}


def job_phases(job: JobProcess) -> dict:
    """The rebuild's phases as the job logged them, and its loading batches from the metrics log."""
    text = job.log_text()
    phases = {}
    for name, pattern in LOG_PHASES.items():
        found = pattern.search(text)
        if found:
            phases[name] = {"count": int(found.group(1)), "s": float(found.group(2))}
    batches = [m for m in job.metrics() if m.get("requests_in")]
    phases["batches"] = [{"rows": m.get("requests_in"), "ms": m.get("batch_duration_ms")} for m in batches[:20]]
    return phases


LEASE_TAKEN = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*took the lease", re.M)


def takeover_phases(standby: JobProcess, killed_at: float) -> dict:
    """Where a takeover's time went, in seconds from the kill: when the standby took the lease (its log), and its
    first batches (its metrics log: when each started, how long it took, the groups it called, its state calls)."""
    phases: dict = {}
    taken = LEASE_TAKEN.search(standby.log_text())
    if taken:
        at = datetime.strptime(taken.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()  # the log's local time
        phases["lease_taken_s"] = round(at - killed_at, 1)
    batches = []
    for m in standby.metrics():
        started = datetime.fromisoformat(m["timestamp"].replace("Z", "+00:00")).timestamp() - killed_at
        if started >= 0:  # not the standby's rehearsal on its scratch checkpoint
            batches.append({"started_s": round(started, 1), "ms": m.get("batch_duration_ms"),
                            "rows": m.get("requests_in"), "groups_called": m.get("groups_called"),
                            "state_calls_ms": m.get("state_calls_ms")})
    phases["batches"] = batches[:4]
    return phases


def environment(workdir: Path, bootstrap: str | None, props: dict | None = None) -> Environment:
    return Environment(workdir, bootstrap, props={"max.requests.per.trigger": "50000", **(props or {})})


def recovery(bootstrap: str | None, workdir: Path, template: StoredGroup, member_ids: list[str], generation: int,
             groups: int, timeout_s: float = 1800.0, takeover: bool = True) -> dict:
    """Preload `groups`; rebuild them with `coordinator run --rebuild-from-records` on a new checkpoint, timed from
    the process's start to the first answer; start a standby on that checkpoint; kill -9 the active driver and time
    the takeover from the kill to the first answer (`takeover=False`: the rebuild alone, twice as fast to measure).
    Every job is stopped by its process group before this returns."""
    env = environment(workdir, bootstrap)
    standby = JobProcess(env.props, workdir / "standby")
    prober = None
    try:
        start = time.monotonic()
        records = preload(env.bootstrap, env.topics.records, template, groups)
        preload_s = time.monotonic() - start
        prober = Prober(env.bootstrap, env.topics.requests, env.topics.responses, f"g{groups - 1}", member_ids[0],
                        generation)
        env.job.extra_args = ["--rebuild-from-records"]
        started = time.monotonic()
        env.job.start()
        running = _when_logged(env.job, "group coordinator running", timeout_s)
        rebuilt = prober.first_ok_after(started, timeout_s) - started
        members = groups * len(member_ids)
        result = {"groups": groups, "members": members, "records": records, "preload_s": round(preload_s, 1),
                  "rebuild": {"first_answer_s": round(rebuilt, 1), "query_started_s": round(running - started, 1),
                              "members_per_s": round(members / rebuilt), **job_phases(env.job)}}
        if not takeover:
            return result
        standby_started = time.monotonic()
        standby.start()
        standby.wait_standby(timeout_s)
        # its start to standing by: the Spark session and its read of the records topic (the group watch's)
        result["standby_ready_s"] = round(time.monotonic() - standby_started, 1)
        time.sleep(2)  # a few renewals read by the standby
        killed, killed_at = time.monotonic(), time.time()
        env.job.kill()
        result["takeover_s"] = round(prober.first_ok_after(killed, timeout_s) - killed, 1)
        result["takeover"] = takeover_phases(standby, killed_at)
        return result
    finally:
        if prober is not None:
            prober.close()
        standby.stop()
        env.close()
        shutil.rmtree(env.checkpoint, ignore_errors=True)


def _when_logged(job: JobProcess, line: str, timeout_s: float) -> float:
    deadline = time.monotonic() + timeout_s
    while line not in job.log_text():
        if not job.alive():
            raise RuntimeError(f"the job exited; log:\n{job.log_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {line!r} within {timeout_s:.0f} s")
        time.sleep(0.05)
    return time.monotonic()

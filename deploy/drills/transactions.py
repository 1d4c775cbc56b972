"""Drill: exactly-once transactions through the gateway across kill -9 of the driver (a standby takes over) and of
the gateway (started again at the same address), then a rebuild from the records topic.

An exactly-once application (`deploy/drills/eos_app.py`: confluent-kafka, a static member, one transactional id)
reads `--records` input records, written at `--rate` a second until the kills are over and then at once, through a
gateway, and writes one output per input, each transaction committing its input offsets (TxnOffsetCommit). While it
runs, the driver is killed with -9 (the standby takes over, or the job is started again) and then the gateway,
`--gateway-kills` times, each after five more transactions committed (started again on the same port: the
application reconnects; it does not re-bootstrap, see eos_app.py); the application itself is started again whenever
it exits. A wait of 60 s without a commit makes the application print its threads' stacks into its log. At the end:

- every input offset is in exactly one committed transaction's output (judged from the output's markers, read raw:
  tansu's read_committed also returns aborted records);
- the group's committed offset (a require_stable fetch) is the input's end, and nothing stays pending;
- after the job is stopped and started on a new checkpoint with `--rebuild-from-records`, the same.

    python -m deploy.drills.transactions [--records 2000] [--rate 20] [--no-standby] [--gateway-kills 1]
        [--workdir DIR] [--debug CONTEXTS]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from deploy.drills.harness import ROOT, Environment, JobProcess, log
from deploy.drills.verdict import Verdict

STALL_S = 60.0
"""A wait for commits this long without one asks the application where it waits (its threads' stacks)."""


class App:
    """The exactly-once application as a child process, started again (same spec) whenever it exits."""

    def __init__(self, spec: dict[str, Any], logs: Path) -> None:
        self.spec = spec
        self.logs = logs
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.commits = 0
        self.aborts = 0
        self.next = 0

    def start(self) -> None:
        self.starts += 1
        err = open(self.logs / f"app-{self.starts}.log", "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "deploy.drills.eos_app", json.dumps(self.spec)],
                                     cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True)
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "committed":
                self.commits += 1
                self.next = max(self.next, event["next"])
            elif event.get("event") == "aborted":
                self.aborts += 1
                if self.aborts <= 20:
                    log(f"the application aborted a transaction: {event.get('error')}")

    def keep_running(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            log(f"the application exited ({self.proc.returncode}); starting it again")
            self.start()

    def wait_commits(self, more: int, timeout_s: float) -> bool:
        target = self.commits + more
        deadline = time.monotonic() + timeout_s
        progress, seen = time.monotonic(), self.commits
        while self.commits < target:
            now = time.monotonic()
            if now > deadline:
                return False
            if self.commits != seen:
                progress, seen = now, self.commits
            elif now - progress > STALL_S and self.proc is not None and self.proc.poll() is None:
                log(f"no commit for {STALL_S:.0f} s: the application's threads are in app-{self.starts}.log")
                self.proc.send_signal(signal.SIGUSR1)
                progress = now
            self.keep_running()
            time.sleep(0.1)
        return True

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


def committed_offset(bootstrap: str, group: str, topic: str, timeout_s: float = 60.0) -> int:
    """The group's committed offset of partition 0 as librdkafka reads it with require_stable (read_committed): it
    waits while a transaction's offsets are pending."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed",
                         "enable.auto.commit": False})
    try:
        (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout_s)
        return tp.offset
    finally:
        consumer.close()


def sink_outcomes(bootstrap: str, topic: str) -> list[tuple[int, int]]:
    """(input offset, outcome) of every record of the output's partition 0 as the log has it, read raw: outcome 1
    when the next marker of its producer id after it is a COMMIT, 0 an ABORT, -1 none."""
    from kafka.record import MemoryRecords

    from common.markers import fetch_raw

    host, _, port = bootstrap.split(",")[0].rpartition(":")
    records: list[tuple[int, int, int]] = []  # (offset, producer id, input offset)
    markers: list[tuple[int, int, bool]] = []  # (offset, producer id, committed)
    position, correlation = 0, 0
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        while True:
            correlation += 1
            fetched = fetch_raw(sock, topic, 0, position, correlation, 1 << 22)
            batches = MemoryRecords(fetched or b"")
            last = position - 1
            while (batch := batches.next_batch()) is not None:
                for record in batch:
                    if record.offset < position:
                        continue
                    if getattr(batch, "is_control_batch", False):
                        markers.append((record.offset, batch.producer_id, bool(record.commit)))
                    else:
                        records.append((record.offset, batch.producer_id, int(record.value.decode())))
                last = max(last, batch.base_offset + batch.last_offset_delta)
            if last < position:
                break
            position = last + 1
    outcomes = []
    for offset, producer_id, value in records:
        ends = [committed for at, pid, committed in markers if pid == producer_id and at > offset]
        outcomes.append((value, -1 if not ends else int(ends[0])))
    return outcomes


def _free_pair() -> int:
    """A loopback port P with P + 1 free too (as far as a bind can tell now)."""
    for _ in range(100):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            if port >= 65535:
                continue
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
        return port
    raise RuntimeError("no two free consecutive loopback ports")


def judge(verdict: Verdict, stage: str, bootstrap: str, broker: str, group: str, source: str, sink: str,
          records: int, timeout_s: float) -> None:
    """The checks after `stage`: every input once in a committed transaction, the committed offset at the end."""
    committed = sorted(value for value, outcome in sink_outcomes(broker, sink) if outcome == 1)
    verdict.checks[f"{stage}: every input offset in exactly one committed transaction"] = \
        committed == list(range(records))
    if committed != list(range(records)):
        seen = set(committed)
        verdict.notes.append(f"{stage}: {len(committed)} committed outputs, {len(committed) - len(seen)} duplicated, "
                             f"missing {sorted(set(range(records)) - seen)[:10]}")
    offset = committed_offset(bootstrap, group, source, timeout_s)
    verdict.checks[f"{stage}: committed offset = input end ({records})"] = offset == records
    if offset != records:
        verdict.notes.append(f"{stage}: committed offset {offset}")


def _feed(bootstrap: str, topic: str, records: int, rate: float, hurry: threading.Event,
          done: threading.Event) -> None:
    """`records` inputs at `rate` a second, so that transactions are open and committing at each kill; once
    `hurry` is set (the kills are over) the rest at once, rather than the drill idling on its pace."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    started = time.monotonic()
    for n in range(records):
        producer.produce(topic, f"in-{n}".encode())
        producer.poll(0)
        pause = started + (n + 1) / rate - time.monotonic()
        if pause > 0 and not hurry.is_set():
            time.sleep(pause)
    producer.flush(60)
    done.set()


def run(workdir: Path, records: int = 2000, standby: bool = True, bootstrap: str | None = None,
        start_timeout_s: float = 300.0, rate: float = 20.0, debug: str = "", gateway_kills: int = 1) -> Verdict:
    from confluent_kafka.admin import AdminClient, NewTopic

    from gateway.front.process import start_gateway

    verdict = Verdict("exactly-once transactions across kill -9 of the driver and of the gateway, then a rebuild")
    env = Environment(workdir, bootstrap)
    spare = JobProcess(env.props, env.workdir / "standby", env.job.spark_conf) if standby else None
    topics = {k: v for k, v in env.props.items() if k.startswith("topic.")}
    gateway = None
    app = None
    try:
        env.job.start()
        env.job.wait_running(start_timeout_s)
        if spare is not None:
            spare.start().wait_standby(start_timeout_s)
            log("standby ready")
        # a bootstrap port whose next one is free too: the gateway's listener for the broker takes that one, and
        # both must be free again when it is started at the same address after its kill
        for attempt in range(5):  # another process may take a port of the pair before the gateway binds it
            address = f"127.0.0.1:{_free_pair()}"
            try:
                gateway = start_gateway(env.bootstrap, topics, listen=address, log_path=env.workdir / "gateway.log")
                break
            except RuntimeError:  # it exited: "address already in use" (gateway.log)
                if attempt == 4:
                    raise
        admin = AdminClient({"bootstrap.servers": env.bootstrap})
        source, sink = f"eos-in-{time.monotonic_ns()}", f"eos-out-{time.monotonic_ns()}"
        for topic in (source, sink):
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
        fed, hurry = threading.Event(), threading.Event()
        threading.Thread(target=_feed, args=(env.bootstrap, source, records, rate, hurry, fed), daemon=True).start()
        group = f"eos-{time.monotonic_ns()}"
        app = App({"bootstrap": address, "source": source, "sink": sink, "group": group,
                   "transactional_id": f"tx-{group}", "instance_id": "eos-1", "records": 10, "debug": debug},
                  env.workdir)
        app.start()
        if not app.wait_commits(5, start_timeout_s):
            verdict.notes.append("the application committed fewer than 5 transactions before the first kill")
        killed = time.monotonic()
        env.job.kill()
        log(f"driver killed -9 at input {app.next}; {'the standby takes over' if spare else 'restarting'}")
        if spare is None:
            env.job.start()
        else:
            env.job, spare = spare, env.job
        recovered = app.wait_commits(5, start_timeout_s)
        verdict.time_to_recover_s.append(time.monotonic() - killed if recovered else float("nan"))
        log(f"transactions commit again {verdict.time_to_recover_s[-1]:.1f} s after the driver's kill")
        for _ in range(gateway_kills):
            killed = time.monotonic()
            gateway.process.kill()
            gateway.process.wait(30)
            log(f"gateway killed -9 at input {app.next}; starting it again at {address}")
            gateway = start_gateway(env.bootstrap, topics, listen=address, log_path=env.workdir / "gateway.log")
            recovered = app.wait_commits(5, start_timeout_s)
            verdict.time_to_recover_s.append(time.monotonic() - killed if recovered else float("nan"))
            log(f"transactions commit again {verdict.time_to_recover_s[-1]:.1f} s after the gateway's kill")
        hurry.set()
        if not fed.wait(start_timeout_s):
            verdict.notes.append("the input was not all written")
        deadline = time.monotonic() + start_timeout_s
        while app.next < records and time.monotonic() < deadline:
            app.keep_running()
            time.sleep(0.2)
        app.kill()
        verdict.notes.append(f"application started {app.starts} times, {app.commits} transactions committed")
        judge(verdict, "after the kills", address, env.bootstrap, group, source, sink, records, start_timeout_s)

        if spare is not None:
            spare.stop()
        env.job.stop()
        shutil.rmtree(env.checkpoint)
        env.job.extra_args = ["--rebuild-from-records"]
        env.job.start()
        env.job.wait_running(start_timeout_s)
        log("rebuilt from the records topic on a new checkpoint")
        judge(verdict, "after the rebuild", address, env.bootstrap, group, source, sink, records, start_timeout_s)
        return verdict
    finally:
        if app is not None:
            app.kill()
        if gateway is not None:
            gateway.stop()
        if spare is not None:
            spare.stop()
        env.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.drills.transactions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=20.0, help="input records written per second")
    parser.add_argument("--no-standby", action="store_true")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--gateway-kills", type=int, default=1, help="times the gateway is killed -9 (each after "
                        "5 transactions committed since the last)")
    parser.add_argument("--debug", default="", help="librdkafka debug contexts of the application's producer "
                        "(e.g. eos,protocol), into its log app-N.log")
    args = parser.parse_args(argv)
    verdict = run(args.workdir or Path(tempfile.mkdtemp(prefix="drill-transactions-")), args.records,
                  standby=not args.no_standby, rate=args.rate, debug=args.debug,
                  gateway_kills=args.gateway_kills)
    print(verdict.table())
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    sys.exit(main())

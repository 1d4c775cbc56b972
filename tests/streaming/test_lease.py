"""One driver per checkpoint through a lease in Kafka (streaming/recovery/lease.py), on a real broker and real
processes.

The lease alone: a second driver stands by while the holder renews, takes over when the holder is killed or
releases, and a holder that is fenced, paused past its timeout, or sees another driver's record stops. Then two
`coordinator run` drivers on one checkpoint: the active one's Python process stopped (its JVM halts itself before
the standby takes over), and the active one's whole process group stopped and resumed after the takeover (it halts
without another batch).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient

from common import config as job_config
from common.topics import ensure_topics
from state.errors import Errors
from streaming.kafka_io.kafka_clients import high_watermarks
from streaming.recovery.lease import EXIT_LEASE_LOST, HELD, LeaseRecord, LeaseSettings, checkpoint_key
from tests.support.coordinator import files_not_sparks, loads_and_lease_times, release_lease

ROOT = Path(__file__).resolve().parents[2]

# A driver's lease and nothing else, as its own process: it says when it stands by, holds and loses the lease, and
# releases it when its stdin closes.
DRIVER = textwrap.dedent("""
    import json, os, sys
    from streaming.recovery.lease import EXIT_LEASE_LOST, Lease, LeaseSettings
    props = json.loads(sys.argv[1])
    lease = Lease({"bootstrap_servers": props["bootstrap.servers"]}, LeaseSettings.from_properties(props))
    def lost(reason):
        print("lost:", reason, flush=True)
        os._exit(EXIT_LEASE_LOST)
    lease.acquire(on_standby=lambda: print("standby", flush=True), on_lost=lost)
    print("holding", lease.holder, flush=True)
    sys.stdin.read()
    print("released" if lease.close(release=True) else "not released", flush=True)
""")


def _props(broker: str, checkpoint: Path, **overrides: str) -> dict[str, str]:
    return job_config.load(overrides={"bootstrap.servers": broker, "checkpoint.location": str(checkpoint),
                                      **overrides})


def _on_broker(broker: str, checkpoint: Path, **overrides: str) -> dict[str, str]:
    """The job's properties, with its topics (the lease topic among them) on `broker`."""
    props = _props(broker, checkpoint, **overrides)
    ensure_topics({"bootstrap_servers": broker}, props)
    return props


class Driver:
    """A DRIVER process, killed by its own pid at the end."""

    def __init__(self, props: dict[str, str]) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen([sys.executable, "-c", DRIVER, json.dumps(props)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)

    def line(self, timeout_s: float = 60.0) -> str:
        """The next line it prints (an upper bound for a failing test, not a timing expectation)."""
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        assert ready, f"no line within {timeout_s} s"
        return self.proc.stdout.readline().strip()

    def silent_for(self, seconds: float) -> bool:
        return not select.select([self.proc.stdout], [], [], seconds)[0]

    def signal(self, signum: int) -> None:
        os.kill(self.proc.pid, signum)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def drivers():
    """`drivers(props, says)`: a DRIVER process, once its first line starts with `says`."""
    started: list[Driver] = []

    def start(props: dict[str, str], says: str) -> Driver:
        started.append(Driver(props))
        first = started[-1].line()
        assert first.startswith(says), first
        return started[-1]

    yield start
    for driver in started:
        driver.close()


def _records(broker: str, settings: LeaseSettings) -> list[LeaseRecord]:
    """Every record under the lease's key, in log order."""
    consumer = KafkaConsumer(bootstrap_servers=broker, group_id=None, enable_auto_commit=False)
    try:
        tp = TopicPartition(settings.topic, 0)
        end = high_watermarks(consumer, {tp: 0})[tp]
        consumer.seek(tp, 0)
        out = []
        while consumer.position(tp) < end:
            for record in consumer.poll(timeout_ms=1000).get(tp, ()):
                if record.key == settings.key.encode() and record.offset < end:
                    out.append(LeaseRecord.decode(record.value))
        return out
    finally:
        consumer.close()


def test_every_name_of_a_checkpoint_is_one_key_and_the_interval_fits_the_timeout(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    key = checkpoint_key(str(tmp_path / "real"))
    assert key == f"file://{tmp_path / 'real'}"
    assert checkpoint_key(f"file://{tmp_path}/real/") == key
    assert checkpoint_key(str(tmp_path / "link")) == key
    assert checkpoint_key("hdfs://namenode:8020/checkpoints/coordinator/") == \
        "hdfs://namenode:8020/checkpoints/coordinator"
    assert checkpoint_key("s3a://bucket/checkpoint") == "s3a://bucket/checkpoint"
    with pytest.raises(ValueError, match="at most half"):
        LeaseSettings.from_properties(_props("unused:9092", tmp_path, **{"lease.timeout.ms": "2000",
                                                                         "lease.renew.interval.ms": "1500"}))


@pytest.mark.broker
def test_the_lease_topic_has_one_partition(broker, tmp_path):
    _on_broker(broker, tmp_path, **{"topic.lease": "lease-topic-test"})
    admin = KafkaAdminClient(bootstrap_servers=broker)
    try:
        [topic] = admin.describe_topics(["lease-topic-test"])
        assert len(topic["partitions"]) == 1
    finally:
        admin.close()


@pytest.mark.broker
def test_a_second_driver_stands_by_while_the_holder_renews_and_takes_over_when_it_is_killed(broker, tmp_path,
                                                                                            drivers):
    props = _on_broker(broker, tmp_path / "checkpoint")
    first = drivers(props, "holding")
    second = drivers(props, "standby")
    timeout_s = int(props["lease.timeout.ms"]) / 1000
    assert second.silent_for(3 * timeout_s), "the standby took a lease that was being renewed"

    first.signal(signal.SIGKILL)
    killed = time.monotonic()
    assert second.line().startswith("holding")
    print(f"took over {time.monotonic() - killed:.2f} s after kill -9 (lease.timeout.ms={props['lease.timeout.ms']})")


@pytest.mark.broker
def test_a_released_lease_is_taken_at_once_not_after_the_timeout(broker, tmp_path, drivers):
    props = _on_broker(broker, tmp_path / "checkpoint", **{"lease.timeout.ms": "20000"})
    release_lease(broker, props)  # else the first driver would watch one timeout (20 s) before it takes the lease
    first = drivers(props, "holding")
    second = drivers(props, "standby")
    first.proc.stdin.close()
    assert first.line() == "released"
    assert second.line(10).startswith("holding"), "took over well within its 20 s timeout: by the release"


@pytest.mark.broker
def test_a_holder_fenced_by_a_new_producer_on_its_transactional_id_stops(broker, tmp_path, drivers):
    props = _on_broker(broker, tmp_path / "checkpoint")
    release_lease(broker, props)  # the first driver holds at once (the stand-by test watches a timeout first)
    holder = drivers(props, "holding")
    usurper = KafkaProducer(bootstrap_servers=broker,
                            transactional_id=LeaseSettings.from_properties(props).transactional_id)
    try:
        usurper.init_transactions()
        assert holder.line().startswith("lost: fenced")
        assert holder.proc.wait(10) == EXIT_LEASE_LOST
    finally:
        usurper.close()


@pytest.mark.broker
def test_a_holder_that_reads_another_drivers_record_after_its_own_stops(broker, tmp_path, drivers):
    props = _on_broker(broker, tmp_path / "checkpoint")
    release_lease(broker, props)  # the first driver holds at once (the stand-by test watches a timeout first)
    settings = LeaseSettings.from_properties(props)
    holder = drivers(props, "holding")
    other = KafkaProducer(bootstrap_servers=broker)
    try:
        other.send(settings.topic, key=settings.key.encode(), value=LeaseRecord("elsewhere", 9, HELD, 2000).encode(),
                   partition=0).get(10)
    finally:
        other.close()
    assert holder.line() == "lost: elsewhere took the lease (epoch 9)"
    assert holder.proc.wait(10) == EXIT_LEASE_LOST


@pytest.mark.broker
def test_a_paused_holder_resumed_after_the_takeover_stops_and_never_writes_again(broker, tmp_path, drivers):
    props = _on_broker(broker, tmp_path / "checkpoint")
    release_lease(broker, props)  # the first driver holds at once (the stand-by test watches a timeout first)
    settings = LeaseSettings.from_properties(props)
    old = drivers(props, "holding")
    new = drivers(props, "standby")

    old.signal(signal.SIGSTOP)
    new_holder = new.line().split()[1]
    old.signal(signal.SIGCONT)
    reason = old.line()
    print(reason)
    assert reason.startswith("lost: ")  # its deadline passed while it was stopped, or it was fenced
    assert old.proc.wait(10) == EXIT_LEASE_LOST
    assert new.silent_for(2 * settings.timeout_s) and new.proc.poll() is None, "the new holder kept the lease"

    holders = [r.holder for r in _records(broker, settings)]
    taken = holders.index(new_holder)
    assert set(holders[taken:]) == {new_holder}, "no record from the old holder after the takeover"


# --- two `coordinator run` drivers on one checkpoint -------------------------------------------------------------

def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def _running(pid: int) -> bool:
    """Alive and not a zombie (a halted JVM whose stopped parent cannot reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _jvm_of(driver) -> int:
    [jvm] = [p for p in _children(driver.proc.pid) if b"java" in Path(f"/proc/{p}/cmdline").read_bytes()]
    return jvm


def _ask(wire, timeout_s: float = 120.0) -> dict:
    """A DescribeGroups through the job; its answer."""
    from client import protocol

    request_id = wire.send(protocol.describe_group("lease-test"))
    wire.flush()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for raw in wire.poll(100):
            body = json.loads(raw)
            if body.get("request_id") == request_id:
                return body
    raise TimeoutError(f"no answer to {request_id} within {timeout_s} s")


@pytest.mark.spark
@pytest.mark.timeout(1200)
@pytest.mark.xdist_group("driver-jvm")  # tests/conftest.py
def test_a_stopped_active_driver_halts_before_the_standby_takes_over_and_never_writes_again(broker, tmp_path):
    from deploy.drills.harness import JobProcess, create_topics, job_properties
    from deploy.drills.fleet import Wire

    props = job_properties(broker, tmp_path / "checkpoint")
    create_topics(props)
    first = JobProcess(props, tmp_path / "first").start()
    second = JobProcess(props, tmp_path / "second")
    wire = Wire(broker, props["topic.requests"], props["topic.responses"])
    try:
        first.wait_running()
        second.start().wait_standby()

        # Only the active driver's Python process stops: its JVM would run on, but halts at its own deadline.
        jvm = _jvm_of(first)
        first.proc.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + 120
        while "took the lease" not in second.log_text():
            jvm_gone = not _running(jvm)
            assert time.monotonic() < deadline, "the standby did not take over"
            time.sleep(0.05)
        assert jvm_gone, "the stopped driver's JVM still ran when the standby took the lease"
        assert _ask(wire)["error_code"] == Errors.NONE
        first.proc.send_signal(signal.SIGCONT)
        assert first.proc.wait(30) == EXIT_LEASE_LOST
        assert "lost the lease" in first.log_text()

        # The whole process group of the (new) active driver stops and resumes after the takeover: it halts and
        # runs no batch, though requests came in meanwhile.
        first.start().wait_standby()
        batches = len(second.metrics())
        os.killpg(second.proc.pid, signal.SIGSTOP)
        assert _ask(wire)["error_code"] == Errors.NONE  # answered by `first`, which took over
        os.killpg(second.proc.pid, signal.SIGCONT)
        assert second.proc.wait(30) == EXIT_LEASE_LOST
        assert "lost the lease" in second.log_text()
        assert len(second.metrics()) == batches, "the resumed driver ran a batch"
        for job in (first, second):
            for sign in ("Concurrent update", "CONCURRENT_STREAM_LOG_UPDATE", "concurrently using"):
                assert sign not in job.log_text(), "two queries wrote one checkpoint's log"
        assert _ask(wire)["error_code"] == Errors.NONE
        assert files_not_sparks(str(tmp_path / "checkpoint")) == [], "only Spark writes under the checkpoint"
    finally:
        wire.close()
        for job in (first, second):
            if job.proc is not None and job.proc.poll() is None:
                os.killpg(job.proc.pid, signal.SIGCONT)
            job.stop()


@pytest.mark.spark
@pytest.mark.timeout(1200)
@pytest.mark.xdist_group("driver-jvm")  # tests/conftest.py
def test_a_rebuild_that_finds_the_lease_held_stands_by_without_publishing_and_publishes_after_taking_over(
        broker, tmp_path, drivers):
    """Issue 35: a million-member rebuild publishes ~0.5 GB of loads to the broker its lease renewals go to, and on a
    loaded host two of two halted on their own lease while publishing. `coordinator run --rebuild-from-records`
    publishes while it still watches the lease, once it has seen that no other driver holds it (the population
    takeover in tests/streaming/test_rebuild_population.py checks that every load is older than the lease). A driver
    that finds the lease held stands by without publishing (the holder may be running the query on the checkpoint),
    and publishes only once it has taken over a checkpoint without progress: the lease, then the loads."""
    from client import protocol
    from deploy.drills.fleet import Wire
    from deploy.drills.harness import JobProcess, job_properties
    from tests.state.context import GroupContext
    from tests.support.kafka import producer

    group = GroupContext(group_id="rebuilt")
    leader = group.stable_group(3)[0]
    group.commit({("orders", 0): 41}, leader, group.group.generation)

    def population(props: dict[str, str]) -> None:
        ensure_topics({"bootstrap_servers": broker}, props)
        out = producer(broker)
        for key, value in group.records:
            out.send(props["topic.records"], key=key, value=value)
        out.flush()

    def offsets(props: dict[str, str]) -> dict:
        wire = Wire(broker, props["topic.requests"], props["topic.responses"])
        try:
            request_id = wire.send(protocol.offset_fetch("rebuilt", [("orders", 0)]))
            wire.flush()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                for raw in wire.poll(100):
                    if (body := json.loads(raw)).get("request_id") == request_id:
                        return protocol.fetched_offsets(body)
            raise TimeoutError(f"no answer to {request_id}")
        finally:
            wire.close()

    # The lease held by another driver: no load while standing by; after the takeover, the lease, then the loads.
    held = job_properties(broker, tmp_path / "held")
    population(held)
    holder = drivers(held, "holding")
    job = JobProcess(held, tmp_path / "job-held", extra_args=["--rebuild-from-records"])
    try:
        job.start().wait_standby()
        assert loads_and_lease_times(broker, held, job.proc.pid) == ([], [])
        holder.proc.stdin.close()
        assert holder.line() == "released"
        job.wait_running()
        assert offsets(held) == {("orders", 0): (41, "")}
        loads, leased = loads_and_lease_times(broker, held, job.proc.pid)
    finally:
        job.stop()
    assert len(loads) == 1 and leased, (loads, leased)
    assert min(loads) >= min(leased), "the standby published its loads before it held the lease"

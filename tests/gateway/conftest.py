"""Fixtures of the gateway tests: one coordinator query and one gateway for the whole package, consumer processes.

- `gateway_env`: a coordinator query on fresh topics (the session's broker and SparkSession) and a gateway in front
  of the broker, started once for every test module here and stopped (query, then gateways by pid) at the end; a
  second gateway on first use (`GatewayEnv.second`).
- `members`: starts unmodified Kafka consumers in their own processes (`tests.gateway.member`) and follows what they
  print; every process is killed by pid at the end of the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient

from gateway.front.process import GatewayProcess, start_gateway
from tests.support.coordinator import CoordinatorRun, new_run
from tests.support.kafka import create_topic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GATEWAY_PROPERTIES = {
    # Kafka's minimum session timeout is 6 s; clients here use 6 s so that a killed one is noticed soon.
    "group.min.session.timeout.ms": "6000",
    # Consumer groups (KIP-848): the coordinator, not the client, sets the session (Kafka's 45 s, lowered with its
    # bound so that a killed member is noticed soon) and the heartbeat interval (Kafka's 5 s, kept: librdkafka
    # gives a heartbeat its interval to be answered, and an answer waits for a micro-batch); topics seen within 1 s.
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.session.timeout.ms": "12000",
    "topic.metadata.refresh.interval.ms": "1000",
    # Share groups: a group may lock records for as little as 1 s (Kafka's broker-side floor; 15 s by default), so
    # that a lock running out is seen soon.
    "group.share.min.record.lock.duration.ms": "1000",
}


@dataclass
class GatewayEnv:
    run: CoordinatorRun
    gateway: GatewayProcess
    broker: str
    logs: Path
    _second: GatewayProcess | None = None
    _sasl: GatewayProcess | None = None

    @property
    def bootstrap(self) -> str:
        return self.gateway.bootstrap_servers

    @property
    def second(self) -> GatewayProcess:
        """A second gateway in front of the same query, started on first use and stopped with the package."""
        if self._second is None:
            self._second = start_gateway(self.broker, self.topics, log_path=self.logs / "second-gateway.log")
        return self._second

    @property
    def sasl(self) -> GatewayProcess:
        """A gateway in front of the same query that logs clients in with SASL/PLAIN, users `alice` and `mallory`
        (password: the name + `-secret`); started on first use and stopped with the package."""
        if self._sasl is None:
            users = self.logs / "users.properties"
            users.write_text("alice=alice-secret\nmallory=mallory-secret\n")
            self._sasl = start_gateway(self.broker, self.topics, args=["--sasl-users", str(users)],
                                       log_path=self.logs / "sasl-gateway.log")
        return self._sasl

    def committed(self, group: str, topic: str) -> dict[int, int]:
        """The group's committed offsets of `topic` by partition, as OffsetFetch through the gateway answers."""
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            return {tp.partition: o.offset for tp, o in admin.list_group_offsets({group: None})[group].items()
                    if tp.topic == topic}
        finally:
            admin.close()

    @property
    def topics(self) -> dict[str, str]:
        """The query's topic settings, as a gateway in front of it takes them."""
        return {k: v for k, v in self.run.props.items() if k.startswith("topic.")}

    def topic(self, partitions: int = 6, name: str | None = None) -> str:
        """A fresh topic (`name`, or a new one), created on the broker directly."""
        return create_topic(self.broker, partitions, name)


@pytest.fixture(scope="package")
def gateway_env(spark, broker, tmp_path_factory) -> Iterator[GatewayEnv]:
    run = new_run(spark, broker, tmp_path_factory.mktemp("gateway"), GATEWAY_PROPERTIES)
    gateway = env = None
    logs = tmp_path_factory.mktemp("gateway-log")
    try:
        gateway = start_gateway(broker, {k: v for k, v in run.props.items() if k.startswith(("topic.", "group."))},
                                log_path=logs / "gateway.log")
        env = GatewayEnv(run, gateway, broker, logs)
        yield env
    finally:
        run.close()
        if gateway is not None:
            gateway.stop()
        for extra in (env._second, env._sasl) if env is not None else ():
            if extra is not None:
                extra.stop()


_CALLBACKS = {"assign", "revoke", "lost"}
"""The events a member's rebalance callbacks print (tests/gateway/member.py)."""


@dataclass
class Member:
    """One consumer process and everything it printed."""

    process: subprocess.Popen
    events: list[dict] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def owned(self) -> set[int] | None:
        """The partitions it last said it owns; None: not said yet, or a rebalance callback came after it (the
        member says what it owns only once its poll returns, up to a poll's wait after the callback, and meanwhile
        the old set could look like a finished rebalance)."""
        with self.lock:
            for event in reversed(self.events):
                if event["event"] == "owned":
                    return set(event["partitions"])
                if event["event"] in _CALLBACKS:
                    return None
        return None

    def of(self, kind: str) -> list[dict]:
        with self.lock:
            return [e for e in self.events if e["event"] == kind]

    def close(self) -> None:
        """A clean close (LeaveGroup for a dynamic member); waits for the process to end."""
        if self.process.poll() is None:
            self.process.stdin.write("close\n")
            self.process.stdin.flush()
            self.process.wait(timeout=60)

    def kill(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


class Members:
    def __init__(self, logs: Path) -> None:
        self.started: list[Member] = []
        self.logs = logs

    def start(self, client: str, bootstrap: str, topic: str, group: str, commit: str = "poll",
              **config: Any) -> Member:
        """`commit`: after each poll that returned records (`poll`) or after every record (`record`)."""
        spec = {"client": client, "bootstrap": bootstrap, "topic": topic, "group": group, "config": config,
                "commit": commit}
        log = open(self.logs / f"member-{len(self.started)}.log", "ab")
        process = subprocess.Popen([sys.executable, "-m", "tests.gateway.member", json.dumps(spec)], cwd=ROOT,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
        log.close()
        member = Member(process)
        threading.Thread(target=self._follow, args=(member,), daemon=True).start()
        self.started.append(member)
        return member

    @staticmethod
    def _follow(member: Member) -> None:
        for line in member.process.stdout:
            with member.lock:
                member.events.append(json.loads(line))

    def stop_all(self) -> None:
        for member in self.started:
            member.kill()


@pytest.fixture
def members(tmp_path) -> Iterator[Members]:
    """Consumer processes; their stderr goes to member-N.log in the test's tmp_path."""
    started = Members(tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


def wait_for(probe: Callable[[], Any], timeout_s: float = 120.0, what: str = "condition",
             group: list[Member] = ()) -> Any:
    """Poll `probe` until it returns something truthy (an upper bound, not a timing expectation); a timeout
    reports what the members of `group` printed."""
    deadline = time.monotonic() + timeout_s
    while not (result := probe()):
        if time.monotonic() > deadline:
            seen = "\n".join(f"member {i} (exit {m.process.poll()}): {m.events[-8:]}" for i, m in enumerate(group))
            raise TimeoutError(f"{what} not met within {timeout_s} s\n{seen}")
        time.sleep(0.2)
    return result


def first_error(poll: Callable[[], list], timeout_s: float = 60.0) -> Any:
    """The first error that `poll()` returns (a list of confluent-kafka KafkaErrors) or raises (a KafkaException:
    librdkafka's fatal errors), within `timeout_s`; None if none came."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            errors = poll()
        except KafkaException as exc:
            return exc.args[0]
        if errors:
            return errors[0]
    return None


def balanced(group: list[Member], partitions: int) -> bool:
    """Every member owns something, nobody owns a partition twice, and every partition is owned."""
    owned = [m.owned for m in group]
    if any(not o for o in owned):
        return False
    every = [p for o in owned for p in o]
    return len(every) == len(set(every)) and set(every) == set(range(partitions))


@dataclass(frozen=True)
class Client:
    """An unmodified Kafka client library, and how its settings are spelled."""

    name: str
    strategies: tuple[str, ...]
    fast: dict[str, Any]
    """A 6 s session (Kafka's minimum) and 1 s heartbeats, so that a killed member is noticed soon."""
    static: dict[str, Any]
    """Settings of a static member: a session long enough to outlast its restart."""
    strategy: Callable[[str], dict[str, Any]]
    instance: Callable[[str], dict[str, Any]]


KAFKA_PYTHON = Client(
    "kafka-python", ("range", "roundrobin", "sticky", "cooperative-sticky"),
    fast={"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000, "max_poll_interval_ms": 20000},
    static={"session_timeout_ms": 30000, "heartbeat_interval_ms": 1000, "max_poll_interval_ms": 30000},
    strategy=lambda name: {"partition_assignment_strategy": [name]},
    instance=lambda name: {"group_instance_id": name})
LIBRDKAFKA = Client(
    "confluent-kafka", ("range", "roundrobin", "cooperative-sticky"),
    fast={"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 20000},
    static={"session.timeout.ms": 30000, "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 30000},
    strategy=lambda name: {"partition.assignment.strategy": name},
    instance=lambda name: {"group.instance.id": name})


def produce(env: GatewayEnv, topic: str, per_partition: int, partitions: int = 6) -> None:
    """`per_partition` records into each partition, through the gateway."""
    producer = KafkaProducer(bootstrap_servers=env.bootstrap)
    for p in range(partitions):
        for i in range(per_partition):
            producer.send(topic, value=b"%d" % i, partition=p)
    producer.flush()
    producer.close()


def consumed(member: Member) -> int:
    """Records the member consumed and committed."""
    return sum(e["count"] for e in member.of("consumed"))

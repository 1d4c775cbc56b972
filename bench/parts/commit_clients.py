"""One consumer of each client library committing every record synchronously, through the gateway and on tansu's
own coordinator, in alternating rounds (`bench.gateway_bench` runs it; issue 36).

Each consumer runs in a process of its own, joins a fresh group on a fresh one-partition topic already holding
`records` records, and commits each record before it takes the next (the client's synchronous commit call). It
prints the seconds from its first record to its last commit's answer; commits/s = records / seconds. Groups form
before the first record, so the join is not timed (`bench.parts.gateway_fast.three_consumers` times the forming).

Clients: librdkafka (confluent-kafka) with the classic protocol and with KIP-848's consumer protocol (which tansu has
not: compared with librdkafka's classic figure on tansu), kafka-python, and where they can be installed, aiokafka
(PyPI) and KafkaJS and @platformatic/kafka (npm, with node). Those three are installed into the bench's own cache
dir (`var/bench-clients`), never into the product's environment; a client that cannot be installed is left out and
says why. Every client reads with a 10 ms fetch wait: tansu holds a fetch for its whole wait when nothing is new.

    python -m bench.parts.commit_clients --driver NAME SERVERS TOPIC GROUP RECORDS   # one consumer (what the bench runs)
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.parts.gateway_fast import create_topic, fill
from bench.stream_bench import percentiles

ROOT = Path(__file__).resolve().parent.parent.parent
CACHE = ROOT / "var" / "bench-clients"
NODE_PACKAGES = ("kafkajs@2.2.4", "@platformatic/kafka@2.12.1")
PYTHON_PACKAGES = ("aiokafka==0.14.0",)
FETCH_WAIT_MS = 10


@dataclass(frozen=True)
class Client:
    name: str
    driver: str
    runtime: str
    """python or node."""
    tansu: bool = True
    """Whether it runs on tansu's coordinator too (KIP-848's consumer protocol does not)."""
    peer: str = ""
    """The client whose tansu figure a client without one is compared with."""


CLIENTS = (
    Client("librdkafka", "librdkafka", "python"),
    Client("librdkafka consumer protocol", "librdkafka-consumer", "python", tansu=False, peer="librdkafka"),
    Client("kafka-python", "kafka-python", "python"),
    Client("aiokafka", "aiokafka", "python"),
    Client("KafkaJS", "kafkajs", "node"),
    Client("@platformatic/kafka", "platformatic", "node"),
)


# -- installing the clients the product does not depend on ------------------------------------------------------


def install(cache: Path = CACHE) -> dict[str, str]:
    """Install aiokafka and the node clients into `cache` if they are not there; returns client name -> why it
    cannot run, for those that cannot."""
    missing: dict[str, str] = {}
    python_dir = cache / "python"
    if not (python_dir / "aiokafka").is_dir():
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(python_dir),
                               *PYTHON_PACKAGES], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            missing["aiokafka"] = f"pip install failed: {done.stderr.strip().splitlines()[-1:]}"
    node_dir = cache / "node"
    if shutil.which("node") is None or shutil.which("npm") is None:
        for name in ("KafkaJS", "@platformatic/kafka"):
            missing[name] = "no node and npm on this machine"
    elif not (node_dir / "node_modules" / "kafkajs").is_dir():
        done = subprocess.run(["npm", "install", "--silent", "--prefix", str(node_dir), *NODE_PACKAGES],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            for name in ("KafkaJS", "@platformatic/kafka"):
                missing[name] = f"npm install failed: {done.stderr.strip().splitlines()[-1:]}"
    return missing


def _command(client: Client, cache: Path) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    if client.runtime == "node":
        env["NODE_PATH"] = str(cache / "node" / "node_modules")
        return ["node", str(Path(__file__).with_suffix(".mjs")), client.driver], env
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(cache / "python"), env.get("PYTHONPATH", "")])
    return [sys.executable, "-m", "bench.parts.commit_clients", "--driver", client.driver], env


def run_one(client: Client, servers: str, broker: str, records: int, cache: Path = CACHE,
            timeout_s: float = 240.0) -> dict[str, Any]:
    """One consumer of `client` through `servers` on a fresh topic of `records` records: its commits/s."""
    topic = create_topic(broker, partitions=1)
    fill(broker, topic, records, partitions=1)
    group = f"bench-commit-{client.driver}-{uuid.uuid4().hex[:6]}"
    command, env = _command(client, cache)
    done = subprocess.run([*command, servers, topic, group, str(records)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout_s, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{client.name} through {servers} failed ({done.returncode}): {done.stderr[-2000:]}")
    result = json.loads(lines[-1])
    if result["records"] != records:
        raise RuntimeError(f"{client.name} committed {result['records']} of {records}")
    calls = [ms / 1000 for ms in result["commit_ms"]]
    return {"seconds": round(result["seconds"], 3), "commits_per_s": round(records / result["seconds"], 1),
            "commit_call": percentiles(calls)}


def compare(gateway: str, broker: str, rounds: int, records: int, clients: tuple[Client, ...] = CLIENTS,
            cache: Path = CACHE) -> dict[str, Any]:
    """Every client through the gateway and on tansu, `rounds` times, the order of the two alternating by round;
    the ratio of each client is the median seconds through the gateway over the median on tansu (above 1: slower
    through the gateway)."""
    missing = install(cache)
    runnable = [c for c in clients if c.name not in missing]
    runs: dict[str, dict[str, list[dict]]] = {c.name: {"gateway": [], "tansu": []} for c in runnable}
    load = [os.getloadavg()]
    for r in range(rounds):
        for client in runnable:
            targets = [("gateway", gateway)] + ([("tansu", broker)] if client.tansu else [])
            for where, servers in (targets if r % 2 == 0 else list(reversed(targets))):
                if client.name in missing:
                    continue
                try:
                    runs[client.name][where].append(run_one(client, servers, broker, records, cache))
                except (RuntimeError, subprocess.TimeoutExpired) as exc:  # told, not fatal: the others run on
                    missing[client.name] = f"{where}: {str(exc)[-400:]}"
        runnable = [c for c in runnable if c.name not in missing]
        load.append(os.getloadavg())
    out: dict[str, Any] = {"records": records, "rounds": rounds, "left_out": missing, "load_average": load,
                           "clients": {}}
    for client in runnable:
        if client.peer and client.peer not in [c.name for c in runnable]:
            continue
        mine = runs[client.name]
        tansu_runs = mine["tansu"] if client.tansu else runs[client.peer]["tansu"]
        through = statistics.median(x["seconds"] for x in mine["gateway"])
        direct = statistics.median(x["seconds"] for x in tansu_runs)
        out["clients"][client.name] = {
            "ratio": round(through / direct, 2),
            "gateway_commits_per_s": round(records / through, 1), "tansu_commits_per_s": round(records / direct, 1),
            "tansu_is": client.name if client.tansu else f"{client.peer} (classic)",
            "gateway": mine["gateway"], "tansu": tansu_runs}
    return out


def line(result: dict[str, Any]) -> str:
    """`commit per record: gateway/tansu = librdkafka A, librdkafka consumer protocol B, kafka-python C, ...`"""
    ratios = ", ".join(f"{name} {c['ratio']}" for name, c in result["clients"].items())
    rates = "; ".join(f"{name} {c['gateway_commits_per_s']} against {c['tansu_commits_per_s']}"
                      for name, c in result["clients"].items())
    left = "".join(f"; {name} left out: {why}" for name, why in result["left_out"].items())
    loads = " / ".join(", ".join(f"{v:.2f}" for v in avg) for avg in result["load_average"])
    return (f"commit per record: gateway/tansu = {ratios}\n"
            f"  commits/s through the gateway against tansu's coordinator: {rates}{left}; load average {loads}")


# -- the Python consumers (one per process) ----------------------------------------------------------------------


def _librdkafka(servers: str, topic: str, group: str, records: int, protocol: str) -> tuple[float, list[float]]:
    from confluent_kafka import Consumer

    timing = ({"group.protocol": "consumer"} if protocol == "consumer"
              else {"session.timeout.ms": 10000, "heartbeat.interval.ms": 3000})
    consumer = Consumer({"bootstrap.servers": servers, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "fetch.wait.max.ms": FETCH_WAIT_MS, **timing})
    consumer.subscribe([topic])
    calls: list[float] = []
    first = None
    try:
        while len(calls) < records:
            for message in consumer.consume(100, 0.1):
                if message.error() is not None:
                    continue
                started = time.perf_counter()
                first = first or started
                consumer.commit(message=message, asynchronous=False)
                calls.append(time.perf_counter() - started)
        return time.perf_counter() - first, calls
    finally:
        consumer.close()


def _kafka_python(servers: str, topic: str, group: str, records: int) -> tuple[float, list[float]]:
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

    consumer = KafkaConsumer(topic, bootstrap_servers=servers, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest", fetch_max_wait_ms=FETCH_WAIT_MS,
                             session_timeout_ms=10000, heartbeat_interval_ms=3000)
    calls: list[float] = []
    first = None
    try:
        while len(calls) < records:
            for tp, batch in consumer.poll(timeout_ms=100).items():
                for record in batch:
                    started = time.perf_counter()
                    first = first or started
                    consumer.commit({TopicPartition(tp.topic, tp.partition):
                                     OffsetAndMetadata(record.offset + 1, None, -1)})
                    calls.append(time.perf_counter() - started)
        return time.perf_counter() - first, calls
    finally:
        consumer.close()


def _aiokafka(servers: str, topic: str, group: str, records: int) -> tuple[float, list[float]]:
    import asyncio

    async def run() -> tuple[float, list[float]]:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(topic, bootstrap_servers=servers, group_id=group, enable_auto_commit=False,
                                    auto_offset_reset="earliest", fetch_max_wait_ms=FETCH_WAIT_MS,
                                    session_timeout_ms=10000, heartbeat_interval_ms=3000)
        await consumer.start()
        calls: list[float] = []
        first = None
        try:
            async for record in consumer:
                started = time.perf_counter()
                first = first or started
                await consumer.commit({TopicPartition(record.topic, record.partition): record.offset + 1})
                calls.append(time.perf_counter() - started)
                if len(calls) == records:
                    return time.perf_counter() - first, calls
        finally:
            await consumer.stop()
        raise RuntimeError("the consumer stopped")

    return asyncio.run(run())


def driver(name: str, servers: str, topic: str, group: str, records: int) -> None:
    if name in ("librdkafka", "librdkafka-consumer"):
        seconds, calls = _librdkafka(servers, topic, group, records,
                                     "consumer" if name == "librdkafka-consumer" else "classic")
    elif name == "kafka-python":
        seconds, calls = _kafka_python(servers, topic, group, records)
    elif name == "aiokafka":
        seconds, calls = _aiokafka(servers, topic, group, records)
    else:
        raise SystemExit(f"unknown driver {name}")
    print(json.dumps({"records": len(calls), "seconds": seconds, "commit_ms": [c * 1000 for c in calls]}),
          flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "--driver":
        driver(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    else:
        raise SystemExit(__doc__)

"""The gateway's appender (Produce requests written on its event loop) against librdkafka's idempotent producer
with a poll thread (the gateway's appender until issue 36's design 2), on one fresh tansu, alternating rounds.

Both write acks=all, idempotent, one Produce request in flight (records arriving meanwhile go in the next), and
hand each acknowledgement to an asyncio future, as the gateway waits for it. Per round, each one:
- `lone`: appends one record at a time, each awaited (a lone synchronous committer): p50 and p99 of an append;
- `many`: 100 tasks append as fast as their acknowledgements come back (100 committers): appends/s.
For both, the process's CPU seconds and its threads' context switches (voluntary and not: a thread that waited for
another, or for a core) per append, read from /proc: a commit crosses these hand-offs on a loaded machine.

    .venv/bin/python -m bench.micro.appender_bench [--rounds 3] [--lone 1000] [--many-seconds 5]

It ends with

    appender: ours/librdkafka = lone p50 A (x ms / y ms), p99 B, many appends/s C (x / y), CPU per append D,
              context switches per append E
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import threading
import time
import uuid
from typing import Any

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from gateway.upstream.appender import AppendFailed, Appender
from gateway.upstream.broker import UpstreamSecurity
from streaming.kafka_io.embedded import start_broker

PARTITIONS = 10
"""The requests topic's partitions on the embedded default (conf/coordinator.properties)."""
MANY = 100
VALUE = b"x" * 140
"""About an OffsetCommit's control record."""


class LibrdkafkaAppender:
    """The peer: the gateway's appender as it was (librdkafka, one request in flight, Nagle off, murmur2, a poll
    thread handing the reports of each poll to the event loop at once)."""

    def __init__(self, bootstrap_servers: str, topic: str, loop: asyncio.AbstractEventLoop) -> None:
        self.topic, self._loop = topic, loop
        self._producer = Producer({
            "bootstrap.servers": bootstrap_servers, "acks": "all", "enable.idempotence": True,
            "max.in.flight.requests.per.connection": 1, "linger.ms": 0, "socket.nagle.disable": True,
            "partitioner": "murmur2_random", "message.timeout.ms": 10_000})
        self._reports: list[tuple[asyncio.Future, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="control-appender", daemon=True)
        self._thread.start()

    def append(self, key: str, value: bytes) -> asyncio.Future:
        done = self._loop.create_future()
        try:
            self._producer.produce(self.topic, value, key.encode(),
                                   on_delivery=lambda error, _: self._reports.append((done, error)))
        except (BufferError, KafkaException) as exc:
            done.set_exception(AppendFailed(str(exc)))
        return done

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(0.1)
            if self._reports:
                reports, self._reports = self._reports, []
                self._loop.call_soon_threadsafe(_settle_all, reports)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._producer.flush(5)


def _settle_all(reports: list[tuple[asyncio.Future, Any]]) -> None:
    for done, error in reports:
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(AppendFailed(str(error)))


def _switches() -> int:
    """Context switches of every thread of this process so far (voluntary and involuntary)."""
    total = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/status") as status:
                total += sum(int(line.split()[-1]) for line in status if "ctxt_switches" in line)
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return total


async def _lone(appender: Any, count: int) -> list[float]:
    took = []
    for n in range(count):
        start = time.perf_counter()
        await appender.append(f"group-{n % 10}", VALUE)
        took.append(time.perf_counter() - start)
    return took


async def _many(appender: Any, seconds: float) -> int:
    end = time.monotonic() + seconds
    done = [0]

    async def committer(n: int) -> None:
        while time.monotonic() < end:
            await appender.append(f"group-{n % 10}", VALUE)
            done[0] += 1

    await asyncio.gather(*(committer(n) for n in range(MANY)))
    return done[0]


def _round(kind: str, bootstrap: str, topic: str, lone: int, many_s: float) -> dict[str, float]:
    async def scenario() -> dict[str, float]:
        loop = asyncio.get_running_loop()
        appender = (Appender(bootstrap, topic, UpstreamSecurity(), loop) if kind == "ours"
                    else LibrdkafkaAppender(bootstrap, topic, loop))
        try:
            await _lone(appender, 20)  # connected, producer id known, metadata read
            cpu, switches = time.process_time(), _switches()
            took = await _lone(appender, lone)
            lone_cpu, lone_switches = time.process_time() - cpu, _switches() - switches
            cpu, switches = time.process_time(), _switches()
            start = time.monotonic()
            appended = await _many(appender, many_s)
            elapsed = time.monotonic() - start
            many_cpu, many_switches = time.process_time() - cpu, _switches() - switches
        finally:
            appender.close()
        took.sort()
        return {"p50": took[len(took) // 2] * 1000, "p99": took[int(len(took) * 0.99)] * 1000,
                "lone cpu": lone_cpu / lone * 1e6, "lone switches": lone_switches / lone,
                "rate": appended / elapsed, "many cpu": many_cpu / appended * 1e6,
                "many switches": many_switches / appended}

    return asyncio.run(scenario())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.micro.appender_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each appender, alternating (default 3)")
    parser.add_argument("--lone", type=int, default=1000, help="appends one at a time per round (default 1000)")
    parser.add_argument("--many-seconds", type=float, default=5.0, help="seconds of 100 appending tasks per round")
    args = parser.parse_args(argv)
    broker = start_broker()
    try:
        topic = f"appender-bench-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
        results: dict[str, list[dict[str, float]]] = {"ours": [], "librdkafka": []}
        for round_ in range(args.rounds):
            for kind in ("ours", "librdkafka") if round_ % 2 == 0 else ("librdkafka", "ours"):
                load = os.getloadavg()[0]
                found = _round(kind, broker.bootstrap_servers, topic, args.lone, args.many_seconds)
                results[kind].append(found)
                print(f"round {round_ + 1} {kind:10s}: lone p50 {found['p50']:.3f} ms p99 {found['p99']:.3f} ms, "
                      f"{found['lone cpu']:.0f} us CPU and {found['lone switches']:.1f} context switches an append; "
                      f"many {found['rate']:.0f} appends/s, {found['many cpu']:.0f} us CPU and "
                      f"{found['many switches']:.2f} context switches an append; load {load:.1f}", flush=True)
    finally:
        broker.stop()

    def median(kind: str, key: str) -> float:
        return statistics.median(r[key] for r in results[kind])

    def ratio(key: str) -> float:
        return median("ours", key) / median("librdkafka", key)

    print(f"appender: ours/librdkafka = lone p50 {ratio('p50'):.2f} ({median('ours', 'p50'):.3f} ms / "
          f"{median('librdkafka', 'p50'):.3f} ms), p99 {ratio('p99'):.2f}, many appends/s {ratio('rate'):.2f} "
          f"({median('ours', 'rate'):.0f} / {median('librdkafka', 'rate'):.0f}), CPU per append "
          f"{ratio('lone cpu'):.2f} lone {ratio('many cpu'):.2f} many, context switches per append "
          f"{ratio('lone switches'):.2f} lone {ratio('many switches'):.2f} many")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

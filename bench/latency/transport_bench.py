"""Benchmark: what the transport carries with kafka-python against librdkafka (confluent-kafka), through one tansu.

The job reads and writes Kafka with kafka-python (pure Python). This measures what that costs by itself: an echo
process answers each JSON request of the control topic with one response on the response topic, with no coordinator
and no Spark (as `bench.stream_bench`'s echo peer), and a load generator sends a burst far above capacity and
counts answers. Each side is kafka-python or confluent-kafka, in every combination, on fresh topics of the job's
default partition counts, one combination after the other on the same broker and machine. The requests are
`bench.stream_bench`'s (heartbeats and one-partition commits, alternating, over 1,000 groups).

Reported per combination: requests/s from the first request sent to the last answer (confluent-kafka is a runtime
dependency of the job, so both clients are always there).
Prints one JSON document; run with `python -m bench.latency.transport_bench [--burst N] [--rounds R]`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import threading
import time
import uuid
from typing import Callable

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from bench.stream_bench import _answer, _echo, _load_request, encoded
from common import config as job_config
from streaming.kafka_io.embedded import start_broker

KAFKA_PYTHON, LIBRDKAFKA = "kafka-python", "librdkafka"
GROUPS = 1000


def _librdkafka_echo(bootstrap: str, requests: str, responses: str) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
    from confluent_kafka import TopicPartition as CkPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "echo", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 10})
    partitions = consumer.list_topics(requests, timeout=10).topics[requests].partitions
    consumer.assign([CkPartition(requests, p, OFFSET_BEGINNING) for p in partitions])
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "batch.size": 256 * 1024})
    while True:
        for message in consumer.consume(10000, 0.05):
            if message.error() is None:
                _produce(producer, responses, message.key(), _answer(message.value()))
        producer.poll(0)


def _produce(producer, topic: str, key: bytes, value: bytes) -> None:
    """confluent-kafka's produce raises BufferError when its local queue is full: serve callbacks and retry."""
    while True:
        try:
            return producer.produce(topic, key=key, value=value)
        except BufferError:
            producer.poll(0.01)


class _Load:
    """Sends requests and counts answers (a reader thread), on either client."""

    def __init__(self, client: str, bootstrap: str, requests: str, responses: str) -> None:
        self.answered = 0
        self.running = True
        self.requests = requests
        if client == KAFKA_PYTHON:
            producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=2, batch_size=256 * 1024)
            consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                                     fetch_max_wait_ms=10, max_poll_records=10000)
            consumer.assign([TopicPartition(responses, p) for p in consumer.partitions_for_topic(responses)])
            consumer.seek_to_beginning()
            self.send: Callable[[bytes, bytes], object] = lambda k, v: producer.send(requests, key=k, value=v)
            self.flush = producer.flush
            self._poll = lambda: [r.value for rs in consumer.poll(timeout_ms=50).values() for r in rs]
            self._clients = [consumer.close, producer.close]
        else:
            from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
            from confluent_kafka import TopicPartition as CkPartition

            producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "batch.size": 256 * 1024})
            consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "load", "enable.auto.commit": False,
                                 "fetch.wait.max.ms": 10})
            partitions = consumer.list_topics(responses, timeout=10).topics[responses].partitions
            consumer.assign([CkPartition(responses, p, OFFSET_BEGINNING) for p in partitions])

            def send(key: bytes, value: bytes) -> None:
                _produce(producer, requests, key, value)
                producer.poll(0)
            self.send, self.flush = send, producer.flush
            self._poll = lambda: [m.value() for m in consumer.consume(10000, 0.05) if m.error() is None]
            self._clients = [consumer.close, producer.flush]
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while self.running:
            for value in self._poll():
                json.loads(value)  # the generator decodes each answer, as a client would
                self.answered += 1

    def close(self) -> None:
        self.running = False
        self.reader.join()
        for close in self._clients:
            close()

    def burst(self, total: int, timeout_s: float = 600) -> float:
        """Requests/s for `total` requests sent at once, from the first sent to the last answered."""
        requests = [encoded(_load_request(f"g{k % GROUPS}", f"m{k % GROUPS}", 1, k)) for k in range(total)]
        target = self.answered + total
        start = time.monotonic()
        for _, key, value in requests:
            self.send(key, value)
        self.flush()
        deadline = start + timeout_s
        while self.answered < target:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{target - self.answered} of {total} requests unanswered")
            time.sleep(0.005)
        return total / (time.monotonic() - start)


def run_pair(bootstrap: str, echo: str, load: str, burst: int, partitions: tuple[int, int]) -> float:
    suffix = uuid.uuid4().hex[:8]
    requests, responses = f"transport-requests-{suffix}", f"transport-responses-{suffix}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(requests, partitions[0], 1), NewTopic(responses, partitions[1], 1)])
    admin.close()
    target = _echo if echo == KAFKA_PYTHON else _librdkafka_echo
    process = multiprocessing.get_context("spawn").Process(target=target, args=(bootstrap, requests, responses),
                                                           daemon=True)
    process.start()
    generator = _Load(load, bootstrap, requests, responses)
    try:
        generator.burst(1000)  # warm-up: connections, metadata, the echo's first fetch
        return generator.burst(burst)
    finally:
        generator.close()
        process.terminate()
        process.join()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency.transport_bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--burst", type=int, default=50_000, help="requests per measured burst")
    parser.add_argument("--rounds", type=int, default=2, help="measurements per combination, interleaved")
    args = parser.parse_args(argv)
    clients = [KAFKA_PYTHON, LIBRDKAFKA]
    defaults = job_config.load()
    partitions = (int(defaults["topic.requests.partitions"]), int(defaults["topic.responses.partitions"]))
    pairs = [(echo, load) for echo in clients for load in clients]
    results: dict[str, list[int]] = {f"echo {e} / load {g}": [] for e, g in pairs}
    broker = start_broker()
    try:
        for _ in range(args.rounds):
            for echo, load in pairs:
                rate = run_pair(broker.bootstrap_servers, echo, load, args.burst, partitions)
                results[f"echo {echo} / load {load}"].append(round(rate))
    finally:
        broker.stop()
    print(json.dumps({"burst": args.burst, "partitions": partitions, "requests_per_s": results},
                     indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

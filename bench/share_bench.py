"""Benchmark: share groups (KIP-932) through the gateway, against a classic consumer group of the same members on
the same topic through the same gateway, in one run.

Everything runs on this machine: an embedded tansu, the coordinator query, one gateway process in front of both, and
unmodified confluent-kafka clients in processes of their own (`ShareConsumer` for the share group, `Consumer` with
the classic protocol for the consumer group).

1. Records/s. A topic is filled with `--records` records, then read by M members that do the same work per record
   (`--work-ms` of sleep: a record handed to an external service, which costs no CPU here), once as one share group
   (implicit acknowledgement: each poll accepts the previous one's records) and once as one classic group (auto
   commit): records/s from the first record delivered to the last, share over classic. With 3 members on 1
   partition a classic group can use one member, a share group all three (goal: A >= 1.5); with 6 members on 3
   partitions both use all the partitions, the share group every member (goal: B >= 0.7).
2. Acknowledgement latency. One explicit-mode ShareConsumer acknowledges each record it polls with `commit_sync`
   (a ShareAcknowledge, made durable by the holder before it is answered), against the same client library's
   `commit(asynchronous=False)` of one offset in a classic group (an OffsetCommit answered from the group's view):
   p50 over p50 (goal: C <= 2).
3. Redelivery after lock expiry. The share group's lock is `share.record.lock.duration.ms` = L (15 s, Kafka's
   minimum); one member polls a record and never acknowledges it, holding its connection open; the seconds until
   another member gets it again, with delivery count 2 (goal: D <= L + 1).

Ends with the issue's line: `share groups: records/s share/classic = A (3 members, 1 partition), B (6 members,
3 partitions), ack p50/commit p50 = C, redelivery after lock expiry = D s (lock L s)`, after one JSON document with
every figure and the load average before and after.
Run with `python -m bench.share_bench [--records N] [--work-ms W] [--samples S] [--lock-ms L] [--skip-expiry]`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.stream_bench import percentiles

LOCK_MS = 15_000
"""Kafka's smallest `share.record.lock.duration.ms`."""
MEMBER_TIMEOUT_S = 180.0
BATCH_BYTES = 1024
"""The producer's `batch.size` for the filled topics: log batches of ~60 records. A share-partition acquires whole
log batches (Kafka's batch-optimized acquisition), so a topic written in a few batches of thousands is served to one
member at a time whatever the group's size; this size is that of a producer sending records as they come."""
JOIN_S = 6.0
"""Members poll this long before the records are produced: every one has joined and has its partitions (a share
group's first assignment comes with the answer to its join; a classic group's after the join window)."""


# -- the members (each in a process of its own) -------------------------------------------------------------------


def _share_member(bootstrap: str, group: str, topic: str, work_s: float, total: int, counter: Any, stamps: Any,
                  ready: Any) -> None:
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "implicit"})
    consumer.subscribe([topic])
    _consume(lambda: consumer.poll(0.2), work_s, total, counter, stamps, ready)
    consumer.close()


def _classic_member(bootstrap: str, group: str, topic: str, work_s: float, total: int, counter: Any, stamps: Any,
                    ready: Any) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000})
    consumer.subscribe([topic])
    _consume(lambda: consumer.consume(500, 0.2), work_s, total, counter, stamps, ready)
    consumer.close()


def _consume(poll: Any, work_s: float, total: int, counter: Any, stamps: Any, ready: Any) -> None:
    """Poll (joining the group) for JOIN_S, say so, then poll and work until the members together have `total`
    records; the first and the `total`-th record's times go to `stamps` ([first, last], shared)."""
    joined = time.monotonic() + JOIN_S
    while time.monotonic() < joined:
        poll()
    ready.release()
    deadline = time.monotonic() + MEMBER_TIMEOUT_S
    while time.monotonic() < deadline:
        with counter.get_lock():
            if counter.value >= total:
                return
        for message in poll():
            if message.error():
                continue
            time.sleep(work_s)
            now = time.time()
            with counter.get_lock():
                if counter.value < total:
                    counter.value += 1
                    if stamps[0] == 0:
                        stamps[0] = now
                    stamps[1] = now


def records_per_second(member: Any, bootstrap: str, group: str, topic: str, partitions: int, members: int,
                       total: int, work_s: float) -> dict:
    """Records/s of `members` processes running `member` on `topic`: once every member has joined, `total`
    records are produced, and the time from the first consumed to the last is taken."""
    ctx = multiprocessing.get_context("spawn")
    counter = ctx.Value("q", 0)
    stamps = ctx.Array("d", 2)
    ready = ctx.Semaphore(0)
    procs = [ctx.Process(target=member, args=(bootstrap, group, topic, work_s, total, counter, stamps, ready),
                         daemon=True) for _ in range(members)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.acquire(timeout=MEMBER_TIMEOUT_S)
    fill(bootstrap, topic, partitions, total)
    for p in procs:
        p.join(MEMBER_TIMEOUT_S + 30)
        if p.is_alive():
            p.kill()
    first, last = stamps[0], stamps[1]
    consumed = counter.value
    return {"records": consumed, "seconds": round(last - first, 3) if consumed else None,
            "records_per_s": round(consumed / (last - first), 1) if consumed and last > first else None}


# -- 2. acknowledgement and commit latency --------------------------------------------------------------------------


def ack_latency(bootstrap: str, group: str, topic: str, samples: int) -> dict:
    """p50/p99 of `commit_sync` after acknowledging each record polled (explicit mode), ms."""
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit", "max.poll.records": 1})
    consumer.subscribe([topic])
    times: list[float] = []
    deadline = time.monotonic() + MEMBER_TIMEOUT_S
    try:
        while len(times) < samples and time.monotonic() < deadline:
            for message in consumer.poll(1.0):
                if message.error():
                    continue
                consumer.acknowledge(message)
                started = time.perf_counter()
                consumer.commit_sync()
                times.append(time.perf_counter() - started)  # s: percentiles() gives ms
    finally:
        consumer.close()
    return {"samples": len(times), **percentiles(times)}


def commit_latency(bootstrap: str, group: str, topic: str, samples: int) -> dict:
    """p50/p99 of a classic consumer's synchronous commit of the record it just polled, ms."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000})
    consumer.subscribe([topic])
    times: list[float] = []
    deadline = time.monotonic() + MEMBER_TIMEOUT_S
    try:
        while len(times) < samples and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            started = time.perf_counter()
            consumer.commit(message=message, asynchronous=False)
            times.append(time.perf_counter() - started)  # s: percentiles() gives ms
    finally:
        consumer.close()
    return {"samples": len(times), **percentiles(times)}


# -- 3. redelivery after lock expiry --------------------------------------------------------------------------------


def _holder_member(bootstrap: str, group: str, topic: str, got: Any, release: Any) -> None:
    """Polls one record and never acknowledges it: sits on it, its connection open, until told to go."""
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit", "max.poll.records": 1})
    consumer.subscribe([topic])
    deadline = time.monotonic() + MEMBER_TIMEOUT_S
    while time.monotonic() < deadline:
        messages = [m for m in consumer.poll(0.5) if not m.error()]
        if messages:
            got.value = time.time()
            break
    release.wait(MEMBER_TIMEOUT_S)
    os._exit(0)  # no close: the lock, not a released session, must bring the record back


def redelivery(bootstrap: str, group: str, topic: str, lock_ms: int) -> dict:
    """Seconds from a record's first delivery (to a member that sits on it) to its redelivery to another member."""
    from confluent_kafka import ShareConsumer

    ctx = multiprocessing.get_context("spawn")
    got = ctx.Value("d", 0.0)
    release = ctx.Event()
    holder = ctx.Process(target=_holder_member, args=(bootstrap, group, topic, got, release), daemon=True)
    holder.start()
    deadline = time.monotonic() + MEMBER_TIMEOUT_S
    while got.value == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "implicit"})
    consumer.subscribe([topic])
    again = None
    try:
        while again is None and time.monotonic() < deadline:
            for message in consumer.poll(0.5):
                if not message.error() and message.delivery_count() >= 2:
                    again = time.time()
    finally:
        consumer.close()
        release.set()
        holder.join(10)
        if holder.is_alive():
            holder.kill()
    return {"lock_s": lock_ms / 1000, "seconds": round(again - got.value, 2) if again and got.value else None}


# -- the run --------------------------------------------------------------------------------------------------------


def _topic(bootstrap: str, partitions: int) -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = f"bench-share-{uuid.uuid4().hex[:6]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()
    return topic


def fill(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=BATCH_BYTES)
    for i in range(records):
        producer.send(topic, b"r%07d" % i, partition=i % partitions)
    producer.flush()
    producer.close()


def share_group(bootstrap: str, lock_ms: int | None = None) -> str:
    """A share group that reads from the earliest offset (and locks for `lock_ms`), configured before it exists,
    as an operator does with `kafka-configs.sh --entity-type groups`."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    group = f"bench-share-{uuid.uuid4().hex[:6]}"
    entries = [ConfigEntry("share.auto.offset.reset", "earliest",
                           incremental_operation=AlterConfigOpType.SET)]
    if lock_ms is not None:
        entries.append(ConfigEntry("share.record.lock.duration.ms", str(lock_ms),
                                   incremental_operation=AlterConfigOpType.SET))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for attempt in range(5):  # a fresh query's first batches may outlast the gateway's request timeout
        try:
            for future in admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group,
                                                                          incremental_configs=entries)]).values():
                future.result(timeout=60)
            return group
        except Exception:  # noqa: BLE001 - retried, then raised
            if attempt == 4:
                raise
    return group


def measure(bootstrap: str, records: int, work_s: float, samples: int, lock_ms: int, expiry: bool) -> dict:
    result: dict[str, Any] = {}
    for label, members, partitions in (("3_members_1_partition", 3, 1), ("6_members_3_partitions", 6, 3)):
        topic = _topic(bootstrap, partitions)
        share = records_per_second(_share_member, bootstrap, share_group(bootstrap), topic, partitions, members,
                                   records, work_s)
        topic = _topic(bootstrap, partitions)
        classic = records_per_second(_classic_member, bootstrap, f"bench-classic-{uuid.uuid4().hex[:6]}", topic,
                                     partitions, members, records, work_s)
        result[label] = {"share": share, "classic": classic,
                         "ratio": _ratio(share["records_per_s"], classic["records_per_s"])}
    topic = _topic(bootstrap, 1)
    fill(bootstrap, topic, 1, samples * 2)
    ack = ack_latency(bootstrap, share_group(bootstrap), topic, samples)
    commit = commit_latency(bootstrap, f"bench-commit-{uuid.uuid4().hex[:6]}", topic, samples)
    result["ack_ms"], result["commit_ms"] = ack, commit
    result["ack_over_commit_p50"] = _ratio(ack.get("p50_ms"), commit.get("p50_ms"))
    if expiry:
        topic = _topic(bootstrap, 1)
        fill(bootstrap, topic, 1, 1)
        result["redelivery"] = redelivery(bootstrap, share_group(bootstrap, lock_ms), topic, lock_ms)
    return result


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def line(result: dict) -> str:
    redelivered = result.get("redelivery", {})
    return (f"share groups: records/s share/classic = {result['3_members_1_partition']['ratio']} (3 members, "
            f"1 partition), {result['6_members_3_partitions']['ratio']} (6 members, 3 partitions), "
            f"ack p50/commit p50 = {result['ack_over_commit_p50']}, redelivery after lock expiry = "
            f"{redelivered.get('seconds')} s (lock {redelivered.get('lock_s')} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.share_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=3000, help="records per topic for the records/s figures")
    parser.add_argument("--work-ms", type=float, default=1.0, help="each member's work per record (sleep), ms")
    parser.add_argument("--samples", type=int, default=200, help="acknowledgements and commits timed")
    parser.add_argument("--lock-ms", type=int, default=LOCK_MS, help="share.record.lock.duration.ms of step 3")
    parser.add_argument("--skip-expiry", action="store_true", help="skip step 3 (it waits a lock duration)")
    parser.add_argument("--bootstrap", help="measure through this gateway instead of starting everything")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    if args.bootstrap:
        result = measure(args.bootstrap, args.records, args.work_ms / 1000, args.samples, args.lock_ms,
                         not args.skip_expiry)
    else:
        result = _with_stack(args)
    result["load_average"] = {"before": [round(x, 2) for x in load_before],
                              "after": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps(result, indent=2))
    print(line(result))
    return 0


def _with_stack(args: argparse.Namespace) -> dict:
    """tansu, the coordinator query on fresh topics, and one gateway in front of both; stopped at the end."""
    from bench.gateway_bench import _fresh_topics, _topics
    from common import config as job_config
    from gateway.front.process import start_gateway
    from streaming.kafka_io.embedded import start_broker
    from streaming.query import spark_session, start_query

    workdir = Path(tempfile.mkdtemp(prefix="share-bench-"))
    broker = start_broker()
    try:
        props = _fresh_topics(broker.bootstrap_servers, workdir)
        spark = spark_session(job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS))
        query = start_query(spark, props)
        gateway = start_gateway(broker.bootstrap_servers, _topics(props), log_path=workdir / "gateway.log")
        try:
            return measure(gateway.bootstrap_servers, args.records, args.work_ms / 1000, args.samples,
                           args.lock_ms, not args.skip_expiry)
        finally:
            gateway.stop()
            query.stop()
            spark.stop()
    finally:
        broker.stop()


if __name__ == "__main__":
    raise SystemExit(main())

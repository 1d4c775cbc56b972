"""Exactly-once consume-process-produce: one confluent-kafka application's transactions through the gateway (its
TxnOffsetCommit answered by the coordinator query) and on tansu's own coordinator, in the same run.

A loop of `--transactions` transactions of `--records` records each: consume them, produce one output each, send
the offsets to the transaction, commit. Per transaction, the time from begin to the end of commit; then the group's
committed offset as a require_stable OffsetFetch sees it, against the input's end. Ends with the line
`exactly once: transaction p50 through the gateway / on tansu = R, offsets committed = C of C expected`.

    python -m bench.txn_bench [--transactions 200] [--records 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.gateway_bench import _fresh_topics, _topics
from common import config as job_config
from gateway.front.process import start_gateway
from streaming.kafka_io.embedded import start_broker


def loop(bootstrap: str, broker: str, transactions: int, records: int) -> dict[str, Any]:
    """The loop against `bootstrap` (the gateway or the broker itself), on a fresh input topic fed at `broker`."""
    name = f"eos-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker})
    for topic in (f"{name}-in", f"{name}-out"):
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
    feeder = Producer({"bootstrap.servers": broker, "linger.ms": 5})
    for n in range(transactions * records):
        feeder.produce(f"{name}-in", f"in-{n}".encode())
    feeder.flush(60)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": name, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{name}", "linger.ms": 0})
    producer.init_transactions(60)
    consumer.subscribe([f"{name}-in"])
    times_ms, failed = [], 0
    for _ in range(transactions):
        batch: list = []
        while len(batch) < records:
            batch += [m for m in consumer.consume(records - len(batch), 5) if not m.error()]
        started = time.perf_counter()
        try:
            producer.begin_transaction()
            for message in batch:
                producer.produce(f"{name}-out", message.value())
            producer.send_offsets_to_transaction([TopicPartition(f"{name}-in", 0, batch[-1].offset() + 1)],
                                                 consumer.consumer_group_metadata(), 60)
            producer.commit_transaction(60)
        except KafkaException:
            failed += 1
            producer.abort_transaction(60)
            continue
        times_ms.append((time.perf_counter() - started) * 1000)
    committed = consumer.committed([TopicPartition(f"{name}-in", 0)], 60)[0].offset
    consumer.close()
    return {"p50_ms": statistics.median(times_ms) if times_ms else None,
            "p99_ms": sorted(times_ms)[int(len(times_ms) * 0.99) - 1] if times_ms else None,
            "failed": failed, "committed": committed, "expected": transactions * records}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.txn_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--transactions", type=int, default=200)
    parser.add_argument("--records", type=int, default=10)
    args = parser.parse_args(argv)
    from streaming.query import spark_session, start_query

    broker = start_broker()
    workdir = Path(tempfile.mkdtemp(prefix="txn-bench-"))
    result: dict[str, Any] = {"load_average": {"start": os.getloadavg()}}
    try:
        props = _fresh_topics(broker.bootstrap_servers, workdir)
        spark = spark_session(job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS))
        query = start_query(spark, props)
        gateway = start_gateway(broker.bootstrap_servers, _topics(props), log_path=workdir / "gateway.log")
        try:
            result["tansu"] = loop(broker.bootstrap_servers, broker.bootstrap_servers, args.transactions,
                                   args.records)
            result["gateway"] = loop(gateway.bootstrap_servers, broker.bootstrap_servers, args.transactions,
                                     args.records)
        finally:
            gateway.stop()
            query.stop()
    finally:
        broker.stop()
    result["load_average"]["end"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    g, t = result["gateway"], result["tansu"]
    ratio = g["p50_ms"] / t["p50_ms"] if g["p50_ms"] and t["p50_ms"] else float("nan")
    print(f"exactly once: transaction p50 through the gateway / on tansu = {ratio:.2f} "
          f"({g['p50_ms']:.1f} ms / {t['p50_ms']:.1f} ms), offsets committed = {g['committed']} of "
          f"{g['expected']} expected (tansu: {t['committed']} of {t['expected']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

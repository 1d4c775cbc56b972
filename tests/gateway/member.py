"""An unmodified Kafka consumer in its own process, for the gateway tests (so that one can be SIGKILLed).

`python -m tests.gateway.member SPEC` where SPEC is JSON: `client` (`kafka-python` or `confluent-kafka`),
`bootstrap`, `topic`, `group`, `config` (the client's own settings, passed as they are), and optionally `commit`:
`poll` (the default) or `record`. The consumer subscribes, polls, commits what it consumed synchronously (after each
poll that returned records, or after every record) and prints JSON lines:

- `{"event": "owned", "partitions": [...]}` whenever the set of partitions it owns changes, and after every poll
  that ran a rebalance callback (so a reader knows the callbacks' effect is in it: conftest's `Member.owned`);
- `{"event": "assign" | "revoke" | "lost", "partitions": [...]}` from its rebalance callbacks (a confluent-kafka
  assign also names its `topics`);
- `{"event": "consumed", "count": N, "offsets": {"p": next offset}}` after each poll's commits;
- `{"event": "commit_failed", "error": ...}` when a commit of one record was refused (a rebalance), or a
  confluent-kafka poll's commit failed (KIP-848 members see STALE_MEMBER_EPOCH, or a timeout, and go on);
- `{"event": "closed"}` after `close` arrives on stdin (a clean close: LeaveGroup unless static).
"""

from __future__ import annotations

import json
import queue
import sys
import threading
from typing import Any, Callable


def _emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


_rebalanced = threading.Event()
"""Set by a rebalance callback; the poll loop then says what the member owns."""


def _callback(event: str, **fields: Any) -> None:
    _rebalanced.set()
    _emit(event=event, **fields)


def _commands() -> "queue.Queue[str]":
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            lines.put(line.strip())
        lines.put("close")

    threading.Thread(target=read, daemon=True).start()
    return lines


def _kafka_python(spec: dict) -> tuple[Callable, Callable, Callable]:
    """(poll, owned partitions, close) of a kafka-python KafkaConsumer."""
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            _callback("revoke", partitions=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned):
            _callback("assign", partitions=sorted(tp.partition for tp in assigned))

        def on_partitions_lost(self, lost):
            _callback("lost", partitions=sorted(tp.partition for tp in lost))

    config = dict(spec["config"])
    if "partition_assignment_strategy" in config:
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
        by_name = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                   "sticky": StickyPartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}
        config["partition_assignment_strategy"] = [by_name[n] for n in config["partition_assignment_strategy"]]
    consumer = KafkaConsumer(bootstrap_servers=spec["bootstrap"], group_id=spec["group"],
                             enable_auto_commit=False, auto_offset_reset="earliest", **config)
    consumer.subscribe([spec["topic"]], listener=Listener())

    from kafka.structs import OffsetAndMetadata

    every_record = spec.get("commit") == "record"

    def poll() -> tuple[int, dict[int, int]]:
        count, offsets = 0, {}
        for tp, records in consumer.poll(timeout_ms=200).items():
            count += len(records)
            offsets[tp.partition] = records[-1].offset + 1
            if every_record:
                for record in records:
                    try:
                        consumer.commit({tp: OffsetAndMetadata(record.offset + 1, "", -1)})
                    except Exception as exc:  # noqa: BLE001 - a rebalance: the partition's next owner re-reads
                        _emit(event="commit_failed", error=type(exc).__name__)
                        break
        if count and not every_record:
            consumer.commit()
        return count, offsets

    return poll, lambda: {tp.partition for tp in consumer.assignment()}, consumer.close


def _confluent(spec: dict) -> tuple[Callable, Callable, Callable]:
    """The same for a confluent-kafka (librdkafka) Consumer."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": spec["bootstrap"], "group.id": spec["group"],
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", **spec["config"]})

    def on_assign(c, partitions):
        _callback("assign", partitions=sorted(p.partition for p in partitions),
              topics=sorted({p.topic for p in partitions}))

    def on_revoke(c, partitions):
        _callback("revoke", partitions=sorted(p.partition for p in partitions))

    def on_lost(c, partitions):
        _callback("lost", partitions=sorted(p.partition for p in partitions))

    consumer.subscribe([spec["topic"]], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)

    every_record = spec.get("commit") == "record"

    def poll() -> tuple[int, dict[int, int]]:
        count, offsets = 0, {}
        for message in consumer.consume(1000, 0.2):
            if message.error() is None:
                count += 1
                offsets[message.partition()] = message.offset() + 1
                if every_record:
                    try:
                        consumer.commit(message=message, asynchronous=False)
                    except Exception as exc:  # noqa: BLE001 - a rebalance: the partition's next owner re-reads
                        _emit(event="commit_failed", error=str(exc))
        if count and not every_record:
            try:
                consumer.commit(asynchronous=False)
            except Exception as exc:  # noqa: BLE001 - as an application would: the next poll's commit covers it
                _emit(event="commit_failed", error=str(exc))
        return count, offsets

    return poll, lambda: {p.partition for p in consumer.assignment()}, consumer.close


def main() -> None:
    spec = json.loads(sys.argv[1])
    poll, owned, close = (_kafka_python if spec["client"] == "kafka-python" else _confluent)(spec)
    commands = _commands()
    last: set | None = None
    while True:
        count, offsets = poll()
        if count:
            _emit(event="consumed", count=count, offsets={str(p): o for p, o in offsets.items()})
        rebalanced = _rebalanced.is_set()
        _rebalanced.clear()
        now = owned()
        if now != last or rebalanced:
            _emit(event="owned", partitions=sorted(now))
            last = now
        try:
            command = commands.get_nowait()
        except queue.Empty:
            continue
        if command == "close":
            close()
            _emit(event="closed")
            return


if __name__ == "__main__":
    main()

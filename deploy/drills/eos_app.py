"""An unmodified confluent-kafka exactly-once application in its own process, so that a test can SIGKILL it.

`python -m deploy.drills.eos_app SPEC` where SPEC is JSON: `bootstrap`, `source`, `sink`, `group`,
`transactional_id`, `instance_id`, `records` (per transaction at most). It consumes `source` (read_committed),
and for each batch begins a transaction, produces one record to `sink` per input record (value: the input's
offset, key: this process's id and the transaction's number in it), sends the offsets to the transaction and
commits it; a transaction that fails abortably is aborted and its batch read again from the committed offset.
It prints `{"event": "ready"}` once its producer is initialized, `{"event": "aborted", "error": ...}` before each
abort, and `{"event": "committed", "next": N}` after each commit (what the test saw commit is judged from the sink's
markers, not from these lines: a kill may fall between the commit and its line).
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def _emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def main(spec: dict[str, Any]) -> None:
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # where it waits, when the drill sees it stalled
    # librdkafka 2.16 re-bootstraps when every broker it knows is down (the one gateway killed) and drops those
    # brokers; a group coordinator cached on a dropped broker is never looked up again, so a
    # send_offsets_to_transaction then waits for ever, past its timeout (librdkafka issues 5456 and 5511; seen
    # in this drill 2 runs in 3). Without re-bootstrapping, the client reconnects to the same address.
    recovery = {"metadata.recovery.strategy": spec.get("metadata_recovery", "none")}
    consumer = Consumer({**recovery, "bootstrap.servers": spec["bootstrap"], "group.id": spec["group"],
                         "group.instance.id": spec["instance_id"], "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "session.timeout.ms": 45000})
    producer = Producer({**recovery, "bootstrap.servers": spec["bootstrap"],
                         "transactional.id": spec["transactional_id"], "linger.ms": 0,
                         **({"debug": spec["debug"]} if spec.get("debug") else {})})
    producer.init_transactions(60)
    _emit(event="ready")
    consumer.subscribe([spec["source"]])
    number = 0
    while True:
        batch = [m for m in consumer.consume(spec["records"], 1.0) if not m.error()]
        if not batch:
            continue
        number += 1
        key = f"{os.getpid()}-{number}".encode()
        try:
            producer.begin_transaction()
            for message in batch:
                producer.produce(spec["sink"], str(message.offset()).encode(), key)
            next_offset = batch[-1].offset() + 1
            producer.send_offsets_to_transaction([TopicPartition(spec["source"], 0, next_offset)],
                                                 consumer.consumer_group_metadata(), 60)
            producer.commit_transaction(60)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            _emit(event="aborted", error=str(exc.args[0]))
            producer.abort_transaction(60)
            # read the batch again from the last committed offset
            (committed,) = consumer.committed([TopicPartition(spec["source"], 0)], 60)
            consumer.seek(TopicPartition(spec["source"], 0, max(committed.offset, 0)))
            continue
        _emit(event="committed", next=next_offset)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))

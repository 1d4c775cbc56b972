"""An unmodified confluent-kafka ShareConsumer in its own process that sits on what it acquires (so a test can
SIGKILL it, close it or let its locks run out): `python -m tests.gateway.share.holding_member BOOTSTRAP GROUP TOPIC`
polls in explicit mode until it gets records, prints their offsets as one JSON line, and then neither acknowledges
nor polls again, its connection open, until it is killed, or, with a line on its standard input, closes the consumer
(without acknowledging) and exits. A line `accept` first accepts them all (`commit_sync`) and prints the errors
answered, as a JSON list (empty: accepted); the next line then closes it."""

from __future__ import annotations

import json
import sys


def main() -> None:
    from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer

    bootstrap, group, topic = sys.argv[1:4]
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    while True:
        records = [m for m in consumer.poll(0.5) if m.error() is None]
        if records:
            print(json.dumps(sorted(m.offset() for m in records)), flush=True)
            break
    line = sys.stdin.readline()
    if line.strip() == "accept":
        for m in records:
            consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        try:
            results = consumer.commit_sync()
            errors = sorted({str(error) for error in (results or {}).values() if error is not None})
        except KafkaException as exc:
            errors = [str(exc)]
        print(json.dumps(errors), flush=True)
        line = sys.stdin.readline()
    if line:
        consumer.close()


if __name__ == "__main__":
    main()

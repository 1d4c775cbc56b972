"""An unmodified confluent-kafka ShareConsumer in its own process that sits on what it acquires (so a test can
SIGKILL it or let its locks run out): `python -m tests.gateway.share.holding_member BOOTSTRAP GROUP TOPIC` polls in
explicit mode until it gets records, prints their offsets as one JSON line, and then neither acknowledges nor polls
again, its connection open, until it is killed."""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    from confluent_kafka import ShareConsumer

    bootstrap, group, topic = sys.argv[1:4]
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    while True:
        records = [m for m in consumer.poll(0.5) if m.error() is None]
        if records:
            print(json.dumps(sorted(m.offset() for m in records)), flush=True)
            break
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main()

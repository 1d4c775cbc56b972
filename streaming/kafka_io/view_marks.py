"""The completeness marks of the views topic, written by the source on the driver (docs/gateway.md, "Fast answers").

The state calls publish each group's view when it changes (`GroupStep.view`, produced with the batch's other
output, which is acknowledged before the batch commits). When the source plans a batch (`latestOffset`), the batch
that ended at its start offsets has committed, so every view of the requests before those offsets has been
written: the source then writes a `ViewMark` naming them into every partition of the views topic, after those
views in each partition. It writes one whenever the offsets moved, and at least every `MARK_INTERVAL_S` while the
query is idle (Spark still calls `latestOffset` every trigger, and runs no batch), so that a gateway can tell a
query with nothing to do from one that is gone. A mark that is lost (the driver dies before it is sent) is
replaced by the next one; nothing waits for it.
"""

from __future__ import annotations

import logging
import time
from typing import Mapping

from state.api import MARK_KEY, encode_mark

log = logging.getLogger(__name__)

MARK_INTERVAL_S = 1.0
"""The longest time between two marks while the query runs (idle included)."""


class ViewMarks:
    """Marks for the views of one query's requests topic, sent with the source's Kafka client library."""

    def __init__(self, config: Mapping[str, object], client: str, views_topic: str, requests_topic: str) -> None:
        self.config = dict(config)
        self.client = client
        self.views_topic = views_topic
        self.requests_topic = requests_topic
        self._last: dict[int, int] | None = None
        self._sent_at = 0.0
        self._partitions: list[int] | None = None

    def covered(self, positions: Mapping[int, int]) -> None:
        """Every batch before `positions` (requests-topic partition -> next offset) has committed: write a mark
        when they moved, or when the last one is `MARK_INTERVAL_S` old."""
        now = time.time()
        positions = dict(positions)
        if positions == self._last and now - self._sent_at < MARK_INTERVAL_S:
            return
        try:
            self._send(encode_mark(self.requests_topic, positions, int(now * 1000)))
        except Exception as exc:  # noqa: BLE001 - a mark is a hint: the next one replaces it; the query goes on
            log.warning("cannot write a view mark to %s: %s", self.views_topic, exc)
            return
        self._last, self._sent_at = positions, now

    def _send(self, value: bytes) -> None:
        if self.client == "confluent":
            from streaming.kafka_io import librdkafka

            producer = librdkafka.cached_producer(self.config)
            if self._partitions is None:
                self._partitions = sorted(producer.list_topics(self.views_topic, timeout=10)
                                          .topics[self.views_topic].partitions)
            for partition in self._partitions:
                producer.produce(self.views_topic, value, MARK_KEY, partition=partition)
            producer.poll(0)
        else:
            from streaming.kafka_io.kafka_clients import cached_producer

            producer = cached_producer(self.config)
            if self._partitions is None:
                self._partitions = sorted(producer.partitions_for(self.views_topic))
            for partition in self._partitions:
                producer.send(self.views_topic, key=MARK_KEY, value=value, partition=partition)

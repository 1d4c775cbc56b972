"""The cluster's topics into the control topic, for the consumer groups' server-side assignors (KIP-848).

Kafka's group coordinator reads topics from its broker's metadata image; ours has no broker inside, and a replay of
the control topic must see the same topics, so the driver publishes them there: the source's reader (driver side,
one per query run) asks the cluster for its topics (Metadata v12+: names, partition counts and the cluster's own
topic ids) at the query's start and every `topic.metadata.refresh.interval.ms`, and writes one `TopicMetadata`
request to the control topic whenever they changed, before the batch's end offsets are read: a change reaches the
groups in the batch that follows it. The core keeps the newest per state bucket (`state.batch`, route kind
`topics`); a group's next heartbeat sees a new partition count or a created topic that its regular expression
matches, as Kafka's coordinator sees a new metadata image.

The version is the time of the observation in ms, kept increasing within a run; a restarted driver (or a standby
that took over) publishes at its start, with its own clock: the drivers of one checkpoint are expected to have
clocks within the refresh interval of each other (an older version is ignored until the next change). Internal
topics are left out, as a consumer subscribing by regular expression leaves them out.
"""

from __future__ import annotations

import base64
import json
import logging
import uuid
from typing import Mapping

from kafka.admin import KafkaAdminClient

from streaming.kafka_io.kafka_clients import cached_producer

log = logging.getLogger(__name__)

TOPIC_METADATA_KEY = b"topic-metadata"
"""The control-topic key of `TopicMetadata` requests (any key would do: every bucket gets a copy)."""

ZERO_UUID = str(uuid.UUID(int=0))
"""Kafka's Uuid.ZERO_UUID: a topic without an id (a broker before KIP-516) cannot be named by the protocol."""
Topics = tuple[tuple[str, str, int], ...]
"""(topic id, name, partition count), by name."""


def kafka_topic_id(topic_id: str) -> str:
    """Kafka's `Uuid.toString()` (URL-safe base64, no padding) of a topic id as kafka-python gives it."""
    return base64.urlsafe_b64encode(uuid.UUID(topic_id).bytes).decode().rstrip("=")


class TopicWatch:
    def __init__(self, client_config: Mapping[str, object], requests_topic: str, interval_ms: int) -> None:
        self._config = dict(client_config)
        self._topic = requests_topic
        self._interval_ms = interval_ms
        self._next_ms: int | None = None
        self._published: Topics | None = None
        self._version = 0
        self._admin: KafkaAdminClient | None = None

    def maybe_publish(self, now_ms: int) -> None:
        """Publish the cluster's topics if the refresh is due and they changed (the first time, whatever they are).
        A cluster that cannot be asked is logged and asked again at the next refresh: the groups keep the topics
        they have."""
        if self._next_ms is not None and now_ms < self._next_ms:
            return
        self._next_ms = now_ms + self._interval_ms
        try:
            topics = self._cluster_topics()
            if topics == self._published:
                return
            self._version = max(now_ms, self._version + 1)
            request = {"api": "TopicMetadata", "request_id": f"topic-metadata-{self._version}",
                       "version": self._version,
                       "topics": [{"topic_id": i, "name": n, "partitions": p} for i, n, p in topics]}
            producer = cached_producer(self._config)
            producer.send(self._topic, key=TOPIC_METADATA_KEY, value=json.dumps(request).encode()).get(timeout=30)
            self._published = topics
        except Exception as exc:  # noqa: BLE001 - the next refresh asks again; the query goes on meanwhile
            log.warning("the cluster's topics could not be published to %s: %s", self._topic, exc)

    def _cluster_topics(self) -> Topics:
        if self._admin is None:
            known = set(KafkaAdminClient.DEFAULT_CONFIG)
            self._admin = KafkaAdminClient(**{k: v for k, v in self._config.items() if k in known},
                                           client_id="groupcoord-topic-watch")
        described = self._admin.describe_topics()
        return tuple(sorted(
            ((kafka_topic_id(t["topic_id"]), t["name"], len(t["partitions"]))
             for t in described if not t.get("is_internal") and t.get("error_code", 0) == 0
             and t.get("topic_id") not in (None, ZERO_UUID)), key=lambda topic: topic[1]))

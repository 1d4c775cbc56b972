"""The driver's publishing of the cluster's topics (`streaming.kafka_io.topic_watch`): Kafka's topic id text, and
a `TopicMetadata` only when the topics changed, at an increasing version."""

from __future__ import annotations

import json

from streaming.kafka_io import topic_watch
from streaming.kafka_io.topic_watch import TopicWatch, kafka_topic_id


def test_a_topic_id_is_written_as_kafkas_uuid_text():
    """kafka-python gives the id as a UUID; Kafka's Uuid.toString() is URL-safe base64 without padding (librdkafka
    prints the same bytes in standard base64: AaIZp58ZdDC+jcJ7UM6YDg)."""
    assert kafka_topic_id("01a219a7-9f19-7430-be8d-c27b50ce980e") == "AaIZp58ZdDC-jcJ7UM6YDg"


class Sent:
    def __init__(self) -> None:
        self.values: list[dict] = []

    def send(self, topic, key, value):
        self.values.append(json.loads(value))
        return self

    def get(self, timeout):
        return None


def test_topics_are_published_at_the_start_then_only_when_they_change(monkeypatch):
    sent = Sent()
    monkeypatch.setattr(topic_watch, "cached_producer", lambda config: sent)
    watch = TopicWatch({}, "requests", interval_ms=1000)
    cluster = [(("AAAAAAAAAAAAAAAAAAAAAA", "t", 3),)]
    monkeypatch.setattr(watch, "_cluster_topics", lambda: cluster[0])
    watch.maybe_publish(5_000)
    watch.maybe_publish(5_500)  # not due
    watch.maybe_publish(6_000)  # due, unchanged
    cluster[0] = (("AAAAAAAAAAAAAAAAAAAAAA", "t", 4),)
    watch.maybe_publish(6_000)  # not due again yet
    watch.maybe_publish(5_000 + 2_000)
    assert [(v["version"], v["topics"][0]["partitions"]) for v in sent.values] == [(5_000, 3), (7_000, 4)]


def test_a_cluster_that_cannot_be_asked_is_asked_again_later(monkeypatch):
    sent = Sent()
    monkeypatch.setattr(topic_watch, "cached_producer", lambda config: sent)
    watch = TopicWatch({}, "requests", interval_ms=1000)
    answers = [OSError("unreachable"), ()]

    def topics():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(watch, "_cluster_topics", topics)
    watch.maybe_publish(0)
    watch.maybe_publish(1_000)
    assert [v["topics"] for v in sent.values] == [[]]

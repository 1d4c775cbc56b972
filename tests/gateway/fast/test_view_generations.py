"""The view follower and the generations of the requests topic (`common.generations`, issue 37): it follows every
generation the marks name and stops following one they no longer name, which the query retires and then deletes
(a fetch of a deleted topic creates it again on tansu, empty: the deletion would not last).
A follower stepped by the test (its thread not started) against the session's broker; the marks are written as
the query's source writes them (`streaming.kafka_io.view_marks`)."""

from __future__ import annotations

import time
import uuid

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from common.generations import STRIDE
from gateway.fast.views import ViewFollower
from state.api import MARK_KEY, encode_mark

pytestmark = pytest.mark.broker


def write_mark(broker: str, views: str, requests: str, positions: dict[int, int]) -> None:
    producer = KafkaProducer(bootstrap_servers=broker)
    producer.send(views, key=MARK_KEY, value=encode_mark(requests, positions, int(time.time() * 1000)), partition=0)
    producer.flush()
    producer.close()


def test_a_generation_the_marks_no_longer_name_is_no_longer_followed_and_its_deletion_lasts(broker):
    requests, views = f"requests-{uuid.uuid4().hex[:8]}", f"views-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker)
    admin.create_topics([NewTopic(requests, 2, 1), NewTopic(f"{requests}.1", 2, 1), NewTopic(f"{requests}.2", 2, 1),
                         NewTopic(views, 1, 1)])
    producer = KafkaProducer(bootstrap_servers=broker)
    for i in range(3):
        producer.send(f"{requests}.1", key=b"g", value=b"request", partition=0)
    producer.flush()
    producer.close()
    follower = ViewFollower(broker, views, requests, {}, bound_ms=2000)
    moved: list[str] = []
    follower.on_generation = moved.append
    try:
        write_mark(broker, views, requests, {0: 0, 1: 0, STRIDE: 3, STRIDE + 1: 0})
        while not follower.step():
            time.sleep(0.2)
        follower.step()  # the first round learnt generation 1 from the mark; this one reads its ends
        assert moved == [f"{requests}.1"]
        following = time.monotonic()
        follower.step()
        assert follower.complete_as_of >= following  # every generation it follows is covered

        write_mark(broker, views, requests, {0: 0, 1: 0, 2 * STRIDE: 0, 2 * STRIDE + 1: 0})
        follower.step()  # reads the mark that no longer names generation 1
        assert moved == [f"{requests}.1", f"{requests}.2"]
        # The query deletes a retired generation 10 s or more after the mark that stopped naming it; here one round
        # after. A round ends with a fetch built for the partitions it read (generation 1 in the round above),
        # which kafka-python writes at the next round's first poll: a deletion before that round would race it.
        follower.step()
        admin.delete_topics([f"{requests}.1"])
        deleted = time.monotonic()
        follower.step()
        follower.step()
        assert f"{requests}.1" not in admin.list_topics()  # a log-end read there creates it again on tansu
        assert follower.complete_as_of >= deleted
        assert follower.covered() == {0: 0, 1: 0, 2 * STRIDE: 0, 2 * STRIDE + 1: 0}
    finally:
        follower.close()
        admin.close()

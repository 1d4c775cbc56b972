"""Where a partition's log ends, as `common.log_ends.high_watermarks` reads it from a real broker."""

from __future__ import annotations

import time
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from common import log_ends
from common.log_ends import high_watermarks

pytestmark = pytest.mark.broker


def test_an_end_read_again_sees_records_written_since_even_with_a_fetch_pipelined_before(broker: str):
    # kafka-python sends the next fetch as soon as it parses one; a response fetched before the call, at the same
    # position, would carry the old end. The group directory read its ends so and listed a deleted group once more.
    topic = f"ends-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker)
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    tp = TopicPartition(topic, 0)
    producer = KafkaProducer(bootstrap_servers=broker, acks="all")
    # A fetch that waits for more bytes than there are: the answer to a fetch sent during the call comes only
    # after the broker's wait (0.5 s), long after the one waiting unread since before the call is parsed.
    consumer = KafkaConsumer(bootstrap_servers=broker, enable_auto_commit=False, fetch_min_bytes=1 << 20,
                             fetch_max_wait_ms=500, max_partition_fetch_bytes=1024)
    try:
        producer.send(topic, b"first").get(10)
        assert high_watermarks(consumer, {tp: 0})[tp] == 1
        consumer.seek(tp, 1)
        consumer.poll(timeout_ms=0, max_records=1)  # sends a fetch at 1, whose answer (end 1) waits unread
        time.sleep(0.8)
        producer.send(topic, b"second").get(10)
        assert high_watermarks(consumer, {tp: 1})[tp] == 2
    finally:
        consumer.close()
        producer.close()


def test_on_tansu_an_end_is_read_past_the_end_and_follows_records_written_since(broker: str):
    # tansu lists every record batch of a partition on a fetch below its end (issue 37: the gateway's ten log-end
    # reads a second slowed every produce as the requests topic grew); a fetch past the end lists none and carries
    # the end. The read asks the broker once which answer it gives, then reads every partition there.
    topic = f"ends-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker)
    admin.create_topics([NewTopic(topic, 2, 1)])
    admin.close()
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    producer = KafkaProducer(bootstrap_servers=broker, acks="all")
    consumer = KafkaConsumer(bootstrap_servers=broker, enable_auto_commit=False, fetch_max_wait_ms=1,
                             max_partition_fetch_bytes=1024)
    try:
        assert high_watermarks(consumer, {tp: 0 for tp in tps}) == {tps[0]: 0, tps[1]: 0}
        assert log_ends._past_the_end[consumer] is True
        for n in range(1, 4):
            producer.send(topic, b"x", partition=0).get(10)
            ends = high_watermarks(consumer, {tp: 0 for tp in tps})
            assert ends == {tps[0]: n, tps[1]: 0}
            assert all(consumer.position(tp) >= log_ends.PAST_THE_END - 1 for tp in tps)  # nothing was read
    finally:
        consumer.close()
        producer.close()

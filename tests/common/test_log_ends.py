"""Where a partition's log ends, as `common.log_ends.high_watermarks` reads it from a real broker."""

from __future__ import annotations

import time
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

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

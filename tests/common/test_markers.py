"""Transaction markers read from the log: a transactional producer's commits and aborts, as tansu writes them."""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from common.markers import gaps, read_markers


def test_each_transaction_leaves_a_marker_at_an_offset_consumers_skip(broker):
    topic = f"markers-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
    producer = Producer({"bootstrap.servers": broker, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(10)
    outcomes = [True, False, True]
    for commit in outcomes:
        producer.begin_transaction()
        producer.produce(topic, b"v", b"k")
        producer.flush()
        (producer.commit_transaction if commit else producer.abort_transaction)(10)
    consumer = Consumer({"bootstrap.servers": broker, "group.id": topic, "enable.partition.eof": True})
    _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    consumer.assign([TopicPartition(topic, 0, 0)])
    delivered = []
    while True:
        message = consumer.poll(10)
        assert message is not None
        if message.error():
            break  # the partition's end
        delivered.append(message.offset())
    consumer.close()
    skipped = gaps(delivered, 0, end)
    markers = read_markers(broker, topic, 0, skipped)
    assert [m.offset for m in markers] == skipped and len(skipped) == len(outcomes)
    assert [m.committed for m in markers] == outcomes
    assert len({(m.producer_id, m.producer_epoch) for m in markers}) == 1 and markers[0].producer_id >= 0

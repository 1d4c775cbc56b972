"""`KafkaOutput` against the session's tansu broker: where each output record lands, and what a dead letter
carries."""

from __future__ import annotations

import uuid

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import NewTopic

from client.transport import response_partition
from streaming.kafka_io.sink import KafkaOutput, OutputRow

pytestmark = pytest.mark.broker


def read_all(broker: str, topic: str, partitions: int, expected: int) -> list:
    consumer = KafkaConsumer(bootstrap_servers=broker, auto_offset_reset="earliest", enable_auto_commit=False)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    records = []
    while len(records) < expected:
        for batch in consumer.poll(timeout_ms=500).values():
            records += batch
    consumer.close()
    return records


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_keyed_records_land_where_kafkas_default_partitioner_puts_them_and_dead_letters_keep_their_origin(broker,
                                                                                                      client):
    responses, dead = f"responses-{uuid.uuid4().hex[:8]}", f"dead-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker)
    admin.create_topics([NewTopic(responses, 3, 1), NewTopic(dead, 1, 1)])
    admin.close()
    output = KafkaOutput({"bootstrap_servers": broker}, {"response": responses, "dead_letter": dead}, client)
    keys = [f"group-{i}".encode() for i in range(30)]
    rows = [OutputRow("response", key, b"answer") for key in keys]
    rows.append(OutputRow("dead_letter", None, b"not json", "unparseable", 1, 42))
    output.send(rows)
    output.send(rows[:3])  # again: the same keys, now from the cache, go to the same partitions
    output.flush()

    landed = read_all(broker, responses, 3, len(keys) + 3)
    # where the client library (Kafka's default partitioner) looks for its group's responses
    assert {(r.key, r.partition) for r in landed} == {(k, response_partition(k.decode(), 3)) for k in keys}
    [letter] = read_all(broker, dead, 1, 1)
    assert (letter.key, letter.value) == (None, b"not json")
    assert dict(letter.headers) == {"reason": b"unparseable", "source.partition": b"1", "source.offset": b"42"}

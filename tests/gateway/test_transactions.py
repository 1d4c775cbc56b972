"""Exactly-once consume-process-produce through the gateway in front of the real query, with an unmodified
confluent-kafka application: its input offsets commit with its transaction (TxnOffsetCommit), stay pending while it
is open (a require_stable OffsetFetch answers UNSTABLE_OFFSET_COMMIT), and are never committed by an abort."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse

from tests.gateway.conftest import wait_for
from tests.gateway.raw import Connection

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def stable_fetch(bootstrap: str, group: str, topic: str) -> tuple[int, int]:
    """(offset, error) of partition 0 as a require_stable OffsetFetch (v7) through the gateway answers."""
    connection = Connection(bootstrap)
    try:
        answer = connection.call(OffsetFetchRequest[7](group_id=group, require_stable=True, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])]), 7, OffsetFetchResponse)
    finally:
        connection.close()
    (partition,) = answer.topics[0].partitions
    return partition.committed_offset, partition.error_code


def test_offsets_commit_with_the_transaction_wait_while_open_and_never_commit_on_abort(gateway_env):
    env = gateway_env
    source, sink = env.topic(1), env.topic(1)
    group = f"eos-{uuid.uuid4().hex[:8]}"
    feeder = Producer({"bootstrap.servers": env.broker})
    for n in range(30):
        feeder.produce(source, f"in-{n}".encode())
    feeder.flush(30)
    consumer = Consumer({"bootstrap.servers": env.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": env.bootstrap, "transactional.id": f"tx-{group}"})
    producer.init_transactions(60)
    consumer.subscribe([source])

    def transaction(records: int, commit: bool) -> int:
        """Consume `records`, produce one output each, send the offsets, then commit or abort: the offset sent."""
        batch = []
        while len(batch) < records:
            batch += [m for m in consumer.consume(records - len(batch), 5) if not m.error()]
        producer.begin_transaction()
        for message in batch:
            producer.produce(sink, message.value().replace(b"in", b"out"))
        position = batch[-1].offset() + 1
        producer.send_offsets_to_transaction([TopicPartition(source, 0, position)],
                                             consumer.consumer_group_metadata(), 60)
        assert stable_fetch(env.bootstrap, group, source) == (-1, 88)  # UNSTABLE_OFFSET_COMMIT: pending
        (producer.commit_transaction if commit else producer.abort_transaction)(60)
        return position

    first = transaction(10, commit=True)
    assert wait_for(lambda: stable_fetch(env.bootstrap, group, source) == (first, 0), what="the commit") is not None
    aborted = transaction(10, commit=False)
    assert wait_for(lambda: stable_fetch(env.bootstrap, group, source)[1] == 0, what="the abort") is not None
    assert stable_fetch(env.bootstrap, group, source) == (first, 0) and aborted > first
    consumer.seek(TopicPartition(source, 0, first))  # the application retries what the abort undid
    retried = transaction(10, commit=True)
    assert retried == aborted
    assert wait_for(lambda: stable_fetch(env.bootstrap, group, source) == (retried, 0), what="the retry")
    assert env.committed(group, source) == {0: retried}
    consumer.close()


def test_a_zombie_producer_is_fenced_and_its_offsets_never_commit(gateway_env):
    """Two producers with one transactional id: the first (the zombie, an older epoch) cannot put its offsets into
    a transaction; the second commits its own."""
    env = gateway_env
    source = env.topic(1)
    group = f"zombie-{uuid.uuid4().hex[:8]}"
    metadata = Consumer({"bootstrap.servers": env.bootstrap, "group.id": group}).consumer_group_metadata()
    zombie = Producer({"bootstrap.servers": env.bootstrap, "transactional.id": f"tx-{group}"})
    zombie.init_transactions(60)
    zombie.begin_transaction()
    successor = Producer({"bootstrap.servers": env.bootstrap, "transactional.id": f"tx-{group}"})
    successor.init_transactions(60)  # bumps the epoch: the zombie's transaction is aborted upstream
    with pytest.raises(KafkaException) as refused:
        zombie.send_offsets_to_transaction([TopicPartition(source, 0, 5)], metadata, 30)
        zombie.commit_transaction(30)
    assert refused.value.args[0].code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                            KafkaError.INVALID_PRODUCER_EPOCH, KafkaError.INVALID_TXN_STATE)
    successor.begin_transaction()
    successor.send_offsets_to_transaction([TopicPartition(source, 0, 7)], metadata, 60)
    successor.commit_transaction(60)
    assert wait_for(lambda: stable_fetch(env.bootstrap, group, source) == (7, 0), what="the successor's commit")

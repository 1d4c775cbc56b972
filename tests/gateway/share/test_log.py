"""The record bytes of share-partitions (`gateway.share.log`): log batches walked by their headers, never decoded;
what a holder keeps of the log, and reads from the real broker."""

from __future__ import annotations

import asyncio
import uuid

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.record.default_records import DefaultRecordBatchBuilder

from gateway.protocol.batches import log_batches
from gateway.share.log import EARLIEST, LATEST, PartitionLog, UpstreamReads
from gateway.upstream.broker import UpstreamSecurity


def batch(base: int, count: int) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(count):
        builder.append(i, timestamp=None, key=None, value=b"v%d" % (base + i), headers=[])
    data = bytearray(builder.build())
    data[0:8] = base.to_bytes(8, "big")
    return bytes(data)


def test_batches_are_walked_by_their_headers():
    records = batch(0, 3) + batch(3, 1) + batch(10, 5)
    assert [(b.base, b.last) for b in log_batches(records)] == [(0, 2), (3, 3), (10, 14)]
    assert b"".join(b.data for b in log_batches(records)) == records


def test_a_batch_cut_short_by_the_size_limit_is_left_out():
    records = batch(0, 3) + batch(3, 4)
    for cut in (len(records) - 1, len(batch(0, 3)) + 20, len(batch(0, 3)) + 5):
        assert [(b.base, b.last) for b in log_batches(records[:cut])] == [(0, 2)]
    assert log_batches(b"") == []


def on_a_fresh_topic(broker: str, scenario) -> None:
    """Runs `await scenario(reads, topic, producer)` on a new one-partition topic of the broker."""
    topic = f"share-log-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker)
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker, linger_ms=0)
    host, _, port = broker.rpartition(":")

    async def run():
        reads = UpstreamReads(lambda node: [(host, int(port))], UpstreamSecurity(), 10)
        try:
            await scenario(reads, topic, producer)
        finally:
            reads.close()

    try:
        asyncio.run(run())
    finally:
        producer.close()


def test_reads_from_the_broker_and_what_is_held(broker):
    async def scenario(reads, topic, producer):
        for i in range(5):
            producer.send(topic, b"v%d" % i).get(timeout=10)
        partition_log = PartitionLog(reads, None, topic, 0)
        first = await partition_log.read(0, 1 << 20)
        assert [(b.base, b.last) for b in first] == [(i, i) for i in range(5)]
        assert partition_log.high_watermark == 5 and partition_log.cached_end == 5
        # from memory: a redelivery from offset 2 reads nothing
        assert [b.base for b in partition_log.cached_from(2, 1 << 20)] == [2, 3, 4]
        assert partition_log.cached_from(5, 1 << 20) == []
        assert await partition_log.poll(5) is False
        producer.send(topic, b"v5").get(timeout=10)
        assert await partition_log.poll(5) is True
        assert partition_log.cached_end == 6
        # the byte budget: at least one batch
        assert len(partition_log.cached_from(0, 1)) == 1
        partition_log.trim(3)
        assert [b.base for b in partition_log.cached_from(3, 1 << 20)] == [3, 4, 5]
        assert partition_log.cached_from(2, 1 << 20) == []
        assert await reads.list_offset(None, topic, 0, EARLIEST) == (0, 0)
        assert await reads.list_offset(None, topic, 0, LATEST) == (0, 6)

    on_a_fresh_topic(broker, scenario)


def test_a_log_with_nothing_read_yet_is_polled_from_the_offset_given(broker):
    """A share-partition whose log had nothing from its next fetch offset on holds no batch: a long poll's wake-up
    reads from that offset (until 2026-12-05 it read nothing, and a wait on an empty log ran to MaxWaitMs)."""
    async def scenario(reads, topic, producer):
        partition_log = PartitionLog(reads, None, topic, 0)
        assert await partition_log.read(0, 1 << 20) == []
        assert await partition_log.poll(0) is False
        producer.send(topic, b"v0").get(timeout=10)
        assert await partition_log.poll(0) is True
        assert [(b.base, b.last) for b in partition_log.cached_from(0, 1 << 20)] == [(0, 0)]

    on_a_fresh_topic(broker, scenario)

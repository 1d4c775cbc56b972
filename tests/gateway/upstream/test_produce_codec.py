"""The gateway's hand-written Produce v8 and record batches (`gateway.protocol.produce`), read back with
kafka-python's message classes and batch reader: the same fields, the batch's CRC valid, and every answer field
the appender reads; no broker."""

from __future__ import annotations

import pytest
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.record.default_records import DefaultRecordBatch

from gateway.protocol.produce import produce_answers, produce_request, record_batch


def test_a_record_batch_reads_back_with_its_records_producer_and_sequence():
    records = [(b"group-1", b"x" * 300), (b"", b""), (b"group-\xc3\xa9", b"y" * 70_000)]
    batch = DefaultRecordBatch(record_batch(records, producer_id=4_000_000_001, epoch=7, base_sequence=2_147_483_000,
                                            timestamp_ms=1_796_000_000_123))
    assert batch.validate_crc()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.is_transactional) == (
        4_000_000_001, 7, 2_147_483_000, False)
    read = list(batch)
    assert [(r.key, r.value, r.offset, r.timestamp, r.headers) for r in read] == [
        (k, v, n, 1_796_000_000_123, []) for n, (k, v) in enumerate(records)]


def test_a_transactional_batch_says_so():
    batch = DefaultRecordBatch(record_batch([(b"g", b"v")], 5, 0, 0, 1, transactional=True))
    assert batch.validate_crc() and batch.is_transactional


@pytest.mark.parametrize("transactional_id", [None, "txn-é"])
def test_a_produce_request_reads_back_as_kafka_pythons_v8(transactional_id):
    batches = [(3, record_batch([(b"k", b"v")], 9, 0, 0, 1)), (0, record_batch([(b"k2", b"v2")], 9, 0, 5, 1))]
    frame = produce_request(17, "groupcoord-gateway", transactional_id, -1, 10_000, "requests-g2", batches)
    read = ProduceRequest.decode(frame, version=8, header=True)
    assert (read.header.request_api_key, read.header.request_api_version, read.header.correlation_id,
            read.header.client_id) == (0, 8, 17, "groupcoord-gateway")
    assert (read.transactional_id, read.acks, read.timeout_ms) == (transactional_id, -1, 10_000)
    ((topic,),) = [read.topic_data]
    assert topic.name == "requests-g2"
    assert [(p.index, bytes(p.records)) for p in topic.partition_data] == batches


def test_every_partition_answer_is_read_with_its_error_and_offset():
    partitions = ProduceResponse.TopicProduceResponse.PartitionProduceResponse
    answer = ProduceResponse[8](throttle_time_ms=3, responses=[
        ProduceResponse.TopicProduceResponse(name="a", partition_responses=[
            partitions(index=0, error_code=0, base_offset=41, log_append_time_ms=-1, log_start_offset=0,
                       record_errors=[partitions.BatchIndexAndErrorMessage(batch_index=0,
                                                                           batch_index_error_message="bad")],
                       error_message="why"),
            partitions(index=4, error_code=46, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
                       record_errors=[], error_message=None)]),
        ProduceResponse.TopicProduceResponse(name="b", partition_responses=[
            partitions(index=1, error_code=6, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
                       record_errors=[], error_message=None)])])
    answer.with_header(correlation_id=99)
    read = produce_answers(bytes(answer.encode(header=True)))
    assert [(a.topic, a.partition, a.error_code, a.base_offset) for a in read] == [
        ("a", 0, 0, 41), ("a", 4, 46, -1), ("b", 1, 6, -1)]


def test_an_answer_cut_short_is_a_value_error():
    with pytest.raises(ValueError, match="cut short"):
        produce_answers(b"\x00\x00\x00\x01\x00\x00\x00\x01\x00")

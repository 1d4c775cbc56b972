"""The gateway's own Produce requests, written and read by hand: Produce v8 (its answers) and the v2 record batch.

The gateway writes every control request to the requests topic itself (`gateway.upstream.appender`), one Produce
request per round; kafka-python's message classes and batch builder took about 100 us of Python to write one and
read its answer, a commit's whole budget at the floor (docs/gateway.md, "Every client's speed"). Here a request is a
few `struct` packs and joins; only the fields the gateway sends are written, and only the partition answers read.
The layouts are Kafka's (`ProduceRequest.json` v8, non-flexible; `DefaultRecordBatch`): the tests read what this
writes with kafka-python's classes and check the batch's CRC with them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from crc32c import crc32c

PRODUCE = 0
"""Produce's API key."""
VERSION = 8
"""The newest non-flexible version: every broker since Kafka 2.4, and tansu."""
TRANSACTIONAL = 0x10
"""A batch's attribute bit for records inside a transaction."""

_HEADER = struct.Struct(">hhih")
"""api key, version, correlation id, client id's length (request header v1)."""
_BODY = struct.Struct(">hii")
"""acks, timeout ms, topic count (1)."""
_INDEX_AND_LENGTH = struct.Struct(">ii")
_BATCH_HEAD = struct.Struct(">qiib")
"""base offset, batch length, partition leader epoch, magic."""
_BATCH_REST = struct.Struct(">hiqqqhii")
"""attributes, last offset delta, first timestamp, max timestamp, producer id, epoch, base sequence, count."""
_ANSWER_PARTITION = struct.Struct(">ihqqq")
"""index, error code, base offset, log append time, log start offset (v5+)."""
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class PartitionAnswer:
    topic: str
    partition: int
    error_code: int
    base_offset: int


def record_batch(records: list[tuple[bytes, bytes]], producer_id: int, epoch: int, base_sequence: int,
                 timestamp_ms: int, transactional: bool = False) -> bytes:
    """A v2 record batch of (key, value) records, offsets from 0, all at `timestamp_ms`, no headers, uncompressed."""
    body = bytearray()
    for delta, (key, value) in enumerate(records):
        record = bytearray(b"\x00\x00")  # attributes, timestamp delta 0
        record += _varint(delta)
        record += _varint(len(key))
        record += key
        record += _varint(len(value))
        record += value
        record += b"\x00"  # no headers
        body += _varint(len(record))
        body += record
    rest = _BATCH_REST.pack(TRANSACTIONAL if transactional else 0, len(records) - 1, timestamp_ms, timestamp_ms,
                            producer_id, epoch, base_sequence, len(records)) + body
    # batch length: everything after the length field: leader epoch, magic, crc, then `rest`
    return _BATCH_HEAD.pack(0, 4 + 1 + 4 + len(rest), -1, 2) + _INT32.pack(_signed(crc32c(rest))) + rest


def produce_request(correlation_id: int, client_id: str, transactional_id: str | None, acks: int, timeout_ms: int,
                    topic: str, batches: list[tuple[int, bytes]]) -> bytes:
    """A Produce v8 request (header included, without the size prefix) writing `batches` ((partition, record
    batch)) to `topic`."""
    client = client_id.encode("utf-8")
    name = topic.encode("utf-8")
    txn = b"" if transactional_id is None else transactional_id.encode("utf-8")
    parts = [_HEADER.pack(PRODUCE, VERSION, correlation_id, len(client)), client,
             _INT16.pack(-1 if transactional_id is None else len(txn)), txn, _BODY.pack(acks, timeout_ms, 1),
             _INT16.pack(len(name)), name, _INT32.pack(len(batches))]
    for partition, batch in batches:
        parts += [_INDEX_AND_LENGTH.pack(partition, len(batch)), batch]
    return b"".join(parts)


def produce_answers(payload: bytes) -> list[PartitionAnswer]:
    """Each partition's answer in a Produce v8 response (`payload`: the response with its header, without its size
    prefix); ValueError when it is cut short."""
    try:
        pos = 4  # correlation id
        out = []
        (topics,) = _INT32.unpack_from(payload, pos)
        pos += 4
        for _ in range(topics):
            (length,) = _INT16.unpack_from(payload, pos)
            topic = payload[pos + 2:pos + 2 + length].decode("utf-8")
            pos += 2 + length
            (partitions,) = _INT32.unpack_from(payload, pos)
            pos += 4
            for _ in range(partitions):
                index, code, base_offset, _, _ = _ANSWER_PARTITION.unpack_from(payload, pos)
                pos += _ANSWER_PARTITION.size
                (errors,) = _INT32.unpack_from(payload, pos)
                pos += 4
                for _ in range(max(errors, 0)):  # record errors: batch index, nullable message
                    (length,) = _INT16.unpack_from(payload, pos + 4)
                    pos += 6 + max(length, 0)
                (length,) = _INT16.unpack_from(payload, pos)  # the partition's error message
                pos += 2 + max(length, 0)
                out.append(PartitionAnswer(topic, index, code, base_offset))
        return out
    except (struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"a Produce v{VERSION} answer cut short or malformed: {exc}") from None


def _varint(value: int) -> bytes:
    """Kafka's zigzag varint (records' lengths and deltas)."""
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _signed(crc: int) -> int:
    return crc - (1 << 32) if crc >= 1 << 31 else crc

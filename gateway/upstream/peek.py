"""What authorization needs of a Produce or Fetch request, read without decoding it.

These two carry the data (records in, fetch positions out) and pass the gateway byte for byte; decoding one with
kafka-python's classes for its topic names would cost more than forwarding it. So this reads the request header
and walks the body only as far as the topics, skipping partitions by their fixed layout, and stops there: the
records of a Produce are stepped over by their length, never read. Layouts follow Kafka's JSON message definitions
(ProduceRequest v3-13, FetchRequest v4-18); flexible versions (Produce 9+, Fetch 12+) use compact lengths and
tagged fields.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class _Reader:
    __slots__ = ("data", "pos", "flexible")

    def __init__(self, data: bytes, pos: int, flexible: bool) -> None:
        self.data, self.pos, self.flexible = data, pos, flexible

    def skip(self, n: int) -> None:
        self.pos += n
        if self.pos > len(self.data):
            raise ValueError("request ends inside a field")

    def i16(self) -> int:
        value = _I16.unpack_from(self.data, self.pos)[0]
        self.pos += 2
        return value

    def i32(self) -> int:
        value = _I32.unpack_from(self.data, self.pos)[0]
        self.pos += 4
        return value

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ValueError("varint too long")

    def string(self) -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.i16()
        if n < 0:
            return None
        start = self.pos
        self.skip(n)
        return self.data[start:self.pos].decode("utf-8")

    def bytes_skip(self) -> None:
        n = self.uvarint() - 1 if self.flexible else self.i32()
        if n > 0:
            self.skip(n)

    def array_length(self) -> int:
        n = self.uvarint() - 1 if self.flexible else self.i32()
        return max(n, 0)

    def uuid(self) -> bytes:
        start = self.pos
        self.skip(16)
        return self.data[start:self.pos]

    def tagged_fields(self) -> None:
        if self.flexible:
            for _ in range(self.uvarint()):
                self.uvarint()  # tag
                self.skip(self.uvarint())


def _body(frame: bytes, flexible: bool) -> _Reader:
    """A reader at the start of the request body: after api key, version, correlation id, client id (a nullable
    int16 string in every header version) and, in header v2, tagged fields."""
    reader = _Reader(frame, 8, False)
    reader.string()
    reader.flexible = flexible
    reader.tagged_fields()
    return reader


@dataclass(frozen=True)
class ProduceSummary:
    transactional_id: str | None
    acks: int
    topics: list[str | bytes]
    """Names (v3-12) or 16-byte topic ids (v13+)."""


def produce(frame: bytes, version: int) -> ProduceSummary:
    r = _body(frame, version >= 9)
    transactional_id = r.string() if version >= 3 else None
    acks = r.i16()
    r.skip(4)  # timeout_ms
    topics: list[str | bytes] = []
    for _ in range(r.array_length()):
        topics.append(r.uuid() if version >= 13 else r.string())
        for _ in range(r.array_length()):
            r.skip(4)  # index
            r.bytes_skip()  # records
            r.tagged_fields()
        r.tagged_fields()
    return ProduceSummary(transactional_id, acks, topics)


def produce_acks(frame: bytes, version: int) -> int:
    r = _body(frame, version >= 9)
    if version >= 3:
        r.string()
    return r.i16()


@dataclass(frozen=True)
class FetchSummary:
    replica_id: int
    """-1 for consumers; a broker id for a follower (versions before 15: later ones carry it in a tagged field,
    which consumers never set, so -1 is assumed)."""
    topics: list[str | bytes]
    """Names (before v13) or 16-byte topic ids (v13+)."""


def fetch(frame: bytes, version: int) -> FetchSummary:
    r = _body(frame, version >= 12)
    replica_id = r.i32() if version <= 14 else -1
    r.skip(8)  # max_wait_ms, min_bytes
    if version >= 3:
        r.skip(4)  # max_bytes
    if version >= 4:
        r.skip(1)  # isolation_level
    if version >= 7:
        r.skip(8)  # session_id, session_epoch
    partition_bytes = 4 + 8 + 4  # partition, fetch_offset, partition_max_bytes
    if version >= 9:
        partition_bytes += 4  # current_leader_epoch
    if version >= 12:
        partition_bytes += 4  # last_fetched_epoch
    if version >= 5:
        partition_bytes += 8  # log_start_offset
    topics: list[str | bytes] = []
    for _ in range(r.array_length()):
        topics.append(r.uuid() if version >= 13 else r.string())
        for _ in range(r.array_length()):
            r.skip(partition_bytes)
            r.tagged_fields()
        r.tagged_fields()
    return FetchSummary(replica_id, topics)

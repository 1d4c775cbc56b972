"""Kafka's ConsumerProtocol payloads: the opaque bytes inside JoinGroup metadata and SyncGroup assignments.

Byte-compatible with Java's `ConsumerProtocolSubscription` (versions 0-3) and `ConsumerProtocolAssignment`
(versions 0-3). Both are non-flexible encodings: int16 version, then strings as int16 length + UTF-8, arrays
as int32 count, bytes as int32 length (-1 for null). A payload newer than we know is read by its known prefix,
as Kafka clients do, so a newer client's subscription still yields its topics.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]
"""((topic, (partition, ...)), ...) in the order they are encoded."""


class ConsumerProtocolError(ValueError):
    """The bytes are not a ConsumerProtocol payload (truncated, negative lengths, bad UTF-8)."""


@dataclass(frozen=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = field(default=SUBSCRIPTION_VERSION, compare=False)


@dataclass(frozen=True)
class Assignment:
    assigned_partitions: TopicPartitions = ()
    user_data: bytes | None = None
    version: int = field(default=ASSIGNMENT_VERSION, compare=False)

    def partitions(self) -> list[tuple[str, int]]:
        return [(topic, p) for topic, parts in self.assigned_partitions for p in parts]


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def _take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise ConsumerProtocolError(f"truncated at byte {self.pos}")
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def _raw(self, length: int) -> bytes:
        if length < 0 or self.pos + length > len(self.buf):
            raise ConsumerProtocolError(f"bad length {length} at byte {self.pos}")
        out = self.buf[self.pos : self.pos + length]
        self.pos += length
        return out

    def string(self) -> str:
        try:
            return self._raw(self.int16()).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConsumerProtocolError(f"string is not UTF-8: {exc}") from None

    def nullable_string(self) -> str | None:
        length = self.int16()
        if length == -1:
            return None
        try:
            return self._raw(length).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConsumerProtocolError(f"string is not UTF-8: {exc}") from None

    def nullable_bytes(self) -> bytes | None:
        length = self.int32()
        return None if length == -1 else self._raw(length)

    def count(self) -> int:
        n = self.int32()
        if n < 0 or n > len(self.buf):
            raise ConsumerProtocolError(f"bad array length {n}")
        return n

    def topic_partitions(self) -> TopicPartitions:
        out = []
        for _ in range(self.count()):
            topic = self.string()
            out.append((topic, tuple(self.int32() for _ in range(self.count()))))
        return tuple(out)


def _string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


def _nullable_string(value: str | None) -> bytes:
    return struct.pack(">h", -1) if value is None else _string(value)


def _nullable_bytes(value: bytes | None) -> bytes:
    return struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value


def _topic_partitions(items: TopicPartitions) -> bytes:
    parts = [struct.pack(">i", len(items))]
    for topic, partitions in items:
        parts.append(_string(topic))
        parts.append(struct.pack(f">i{len(partitions)}i", len(partitions), *partitions))
    return b"".join(parts)


def encode_subscription(sub: Subscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    """Encode as Java's ConsumerProtocol.serializeSubscription at `version` (fields of later versions dropped)."""
    parts = [struct.pack(">hi", version, len(sub.topics))]
    parts.extend(_string(t) for t in sub.topics)
    parts.append(_nullable_bytes(sub.user_data))
    if version >= 1:
        parts.append(_topic_partitions(sub.owned_partitions))
    if version >= 2:
        parts.append(struct.pack(">i", sub.generation_id))
    if version >= 3:
        parts.append(_nullable_string(sub.rack_id))
    return b"".join(parts)


def decode_subscription(data: bytes) -> Subscription:
    """Decode a subscription; raises ConsumerProtocolError on malformed bytes."""
    r = _Reader(data)
    version = r.int16()
    if version < 0:
        raise ConsumerProtocolError(f"negative subscription version {version}")
    topics = tuple(r.string() for _ in range(r.count()))
    user_data = r.nullable_bytes()
    owned: TopicPartitions = r.topic_partitions() if version >= 1 else ()
    generation_id = r.int32() if version >= 2 else -1
    rack_id = r.nullable_string() if version >= 3 else None
    return Subscription(topics, user_data, owned, generation_id, rack_id, version)


def subscribed_topics(metadata: bytes) -> tuple[str, ...]:
    """Only the topic list (the v0 prefix every version shares), as the coordinator needs it (KIP-496, KIP-211)."""
    r = _Reader(metadata)
    if r.int16() < 0:
        raise ConsumerProtocolError("negative subscription version")
    return tuple(r.string() for _ in range(r.count()))


def encode_assignment(assignment: Assignment, version: int = ASSIGNMENT_VERSION) -> bytes:
    return (
        struct.pack(">h", version)
        + _topic_partitions(assignment.assigned_partitions)
        + _nullable_bytes(assignment.user_data)
    )


def decode_assignment(data: bytes) -> Assignment:
    """Decode an assignment. Empty bytes (what the coordinator fills in for members the leader left out) decode
    to an empty assignment, as Kafka's consumer treats them."""
    if not data:
        return Assignment()
    r = _Reader(data)
    version = r.int16()
    if version < 0:
        raise ConsumerProtocolError(f"negative assignment version {version}")
    return Assignment(r.topic_partitions(), r.nullable_bytes(), version)


def group_partitions(pairs: list[tuple[str, int]] | set[tuple[str, int]]) -> TopicPartitions:
    """(topic, partition) pairs -> the sorted TopicPartitions form the encoders take."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in pairs:
        by_topic.setdefault(topic, []).append(partition)
    return tuple((t, tuple(sorted(by_topic[t]))) for t in sorted(by_topic))

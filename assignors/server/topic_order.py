"""The orders in which Kafka's server-side assignors meet topics, reproduced from topic Uuids.

KIP-848's assignors identify topics by Uuid, and two of their choices depend on it: the homogeneous uniform builder
lays out unassigned partitions topic by topic in the iteration order of a `HashSet<Uuid>`, and the heterogeneous
one breaks its last tie with `Uuid.compareTo`. Given the Uuids (`Cluster.topic_ids`) we follow both exactly; without
them (the classic protocol carries topic names only) ascending topic names stand in for both orders.

Java's HashSet iteration: the set built from a collection of n elements has a table of
`tableSizeFor(max((int) (n / .75f) + 1, 16))` buckets; an element goes to bucket `(h ^ (h >>> 16)) & (size - 1)`
where h is its hashCode (for a Uuid, the two 32-bit halves of `msb ^ lsb` xor-ed); iteration walks the buckets in
index order, and within a bucket the elements in insertion order. A bucket that Java turns into a tree (8 or more
elements in it with 64 or more buckets) is outside this model; with random Uuids that needs thousands of topics
before it becomes likely at all.
"""

from __future__ import annotations

import base64
from typing import Mapping, Sequence

import numpy as np

_MASK64 = (1 << 64) - 1


def uuid_bits(uuid: str) -> tuple[int, int]:
    """Kafka's `Uuid.fromString`: the base64 (URL-safe, unpadded) form -> (mostSignificantBits,
    leastSignificantBits) as signed 64-bit integers, which is what `Uuid.compareTo` compares."""
    raw = base64.urlsafe_b64decode(uuid + "=" * (-len(uuid) % 4))
    if len(raw) != 16:
        raise ValueError(f"{uuid!r} is not a base64 Kafka Uuid (16 bytes)")
    return int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True)


def _hash_code(bits: tuple[int, int]) -> int:
    """Uuid.hashCode() as an unsigned 32-bit value."""
    xor = (bits[0] ^ bits[1]) & _MASK64
    return ((xor >> 32) ^ xor) & 0xFFFFFFFF


def _table_size(n: int) -> int:
    """Buckets of `new HashSet<>(collection)` holding n elements (float arithmetic as Java's, in float32)."""
    wanted = max(int(np.float32(n) / np.float32(0.75)) + 1, 16)
    return 1 << (wanted - 1).bit_length()


def hash_set_order(topics: Sequence[str], topic_ids: Mapping[str, str]) -> list[str] | None:
    """`topics` (inserted in this order) in the iteration order of Java's `new HashSet<>(their Uuids)`, or None
    when some topic has no id."""
    if not topic_ids or any(t not in topic_ids for t in topics):
        return None
    distinct = list(dict.fromkeys(topics))
    mask = _table_size(len(distinct)) - 1

    def bucket(topic: str) -> int:
        h = _hash_code(uuid_bits(topic_ids[topic]))
        return (h ^ (h >> 16)) & mask

    return sorted(distinct, key=bucket)  # sorted() is stable: insertion order within a bucket


def uuid_order_key(topics: Sequence[str], topic_ids: Mapping[str, str]) -> dict[str, tuple[int, int]] | None:
    """topic -> a key that sorts as Kafka's `Uuid.compareTo`, or None when some topic has no id."""
    if not topic_ids or any(t not in topic_ids for t in topics):
        return None
    return {t: uuid_bits(topic_ids[t]) for t in topics}

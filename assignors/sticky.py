"""Kafka's `sticky` (eager, KIP-54) and `cooperative-sticky` (KIP-429) client-side assignors.

Both compute the same balanced target and keep as much of the previous assignment as balance allows; they differ in
where a member's previous assignment comes from and in how moves are delivered:

- `sticky` reads it from its userData (Java's StickyAssignorUserData v1: previous assignment + generation),
  because an eager member has revoked everything before it joins;
- `cooperative-sticky` reads `owned_partitions` and `generation_id` from the subscription (or the generation from
  its 4-byte v0 userData when the subscription is older than v2), and withholds every partition that changes
  owner: the old owner revokes it in this rebalance and re-joins, and the next rebalance gives it to the new owner.

Worked example (sticky): C0, C1, C2 on t0..t3 with two partitions each get 3/3/2; when C1 leaves, C0 and C2 keep
everything they had and split C1's three partitions, instead of the full reshuffle round-robin would do.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from itertools import chain
from typing import Literal, Sequence

import numpy as np

from assignors.api import (
    Assignment,
    Cluster,
    MemberSubscription,
    SubscriptionType,
    distinct_subscriptions,
    subscription_type,
)
from assignors.consumer_protocol import ConsumerProtocolError, TopicPartitions
from assignors.partition_space import build_assignment, flatten_claims, partition_space
from assignors.sticky_core import (
    Claims,
    constrained_assign,
    general_assign,
    resolve_claims,
    transferring_from_claims,
)

DEFAULT_GENERATION = -1


def encode_sticky_user_data(previous_assignment: TopicPartitions, generation: int) -> bytes:
    """Java StickyAssignor's userData, schema v1: [topic string, [int32 partitions]] then int32 generation.
    No version prefix: Java tells v1 from v0 by trying to read v1 first."""
    parts = [struct.pack(">i", len(previous_assignment))]
    for topic, partitions in previous_assignment:
        raw = topic.encode("utf-8")
        parts.append(struct.pack(">h", len(raw)) + raw)
        parts.append(struct.pack(f">i{len(partitions)}i", len(partitions), *partitions))
    parts.append(struct.pack(">i", generation))
    return b"".join(parts)


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT32_ARRAYS: dict[int, struct.Struct] = {}


def _int32_array(n: int) -> struct.Struct:
    """A compiled `>{n}i`: a rebalance decodes one array per (member, topic), 180,000 at 1M partitions."""
    compiled = _INT32_ARRAYS.get(n)
    if compiled is None:
        compiled = struct.Struct(f">{n}i")
        if n <= 4096:
            _INT32_ARRAYS[n] = compiled
    return compiled


def _read_assignment(data: bytes, pos: int) -> tuple[TopicPartitions, int]:
    (count,) = _INT32.unpack_from(data, pos)
    pos += 4
    if count < 0 or count > len(data):
        raise ConsumerProtocolError(f"bad topic count {count}")
    out = []
    size = len(data)
    for _ in range(count):
        (length,) = _INT16.unpack_from(data, pos)
        end = pos + 2 + length
        (n,) = _INT32.unpack_from(data, end)
        pos = end + 4 + 4 * n
        if length < 0 or n < 0 or pos > size:
            raise ConsumerProtocolError(f"bad topic or partition count at byte {end}")
        out.append((data[end - length : end].decode("utf-8"), _int32_array(n).unpack_from(data, end + 4)))
    return tuple(out), pos


def decode_sticky_user_data(data: bytes) -> tuple[TopicPartitions, int | None]:
    """(previous assignment, generation or None for v0). Tries v1 then v0 as Java does, requiring the whole
    buffer to be consumed; then kafka-python 3.0.12's form, which prefixes an int16 version. Raises
    ConsumerProtocolError when none fits."""
    candidates = ((0, True), (0, False), (2, True), (2, False))
    for start, with_generation in candidates:
        try:
            if start == 2 and data[:2] not in (b"\x00\x00", b"\x00\x01"):
                continue
            assignment, pos = _read_assignment(data, start)
            if with_generation:
                (generation,) = struct.unpack_from(">i", data, pos)
                pos += 4
            else:
                generation = None
            if pos == len(data):
                return assignment, generation
        except (struct.error, UnicodeDecodeError, ConsumerProtocolError):
            continue
    raise ConsumerProtocolError("not StickyAssignor userData (v0 or v1)")


def sticky_member_data(member: MemberSubscription) -> tuple[TopicPartitions, int]:
    """Java StickyAssignor.memberData: owned partitions and generation from userData only (an eager member has
    revoked its partitions, so the subscription's own owned list is empty); unreadable userData counts as none."""
    if not member.user_data:
        return (), DEFAULT_GENERATION
    try:
        owned, generation = decode_sticky_user_data(member.user_data)
    except ConsumerProtocolError:
        return (), DEFAULT_GENERATION
    return owned, DEFAULT_GENERATION if generation is None else generation


def cooperative_member_data(member: MemberSubscription) -> tuple[TopicPartitions, int]:
    """Java CooperativeStickyAssignor.memberData: owned partitions from the subscription; the generation from the
    subscription (v2+), else from the 4-byte userData older cooperative clients send."""
    generation = member.generation_id
    if generation == DEFAULT_GENERATION and member.user_data is not None and len(member.user_data) == 4:
        (generation,) = struct.unpack(">i", member.user_data)
    return member.owned_partitions, generation


def encode_cooperative_user_data(generation: int) -> bytes:
    """CooperativeStickyAssignor's userData: the int32 generation, which carries it when the subscription is older
    than v2 (no generation field)."""
    return struct.pack(">i", generation)


def sticky_assign(
    cluster: Cluster,
    members: Sequence[MemberSubscription],
    member_data: Sequence[tuple[TopicPartitions, int]],
    cooperative: bool,
) -> Assignment:
    """The shared body: resolve ownership, pick the constrained or general builder, withhold transfers when
    cooperative. `member_data[i]` is (owned partitions, generation) of `members[i]`."""
    if not members:
        return {}
    order = sorted(range(len(members)), key=lambda i: members[i].member_id)
    ordered = [members[i] for i in order]
    homogeneous = subscription_type(members) is SubscriptionType.HOMOGENEOUS
    subscribed_topics = members[0].topics if homogeneous else chain.from_iterable(distinct_subscriptions(members))
    space = partition_space(cluster.partitions_per_topic, subscribed_topics)
    member_index, partition = flatten_claims(space, [member_data[i][0] for i in order])
    generations = np.array([member_data[i][1] for i in order], dtype=np.int64)
    claims = Claims(member_index, partition, generations[member_index])
    owned, multi = resolve_claims(claims, space.total)

    if homogeneous:
        owner, transferring = constrained_assign(space, len(ordered), owned, multi)
    else:
        index = space.topic_index()
        subscribed = np.zeros((len(ordered), len(space.topics)), dtype=bool)
        for i, m in enumerate(ordered):
            subscribed[i, [index[t] for t in m.topics if t in index]] = True
        owner = general_assign(space, subscribed, owned)
        transferring = transferring_from_claims(claims, owned, owner)
    if cooperative:
        owner[transferring] = -1
    return build_assignment(space, owner, [m.member_id for m in ordered])


@dataclass(frozen=True)
class StickyAssignor:
    name: str = "sticky"
    kind: Literal["client", "server"] = "client"
    rebalance_protocols: tuple[Literal["EAGER", "COOPERATIVE"], ...] = ("EAGER",)

    def assign(self, cluster: Cluster, members: Sequence[MemberSubscription]) -> Assignment:
        return sticky_assign(cluster, members, [sticky_member_data(m) for m in members], cooperative=False)


@dataclass(frozen=True)
class CooperativeStickyAssignor:
    name: str = "cooperative-sticky"
    kind: Literal["client", "server"] = "client"
    rebalance_protocols: tuple[Literal["EAGER", "COOPERATIVE"], ...] = ("COOPERATIVE", "EAGER")

    def assign(self, cluster: Cluster, members: Sequence[MemberSubscription]) -> Assignment:
        return sticky_assign(cluster, members, [cooperative_member_data(m) for m in members], cooperative=True)

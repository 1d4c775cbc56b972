"""What a member gives up, keeps and takes in a rebalance: pure functions, kept apart from the member's I/O.

Kafka's ConsumerCoordinator makes these decisions inside `onJoinPrepare` and `onJoinComplete`, next to the
callbacks it then runs, and its leader computes the assignment inside the JoinGroup response handler. Here they
are plain functions of the member's state, so that tests can check every case without a coordinator and
`client.member.GroupMember` only carries them out.

Rebalance protocols, as in Kafka: the protocol is COOPERATIVE if every configured assignor supports it, else
EAGER. Eager revokes everything before re-joining; cooperative keeps what it owns, revokes only what the new
assignment takes away, then re-joins once more so those partitions can go to their new owner (KIP-429).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from assignors import consumer_protocol as cp
from assignors import registry
from assignors.api import Cluster, MemberSubscription
from client import protocol

TopicPartition = tuple[str, int]
PartitionCounts = Callable[[Sequence[str]], Mapping[str, int]]
"""topics -> partition count of each existing topic (missing or 0: the topic does not exist)."""

SERVER_ASSIGNOR_PREFIX = "server:"
"""Protocol names asking the coordinator to assign (`server:uniform`, `server:range`)."""


def rebalance_protocol(strategies: Sequence[str]) -> str:
    """COOPERATIVE only if every configured assignor supports it (Kafka's ConsumerCoordinator rule)."""
    if all(_protocols_of(name) and "COOPERATIVE" in _protocols_of(name) for name in strategies):
        return "COOPERATIVE"
    return "EAGER"


def _protocols_of(name: str) -> tuple[str, ...]:
    if name.startswith(SERVER_ASSIGNOR_PREFIX):
        return ("EAGER",)
    return tuple(registry.get(name, kind="client").rebalance_protocols)


@dataclass(frozen=True)
class Release:
    """What a member gives up before it joins (Kafka's onJoinPrepare): it keeps `keep`; `revoked` partitions were
    handed back in order, `lost` ones may belong to someone else already (the member's generation is gone)."""

    keep: frozenset[TopicPartition]
    revoked: frozenset[TopicPartition] = frozenset()
    lost: frozenset[TopicPartition] = frozenset()


def before_join(protocol: str, generation_id: int, member_id: str, owned: frozenset[TopicPartition],
                topics: set[str]) -> Release:
    """Without a generation everything owned is lost; an eager member revokes everything; a cooperative one
    revokes only the partitions of topics it no longer subscribes to."""
    if not owned:
        return Release(owned)
    if generation_id < 0 or not member_id:
        return Release(frozenset(), lost=owned)
    if protocol == "EAGER":
        return Release(frozenset(), revoked=owned)
    unsubscribed = frozenset(tp for tp in owned if tp[0] not in topics)
    return Release(owned - unsubscribed, revoked=unsubscribed)


@dataclass(frozen=True)
class Change:
    """What a completed join changes (Kafka's onJoinComplete): the listener hears `revoked` first, then
    `assigned`; `rejoin`: a cooperative member re-joins at once to let its revoked partitions go (KIP-429)."""

    revoked: frozenset[TopicPartition]
    assigned: frozenset[TopicPartition]
    rejoin: bool = False


def after_join(protocol: str, owned: frozenset[TopicPartition], assignment: frozenset[TopicPartition]) -> Change:
    """Eager: everything owned was revoked before the join, so the whole assignment is newly assigned.
    Cooperative: only the difference moves."""
    if protocol == "COOPERATIVE":
        revoked = owned - assignment
        return Change(revoked, assignment - owned, rejoin=bool(revoked))
    return Change(frozenset(), assignment)


def compute_assignment(
    strategy: str, members: Sequence[Mapping[str, object]], partition_counts: PartitionCounts
) -> tuple[dict[str, bytes], dict[str, int]]:
    """The leader's job: decode every member's subscription, run the chosen assignor, encode the result.
    Pure apart from `partition_counts`; returns (member_id -> assignment bytes, the counts it used)."""
    subscriptions = []
    for m in members:
        sub = cp.decode_subscription(protocol.unb64(str(m.get("metadata") or "")))
        subscriptions.append(
            MemberSubscription(
                member_id=str(m["member_id"]),
                topics=sub.topics,
                group_instance_id=m.get("group_instance_id"),  # type: ignore[arg-type]
                owned_partitions=sub.owned_partitions,
                generation_id=sub.generation_id,
                rack_id=sub.rack_id,
                user_data=sub.user_data,
            )
        )
    topics = sorted({t for s in subscriptions for t in s.topics})
    counts = {t: n for t, n in partition_counts(topics).items() if n > 0}
    result = registry.get(strategy, kind="client").assign(Cluster(counts), subscriptions)
    encoded = {
        s.member_id: cp.encode_assignment(cp.Assignment(result.get(s.member_id, ()))) for s in subscriptions
    }
    return encoded, counts

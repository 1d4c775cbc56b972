"""KIP-881 rack-aware range (Java RangeAssignor's rack path): prefer giving each member partitions with a replica on
its rack, within the same per-topic quotas as plain range, so the result is exactly as balanced.

Only used when members send racks and, for some topic, the consumers' racks overlap the replica racks but not every
partition has replicas on the same racks (otherwise every member matches everything and plain range is returned).
Steps, as in Java: topics with the same subscribers and partition count are co-partitioned, so partition i of all
of them goes to one rack-matching member; other topics get rack-matched ranges; whatever is left is dealt as plain
ranges under the remaining quotas; lists are sorted by (topic, partition) at the end.
"""

from __future__ import annotations

from typing import Sequence

from assignors.api import Assignment, Cluster, MemberSubscription
from assignors.partition_space import member_order_key


class _TopicState:
    """One topic's range quotas while it is being filled: P // C each, P % C of them one more."""

    def __init__(self, topic: str, racks: Sequence[frozenset[str]], consumers: dict[str, str | None]) -> None:
        self.topic = topic
        self.racks = racks
        self.consumers = consumers
        self.unassigned = list(range(len(racks)))
        self.assigned_count = {c: 0 for c in consumers}
        self.quota, self.extra = divmod(len(racks), len(consumers))
        consumer_racks = {r for r in consumers.values() if r is not None}
        partition_racks = set().union(*racks) if racks else set()
        self.needs_rack_aware = bool(consumer_racks) and not consumer_racks.isdisjoint(partition_racks) and not all(
            r == partition_racks for r in racks
        )

    def racks_match(self, consumer: str, partition: int) -> bool:
        rack = self.consumers[consumer]
        return rack is None or rack in self.racks[partition]

    def max_assignable(self, consumer: str) -> int:
        return max(0, self.quota + (1 if self.extra > 0 else 0) - self.assigned_count[consumer])

    def assign(self, consumer: str, partitions: list[int], out: dict[str, list[tuple[str, int]]]) -> None:
        count = self.assigned_count[consumer] + len(partitions)
        self.assigned_count[consumer] = count
        if count > self.quota:
            self.extra -= 1
        taken = set(partitions)
        self.unassigned = [p for p in self.unassigned if p not in taken]
        out[consumer].extend((self.topic, p) for p in partitions)


def _topic_states(cluster: Cluster, members: Sequence[MemberSubscription]) -> list[_TopicState]:
    consumers: dict[str, dict[str, str | None]] = {}
    for member in sorted(members, key=member_order_key):
        for topic in dict.fromkeys(member.topics):
            if cluster.partitions_per_topic.get(topic, 0) > 0:
                consumers.setdefault(topic, {})[member.member_id] = member.rack_id
    states = []
    for topic in sorted(consumers):
        count = cluster.partitions_per_topic[topic]
        known = list(cluster.partition_racks.get(topic, ()))
        racks = known[:count] + [frozenset()] * (count - len(known))
        states.append(_TopicState(topic, racks, consumers[topic]))
    return states


def use_rack_aware(cluster: Cluster, members: Sequence[MemberSubscription]) -> bool:
    if not cluster.partition_racks or all(m.rack_id is None for m in members):
        return False
    return any(s.needs_rack_aware for s in _topic_states(cluster, members))


def _assign_ranges(state: _TopicState, rack_matched: bool, out: dict[str, list[tuple[str, int]]]) -> None:
    for consumer in state.consumers:
        if not state.unassigned:
            break
        limit = state.max_assignable(consumer)
        picks = [p for p in state.unassigned if not rack_matched or state.racks_match(consumer, p)][:limit]
        if picks:
            state.assign(consumer, picks, out)


def _assign_co_partitioned(states: list[_TopicState], out: dict[str, list[tuple[str, int]]]) -> None:
    remaining = list(states[0].consumers)
    for p in range(len(states[0].racks)):
        match = next(
            (c for c in remaining if all(s.racks_match(c, p) and s.max_assignable(c) > 0 for s in states)), None
        )
        if match is None:
            continue
        for s in states:
            s.assign(match, [p], out)
        if all(s.max_assignable(match) == 0 for s in states):
            remaining.remove(match)
            if not remaining:
                break


def rack_aware_range(cluster: Cluster, members: Sequence[MemberSubscription]) -> Assignment:
    out: dict[str, list[tuple[str, int]]] = {m.member_id: [] for m in members}
    states = _topic_states(cluster, members)
    groups: dict[tuple[tuple[tuple[str, str | None], ...], int], list[_TopicState]] = {}
    for s in states:
        groups.setdefault((tuple(s.consumers.items()), len(s.racks)), []).append(s)
    for group in groups.values():
        if len(group) > 1:
            _assign_co_partitioned(group, out)
        elif group[0].needs_rack_aware:
            _assign_ranges(group[0], True, out)
    for s in states:
        _assign_ranges(s, False, out)
    result: Assignment = {}
    for member_id, pairs in out.items():
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(pairs):
            by_topic.setdefault(topic, []).append(p)
        result[member_id] = tuple((t, tuple(ps)) for t, ps in by_topic.items())
    return result

"""Partitions as one int array: the representation every assignor shares, so none of them loops per partition.

Topics are sorted by name and laid end to end: partition `p` of the `i`-th topic is global index
`offsets[i] + p`. Ascending global index is then Kafka's (topic, partition) order, an assignment is one `owner`
array (member index per partition, -1 for unassigned), and turning it into TopicPartitions is a sort and a split.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Iterable, Mapping, Sequence

import numpy as np

from assignors.api import Assignment, MemberSubscription
from assignors.consumer_protocol import TopicPartitions


@dataclass(frozen=True)
class PartitionSpace:
    """The subscribed topics that exist (more than 0 partitions), sorted, with their global index offsets."""

    topics: tuple[str, ...]
    offsets: np.ndarray  # int64, len(topics) + 1; offsets[-1] is the total partition count

    @property
    def total(self) -> int:
        return int(self.offsets[-1])

    def topic_index(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.topics)}

    def topic_of(self) -> np.ndarray:
        """Topic index of every global partition index."""
        counts = np.diff(self.offsets)
        return np.repeat(np.arange(len(self.topics), dtype=np.int64), counts)


def partition_space(partitions_per_topic: Mapping[str, int], topics: Iterable[str]) -> PartitionSpace:
    """Only topics present in metadata with more than 0 partitions count, as in Kafka's AbstractPartitionAssignor."""
    present = sorted(t for t in set(topics) if partitions_per_topic.get(t, 0) > 0)
    counts = np.array([partitions_per_topic[t] for t in present], dtype=np.int64)
    offsets = np.zeros(len(present) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return PartitionSpace(tuple(present), offsets)


def member_order_key(member: MemberSubscription) -> tuple[int, str]:
    """Kafka's MemberInfo order: static members (with group.instance.id) first, by instance id, then dynamic
    members by member id. Python str order equals Java's String.compareTo inside the BMP."""
    if member.group_instance_id is not None:
        return (0, member.group_instance_id)
    return (1, member.member_id)


def flatten_claims(
    space: PartitionSpace, claims: Sequence[TopicPartitions]
) -> tuple[np.ndarray, np.ndarray]:
    """Per-member TopicPartitions -> (member index, global partition index) arrays, dropping topics outside the
    space and partition numbers out of range. Done with one list flatten, not one numpy call per topic."""
    index = space.topic_index()
    entry_member: list[int] = []
    entry_topic: list[int] = []
    lengths: list[int] = []
    lists: list[Sequence[int]] = []
    for m, tps in enumerate(claims):
        for topic, parts in tps:
            t = index.get(topic)
            if t is not None and parts:
                entry_member.append(m)
                entry_topic.append(t)
                lengths.append(len(parts))
                lists.append(parts)
    if not lists:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    lens = np.array(lengths, dtype=np.int64)
    local = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(lens.sum()))
    topic = np.repeat(np.array(entry_topic, dtype=np.int64), lens)
    member = np.repeat(np.array(entry_member, dtype=np.int64), lens)
    counts = np.diff(space.offsets)
    valid = (local >= 0) & (local < counts[topic])
    return member[valid], (space.offsets[topic] + local)[valid]


def build_assignment(space: PartitionSpace, owner: np.ndarray, member_ids: Sequence[str]) -> Assignment:
    """owner (member index per global partition, -1 = nobody) -> {member_id: ((topic, (p, ...)), ...)} with
    topics and partitions ascending and every member present. One stable argsort, one tolist, one slice per
    (member, topic) run."""
    result: dict[str, TopicPartitions] = {m: () for m in member_ids}
    assigned = np.flatnonzero(owner >= 0)
    if assigned.size == 0:
        return result
    order = assigned[np.argsort(owner[assigned], kind="stable")]
    members = owner[order]
    topics = np.searchsorted(space.offsets, order, side="right") - 1
    local = (order - space.offsets[topics]).tolist()
    run_key = members * len(space.topics) + topics
    starts = np.flatnonzero(np.diff(run_key)) + 1
    bounds = np.concatenate(([0], starts, [order.size])).tolist()
    run_member = members[bounds[:-1]].tolist()
    run_topic = topics[bounds[:-1]].tolist()
    names = space.topics
    grouped: dict[int, list[tuple[str, tuple[int, ...]]]] = {}
    for i, (m, t) in enumerate(zip(run_member, run_topic)):
        item = (names[t], tuple(local[bounds[i] : bounds[i + 1]]))
        entry = grouped.get(m)
        if entry is None:
            grouped[m] = [item]
        else:
            entry.append(item)
    for m, items in grouped.items():
        result[member_ids[m]] = tuple(items)
    return result

"""Partitions as one int array: the representation every assignor shares, so none of them loops per partition.

Topics are sorted by name and laid end to end: partition `p` of the `i`-th topic is global index
`offsets[i] + p`. Ascending global index is then Kafka's (topic, partition) order, an assignment is one `owner`
array (member index per partition, -1 for unassigned), and turning it into TopicPartitions is a sort and a split.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from assignors.api import Assignment, MemberSubscription, PartitionAssignorError
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
    present = sorted(t for t in set(topics) if partitions_per_topic.get(t, 0) > 0)  # set() first: one C loop
    counts = np.array([partitions_per_topic[t] for t in present], dtype=np.int64)
    offsets = np.zeros(len(present) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return PartitionSpace(tuple(present), offsets)


def require_topics(partitions_per_topic: Mapping[str, int], topics: Iterable[str]) -> None:
    """KIP-848's assignors refuse a subscription to a topic the metadata does not have (a topic with 0
    partitions exists); the client-side ones skip it instead."""
    for topic in topics:
        if topic not in partitions_per_topic:
            raise PartitionAssignorError(
                f"Members are subscribed to topic {topic} which doesn't exist in the topic metadata."
            )


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
    space and partition numbers out of range. Comprehensions and one flatten, not a numpy call per topic."""
    index = space.topic_index()
    entries = list(chain.from_iterable(claims))
    if not entries:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    entry_member = np.repeat(np.arange(len(claims), dtype=np.int64), [len(tps) for tps in claims])
    entry_topic = np.array([index.get(topic, -1) for topic, _ in entries], dtype=np.int64)
    lengths = np.array([len(parts) for _, parts in entries], dtype=np.int64)
    local = np.fromiter(
        chain.from_iterable(parts for _, parts in entries), dtype=np.int64, count=int(lengths.sum())
    )
    topic = np.repeat(entry_topic, lengths)
    member = np.repeat(entry_member, lengths)
    counts = np.append(np.diff(space.offsets), 0)  # topic -1 (not in the space) has no partitions
    valid = (topic >= 0) & (local >= 0) & (local < counts[topic])
    return member[valid], (space.offsets[topic] + local)[valid]


def distinct_claims(member: np.ndarray, partition: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
    """Claims as a coordinator's target assignment has them: each partition owned by one member at most.

    Kafka's server-side assignors read the group's target assignment, where that always holds; owned partitions a
    classic member reports can break it (a zombie's, a resent one). A member listing a partition twice keeps its
    first listing; a partition several members list counts as owned by none. The claims' order is kept."""
    if partition.size == 0 or np.bincount(partition, minlength=total).max() <= 1:
        return member, partition
    members = int(member.max()) + 1
    _, first = np.unique(partition * members + member, return_index=True)
    first.sort()
    member, partition = member[first], partition[first]
    alone = (np.bincount(partition, minlength=total) == 1)[partition]
    return member[alone], partition[alone]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Building 200,000 small tuples triggers repeated full collections that scan every live object, which more
    than doubles the cost; nothing built here can form a cycle, so the collector is paused and then restored."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass(frozen=True)
class Runs:
    """An assignment as (member, topic) runs, ordered by member then topic: run i is partitions
    `first[i]..last[i]` of topic `topic[i]` for member `member[i]`. When some run is not consecutive partition
    numbers, `numbers[bounds[i]:bounds[i + 1]]` lists run i's partitions instead."""

    member: np.ndarray
    topic: np.ndarray
    first: np.ndarray
    last: np.ndarray
    numbers: np.ndarray | None = None
    bounds: np.ndarray | None = None


def runs_of_owner(space: PartitionSpace, owner: np.ndarray, members: int) -> Runs:
    """owner (member index per global partition, -1 = nobody) -> its runs. No sort when the owner array is already
    grouped by member."""
    assigned = np.flatnonzero(owner >= 0)
    member = owner[assigned]
    if member.size == 0:
        return Runs(member, member, member, member)
    if member.size > 1 and not (member[1:] >= member[:-1]).all():
        small = owner.dtype if members > np.iinfo(np.int16).max else np.int16  # int16 sorts by radix, O(n)
        assigned = assigned[np.argsort(member.astype(small), kind="stable")]
        member = owner[assigned]
    topic = space.topic_of()[assigned]
    local = assigned - space.offsets[topic]
    starts = np.flatnonzero(np.diff(member * len(space.topics) + topic)) + 1
    firsts = np.concatenate(([0], starts))
    ends = np.concatenate((starts, [assigned.size]))
    first, last = local[firsts], local[ends - 1]
    if (last - first == ends - firsts - 1).all():
        return Runs(member[firsts], topic[firsts], first, last)
    return Runs(member[firsts], topic[firsts], first, last, local, np.append(firsts, assigned.size))


def runs_of_blocks(space: PartitionSpace, bounds: np.ndarray) -> Runs:
    """Member i holds global partitions bounds[i]..bounds[i + 1] - 1 (a homogeneous hand-out to members that
    own nothing): the runs come from the block and topic boundaries, without touching each partition."""
    cuts = np.union1d(bounds, space.offsets)
    starts, stops = cuts[:-1], cuts[1:]
    starts, stops = starts[stops > starts], stops[stops > starts]
    member = np.searchsorted(bounds, starts, side="right") - 1
    topic = np.searchsorted(space.offsets, starts, side="right") - 1
    keep = (member >= 0) & (member < bounds.size - 1)
    member, topic, starts, stops = member[keep], topic[keep], starts[keep], stops[keep]
    return Runs(member, topic, starts - space.offsets[topic], stops - 1 - space.offsets[topic])


def build_assignment(space: PartitionSpace, owner: np.ndarray, member_ids: Sequence[str]) -> Assignment:
    """owner (member index per global partition, -1 = nobody) -> {member_id: ((topic, (p, ...)), ...)} with
    topics and partitions ascending and every member present."""
    return assignment_of_runs(space, runs_of_owner(space, owner, len(member_ids)), member_ids)


def _run_partitions(runs: Runs) -> Iterable[tuple[int, ...]]:
    """Each run's partition numbers as a tuple, in run order. Consecutive runs with the same numbers share one
    `tuple(range(lo, hi))`; only scattered runs have their numbers listed, each in its own tuple. When most runs
    are scattered (round-robin) or runs are short (a few partitions each), one comprehension over all numbers is
    cheaper than sorting the runs out."""
    consecutive = None if runs.bounds is None else runs.last - runs.first == np.diff(runs.bounds) - 1
    if consecutive is not None and (
        2 * int(consecutive.sum()) < consecutive.size or runs.numbers.size < 16 * consecutive.size
    ):
        numbers, bounds = runs.numbers.tolist(), runs.bounds.tolist()
        return [tuple(numbers[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    first, last = (runs.first, runs.last) if consecutive is None else (runs.first[consecutive], runs.last[consecutive])
    width = int(last.max(initial=0)) + 1
    spans, which = np.unique(first * width + last, return_inverse=True)
    pool = [tuple(range(lo, hi + 1)) for lo, hi in zip((spans // width).tolist(), (spans % width).tolist())]
    if consecutive is None or consecutive.all():
        return map(pool.__getitem__, which.tolist())
    scattered = np.flatnonzero(~consecutive)
    starts, stops = runs.bounds[scattered], runs.bounds[scattered + 1]
    lengths = stops - starts
    offsets = np.cumsum(lengths) - lengths
    numbers = runs.numbers[np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()))].tolist()
    ends = (offsets + lengths).tolist()
    index = np.empty(consecutive.size, dtype=np.int64)
    index[consecutive] = which
    index[scattered] = len(pool) + np.arange(scattered.size)
    pool += [tuple(numbers[a:b]) for a, b in zip(offsets.tolist(), ends)]
    return map(pool.__getitem__, index.tolist())


def assignment_of_runs(space: PartitionSpace, runs: Runs, member_ids: Sequence[str]) -> Assignment:
    """Runs -> {member_id: ((topic, (p, ...)), ...)}, every member present. Python touches each run and each member
    once, never each partition of a consecutive run, and does it in map/zip pipelines."""
    if runs.member.size == 0:
        return dict.fromkeys(member_ids, ())
    member_bounds = np.concatenate(([0], np.flatnonzero(np.diff(runs.member)) + 1, [runs.member.size]))
    with gc_paused():
        items = zip(map(space.topics.__getitem__, runs.topic.tolist()), _run_partitions(runs))
        who = map(member_ids.__getitem__, runs.member[member_bounds[:-1]].tolist())
        if member_bounds.size - 1 == runs.member.size:  # one run per member
            per_member: Iterable[tuple[str, TopicPartitions]] = zip(who, zip(items))
        else:
            listed = list(items)
            bounds = member_bounds.tolist()
            per_member = zip(who, [tuple(listed[a:b]) for a, b in zip(bounds[:-1], bounds[1:])])
        if member_bounds.size - 1 == len(member_ids):
            return dict(per_member)
        result: dict[str, TopicPartitions] = dict.fromkeys(member_ids, ())
        result.update(per_member)
        return result

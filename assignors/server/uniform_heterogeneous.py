"""Kafka's UniformHeterogeneousAssignmentBuilder: the `uniform` target when members subscribe to different topics.

Step for step as Kafka's builder, so the same GroupSpec gives the same assignment (members are numbered in GroupSpec
order, and every tie goes to the lower number):

1. Every subscribed topic must exist (else PartitionAssignorError). Each member keeps all its current partitions of
   topics it still subscribes to.
2. Topics are ranked by partitions per subscriber (descending), then subscriber count (ascending), then topic Uuid
   (ascending; topic name without Uuids, see `topic_order`).
3. In that order, each topic's unassigned partitions (ascending) are dealt to its subscribers, least loaded first:
   the subscribers sorted by (partition count, number); one round to those at the lowest count, then the next count
   joins the round, and so on (the sorted order is kept, it is not re-sorted as counts grow).
4. Balancing, at most 16 sweeps over the topics with two or more subscribers, in the same order, stopping after a
   full sweep without a move: within a topic, while its most loaded subscriber that still holds a partition of it
   has 2 or more partitions more than the least loaded one, the most loaded gives its highest-numbered partition of
   the topic to the least loaded (`_TopicBalancer` walks the two ends of the sorted subscribers as Kafka's
   MemberAssignmentBalancer does).

Steps 1-3 are vectorised per topic; step 4 moves one partition at a time, as Kafka does, but only sorts a topic's
subscribers when its spread is 2 or more.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from assignors.api import Assignment, Cluster, MemberSubscription
from assignors.partition_space import (
    PartitionSpace,
    build_assignment,
    distinct_claims,
    flatten_claims,
    partition_space,
    require_topics,
)
from assignors.server.topic_order import uuid_order_key

MAX_ITERATION_COUNT = 16


def _subscribers(cluster: Cluster, members: Sequence[MemberSubscription]) -> dict[str, np.ndarray]:
    """topic -> its subscribers' numbers, ascending. Members sharing one topics tuple are handled together."""
    groups: dict[int, tuple[tuple[str, ...], list[int]]] = {}
    for i, m in enumerate(members):
        groups.setdefault(id(m.topics), (m.topics, []))[1].append(i)
    per_topic: dict[str, list[np.ndarray]] = {}
    for topics, numbers in groups.values():
        require_topics(cluster.partitions_per_topic, topics)
        block = np.array(numbers, dtype=np.int64)
        for topic in dict.fromkeys(topics):
            per_topic.setdefault(topic, []).append(block)
    return {t: blocks[0] if len(blocks) == 1 else np.sort(np.concatenate(blocks)) for t, blocks in per_topic.items()}


def _deal(loads: np.ndarray, takers: np.ndarray, n: int) -> np.ndarray:
    """Step 3 for one topic: who gets each of its n unassigned partitions. `takers` are sorted by (load, number)
    and `loads` are theirs; at load level L the round is every taker whose load was at most L."""
    levels = np.unique(loads)
    reach = np.searchsorted(loads, levels, side="right")
    chunks, dealt = [], 0
    for j, level in enumerate(levels.tolist()):
        k = int(reach[j])
        rounds = math.ceil((n - dealt) / k)
        if j + 1 < levels.size:
            rounds = min(rounds, int(levels[j + 1]) - level)
        chunks.append(np.tile(takers[:k], rounds))
        dealt += rounds * k
        if dealt >= n:
            break
    return np.concatenate(chunks)[:n]


class _TopicBalancer:
    """Kafka's MemberAssignmentBalancer: a topic's subscribers sorted by (load, number), a least loaded range
    growing from the left and a most loaded range growing from the right, each handing out members one at a time
    and raising (lowering) its level once every member in it had a turn. Balanced when the two levels are at most
    1 apart."""

    def __init__(self, size: list[int], ordered: list[int]) -> None:
        self.size = size
        self.ordered = ordered
        self.least_end, self.least_level, self.next_least = 0, size[ordered[0]] - 1, 0
        n = len(ordered)
        self.most_start, self.most_end, self.most_level, self.next_most = n, n, size[ordered[-1]] + 1, n - 1

    def least_loaded(self) -> int:
        size, ordered = self.size, self.ordered
        if self.next_least >= self.least_end:
            self.least_level += 1
            while self.least_end < len(ordered) and size[ordered[self.least_end]] == self.least_level:
                self.least_end += 1
            self.next_least = 0
        member = ordered[self.next_least]
        self.next_least += 1
        return member

    def most_loaded(self) -> int:
        """-1 when no member is left to give."""
        size, ordered = self.size, self.ordered
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_level = size[ordered[self.most_start - 1]]  # emptied by exclusions: restart lower
            else:
                self.most_level -= 1
            while self.most_start > 0 and size[ordered[self.most_start - 1]] == self.most_level:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = ordered[self.next_most]
        self.next_most -= 1
        return member

    def exclude_last_most_loaded(self) -> None:
        """The member most_loaded() just returned has nothing of this topic to give: swap it out of the range."""
        i, end = self.next_most + 1, self.most_end - 1
        self.ordered[i], self.ordered[end] = self.ordered[end], self.ordered[i]
        self.most_end = end

    def balanced(self) -> bool:
        return self.most_level - self.least_level <= 1


class _Builder:
    def __init__(self, cluster: Cluster, members: Sequence[MemberSubscription]) -> None:
        self.subscribers = _subscribers(cluster, members)
        self.space: PartitionSpace = partition_space(cluster.partitions_per_topic, self.subscribers)
        self.index = self.space.topic_index()
        counts = cluster.partitions_per_topic
        tiebreak = uuid_order_key(list(self.subscribers), cluster.topic_ids) or {t: t for t in self.subscribers}
        self.rank = {
            t: (-(counts[t] / subs.size), subs.size, tiebreak[t]) for t, subs in self.subscribers.items()
        }
        self.owner = np.full(self.space.total, -1, dtype=np.int64)
        self.sizes = np.zeros(len(members), dtype=np.int64)
        self._keep_subscribed(members)

    def _keep_subscribed(self, members: Sequence[MemberSubscription]) -> None:
        member, partition = flatten_claims(self.space, [m.owned_partitions for m in members])
        if partition.size:
            topic = self.space.topic_of()[partition]
            keys = np.concatenate(
                [self.index[t] * len(members) + subs for t, subs in self.subscribers.items() if t in self.index]
            )
            keys.sort()
            claim_keys = topic * len(members) + member
            found = np.searchsorted(keys, claim_keys)
            subscribed = keys[np.minimum(found, keys.size - 1)] == claim_keys
            member, partition = distinct_claims(member[subscribed], partition[subscribed], self.space.total)
        self.owner[partition] = member
        self.sizes += np.bincount(member, minlength=self.sizes.size)

    def segment(self, topic: str) -> tuple[int, int]:
        i = self.index[topic]
        return int(self.space.offsets[i]), int(self.space.offsets[i + 1])

    def assign_unassigned(self) -> None:
        pending = []
        for topic in self.index:
            lo, hi = self.segment(topic)
            free = np.flatnonzero(self.owner[lo:hi] < 0)
            if free.size:
                pending.append((topic, free + lo))
        for topic, free in sorted(pending, key=lambda item: self.rank[item[0]]):
            subs = self.subscribers[topic]
            loads = self.sizes[subs]
            order = np.argsort(loads, kind="stable")
            takers = _deal(loads[order], subs[order], free.size)
            self.owner[free] = takers
            np.add.at(self.sizes, takers, 1)

    def balance(self) -> None:
        topics = sorted((t for t, s in self.subscribers.items() if s.size >= 2 and t in self.index), key=self.rank.get)
        if not topics:
            return
        size = self.sizes.tolist()
        last_moved = -1
        for _ in range(MAX_ITERATION_COUNT):
            for i, topic in enumerate(topics):
                if i == last_moved:
                    return  # a full sweep since the last move changed nothing
                if self._balance_topic(topic, size) or last_moved == -1:
                    last_moved = i

    def _balance_topic(self, topic: str, size: list[int]) -> int:
        subs = self.subscribers[topic]
        loads = self.sizes[subs]
        if int(loads.max()) - int(loads.min()) <= 1:
            return 0
        balancer = _TopicBalancer(size, subs[np.argsort(loads, kind="stable")].tolist())
        lo, hi = self.segment(topic)
        segment = self.owner[lo:hi]
        by_owner = np.argsort(segment, kind="stable")  # partitions grouped by owner, ascending within each
        held = by_owner.tolist()
        owners = segment[by_owner]
        bounds = np.flatnonzero(np.diff(owners)) + 1
        firsts = np.concatenate(([0], bounds)).tolist()
        ends = dict(zip(owners[firsts].tolist(), np.concatenate((bounds, [owners.size])).tolist()))
        starts = dict(zip(owners[firsts].tolist(), firsts))
        moved = 0
        while not balancer.balanced():
            giver = balancer.most_loaded()
            while giver != -1 and ends.get(giver, 0) - starts.get(giver, 0) <= 0:
                balancer.exclude_last_most_loaded()
                giver = balancer.most_loaded()
            if giver == -1:
                break
            ends[giver] -= 1
            partition = lo + held[ends[giver]]
            taker = balancer.least_loaded()
            if balancer.balanced():
                break
            self.owner[partition] = taker
            size[giver] -= 1
            size[taker] += 1
            self.sizes[giver] -= 1
            self.sizes[taker] += 1
            moved += 1
        return moved


def heterogeneous_assign(cluster: Cluster, members: Sequence[MemberSubscription]) -> Assignment:
    builder = _Builder(cluster, members)
    builder.assign_unassigned()
    builder.balance()
    return build_assignment(builder.space, builder.owner, [m.member_id for m in members])

"""Round-robin assignment (Java's RoundRobinAssignor), computed a topic at a time instead of a partition at a time.

Java lays out all partitions sorted by (topic, partition) and walks one circular iterator over the members (Kafka
member order); each partition goes to the next member subscribed to its topic, skipping the others, and the
iterator is never reset. Within one topic that is a cycle over the topic's subscribers starting at the first one at
or after the iterator, so each topic is one numpy index expression.

Worked example (C0, C1 subscribe to t0 and t1, three partitions each): t0-0 C0, t0-1 C1, t0-2 C0, t1-0 C1,
t1-1 C0, t1-2 C1.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Literal, Sequence

import numpy as np

from assignors.api import Assignment, Cluster, MemberSubscription
from assignors.partition_space import build_assignment, member_order_key, partition_space


@dataclass(frozen=True)
class RoundRobinAssignor:
    name: str = "roundrobin"
    kind: Literal["client", "server"] = "client"
    rebalance_protocols: tuple[Literal["EAGER", "COOPERATIVE"], ...] = ("EAGER",)

    def assign(self, cluster: Cluster, members: Sequence[MemberSubscription]) -> Assignment:
        ordered = sorted(members, key=member_order_key)
        space = partition_space(cluster.partitions_per_topic, chain.from_iterable(m.topics for m in members))
        owner = np.full(space.total, -1, dtype=np.int64)
        groups: dict[frozenset[str], list[int]] = {}
        for position, member in enumerate(ordered):
            groups.setdefault(frozenset(member.topics), []).append(position)
        group_positions = [(topics, np.array(positions, dtype=np.int64)) for topics, positions in groups.items()]
        cursor = 0
        for t, topic in enumerate(space.topics):
            positions = np.sort(np.concatenate([p for topics, p in group_positions if topic in topics]))
            count = int(space.offsets[t + 1] - space.offsets[t])
            first = int(np.searchsorted(positions, cursor)) % positions.size
            picks = (first + np.arange(count, dtype=np.int64)) % positions.size
            owner[space.offsets[t] : space.offsets[t + 1]] = positions[picks]
            cursor = (int(positions[picks[-1]]) + 1) % len(ordered)
        return build_assignment(space, owner, [m.member_id for m in ordered])

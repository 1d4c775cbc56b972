"""Kafka's UniformHomogeneousAssignmentBuilder: the `uniform` target when every member subscribes to the same topics.

The rules, in Kafka's order (members in GroupSpec order throughout):

1. Only the first member's subscription is read (the group says it is everyone's); a topic missing from the
   metadata is a PartitionAssignorError.
2. quota = P // N; the first P % N members get one more, whatever they own.
3. Each member keeps its current partitions in the order its assignment lists them (topic by topic, partitions as
   listed) up to its quota; the rest are revoked. Partitions of topics it no longer subscribes to are dropped.
4. The partitions to hand out: first those nobody owned, topic by topic in the order of the subscribed topics' Uuid
   HashSet (ascending names without Uuids, see `topic_order`), partitions ascending; then the revoked ones, in the
   order they were revoked.
5. Members still under quota take the next partitions of that list, in member order, each until it is full.

Vectorised: the owned partitions are one (member, partition) array pair in listed order, so "keep up to quota" is a
rank within each member, and step 5 is one np.repeat.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from assignors.api import Assignment, Cluster, MemberSubscription, PartitionAssignorError
from assignors.partition_space import (
    PartitionSpace,
    assignment_of_runs,
    build_assignment,
    distinct_claims,
    flatten_claims,
    partition_space,
    require_topics,
    runs_of_blocks,
)
from assignors.server.topic_order import hash_set_order


def _handout_order(space: PartitionSpace, topics: Sequence[str], cluster: Cluster) -> np.ndarray | None:
    """Global partition indices in step 4's topic order, or None when that is ascending index order already."""
    ordered = hash_set_order(topics, cluster.topic_ids)
    if ordered is None:
        return None
    index = space.topic_index()
    starts = [int(space.offsets[index[t]]) for t in ordered if t in index]
    ends = [int(space.offsets[index[t] + 1]) for t in ordered if t in index]
    return np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)] or [np.zeros(0, dtype=np.int64)])


def homogeneous_assign(cluster: Cluster, members: Sequence[MemberSubscription]) -> Assignment:
    topics = members[0].topics
    require_topics(cluster.partitions_per_topic, topics)
    member_ids = [m.member_id for m in members]
    space = partition_space(cluster.partitions_per_topic, topics)
    n, total = len(members), space.total
    quota = np.full(n, total // n, dtype=np.int64)
    quota[: total % n] += 1

    owned = [m.owned_partitions for m in members]
    order = _handout_order(space, topics, cluster)
    if order is None and not any(owned):  # nothing owned: member i takes the next quota[i] partitions
        return assignment_of_runs(space, runs_of_blocks(space, np.concatenate(([0], np.cumsum(quota)))), member_ids)

    member, partition = distinct_claims(*flatten_claims(space, owned), total)
    firsts = np.flatnonzero(np.diff(member, prepend=-1))  # claims are grouped by member, in order
    rank = np.arange(member.size) - np.repeat(firsts, np.diff(np.append(firsts, member.size)))
    keep = rank < quota[member]
    owner = np.full(total, -1, dtype=np.int64)
    owner[partition[keep]] = member[keep]
    kept = np.bincount(member[keep], minlength=n)
    owned_by_someone = np.zeros(total, dtype=bool)
    owned_by_someone[partition] = True
    revoked = partition[~keep]
    never_owned = np.flatnonzero(~owned_by_someone) if order is None else order[~owned_by_someone[order]]
    handout = np.concatenate((never_owned, revoked))
    takers = np.repeat(np.arange(n), quota - kept)
    if takers.size < handout.size:
        raise PartitionAssignorError("Partitions were left unassigned")
    owner[handout] = takers[: handout.size]
    return build_assignment(space, owner, member_ids)

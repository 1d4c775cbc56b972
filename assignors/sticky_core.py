"""The two assignment builders behind `sticky`, `cooperative-sticky` and the server-side `uniform` assignor.

Java's AbstractStickyAssignor has a constrained builder for groups whose members all subscribe to the same topics
and a general builder for the rest. Both are rebuilt here on the owner-array representation of
`partition_space`: the constrained one is fully vectorised (it is the path a 1,000,000-partition group takes), the
general one works a topic at a time and balances with lazy heaps keyed by (size, member), never a per-partition
list scan.

Members are identified by their index in the caller's member list; the caller passes them sorted by member id,
which is the order Java visits unfilled members in.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from assignors.partition_space import PartitionSpace


@dataclass(frozen=True)
class Claims:
    """Previously owned partitions as parallel arrays: which member claims which global partition, at which
    generation. Topics outside the partition space are already dropped."""

    member: np.ndarray
    partition: np.ndarray
    generation: np.ndarray


def resolve_claims(claims: Claims, total: int) -> tuple[np.ndarray, np.ndarray]:
    """Who rightfully owns each partition before reassignment, and which partitions were claimed by several owners.

    As in Java: the highest generation wins; two claimants of the same (highest) generation both lose the
    partition, which is then "claimed by multiple owners" and handled as transferring ownership.
    Returns (owner, multi): owner[p] is the member index or -1.
    """
    owner = np.full(total, -1, dtype=np.int64)
    multi = np.zeros(total, dtype=bool)
    if claims.partition.size == 0:
        return owner, multi
    if np.bincount(claims.partition, minlength=total).max() <= 1:
        owner[claims.partition] = claims.member
        return owner, multi
    pairs = np.unique(np.stack([claims.partition, claims.member, claims.generation]), axis=1)
    part, member, gen = pairs
    # a member listing a partition twice at different generations counts once, at its highest
    order = np.lexsort((gen, member, part))
    part, member, gen = part[order], member[order], gen[order]
    last_of_pair = np.ones(part.size, dtype=bool)
    last_of_pair[:-1] = (part[1:] != part[:-1]) | (member[1:] != member[:-1])
    part, member, gen = part[last_of_pair], member[last_of_pair], gen[last_of_pair]
    top = np.full(total, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(top, part, gen)
    at_top = gen == top[part]
    top_count = np.bincount(part[at_top], minlength=total)
    owner[part[at_top]] = member[at_top]
    multi = top_count > 1
    owner[multi] = -1
    return owner, multi


def constrained_assign(
    space: PartitionSpace, members: int, owned: np.ndarray, multi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Java's constrainedAssign, vectorised. Returns (owner, transferring).

    minQuota = P // N and exactly P % N members end with maxQuota = minQuota + 1. Each member keeps its owned
    partitions, lowest (partition, topic) first: all of them below minQuota, maxQuota while maxQuota slots remain,
    minQuota otherwise. Unassigned partitions, in (topic, partition) order, are dealt round-robin to the members
    under minQuota (by index), then one each to the members at exactly minQuota in the order they got there,
    until P % N members hold maxQuota. `transferring` marks partitions given to a new owner that an old owner must
    revoke first (kept beyond quota, or claimed by several owners): cooperative-sticky withholds those.
    """
    total = space.total
    min_quota, expected_max = divmod(total, members)
    max_quota = min_quota + (1 if expected_max else 0)
    owned_parts = np.flatnonzero(owned >= 0)
    owners = owned[owned_parts]
    count = np.bincount(owners, minlength=members)

    has_max = count >= max_quota
    gets_max = has_max & (np.cumsum(has_max) <= expected_max) if expected_max else np.zeros(members, dtype=bool)
    keep = np.where(count < min_quota, count, np.where(gets_max, max_quota, min_quota))

    owner = np.full(total, -1, dtype=np.int64)
    revoked = np.zeros(total, dtype=bool)
    trimmed = (count > keep)[owners]
    owner[owned_parts[~trimmed]] = owners[~trimmed]
    if trimmed.any():  # only members over quota need their owned list ordered by (partition, topic)
        parts, who = owned_parts[trimmed], owners[trimmed]
        topic_of = space.topic_of()
        local = parts - space.offsets[topic_of[parts]]
        order = np.lexsort((topic_of[parts], local, who))
        parts, who = parts[order], who[order]
        first = np.searchsorted(who, who)
        kept = np.arange(who.size) - first < keep[who]
        owner[parts[kept]] = who[kept]
        revoked[parts[~kept]] = True

    under = np.flatnonzero(count < min_quota)
    deficit = min_quota - count[under]
    first_phase = _round_robin_deal(under, deficit)

    if int(has_max.sum()) < expected_max:
        waiting_at_min = np.flatnonzero((count >= min_quota) & ~gets_max)
    else:
        waiting_at_min = np.zeros(0, dtype=np.int64)
    reached_min = under[np.lexsort((under, deficit))]
    fifo = np.concatenate((waiting_at_min, reached_min))

    unassigned = np.flatnonzero(owner < 0)
    second = unassigned.size - first_phase.size
    if second < 0 or second > fifo.size:
        raise AssertionError(f"quota arithmetic broke: {unassigned.size} unassigned, {first_phase.size} + {fifo.size}")
    owner[unassigned] = np.concatenate((first_phase, fifo[:second]))
    transferring = np.zeros(total, dtype=bool)
    transferring[unassigned] = revoked[unassigned] | multi[unassigned]
    return owner, transferring


def _round_robin_deal(members: np.ndarray, deficit: np.ndarray) -> np.ndarray:
    """Who gets each next partition when dealing round-robin over `members` (in order), each leaving the deal once
    it has received its deficit. Between two distinct deficit values the round's members are the same, so the
    sequence is a few np.tile calls instead of a sort of every slot."""
    chunks = []
    previous = 0
    for level in np.unique(deficit).tolist():
        chunks.append(np.tile(members[deficit >= level], level - previous))
        previous = level
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)


def _water_fill(sizes: np.ndarray, n: int) -> np.ndarray:
    """How many of n new partitions each member gets when each goes to the least loaded, ties to the lowest index:
    the same counts as n pops of a (size, member) heap, in O(members log members)."""
    order = np.argsort(sizes, kind="stable")
    ordered = sizes[order]
    cost = np.arange(1, ordered.size + 1) * ordered - np.cumsum(ordered)
    k = int(np.searchsorted(cost, n, side="right"))
    per_level, extra = divmod(n - int(cost[k - 1]), k)
    alloc = np.zeros(sizes.size, dtype=np.int64)
    alloc[order[:k]] = ordered[k - 1] + per_level - ordered[:k]
    alloc[np.sort(order[:k])[:extra]] += 1
    return alloc


def general_assign(space: PartitionSpace, subscribed: np.ndarray, owned: np.ndarray) -> np.ndarray:
    """A balanced, sticky assignment for members with different subscriptions (`subscribed` is members x topics).

    1. Keep every owned partition of a topic its owner still subscribes to.
    2. Give unassigned partitions topic by topic, topics with the fewest potential consumers first (as Java), each
       to the least loaded subscriber, ties to the lowest member id: Java's TreeSet order, computed per topic as
       "slots" (member, level) sorted by level then member.
    3. While some member holds a partition that a member with at least 2 fewer partitions could take, move one from
       the most loaded such member to the least loaded taker. Each move lowers the sum of squared sizes, so this
       ends, and it ends in Java's `isBalanced` state. Only moves balance asks for are made, and givers part with
       newly assigned partitions before owned ones.
    """
    members, topics = subscribed.shape
    topic_of = space.topic_of()
    owner = owned.copy()
    held = np.flatnonzero(owner >= 0)
    owner[held[~subscribed[owner[held], topic_of[held]]]] = -1
    kept = owner.copy()
    sizes = np.bincount(owner[owner >= 0], minlength=members).astype(np.int64)

    potential = subscribed.sum(axis=0)
    for t in sorted(range(topics), key=lambda t: (int(potential[t]), space.topics[t])):
        if potential[t] == 0:
            continue
        segment = owner[space.offsets[t] : space.offsets[t + 1]]
        free = np.flatnonzero(segment < 0)
        if free.size:
            takers = np.flatnonzero(subscribed[:, t])
            alloc = _water_fill(sizes[takers], free.size)
            receivers = np.repeat(takers, alloc)
            level = sizes[receivers] + np.arange(receivers.size) - np.repeat(np.cumsum(alloc) - alloc, alloc)
            segment[free] = receivers[np.lexsort((receivers, level))]
            sizes[takers] += alloc

    _balance(space, subscribed, owner, kept, sizes, topic_of)
    return owner


def _balance(
    space: PartitionSpace,
    subscribed: np.ndarray,
    owner: np.ndarray,
    kept: np.ndarray,
    sizes: np.ndarray,
    topic_of: np.ndarray,
) -> None:
    """Step 3 of general_assign, in place. Topics with the same subscriber set form a class; each class keeps a lazy
    min-heap of (size, member) over its subscribers, so finding the least loaded taker is O(log members).

    A giver hands over partitions it was only just given (kept[p] != giver) before ones it owned, so a member
    never revokes a partition while keeping a newly assigned one it could have given instead."""
    members = subscribed.shape[0]
    class_topics, class_members = _subscriber_classes(subscribed)
    movable = [k for k in range(len(class_topics)) if class_members[k].size > 1]
    if not movable:
        return
    counts, fresh = _held_per_topic(owner, kept, topic_of, subscribed.shape)
    classes_of_member: list[list[int]] = [[] for _ in range(members)]
    heaps: dict[int, list[tuple[int, int]]] = {}
    for k in movable:
        for m in class_members[k].tolist():
            classes_of_member[m].append(k)
        heaps[k] = [(int(sizes[m]), m) for m in class_members[k].tolist()]
        heapq.heapify(heaps[k])
    held: dict[tuple[int, int], list[int]] = {}

    def partitions_of(m: int, t: int) -> list[int]:
        """m's partitions of t, owned ones first, so pop() gives away a fresh one while there is one."""
        if (m, t) not in held:
            lo = int(space.offsets[t])
            mine = np.flatnonzero(owner[lo : int(space.offsets[t + 1])] == m) + lo
            old = kept[mine] == m
            held[(m, t)] = mine[old].tolist() + mine[~old].tolist()
        return held[(m, t)]

    def least_loaded(k: int) -> tuple[int, int]:
        heap = heaps[k]
        while heap[0][0] != sizes[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0]

    def resized(m: int) -> None:
        size = int(sizes[m])
        for k in classes_of_member[m]:
            heapq.heappush(heaps[k], (size, m))
        heapq.heappush(givers, (-size, m))

    def move(giver: int, taker: int, k: int) -> None:
        """One partition of class k from giver to taker: a fresh one of the topic where the giver has most."""
        topic = max(class_topics[k], key=lambda t: (fresh[giver, t], counts[giver, t]))
        partition = partitions_of(giver, topic).pop()
        owner[partition] = taker
        if (taker, topic) in held:
            held[(taker, topic)].append(partition)
        fresh[giver, topic] -= kept[partition] != giver
        fresh[taker, topic] += kept[partition] != taker
        counts[giver, topic] -= 1
        counts[taker, topic] += 1
        sizes[giver] -= 1
        sizes[taker] += 1
        resized(giver)
        resized(taker)

    givers: list[tuple[int, int]] = []
    moved = True
    while moved:  # one more sweep after the last move proves no member can still give
        moved = False
        givers = [(-int(sizes[m]), m) for m in range(members)]
        heapq.heapify(givers)
        while givers:
            negative_size, giver = heapq.heappop(givers)
            size = -negative_size
            if size != sizes[giver]:
                continue
            # The least loaded member, lowest index on ties, that could take one of the giver's partitions and
            # would still hold fewer than the giver.
            best: tuple[int, int, int] | None = None
            for k in classes_of_member[giver]:
                if counts[giver, class_topics[k]].sum() == 0:
                    continue
                taker_size, taker = least_loaded(k)
                if taker_size + 1 < size and (best is None or (taker_size, taker) < best[:2]):
                    best = (taker_size, taker, k)
            if best is not None:
                _, taker, k = best
                move(giver, taker, k)
                moved = True


def _held_per_topic(owner: np.ndarray, kept: np.ndarray, topic_of: np.ndarray,
                    shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Per member and topic: how many partitions it holds, and how many of those it was only just given (not
    kept from before)."""
    assigned = owner >= 0
    counts = np.zeros(shape, dtype=np.int64)
    np.add.at(counts, (owner[assigned], topic_of[assigned]), 1)
    fresh = np.zeros(shape, dtype=np.int64)
    is_fresh = assigned & (kept != owner)
    np.add.at(fresh, (owner[is_fresh], topic_of[is_fresh]), 1)
    return counts, fresh


def _subscriber_classes(subscribed: np.ndarray) -> tuple[list[list[int]], list[np.ndarray]]:
    """Topics grouped by their subscriber set (the columns of `subscribed`), in order of first topic: each class's
    topics, and its subscribers."""
    class_of_topic: dict[bytes, int] = {}
    class_topics: list[list[int]] = []
    class_members: list[np.ndarray] = []
    for t in range(subscribed.shape[1]):
        key = subscribed[:, t].tobytes()
        if key not in class_of_topic:
            class_of_topic[key] = len(class_topics)
            class_topics.append([])
            class_members.append(np.flatnonzero(subscribed[:, t]))
        class_topics[class_of_topic[key]].append(t)
    return class_topics, class_members


def transferring_from_claims(claims: Claims, owned: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Partitions that change hands on the general path, which cooperative-sticky must withhold for a round.

    Java's computePartitionsTransferringOwnership counts a partition newly given to a member that another member
    still lists as owned. We also count one the new owner lists too but does not rightfully own (`owned` is the
    resolved owner): when a higher-generation claimant dropped the topic, Java hands the partition to the
    lower-generation claimant at once while the other may still hold it."""
    total = owner.size
    if claims.partition.size == 0:
        return np.zeros(total, dtype=bool)
    by_someone_else = np.bincount(
        claims.partition, weights=(owner[claims.partition] != claims.member), minlength=total
    ) > 0
    return by_someone_else & (owner >= 0) & (owned != owner)

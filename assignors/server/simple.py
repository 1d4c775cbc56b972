"""The share groups' `simple` assignor (KIP-932): Kafka's SimpleAssignor, which may give one partition to several
members.

Each assignable partition gets `ceil(members / partitions)` members (its desired sharing), and the members'
assignment counts differ by at most one. The current target assignment is kept where it still fits (balance first,
then stickiness; racks are ignored), in four steps as Kafka's builders: drop partitions no longer subscribed or
assignable, trim members holding too many, trim partitions shared too widely, then fill the partitions still
wanting members round-robin over the members still wanting partitions. With every member subscribing to the same
topics (homogeneous) the steps run once over all the partitions; otherwise once per topic over its subscribers
(Kafka's SimpleHeterogeneousAssignmentBuilder).

Kafka walks its hash sets and maps where this walks members in the order given (the coordinator gives them by
member id) and partitions by topic id then index: the counts and the sharing are Kafka's; which member of a tie
gets a partition may differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

SIMPLE = "simple"

TopicAssignment = dict[str, tuple[int, ...]]
"""topic id -> partitions, sorted."""


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    subscribed_topic_ids: frozenset[str]
    current: Mapping[str, tuple[int, ...]]
    """Its current target assignment (topic id -> partitions)."""


def assign(members: Sequence[ShareMember], assignable: Mapping[str, Sequence[int]]) -> dict[str, TopicAssignment]:
    """The target assignment of every member (member id -> topic id -> partitions), given the partitions that can
    be assigned per topic id (the initialised ones of the topics that exist)."""
    result: dict[str, dict[str, set[int]]] = {m.member_id: {} for m in members}
    if not members:
        return {}
    subscriptions = {m.subscribed_topic_ids for m in members}
    if len(subscriptions) == 1:
        topics = sorted(t for t in next(iter(subscriptions)) if t in assignable)
        _assign_scope(members, [(t, p) for t in topics for p in sorted(assignable[t])], result)
    else:
        for topic in sorted(set().union(*subscriptions)):
            if topic not in assignable:
                continue
            subscribers = [m for m in members if topic in m.subscribed_topic_ids]
            _assign_scope(subscribers, [(topic, p) for p in sorted(assignable[topic])], result)
    return {member: {t: tuple(sorted(ps)) for t, ps in sorted(topics.items()) if ps}
            for member, topics in result.items()}


def _assign_scope(members: Sequence[ShareMember], partitions: list[tuple[str, int]],
                  result: dict[str, dict[str, set[int]]]) -> None:
    if not partitions or not members:
        return
    n_members, n_partitions = len(members), len(partitions)
    sharing = (n_members + n_partitions - 1) // n_partitions
    precise = sharing * n_partitions / n_members
    desired = {m.member_id: math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i, m in enumerate(members)}
    targets = set(partitions)
    by_partition: dict[tuple[str, int], list[str]] = {tp: [] for tp in partitions}
    by_member: dict[str, list[tuple[str, int]]] = {m.member_id: [] for m in members}
    # 1. keep what is still subscribed and assignable
    for m in members:
        for topic, parts in sorted(m.current.items()):
            for p in sorted(parts):
                if (topic, p) in targets and topic in m.subscribed_topic_ids:
                    by_partition[(topic, p)].append(m.member_id)
                    by_member[m.member_id].append((topic, p))
    # 2. members holding too many give up their last ones
    for m in members:
        held = by_member[m.member_id]
        while len(held) > desired[m.member_id]:
            tp = held.pop()
            by_partition[tp].remove(m.member_id)
    # 3. partitions shared too widely lose their last members
    for tp in partitions:
        holders = by_partition[tp]
        while len(holders) > sharing:
            member = holders.pop()
            by_member[member].remove(tp)
    # 4. partitions wanting members, round-robin over the members wanting partitions
    unfilled = [m.member_id for m in members if len(by_member[m.member_id]) < desired[m.member_id]]
    at = 0
    assigned_this_round = False
    for tp in partitions:
        if not unfilled:
            break
        holders = by_partition[tp]
        wanted = sharing - len(holders)
        while wanted > 0 and unfilled:
            if at >= len(unfilled):
                if not assigned_this_round:
                    break
                at, assigned_this_round = 0, False
            member = unfilled[at]
            if member in holders:
                at += 1
                continue
            holders.append(member)
            by_member[member].append(tp)
            wanted -= 1
            assigned_this_round = True
            if len(by_member[member]) >= desired[member]:
                unfilled.pop(at)
            else:
                at += 1
    for member, held in by_member.items():
        for topic, p in held:
            result[member].setdefault(topic, set()).add(p)

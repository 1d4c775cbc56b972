"""Shared builders and checks for assignor tests, after Kafka's AbstractStickyAssignorTest helpers."""

from __future__ import annotations

from typing import Iterable, Sequence

from assignors.api import Assignment, Assignor, Cluster, MemberSubscription
from assignors.consumer_protocol import TopicPartitions, group_partitions
from assignors.sticky import encode_sticky_user_data


def tps(*names: str) -> TopicPartitions:
    """tps("t1-0", "t2-1") -> (("t1", (0,)), ("t2", (1,)))."""
    return group_partitions([(n.rsplit("-", 1)[0], int(n.rsplit("-", 1)[1])) for n in names])


def pairs(partitions: TopicPartitions) -> set[tuple[str, int]]:
    return {(t, p) for t, ps in partitions for p in ps}


def as_sets(assignment: Assignment) -> dict[str, set[tuple[str, int]]]:
    return {m: pairs(a) for m, a in assignment.items()}


def names(partitions: TopicPartitions) -> set[str]:
    return {f"{t}-{p}" for t, p in pairs(partitions)}


def member(
    assignor: str,
    member_id: str,
    topics: Iterable[str],
    owned: TopicPartitions = (),
    generation: int = -1,
    **extra: object,
) -> MemberSubscription:
    """A member as `assignor` reads it: sticky from its userData (as Java's StickyAssignor), cooperative-sticky and
    uniform from owned_partitions + generation_id (subscription v2+)."""
    topics = tuple(topics)
    if assignor == "sticky":
        user_data = encode_sticky_user_data(owned, generation) if owned or generation != -1 else None
        return MemberSubscription(member_id, topics, user_data=user_data, **extra)  # type: ignore[arg-type]
    return MemberSubscription(
        member_id, topics, owned_partitions=owned, generation_id=generation, **extra  # type: ignore[arg-type]
    )


def owned_of(assignor: str, m: MemberSubscription) -> TopicPartitions:
    from assignors.sticky import sticky_member_data

    return sticky_member_data(m)[0] if assignor == "sticky" else m.owned_partitions


def next_generation(
    assignor: str, members: Sequence[MemberSubscription], assignment: Assignment, generation: int
) -> list[MemberSubscription]:
    """Every member re-joins owning what it was just given, as after a completed SyncGroup."""
    return [
        member(assignor, m.member_id, m.topics, assignment[m.member_id], generation,
               group_instance_id=m.group_instance_id, rack_id=m.rack_id)
        for m in members
    ]


def is_fully_balanced(assignment: Assignment) -> bool:
    sizes = [len(pairs(a)) for a in assignment.values()]
    return not sizes or max(sizes) - min(sizes) <= 1


def verify_validity_and_balance(
    cluster: Cluster, members: Sequence[MemberSubscription], assignment: Assignment, *, balanced: bool = True
) -> None:
    """Kafka's verifyValidityAndBalance: every member present; each partition exists, is assigned once and only to
    a subscriber; every subscribed partition is assigned; and (for balancing assignors) no member holds a
    partition that a member with at least 2 fewer partitions could take."""
    assert set(assignment) == {m.member_id for m in members}
    subscribed = {m.member_id: set(m.topics) for m in members}
    seen: dict[tuple[str, int], str] = {}
    for member_id, partitions in assignment.items():
        for topic, p in pairs(partitions):
            assert topic in subscribed[member_id], f"{member_id} got {topic}-{p} without subscribing"
            assert 0 <= p < cluster.partitions_per_topic.get(topic, 0), f"{topic}-{p} does not exist"
            assert (topic, p) not in seen, f"{topic}-{p} given to {seen[(topic, p)]} and {member_id}"
            seen[(topic, p)] = member_id
    expected = {
        (t, p) for ts in subscribed.values() for t in ts for p in range(cluster.partitions_per_topic.get(t, 0))
    }
    assert set(seen) == expected, f"unassigned: {sorted(expected - set(seen))[:10]}"
    if not balanced:
        return
    size = {m: len(pairs(a)) for m, a in assignment.items()}
    for a, held in assignment.items():
        for b in assignment:
            if size[a] > size[b] + 1:
                movable = [tp for tp in pairs(held) if tp[0] in subscribed[b]]
                assert not movable, f"{a} has {size[a]}, {b} has {size[b]} and could take {movable[:3]}"


def cooperative_rounds(
    assignor: Assignor, cluster: Cluster, members: Sequence[MemberSubscription], assignment: Assignment,
    generation: int = 1, max_follow_ups: int = 4,
) -> tuple[list[MemberSubscription], Assignment]:
    """CooperativeStickyAssignorTest.verifyValidityAndBalance: while a round revokes something, assert nothing was
    both revoked and given away in it, then run the follow-up rebalance with owned = what each member now has.
    Returns the final members and assignment."""
    rounds = 0
    while True:
        added: set[tuple[str, int]] = set()
        revoked: set[tuple[str, int]] = set()
        for m in members:
            owned = pairs(m.owned_partitions)
            got = pairs(assignment[m.member_id])
            added |= got - owned
            revoked |= owned - got
        assert not (added & revoked), f"given away in the round they are revoked: {sorted(added & revoked)[:5]}"
        if not revoked:
            return list(members), assignment
        rounds += 1
        assert rounds <= max_follow_ups, "cooperative rebalances did not converge"
        members = next_generation("cooperative-sticky", members, assignment, generation)
        assignment = assignor.assign(cluster, members)

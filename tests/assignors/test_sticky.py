"""sticky and cooperative-sticky, after Kafka's AbstractStickyAssignorTest, StickyAssignorTest and
CooperativeStickyAssignorTest.

Each scenario runs against both assignors. As upstream, exact expectations describe the settled state: for
cooperative-sticky that is after the follow-up rebalances `cooperative_rounds` runs, and its first round is the
settled state minus the partitions that change owner (`withheld`).
"""

from __future__ import annotations

import pytest

from assignors import registry
from assignors.api import Assignment, Cluster, MemberSubscription as M
from assignors.sticky import encode_cooperative_user_data, encode_sticky_user_data
from tests.assignors.helpers import (
    as_sets,
    cooperative_rounds,
    is_fully_balanced,
    member,
    names,
    next_generation,
    pairs,
    tps,
    verify_validity_and_balance,
)

STICKY = ["sticky", "cooperative-sticky"]
GEN = 1


def settle(name: str, cluster: Cluster, members: list[M]) -> tuple[Assignment, Assignment]:
    """(first round, settled assignment), checking validity and balance of the settled one."""
    assignor = registry.get(name)
    first = assignor.assign(cluster, members)
    final = first
    if name == "cooperative-sticky":
        members, final = cooperative_rounds(assignor, cluster, members, first, GEN)
    verify_validity_and_balance(cluster, members, final)
    return first, final


def withheld(first: Assignment, final: Assignment) -> set[str]:
    return {f"{t}-{p}" for m in final for t, p in pairs(final[m]) - pairs(first[m])}


@pytest.mark.parametrize("name", STICKY)
def test_one_consumer_no_topic(name) -> None:
    first, final = settle(name, Cluster({}), [member(name, "c", ())])
    assert final == {"c": ()}


@pytest.mark.parametrize("name", STICKY)
def test_one_consumer_nonexistent_topic(name) -> None:
    _, final = settle(name, Cluster({"t": 0}), [member(name, "c", ("t",))])
    assert final == {"c": ()}


@pytest.mark.parametrize("name", STICKY)
def test_only_assigns_partitions_from_subscribed_topics(name) -> None:
    owned = tps("t-0", "t-1", "other-0", "other-1")
    first, final = settle(name, Cluster({"t": 2}), [member(name, "c", ("t",), owned, GEN)])
    assert final == first == {"c": tps("t-0", "t-1")}


@pytest.mark.parametrize("name", STICKY)
def test_one_consumer_multiple_topics(name) -> None:
    _, final = settle(name, Cluster({"t1": 1, "t2": 2}), [member(name, "c", ("t1", "t2"))])
    assert final == {"c": tps("t1-0", "t2-0", "t2-1")}


@pytest.mark.parametrize("name", STICKY)
def test_two_consumers_one_topic_two_partitions(name) -> None:
    ms = [member(name, "c1", ("t",)), member(name, "c2", ("t",))]
    _, final = settle(name, Cluster({"t": 2}), ms)
    assert final == {"c1": tps("t-0"), "c2": tps("t-1")}


@pytest.mark.parametrize("name", STICKY)
def test_multiple_consumers_mixed_topic_subscriptions(name) -> None:
    """The general builder: topics with fewer potential consumers first, each partition to the least loaded."""
    ms = [member(name, "c1", ("t1",)), member(name, "c2", ("t1", "t2")), member(name, "c3", ("t1",))]
    _, final = settle(name, Cluster({"t1": 3, "t2": 2}), ms)
    assert final == {"c1": tps("t1-0", "t1-2"), "c2": tps("t2-0", "t2-1"), "c3": tps("t1-1")}


@pytest.mark.parametrize("name", STICKY)
def test_two_consumers_two_topics_six_partitions(name) -> None:
    ms = [member(name, "c1", ("t1", "t2")), member(name, "c2", ("t1", "t2"))]
    _, final = settle(name, Cluster({"t1": 3, "t2": 3}), ms)
    assert final == {"c1": tps("t1-0", "t1-2", "t2-1"), "c2": tps("t1-1", "t2-0", "t2-2")}


@pytest.mark.parametrize("name", STICKY)
def test_consumer_owning_min_quota_expected_max_quota(name) -> None:
    topics = ("t1", "t2")
    ms = [member(name, "c1", topics, tps("t1-0", "t2-1"), GEN), member(name, "c2", topics, tps("t1-1", "t2-2"), GEN)]
    first, final = settle(name, Cluster({"t1": 2, "t2": 3}), ms)
    assert final == first == {"c1": tps("t1-0", "t2-0", "t2-1"), "c2": tps("t1-1", "t2-2")}


@pytest.mark.parametrize("name", STICKY)
def test_max_quota_consumer_more_than_expected_max_capacity_members(name) -> None:
    """Two members own 2 each but only one may keep maxQuota = 2. Java picks by HashMap order; any choice is
    equally sticky: one partition moves to c3."""
    topics = ("t1", "t2")
    ms = [
        member(name, "c1", topics, tps("t1-0", "t2-0"), GEN),
        member(name, "c2", topics, tps("t1-1", "t2-1"), GEN),
        member(name, "c3", topics, (), GEN),
    ]
    first, final = settle(name, Cluster({"t1": 2, "t2": 2}), ms)
    assert sorted(len(pairs(a)) for a in final.values()) == [1, 1, 2]
    moved = names(final["c3"])
    assert len(moved) == 1 and moved <= {"t2-0", "t2-1"}  # the kept one is the lowest partition number
    if name == "cooperative-sticky":
        assert withheld(first, final) == moved


@pytest.mark.parametrize("name", STICKY)
def test_all_consumers_are_under_min_quota(name) -> None:
    topics = ("t1", "t2")
    ms = [
        member(name, "c1", topics, tps("t1-0"), GEN),
        member(name, "c2", topics, tps("t1-1"), GEN),
        member(name, "c3", topics, (), GEN),
    ]
    first, final = settle(name, Cluster({"t1": 2, "t2": 3}), ms)
    assert final == first == {"c1": tps("t1-0", "t2-1"), "c2": tps("t1-1", "t2-2"), "c3": tps("t2-0")}


@pytest.mark.parametrize("name", STICKY)
def test_add_remove_consumer_one_topic(name) -> None:
    cluster = Cluster({"t": 3})
    _, a = settle(name, cluster, [member(name, "c1", ("t",))])
    assert a == {"c1": tps("t-0", "t-1", "t-2")}

    ms = [member(name, "c1", ("t",), a["c1"], GEN), member(name, "c2", ("t",), (), GEN)]
    first, a = settle(name, cluster, ms)
    assert a == {"c1": tps("t-0", "t-1"), "c2": tps("t-2")}
    if name == "cooperative-sticky":
        assert withheld(first, a) == {"t-2"}

    first, a = settle(name, cluster, [member(name, "c2", ("t",), a["c2"], GEN)])
    assert first == a == {"c2": tps("t-0", "t-1", "t-2")}


@pytest.mark.parametrize("name", STICKY)
def test_add_remove_two_consumers_two_topics(name) -> None:
    """Each member keeps its lowest (partition, topic) owned partitions up to quota; the rest are dealt
    round-robin to the newcomers in (topic, partition) order."""
    topics = ("t1", "t2")
    cluster = Cluster({"t1": 3, "t2": 4})
    _, a = settle(name, cluster, [member(name, "c1", topics), member(name, "c2", topics)])
    assert a == {"c1": tps("t1-0", "t1-2", "t2-1", "t2-3"), "c2": tps("t1-1", "t2-0", "t2-2")}

    ms = [member(name, "c1", topics, a["c1"], GEN), member(name, "c2", topics, a["c2"], GEN),
          member(name, "c3", topics, (), GEN), member(name, "c4", topics, (), GEN)]
    first, a = settle(name, cluster, ms)
    assert a == {"c1": tps("t1-0", "t2-1"), "c2": tps("t2-0", "t1-1"), "c3": tps("t1-2", "t2-3"), "c4": tps("t2-2")}
    if name == "cooperative-sticky":
        assert withheld(first, a) == {"t1-2", "t2-3", "t2-2"}

    ms = [member(name, "c3", topics, a["c3"], GEN), member(name, "c4", topics, a["c4"], GEN)]
    first, a = settle(name, cluster, ms)
    assert first == a == {"c3": tps("t1-2", "t2-3", "t1-0", "t2-1"), "c4": tps("t2-2", "t1-1", "t2-0")}


@pytest.mark.parametrize("name", STICKY)
def test_poor_round_robin_assignment_scenario(name) -> None:
    cluster = Cluster({f"topic{i}": i % 2 + 1 for i in range(1, 6)})
    every, odd = tuple(f"topic{i}" for i in range(1, 6)), ("topic1", "topic3", "topic5")
    ms = [member(name, "c1", every), member(name, "c2", odd), member(name, "c3", odd), member(name, "c4", every)]
    _, a = settle(name, cluster, ms)
    assert is_fully_balanced(a)


@pytest.mark.parametrize("name", STICKY)
def test_add_remove_topic_two_consumers(name) -> None:
    cluster = Cluster({"t": 3})
    _, a1 = settle(name, cluster, [member(name, "c1", ("t",)), member(name, "c2", ("t",))])
    assert is_fully_balanced(a1)

    cluster = Cluster({"t": 3, "t2": 3})
    ms = [member(name, c, ("t", "t2"), a1[c], GEN) for c in ("c1", "c2")]
    first, a2 = settle(name, cluster, ms)
    assert first == a2
    assert all(len(pairs(a2[c])) == 3 and pairs(a1[c]) <= pairs(a2[c]) for c in ("c1", "c2"))

    cluster = Cluster({"t2": 3})
    ms = [member(name, c, ("t2",), a2[c], GEN) for c in ("c1", "c2")]
    first, a3 = settle(name, cluster, ms)
    assert first == a3 and is_fully_balanced(a3)
    assert all(pairs(a3[c]) <= pairs(a2[c]) for c in ("c1", "c2"))


@pytest.mark.parametrize("name", STICKY)
def test_reassignment_after_one_consumer_leaves(name) -> None:
    """General builder: consumer i subscribes to topics 1..i, topic i has i partitions; when consumer10 leaves,
    the others keep everything they had."""
    cluster = Cluster({f"topic{i:02d}": i for i in range(1, 20)})
    ms = [member(name, f"consumer{i:02d}", [f"topic{j:02d}" for j in range(1, i + 1)]) for i in range(1, 20)]
    _, a = settle(name, cluster, ms)
    survivors = [m for m in next_generation(name, ms, a, GEN) if m.member_id != "consumer10"]
    _, b = settle(name, cluster, survivors)
    assert all(pairs(a[m.member_id]) <= pairs(b[m.member_id]) for m in survivors)


@pytest.mark.parametrize("name", STICKY)
def test_reassignment_after_one_consumer_added(name) -> None:
    cluster = Cluster({"t": 20})
    ms = [member(name, f"consumer{i:02d}", ("t",)) for i in range(1, 10)]
    _, a = settle(name, cluster, ms)
    joined = next_generation(name, ms, a, GEN) + [member(name, "consumer10", ("t",), (), GEN)]
    _, b = settle(name, cluster, joined)
    moved = sum(len(pairs(a[m.member_id]) - pairs(b[m.member_id])) for m in ms)
    assert moved == 2  # 20 over 10 members: the two members with 3 give one each


@pytest.mark.parametrize("name", STICKY)
def test_same_subscriptions(name) -> None:
    cluster = Cluster({f"topic{i:02d}": i for i in range(1, 15)})
    ms = [member(name, f"consumer{i}", sorted(cluster.partitions_per_topic)) for i in range(1, 9)]
    _, a = settle(name, cluster, ms)
    survivors = [m for m in next_generation(name, ms, a, GEN) if m.member_id != "consumer5"]
    first, b = settle(name, cluster, survivors)
    assert first == b  # nobody loses anything when a member leaves
    assert all(pairs(a[m.member_id]) <= pairs(b[m.member_id]) for m in survivors)


@pytest.mark.parametrize("name", STICKY)
def test_non_equal_subscription_large_group(name) -> None:
    """Scaled-down testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout: every 4th consumer on the first half
    of the topics, the rest on the second half; fresh, then a rebalance with everything owned."""
    topics = [f"topic{i:02d}" for i in range(40)]
    cluster = Cluster({t: 50 for t in topics})
    ms = [member(name, f"consumer{i:03d}", topics[:20] if i % 4 == 0 else topics[20:]) for i in range(200)]
    _, a = settle(name, cluster, ms)
    first, b = settle(name, cluster, next_generation(name, ms, a, GEN))
    assert first == b == a


@pytest.mark.parametrize("name", STICKY)
def test_subscription_not_equal_and_same_partition_with_three_generations(name) -> None:
    cluster = Cluster({"t": 6, "t1": 1})
    for g1, g2, g3 in [(1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)]:
        ms = [
            member(name, "c1", ("t",), tps("t-0", "t-2"), g1),
            member(name, "c2", ("t",), tps("t-1", "t-2", "t-3"), g2),
            member(name, "c3", ("t",), tps("t-2", "t-4", "t-5"), g3),
            member(name, "c4", ("t1",), tps("t1-0"), 2),
        ]
        a = registry.get(name).assign(cluster, ms)
        flat = [tp for x in a.values() for tp in pairs(x)]
        assert len(flat) == len(set(flat))
        if name == "sticky":
            assert all(1 <= len(pairs(x)) <= 2 for x in a.values())
        # t-2 belongs to the highest generation claimant, who keeps it
        owner = max([("c1", g1), ("c2", g2), ("c3", g3)], key=lambda x: x[1])[0]
        assert ("t", 2) in pairs(a[owner])


@pytest.mark.parametrize("name", STICKY)
def test_new_subscription(name) -> None:
    cluster = Cluster({f"topic{i}": 1 for i in range(1, 5)})
    ms = [member(name, f"consumer{i}", [f"topic{j}" for j in range(i, 3 * i - 1)]) for i in range(3)]
    _, a = settle(name, cluster, ms)
    grown = next_generation(name, ms, a, GEN)
    grown[0] = member(name, "consumer0", ("topic1",), a["consumer0"], GEN)
    _, b = settle(name, cluster, grown)
    assert b == a  # consumer0 now could take topic1-0, but 1 vs 0 is balanced: nothing moves


@pytest.mark.parametrize("name", STICKY)
def test_move_existing_assignments(name) -> None:
    cluster = Cluster({f"topic{i}": 1 for i in range(1, 7)})
    owned = {"c1": tps("topic1-0"), "c2": tps("topic2-0", "topic3-0"), "c3": tps("topic4-0", "topic5-0", "topic6-0")}
    ms = [
        member(name, "c1", ("topic1", "topic2"), owned["c1"], GEN),
        member(name, "c2", ("topic1", "topic2", "topic3", "topic4"), owned["c2"], GEN),
        member(name, "c3", ("topic2", "topic3", "topic4", "topic5", "topic6"), owned["c3"], GEN),
    ]
    first, final = settle(name, cluster, ms)
    # Balanced already (c1 can take nothing from c3, and c2 owning one more than c1 is balanced): nothing moves, so
    # no partition changes owner (Kafka asserts partitionsTransferringOwnership is null).
    assert as_sets(first) == as_sets(final) == as_sets(owned)
    assert withheld(first, final) == set()


@pytest.mark.parametrize("name", STICKY)
def test_stickiness(name) -> None:
    cluster = Cluster({"t1": 3})
    ms = [member(name, f"c{i}", ("t1",)) for i in range(1, 5)]
    _, a = settle(name, cluster, ms)
    assert all(len(pairs(x)) <= 1 for x in a.values())
    survivors = [m for m in next_generation(name, ms, a, GEN) if m.member_id != "c1"]
    first, b = settle(name, cluster, survivors)
    assert first == b
    assert all(len(pairs(b[m.member_id])) == 1 and pairs(a[m.member_id]) <= pairs(b[m.member_id]) for m in survivors)


@pytest.mark.parametrize("name", STICKY)
def test_assignment_updated_for_deleted_topic(name) -> None:
    first, a = settle(name, Cluster({"t1": 1, "t3": 100}), [member(name, "c", ("t1", "t2", "t3"))])
    assert len(pairs(a["c"])) == 101


@pytest.mark.parametrize("name", STICKY)
def test_no_exception_when_only_subscribed_topic_deleted(name) -> None:
    _, a = settle(name, Cluster({"t": 3}), [member(name, "c", ("t",))])
    b = registry.get(name).assign(Cluster({}), [member(name, "c", ("t",), a["c"], GEN)])
    assert b == {"c": ()}


@pytest.mark.parametrize("name", STICKY)
def test_all_consumers_reach_expected_quota_and_are_considered_filled(name) -> None:
    ms = [
        member(name, "c1", ("t",), tps("t-0", "t-1"), GEN),
        member(name, "c2", ("t",), tps("t-2"), GEN),
        member(name, "c3", ("t",), (), GEN),
    ]
    first, a = settle(name, Cluster({"t": 4}), ms)
    assert first == a == {"c1": tps("t-0", "t-1"), "c2": tps("t-2"), "c3": tps("t-3")}


@pytest.mark.parametrize("name", STICKY)
@pytest.mark.parametrize("stale_generation", [9, -1], ids=["stale", "no_generation"])
def test_owned_partitions_are_invalidated_for_consumer_with_stale_generation(name, stale_generation) -> None:
    topics = ("t", "t2")
    owned = tps("t-0", "t-2", "t2-1")
    ms = [member(name, "c1", topics, owned, 10), member(name, "c2", topics, owned, stale_generation)]
    first, a = settle(name, Cluster({"t": 3, "t2": 3}), ms)
    assert first == a
    assert names(a["c1"]) == {"t-0", "t-2", "t2-1"} and names(a["c2"]) == {"t-1", "t2-0", "t2-2"}


@pytest.mark.parametrize("name", STICKY)
def test_owned_partitions_are_invalidated_for_consumer_with_multiple_generation(name) -> None:
    topics = ("t", "t2")
    ms = [member(name, "c1", topics, tps("t-0", "t2-1", "t-1"), 10), member(name, "c2", topics, tps("t-0", "t2-1", "t2-2"), 8)]
    first, a = settle(name, Cluster({"t": 3, "t2": 3}), ms)
    assert first == a
    assert names(a["c1"]) == {"t-0", "t2-1", "t-1"} and names(a["c2"]) == {"t-2", "t2-2", "t2-0"}


@pytest.mark.parametrize("name", STICKY)
def test_partitions_claimed_by_multiple_consumers_in_same_generation_transfer(name) -> None:
    ms = [
        member(name, "c1", ("t",), tps("t-0", "t-1"), GEN),
        member(name, "c2", ("t",), tps("t-0", "t-2"), GEN),
        member(name, "c3", ("t",), (), GEN),
    ]
    first, a = settle(name, Cluster({"t": 3}), ms)
    assert a == {"c1": tps("t-1"), "c2": tps("t-2"), "c3": tps("t-0")}
    if name == "cooperative-sticky":
        # t-0 counts as owned by both, so nobody gets it until both have revoked it
        assert first == {"c1": tps("t-1"), "c2": tps("t-2"), "c3": ()}


@pytest.mark.parametrize("name", STICKY)
def test_multiply_claimed_partition_with_unequal_partitions_per_consumer(name) -> None:
    ms = [
        member(name, "c1", ("t",), tps("t-0", "t-1"), GEN),
        member(name, "c2", ("t",), tps("t-0", "t-2"), GEN),
        member(name, "c3", ("t",), (), GEN),
    ]
    first, a = settle(name, Cluster({"t": 4}), ms)
    assert first["c1"] == tps("t-1", "t-3") and first["c2"] == tps("t-2")
    assert first["c3"] == (tps("t-0") if name == "sticky" else ())


@pytest.mark.parametrize("name", STICKY)
def test_ensure_partitions_assigned_to_highest_generation(name) -> None:
    topics = ("t", "t2", "t3")
    ms = [
        member(name, "c1", topics, tps("t-0", "t2-0", "t3-0"), 10),
        member(name, "c2", topics, tps("t-1", "t2-1", "t3-1"), 9),
        member(name, "c3", topics, tps("t2-1", "t3-0", "t3-2"), 8),
    ]
    first, a = settle(name, Cluster({t: 3 for t in topics}), ms)
    assert first == a
    assert names(a["c1"]) == {"t-0", "t2-0", "t3-0"}
    assert names(a["c2"]) == {"t-1", "t2-1", "t3-1"}
    assert names(a["c3"]) == {"t-2", "t2-2", "t3-2"}


@pytest.mark.parametrize("name", STICKY)
def test_no_reassignment_on_current_members(name) -> None:
    topics = ("t", "t2", "t3", "t1")
    ms = [
        member(name, "c1", topics, (), -1),
        member(name, "c2", topics, tps("t-0", "t2-0", "t1-0"), 9),
        member(name, "c3", topics, tps("t3-2", "t2-2", "t1-1"), 8),
        member(name, "c4", topics, tps("t3-1", "t-1", "t-2"), 7),
    ]
    first, a = settle(name, Cluster({t: 3 for t in topics}), ms)
    assert first == a
    assert names(a["c1"]) == {"t1-2", "t2-1", "t3-0"}


@pytest.mark.parametrize("name", STICKY)
def test_topic_balance_after_reassignment(name) -> None:
    """The topic-major round-robin deal keeps each topic spread: 12/12 -> 6/6 per topic when a member joins."""
    topics = ("t1", "t2")
    cluster = Cluster({"t1": 12, "t2": 12})
    _, a = settle(name, cluster, [member(name, "c1", topics)])
    ms = next_generation(name, [member(name, "c1", topics)], a, GEN) + [member(name, "c2", topics, (), GEN)]
    _, b = settle(name, cluster, ms)
    for c in ("c1", "c2"):
        assert sorted(t for t, ps in b[c] for _ in ps).count("t1") == 6


# ---- member data, as each assignor reads it ----

def test_sticky_reads_owned_partitions_and_generation_from_user_data() -> None:
    """An eager member has revoked everything: its subscription's owned list is empty, its userData is not."""
    cluster = Cluster({"t": 4})
    ms = [
        M("c1", ("t",), user_data=encode_sticky_user_data(tps("t-2", "t-3"), 5)),
        M("c2", ("t",), owned_partitions=tps("t-2", "t-3"), generation_id=5),  # ignored by sticky
    ]
    a = registry.get("sticky").assign(cluster, ms)
    assert a == {"c1": tps("t-2", "t-3"), "c2": tps("t-0", "t-1")}


def test_sticky_ignores_unreadable_user_data() -> None:
    a = registry.get("sticky").assign(Cluster({"t": 2}), [M("c1", ("t",), user_data=b"\x07")])
    assert a == {"c1": tps("t-0", "t-1")}


def test_cooperative_reads_generation_from_old_user_data() -> None:
    """Subscription v1 (no generation field): the generation comes from the 4-byte userData, so c2's higher
    generation wins the conflict on t-0."""
    cluster = Cluster({"t": 2})
    ms = [
        M("c1", ("t",), owned_partitions=tps("t-0"), user_data=encode_cooperative_user_data(3)),
        M("c2", ("t",), owned_partitions=tps("t-0", "t-1"), user_data=encode_cooperative_user_data(4)),
    ]
    a = registry.get("cooperative-sticky").assign(cluster, ms)
    assert a == {"c1": (), "c2": tps("t-0")}  # t-1 moves to c1 next round, after c2 revokes it


def test_assignor_with_old_version_subscriptions() -> None:
    cluster = Cluster({"t1": 3})
    ms = [
        M("c1", ("t1",), owned_partitions=tps("t1-0"), user_data=encode_cooperative_user_data(GEN)),
        M("c2", ("t1",), owned_partitions=tps("t1-1"), user_data=encode_cooperative_user_data(GEN)),
        M("c3", ("t1",), generation_id=GEN),
    ]
    a = registry.get("cooperative-sticky").assign(cluster, ms)
    assert a == {"c1": tps("t1-0"), "c2": tps("t1-1"), "c3": tps("t1-2")}


def test_cooperative_withholds_every_move_on_the_general_path() -> None:
    cluster = Cluster({"a": 4, "b": 2})
    ms = [
        member("cooperative-sticky", "c1", ("a", "b"), tps("a-0", "a-1", "a-2", "a-3", "b-0", "b-1"), GEN),
        member("cooperative-sticky", "c2", ("a",), (), GEN),
    ]
    first = registry.get("cooperative-sticky").assign(cluster, ms)
    assert first["c2"] == ()
    _, final = cooperative_rounds(registry.get("cooperative-sticky"), cluster, ms, first)
    assert as_sets(final)["c2"] <= {("a", p) for p in range(4)} and len(pairs(final["c2"])) == 3


@pytest.mark.parametrize("name", STICKY)
def test_large_assignment_with_multiple_consumers_leaving_and_random_subscription(name) -> None:
    """200 consumers on up to 20 of 40 small topics, then 50 random departures (upstream's
    testLargeAssignmentWithMultipleConsumersLeavingAndRandomSubscription, with a fixed seed)."""
    import random

    rng = random.Random(881)
    topics = [f"topic{i:02d}" for i in range(40)]
    cluster = Cluster({t: rng.randint(1, 10) for t in topics})
    ms = [member(name, f"consumer{i:03d}", sorted({rng.choice(topics) for _ in range(rng.randrange(20))}))
          for i in range(200)]
    _, a = settle(name, cluster, ms)
    gone = {f"consumer{rng.randrange(200):03d}" for _ in range(50)}
    survivors = [m for m in next_generation(name, ms, a, GEN) if m.member_id not in gone]
    _, b = settle(name, cluster, survivors)
    for m in survivors:  # nothing a survivor owned went to another survivor's topic it also gained
        lost = {t for t, _ in pairs(a[m.member_id]) - pairs(b[m.member_id])}
        gained = {t for t, _ in pairs(b[m.member_id]) - pairs(a[m.member_id])}
        assert not lost & gained


@pytest.mark.parametrize("name", STICKY)
def test_assignment_with_multiple_generations(name) -> None:
    """StickyAssignorTest.testAssignmentWithMultipleGenerations1: a member returning with an old generation keeps
    only what the newer generation did not hand to someone else."""
    cluster = Cluster({"t": 6})
    _, r1 = settle(name, cluster, [member(name, c, ("t",)) for c in ("c1", "c2", "c3")])
    assert all(len(pairs(a)) == 2 for a in r1.values())

    _, r2 = settle(name, cluster, [member(name, c, ("t",), r1[c], 1) for c in ("c1", "c2")])
    assert all(len(pairs(r2[c])) == 3 and pairs(r1[c]) <= pairs(r2[c]) for c in ("c1", "c2"))
    assert pairs(r2["c2"]) & pairs(r1["c3"])  # c2 took one of c3's

    ms = [member(name, "c2", ("t",), r2["c2"], 2), member(name, "c3", ("t",), r1["c3"], 1)]
    first, r3 = settle(name, cluster, ms)
    assert pairs(first["c2"]) == pairs(r2["c2"])  # the newer generation keeps everything
    assert len(pairs(r3["c2"])) == len(pairs(r3["c3"])) == 3
    assert pairs(r1["c3"]) - pairs(r2["c2"]) <= pairs(r3["c3"])  # c3 keeps what nobody newer took

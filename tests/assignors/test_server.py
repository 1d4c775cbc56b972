"""Server-side (KIP-848) assignors, after the group coordinator's RangeAssignorTest and the Uniform*AssignmentBuilder
tests. Members' owned_partitions are their current target assignment."""

from __future__ import annotations

import pytest

from assignors import registry
from assignors.api import Cluster, MemberSubscription as M
from tests.assignors.helpers import names, pairs, tps, verify_validity_and_balance

UNIFORM = registry.get("uniform", kind="server")
RANGE = registry.get("range", kind="server")


# ---- range ----

RANGE_CASES = [
    (
        "first_assignment_two_members_two_topics_same_subscriptions",
        {"t1": 3, "t3": 2},
        {"A": ("t1", "t3"), "B": ("t1", "t3")},
        {"A": tps("t1-0", "t1-1", "t3-0"), "B": tps("t1-2", "t3-1")},
    ),
    (
        "first_assignment_three_members_three_topics_different_subscriptions",
        {"t1": 3, "t2": 3, "t3": 2},
        {"A": ("t1", "t2"), "B": ("t3",), "C": ("t2", "t3")},
        {"A": tps("t1-0", "t1-1", "t1-2", "t2-0", "t2-1"), "B": tps("t3-0"), "C": tps("t2-2", "t3-1")},
    ),
    (
        "more_members_than_partitions",
        {"t1": 3, "t3": 2},
        {"A": ("t1", "t3"), "B": ("t1", "t3"), "C": ("t1", "t3")},
        {"A": tps("t1-0", "t3-0"), "B": tps("t1-1", "t3-1"), "C": tps("t1-2")},
    ),
    ("no_subscriptions", {"t1": 3}, {"A": ()}, {"A": ()}),
]


@pytest.mark.parametrize("name,topics,subs,expected", RANGE_CASES, ids=[c[0] for c in RANGE_CASES])
def test_server_range(name, topics, subs, expected) -> None:
    cluster = Cluster(topics)
    members = [M(m, t) for m, t in subs.items()]
    assert RANGE.assign(cluster, members) == expected
    verify_validity_and_balance(cluster, members, expected, balanced=False)


def test_server_range_is_not_sticky() -> None:
    """A member joining takes its range even from members that owned it: range ignores the current assignment."""
    cluster = Cluster({"t1": 3, "t2": 3})
    members = [
        M("A", ("t1", "t2"), owned_partitions=tps("t1-0", "t1-1", "t2-0", "t2-1")),
        M("B", ("t1", "t2"), owned_partitions=tps("t1-2", "t2-2")),
        M("C", ("t1", "t2")),
    ]
    assert RANGE.assign(cluster, members) == {"A": tps("t1-0", "t2-0"), "B": tps("t1-1", "t2-1"), "C": tps("t1-2", "t2-2")}


def test_server_range_orders_static_members_first() -> None:
    members = [M("A", ("t",)), M("B", ("t",), group_instance_id="i-1")]
    assert RANGE.assign(Cluster({"t": 3}), members) == {"B": tps("t-0", "t-1"), "A": tps("t-2")}


# ---- uniform, homogeneous ----

def test_uniform_one_member_no_topic_gets_nothing() -> None:
    assert UNIFORM.assign(Cluster({"t": 3}), [M("A", ())]) == {"A": ()}


def test_uniform_first_assignment_is_balanced() -> None:
    cluster = Cluster({"t1": 3, "t3": 2})
    members = [M("A", ("t1", "t3")), M("B", ("t1", "t3"))]
    result = UNIFORM.assign(cluster, members)
    verify_validity_and_balance(cluster, members, result)


def test_uniform_more_members_than_partitions() -> None:
    cluster = Cluster({"t1": 3, "t3": 2})
    members = [M(m, ("t1", "t3")) for m in "ABCDEF"]
    result = UNIFORM.assign(cluster, members)
    verify_validity_and_balance(cluster, members, result)
    assert sorted(len(pairs(a)) for a in result.values()) == [0, 1, 1, 1, 1, 1]


def test_uniform_member_added_takes_only_what_balance_requires() -> None:
    cluster = Cluster({"t1": 3, "t2": 3})
    members = [
        M("A", ("t1", "t2"), owned_partitions=tps("t1-0", "t1-1", "t2-0")),
        M("B", ("t1", "t2"), owned_partitions=tps("t1-2", "t2-1", "t2-2")),
        M("C", ("t1", "t2")),
    ]
    result = UNIFORM.assign(cluster, members)
    verify_validity_and_balance(cluster, members, result)
    assert pairs(result["A"]) < pairs(members[0].owned_partitions)
    assert pairs(result["B"]) < pairs(members[1].owned_partitions)
    assert len(pairs(result["C"])) == 2


def test_uniform_extra_partitions_stay_with_members_that_hold_them() -> None:
    """7 partitions over 3 members: one member gets 3. Java gives the +1 to the first member in iteration order
    (moving a partition); we give it to the member already holding 3."""
    cluster = Cluster({"t": 7})
    members = [
        M("A", ("t",), owned_partitions=tps("t-0", "t-1")),
        M("B", ("t",), owned_partitions=tps("t-2", "t-3")),
        M("C", ("t",), owned_partitions=tps("t-4", "t-5", "t-6")),
    ]
    assert UNIFORM.assign(cluster, members) == {m.member_id: m.owned_partitions for m in members}


def test_uniform_member_removed_partitions_spread_over_survivors() -> None:
    cluster = Cluster({"t1": 3, "t2": 3})
    members = [
        M("A", ("t1", "t2"), owned_partitions=tps("t1-0", "t1-1")),
        M("B", ("t1", "t2"), owned_partitions=tps("t2-0", "t2-1")),
    ]
    result = UNIFORM.assign(cluster, members)
    assert names(result["A"]) >= {"t1-0", "t1-1"} and names(result["B"]) >= {"t2-0", "t2-1"}
    verify_validity_and_balance(cluster, members, result)


def test_uniform_partitions_of_unsubscribed_topics_are_revoked() -> None:
    cluster = Cluster({"t1": 2, "t2": 2})
    members = [M("A", ("t1",), owned_partitions=tps("t1-0", "t2-0")), M("B", ("t1",))]
    assert UNIFORM.assign(cluster, members) == {"A": tps("t1-0"), "B": tps("t1-1")}


# ---- uniform, heterogeneous ----

def test_uniform_heterogeneous_first_assignment() -> None:
    cluster = Cluster({"t1": 3, "t2": 3, "t3": 2})
    members = [M("A", ("t1", "t2")), M("B", ("t3",)), M("C", ("t2", "t3"))]
    result = UNIFORM.assign(cluster, members)
    verify_validity_and_balance(cluster, members, result)


def test_uniform_heterogeneous_subscription_change_keeps_what_it_can() -> None:
    cluster = Cluster({"t1": 4, "t2": 4})
    members = [
        M("A", ("t1",), owned_partitions=tps("t1-0", "t1-1", "t2-0", "t2-1")),
        M("B", ("t1", "t2"), owned_partitions=tps("t1-2", "t1-3", "t2-2", "t2-3")),
    ]
    result = UNIFORM.assign(cluster, members)
    verify_validity_and_balance(cluster, members, result)
    # A drops t2 and can only grow on t1, so balance (4/4) needs B's two t1 partitions and nothing else
    assert names(result["A"]) == {"t1-0", "t1-1", "t1-2", "t1-3"}
    assert names(result["B"]) == {"t2-0", "t2-1", "t2-2", "t2-3"}


@pytest.mark.parametrize("homogeneous", [True, False])
def test_uniform_validity_and_balance_for_large_sample_set(homogeneous) -> None:
    """After testValidityAndBalanceForLargeSampleSet: 49 members, 99 topics of 3 partitions."""
    topics = [f"topic{i:02d}" for i in range(99)]
    cluster = Cluster({t: 3 for t in topics})
    members = [M(f"member{i:02d}", tuple(topics if homogeneous else topics[: 30 + i])) for i in range(49)]
    result = UNIFORM.assign(cluster, members)
    verify_validity_and_balance(cluster, members, result)
    again = UNIFORM.assign(cluster, [M(m.member_id, m.topics, owned_partitions=result[m.member_id]) for m in members])
    assert again == result

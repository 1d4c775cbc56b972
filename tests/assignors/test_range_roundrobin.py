"""Client-side range and roundrobin, after Kafka's RangeAssignorTest and RoundRobinAssignorTest."""

from __future__ import annotations

import pytest

from assignors import registry
from assignors.api import Cluster, MemberSubscription as M
from tests.assignors.helpers import tps, verify_validity_and_balance

RANGE = registry.get("range")
ROUNDROBIN = registry.get("roundrobin")

# (name, partitions per topic, members as (id, topics, instance id), expected range, expected roundrobin)
CASES = [
    ("one_consumer_no_topic", {}, [("c", (), None)], {"c": ()}, {"c": ()}),
    ("one_consumer_nonexistent_topic", {}, [("c", ("t",), None)], {"c": ()}, {"c": ()}),
    ("one_consumer_one_topic", {"t": 3}, [("c", ("t",), None)], {"c": tps("t-0", "t-1", "t-2")}, {"c": tps("t-0", "t-1", "t-2")}),
    (
        "only_assigns_partitions_from_subscribed_topics",
        {"t": 3, "other": 3},
        [("c", ("t",), None)],
        {"c": tps("t-0", "t-1", "t-2")},
        {"c": tps("t-0", "t-1", "t-2")},
    ),
    (
        "one_consumer_multiple_topics",
        {"t1": 1, "t2": 2},
        [("c", ("t1", "t2"), None)],
        {"c": tps("t1-0", "t2-0", "t2-1")},
        {"c": tps("t1-0", "t2-0", "t2-1")},
    ),
    (
        "two_consumers_one_topic_one_partition",
        {"t": 1},
        [("c1", ("t",), None), ("c2", ("t",), None)],
        {"c1": tps("t-0"), "c2": ()},
        {"c1": tps("t-0"), "c2": ()},
    ),
    (
        "two_consumers_one_topic_two_partitions",
        {"t": 2},
        [("c1", ("t",), None), ("c2", ("t",), None)],
        {"c1": tps("t-0"), "c2": tps("t-1")},
        {"c1": tps("t-0"), "c2": tps("t-1")},
    ),
    (
        "multiple_consumers_mixed_topics",
        {"t1": 3, "t2": 2},
        [("c1", ("t1",), None), ("c2", ("t1", "t2"), None), ("c3", ("t1",), None)],
        {"c1": tps("t1-0"), "c2": tps("t1-1", "t2-0", "t2-1"), "c3": tps("t1-2")},
        {"c1": tps("t1-0"), "c2": tps("t1-1", "t2-0", "t2-1"), "c3": tps("t1-2")},
    ),
    (
        "two_consumers_two_topics_six_partitions",
        {"t1": 3, "t2": 3},
        [("c1", ("t1", "t2"), None), ("c2", ("t1", "t2"), None)],
        {"c1": tps("t1-0", "t1-1", "t2-0", "t2-1"), "c2": tps("t1-2", "t2-2")},
        {"c1": tps("t1-0", "t1-2", "t2-1"), "c2": tps("t1-1", "t2-0", "t2-2")},
    ),
    (
        # member ids sort c2 < c1 the other way round once instance ids are given: static members keep their slots
        "static_members_ordered_by_instance_id",
        {"t": 3},
        [("consumer-b", ("t",), "instance-1"), ("consumer-a", ("t",), "instance-2")],
        {"consumer-b": tps("t-0", "t-1"), "consumer-a": tps("t-2")},
        {"consumer-b": tps("t-0", "t-2"), "consumer-a": tps("t-1")},
    ),
    (
        # kafka-python deviation 2: static members interleaved with a dynamic one
        "static_members_before_dynamic",
        {"t": 3},
        [("m1", ("t",), "i1"), ("m2", ("t",), None), ("m3", ("t",), "i3")],
        {"m1": tps("t-0"), "m3": tps("t-1"), "m2": tps("t-2")},
        {"m1": tps("t-0"), "m3": tps("t-1"), "m2": tps("t-2")},
    ),
    (
        # the round-robin iterator is shared across topics and never reset
        "roundrobin_iterator_carries_across_topics",
        {"t1": 1, "t2": 2},
        [("c1", ("t1", "t2"), None), ("c2", ("t2",), None), ("c3", ("t1", "t2"), None)],
        {"c1": tps("t1-0", "t2-0"), "c2": tps("t2-1"), "c3": ()},
        {"c1": tps("t1-0"), "c2": tps("t2-0"), "c3": tps("t2-1")},
    ),
]


def _members(spec):
    return [M(mid, topics, group_instance_id=iid) for mid, topics, iid in spec]


@pytest.mark.parametrize("name,topics,spec,expected_range,expected_rr", CASES, ids=[c[0] for c in CASES])
def test_range(name, topics, spec, expected_range, expected_rr) -> None:
    cluster, members = Cluster(topics), _members(spec)
    result = RANGE.assign(cluster, members)
    assert result == expected_range
    verify_validity_and_balance(cluster, members, result, balanced=False)


@pytest.mark.parametrize("name,topics,spec,expected_range,expected_rr", CASES, ids=[c[0] for c in CASES])
def test_roundrobin(name, topics, spec, expected_range, expected_rr) -> None:
    cluster, members = Cluster(topics), _members(spec)
    result = ROUNDROBIN.assign(cluster, members)
    assert result == expected_rr
    verify_validity_and_balance(cluster, members, result, balanced=False)


def test_range_ignores_current_assignment() -> None:
    cluster = Cluster({"t": 4})
    members = [M("a", ("t",), owned_partitions=tps("t-2", "t-3")), M("b", ("t",), owned_partitions=tps("t-0", "t-1"))]
    assert RANGE.assign(cluster, members) == {"a": tps("t-0", "t-1"), "b": tps("t-2", "t-3")}


# ---- rack-aware range (KIP-881) ----

def _racks(*per_partition: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(r.split(",")) for r in per_partition)


def test_rack_aware_range_prefers_partitions_on_the_members_rack() -> None:
    cluster = Cluster({"t": 4}, {"t": _racks("b", "b", "a", "a")})
    members = [M("c1", ("t",), rack_id="a"), M("c2", ("t",), rack_id="b")]
    assert RANGE.assign(cluster, members) == {"c1": tps("t-2", "t-3"), "c2": tps("t-0", "t-1")}


def test_rack_aware_range_keeps_range_quotas_when_racks_cannot_all_match() -> None:
    cluster = Cluster({"t": 4}, {"t": _racks("a", "a", "a", "b")})
    members = [M("c1", ("t",), rack_id="b"), M("c2", ("t",), rack_id="a")]
    result = RANGE.assign(cluster, members)
    # c1 takes its one rack match (t-3), c2 fills its quota with a-partitions from the low end, c1 gets the rest
    assert result == {"c1": tps("t-2", "t-3"), "c2": tps("t-0", "t-1")}


def test_rack_aware_range_co_partitions_topics_with_the_same_subscribers() -> None:
    """Partition i of co-partitioned topics goes to one member, so joins on partition number stay local."""
    racks = _racks("b", "a", "b", "a")
    cluster = Cluster({"t1": 4, "t2": 4}, {"t1": racks, "t2": racks})
    members = [M("c1", ("t1", "t2"), rack_id="a"), M("c2", ("t1", "t2"), rack_id="b")]
    result = RANGE.assign(cluster, members)
    assert result == {"c1": tps("t1-1", "t1-3", "t2-1", "t2-3"), "c2": tps("t1-0", "t1-2", "t2-0", "t2-2")}


@pytest.mark.parametrize(
    "racks,consumer_racks",
    [
        (("a,b", "a,b"), ("a", "b")),  # every partition on every rack: nothing to gain
        (("a", "b"), (None, None)),  # members without racks
        (("a", "b"), ("x", "y")),  # member racks disjoint from replica racks
    ],
)
def test_rack_aware_range_falls_back_to_plain_range(racks, consumer_racks) -> None:
    cluster = Cluster({"t": 2}, {"t": _racks(*racks)})
    members = [M("c1", ("t",), rack_id=consumer_racks[0]), M("c2", ("t",), rack_id=consumer_racks[1])]
    assert RANGE.assign(cluster, members) == {"c1": tps("t-0"), "c2": tps("t-1")}


def test_server_range_never_uses_racks() -> None:
    cluster = Cluster({"t": 4}, {"t": _racks("b", "b", "a", "a")})
    members = [M("c1", ("t",), rack_id="a"), M("c2", ("t",), rack_id="b")]
    assert registry.get("range", kind="server").assign(cluster, members) == {
        "c1": tps("t-0", "t-1"),
        "c2": tps("t-2", "t-3"),
    }


# ---- KIP-881 cases from RangeAssignorTest, with its replica layout: brokers = racks x replication factor, broker i
# on rack i % racks, replica j of the i-th partition overall (topics in the order given) on broker (i + j) % brokers.

ALL_RACKS = "abcdefg"


def _rack_cluster(topics: dict[str, int], replication: int, broker_racks: int) -> Cluster:
    brokers = broker_racks * replication
    racks, first = {}, 0
    for topic, count in topics.items():
        racks[topic] = tuple(
            frozenset(ALL_RACKS[(first + i + j) % brokers % broker_racks] for j in range(replication))
            for i in range(count)
        )
        first += count
    return Cluster(dict(topics), racks)


def _expect(*rows: str) -> dict[str, object]:
    return {f"consumer{i}": tps(*[x.strip() for x in row.split(",")]) if row else () for i, row in enumerate(rows)}


T1_T2_T3 = {"t1": 6, "t2": 7, "t3": 2}
RACK_CASES = [
    ("uniform_rf1", T1_T2_T3, ["t1,t2,t3"] * 3, 1, 3, "abc",
     _expect("t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1")),
    ("uniform_rf2", T1_T2_T3, ["t1,t2,t3"] * 3, 2, 3, "abc",
     _expect("t1-0, t1-2, t2-0, t2-2, t2-3, t3-1", "t1-1, t1-3, t2-1, t2-4, t3-0", "t1-4, t1-5, t2-5, t2-6")),
    ("uniform_consumer_on_rack_without_partitions", T1_T2_T3, ["t1,t2,t3"] * 3, 3, 2, "abc",
     _expect("t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6")),
    ("non_equal_rf1", T1_T2_T3, ["t1,t2,t3", "t1,t2,t3", "t1,t3"], 1, 3, "abc",
     _expect("t1-0, t1-3, t2-0, t2-2, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0", "t1-2, t1-5, t3-1")),
    ("non_equal_rf2", T1_T2_T3, ["t1,t2,t3", "t1,t2,t3", "t1,t3"], 2, 3, "abc",
     _expect("t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1", "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0", "t1-4, t1-5")),
    ("co_partitioning_before_rack_alignment", {"t1": 5, "t2": 5, "t3": 5}, ["t1,t2,t3"] * 3, 1, 3, "abc",
     _expect("t1-0, t1-1, t2-0, t2-1, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t2-4, t3-4")),
    ("co_partitioning_non_equal_rf2", {"t1": 5, "t2": 5, "t3": 5}, ["t1,t2,t3", "t1,t2,t3", "t1,t3"], 2, 3, "abc",
     _expect("t1-2, t2-0, t2-1, t2-3, t3-2", "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3", "t1-1, t1-4, t3-1, t3-4")),
    ("co_partitioned_groups", {"t1": 6, "t2": 6, "t3": 2, "t4": 2}, ["t1,t2", "t1,t2", "t3,t4", "t3,t4"], 1, 2, "abba",
     _expect("t1-0, t1-2, t1-4, t2-0, t2-2, t2-4", "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5", "t3-1, t4-1", "t3-0, t4-0")),
    ("co_partitioned_all_topics", {"t1": 6, "t2": 6, "t3": 2, "t4": 2}, ["t1,t2,t3,t4"] * 4, 1, 3, "abba",
     _expect("t1-0, t1-3, t2-0, t2-3, t3-0, t4-0", "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1", "t1-2, t2-2", "t1-5, t2-5")),
    ("co_partitioned_same_subscription_rf2",
     {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}, ["t1,t2,t3,t4,t5,t6,t7,t8,t9"] * 3, 2, 3, "abc",
     _expect("t1-0, t1-2, t2-0, t2-2, t3-0, t4-0, t5-1, t6-1", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1, t5-2, t6-2",
             "t1-4, t1-5, t2-4, t2-5, t5-0, t5-3, t6-0, t6-3")),
]


@pytest.mark.parametrize("name,topics,subs,replication,broker_racks,consumer_racks,expected", RACK_CASES,
                         ids=[c[0] for c in RACK_CASES])
def test_rack_aware_range_kafka_cases(name, topics, subs, replication, broker_racks, consumer_racks, expected) -> None:
    cluster = _rack_cluster(topics, replication, broker_racks)
    members = [M(f"consumer{i}", tuple(s.split(",")), rack_id=consumer_racks[i]) for i, s in enumerate(subs)]
    result = RANGE.assign(cluster, members)
    assert result == expected
    verify_validity_and_balance(cluster, members, result, balanced=False)

"""One contract every assignor keeps, whatever its algorithm (quix-streams style: one test, every implementation)."""

from __future__ import annotations

import random

import pytest

from assignors import registry
from assignors.api import Cluster, MemberSubscription as M, PartitionAssignorError
from tests.assignors.helpers import member, verify_validity_and_balance

ALL = [("client", n) for n in registry.names("client")] + [("server", n) for n in registry.names("server")]
BALANCING = {"sticky", "cooperative-sticky", "uniform"}


def random_group(seed: int, uniform: bool) -> tuple[Cluster, list[M]]:
    rng = random.Random(seed)
    topics = [f"topic{i}" for i in range(rng.randint(1, 6))]
    cluster = Cluster({t: rng.randint(0, 12) for t in topics})
    members = []
    for i in range(rng.randint(1, 9)):
        subscribed = topics if uniform else rng.sample(topics + ["missing"], rng.randint(0, len(topics)))
        members.append(M(f"member-{rng.randint(0, 999):03d}-{i}", tuple(subscribed)))
    return cluster, members


def existing_topics_only(kind: str, assignor, cluster: Cluster, members: list[M]) -> list[M]:
    """Client-side assignors skip a topic the metadata lacks; server-side ones refuse the group (Kafka's
    PartitionAssignorException), so the rest of a test gives them the subscriptions without it."""
    if kind == "client" or all(set(m.topics) <= set(cluster.partitions_per_topic) for m in members):
        return members
    with pytest.raises(PartitionAssignorError, match="missing"):
        assignor.assign(cluster, members)
    return [M(m.member_id, tuple(t for t in m.topics if t != "missing")) for m in members]


def test_registry_knows_every_kafka_protocol_name() -> None:
    assert registry.names("client") == ("range", "roundrobin", "sticky", "cooperative-sticky")
    assert registry.names("server") == ("uniform", "range")
    assert registry.get("range").kind == "client"
    assert registry.get("uniform").kind == "server"


def test_unknown_assignor_is_a_key_error_naming_the_known_ones() -> None:
    with pytest.raises(KeyError, match="roundrobin"):
        registry.get("round-robin")
    with pytest.raises(registry.UnknownAssignorError):
        registry.get("sticky", kind="server")


@pytest.mark.parametrize("kind,name", ALL)
def test_identity(kind, name) -> None:
    assignor = registry.get(name, kind=kind)
    assert (assignor.name, assignor.kind) == (name, kind)
    expected = ("COOPERATIVE", "EAGER") if name == "cooperative-sticky" else ("EAGER",)
    assert assignor.rebalance_protocols == expected


@pytest.mark.parametrize("kind,name", ALL)
def test_empty_group(kind, name) -> None:
    assert registry.get(name, kind=kind).assign(Cluster({"t": 3}), []) == {}


@pytest.mark.parametrize("kind,name", ALL)
@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("uniform", [True, False], ids=["uniform", "mixed"])
def test_valid_deterministic_and_order_independent(kind, name, seed, uniform) -> None:
    cluster, members = random_group(seed, uniform)
    assignor = registry.get(name, kind=kind)
    members = existing_topics_only(kind, assignor, cluster, members)
    result = assignor.assign(cluster, members)
    verify_validity_and_balance(cluster, members, result, balanced=name in BALANCING or (name == "roundrobin" and uniform))
    assert assignor.assign(cluster, list(reversed(members))) == result
    for tps in result.values():
        assert [t for t, _ in tps] == sorted({t for t, _ in tps})
        assert all(list(ps) == sorted(set(ps)) and ps for _, ps in tps)


@pytest.mark.parametrize("kind,name", ALL)
def test_rejoin_with_own_assignment_changes_nothing_for_sticky_ones(kind, name) -> None:
    cluster, members = random_group(7, uniform=False)
    assignor = registry.get(name, kind=kind)
    members = existing_topics_only(kind, assignor, cluster, members)
    first = assignor.assign(cluster, members)
    view = name if name != "uniform" else "cooperative-sticky"
    again = [member(view, m.member_id, m.topics, first[m.member_id], 1) for m in members]
    second = assignor.assign(cluster, again)
    if name in BALANCING:
        assert second == first
    else:
        verify_validity_and_balance(cluster, again, second, balanced=False)

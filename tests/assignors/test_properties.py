"""Hypothesis properties over random clusters, subscriptions, ownerships and generations.

- validity: every subscribed partition assigned exactly once, and only to a subscriber (all assignors);
- balance: Kafka's isBalanced (sticky, cooperative-sticky, uniform);
- stickiness: with identical subscriptions, exactly the minimum number of owned partitions moves (sticky ones), or
  each member keeps the partitions it lists first, up to Kafka's quota (uniform); in general no member gives up a
  partition it owned while gaining one of the same topic;
- server-side assignors refuse a subscription to a topic the metadata lacks;
- cooperative safety: no partition goes from one owner to another within a rebalance, and follow-up rounds settle.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assignors import registry
from assignors.api import Cluster, PartitionAssignorError
from assignors.consumer_protocol import group_partitions
from tests.assignors.helpers import cooperative_rounds, member, owned_of, pairs, verify_validity_and_balance

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STICKY = ["sticky", "cooperative-sticky"]


@st.composite
def groups(draw, uniform: bool = False, clean_ownership: bool = False):
    """(cluster, [(member_id, topics, owned pairs, generation)])."""
    topics = [f"t{i}" for i in range(draw(st.integers(1, 4)))]
    cluster = Cluster({t: draw(st.integers(0, 9)) for t in topics})
    all_partitions = [(t, p) for t in topics for p in range(cluster.partitions_per_topic[t])]
    n = draw(st.integers(1, 7))
    specs = []
    if clean_ownership:
        owners = draw(st.lists(st.integers(-1, n - 1), min_size=len(all_partitions), max_size=len(all_partitions)))
    for i in range(n):
        subscribed = topics if uniform else draw(st.lists(st.sampled_from(topics + ["gone"]), unique=True, max_size=5))
        if clean_ownership:
            owned = [tp for tp, o in zip(all_partitions, owners) if o == i]
            generation = 1
        else:
            claimable = st.sampled_from(all_partitions + [("gone", 0)])  # a claim on a deleted topic, too
            owned = draw(st.lists(claimable, unique=True, max_size=8))
            generation = draw(st.sampled_from([-1, 1, 2, 3]))
        specs.append((f"m{i}", tuple(subscribed), owned, generation))
    return cluster, specs


def build(name: str, specs, kind: str = "client"):
    """The members as `name` reads them. Server-side assignors refuse a subscription to a topic missing from the
    metadata, so they get the subscriptions a coordinator resolves against it: without "gone"."""
    view = name if name != "uniform" else "cooperative-sticky"
    if name == "uniform" or kind == "server":
        specs = [(m, tuple(t for t in topics if t != "gone"), owned, gen) for m, topics, owned, gen in specs]
    return [member(view, m, topics, group_partitions(owned), gen) for m, topics, owned, gen in specs]


@SETTINGS
@given(group=groups(), name=st.sampled_from(["uniform", "range"]))
def test_server_assignors_refuse_a_topic_missing_from_the_metadata(group, name) -> None:
    cluster, specs = group
    members = [member("cooperative-sticky", m, topics) for m, topics, _, _ in specs]
    assignor = registry.get(name, kind="server")
    if any("gone" in m.topics for m in members):
        try:
            assignor.assign(cluster, members)
        except PartitionAssignorError as error:
            assert "gone" in str(error)
        else:
            raise AssertionError("a subscription to a missing topic was assigned")
    else:
        verify_validity_and_balance(cluster, members, assignor.assign(cluster, members), balanced=False)


@SETTINGS
@given(group=groups(), kind_name=st.sampled_from([("client", "range"), ("client", "roundrobin"), ("server", "range")]))
def test_non_sticky_assignors_are_valid(group, kind_name) -> None:
    cluster, specs = group
    kind, name = kind_name
    members = build(name, specs, kind)
    verify_validity_and_balance(cluster, members, registry.get(name, kind=kind).assign(cluster, members), balanced=False)


@SETTINGS
@given(group=groups(), name=st.sampled_from(["sticky", "uniform"]))
def test_sticky_and_uniform_are_valid_and_balanced(group, name) -> None:
    cluster, specs = group
    members = build(name, specs)
    verify_validity_and_balance(cluster, members, registry.get(name).assign(cluster, members))


@SETTINGS
@given(group=groups())
def test_cooperative_never_hands_over_a_partition_within_one_rebalance(group) -> None:
    cluster, specs = group
    members = build("cooperative-sticky", specs)
    assignor = registry.get("cooperative-sticky")
    first = assignor.assign(cluster, members)
    claims: dict[tuple[str, int], dict[str, int]] = {}
    for m in members:
        for tp in pairs(m.owned_partitions):
            claims.setdefault(tp, {})[m.member_id] = m.generation_id
    for member_id, tps in first.items():
        for tp in pairs(tps):
            others = {o: g for o, g in claims.get(tp, {}).items() if o != member_id}
            if member_id not in claims.get(tp, {}):
                assert not others, f"{tp} given to {member_id} while {sorted(others)} still own it"
            else:  # it keeps a partition others also claim only as the one rightful (highest generation) owner
                assert all(g < claims[tp][member_id] for g in others.values()), f"{tp}: {claims[tp]}"
    final_members, final = cooperative_rounds(assignor, cluster, members, first)
    verify_validity_and_balance(cluster, final_members, final)


def minimum_moves(total: int, owned_counts: list[int]) -> int:
    """Fewest owned partitions that must change owner for max - min <= 1 with identical subscriptions: members
    above maxQuota shed the excess, and of the members holding at least maxQuota only P % N may keep it."""
    n = len(owned_counts)
    min_quota, extra = divmod(total, n)
    max_quota = min_quota + (1 if extra else 0)
    at_max = [c for c in owned_counts if c >= max_quota]
    return sum(c - max_quota for c in at_max) + max(0, len(at_max) - extra) * (max_quota - min_quota)


@SETTINGS
@given(group=groups(uniform=True, clean_ownership=True), name=st.sampled_from(STICKY))
def test_identical_subscriptions_move_the_minimum(group, name) -> None:
    cluster, specs = group
    members = build(name, specs)
    result = registry.get(name).assign(cluster, members)
    total = sum(cluster.partitions_per_topic.values())
    owned = [pairs(owned_of(name, m)) for m in members]
    moved = sum(len(o - pairs(result[m.member_id])) for m, o in zip(members, owned))
    assert moved == minimum_moves(total, [len(o) for o in owned])
    if name == "cooperative-sticky":
        _, final = cooperative_rounds(registry.get(name), cluster, members, result)
        moved_in_the_end = sum(len(o - pairs(final[m.member_id])) for m, o in zip(members, owned))
        assert moved_in_the_end == moved  # withheld partitions were only ever the ones that had to move
        verify_validity_and_balance(cluster, members, final)
    else:
        verify_validity_and_balance(cluster, members, result)


@SETTINGS
@given(group=groups(uniform=True, clean_ownership=True), data=st.data())
def test_uniform_with_identical_subscriptions_keeps_what_members_list_first_up_to_kafka_quota(group, data) -> None:
    """UniformHomogeneousAssignmentBuilder: quota P // N, one more for the first P % N members in member-id order;
    each member keeps its owned partitions in the order it lists them, as many as its quota allows, and ends with
    exactly its quota. The listing order is drawn, so it is not always ascending."""
    cluster, specs = group
    members = []
    for m, topics, owned, gen in sorted(specs):
        listed = tuple((t, p) for t, p in data.draw(st.permutations(owned)))
        by_topic: dict[str, list[int]] = {}
        for t, p in listed:
            by_topic.setdefault(t, []).append(p)
        listed_owned = tuple((t, tuple(ps)) for t, ps in by_topic.items())
        members.append(member("cooperative-sticky", m, topics, listed_owned, gen))
    result = registry.get("uniform").assign(cluster, members)
    total = sum(cluster.partitions_per_topic.values())
    for i, m in enumerate(members):
        quota = total // len(members) + (1 if i < total % len(members) else 0)
        listed = [(t, p) for t, ps in m.owned_partitions for p in ps]
        assert len(pairs(result[m.member_id])) == quota
        assert pairs(result[m.member_id]) >= set(listed[:quota])
        assert not pairs(result[m.member_id]) & set(listed[quota:])
    verify_validity_and_balance(cluster, members, result)


@SETTINGS
@given(group=groups(clean_ownership=True), data=st.data())
def test_no_member_gives_up_a_partition_of_a_topic_it_also_gains(group, data) -> None:
    """sticky always; uniform with identical subscriptions only: Kafka's heterogeneous uniform builder can give
    away an owned partition while keeping one just dealt (test_server's
    test_uniform_heterogeneous_may_give_up_an_owned_partition_of_a_topic_it_gains)."""
    cluster, specs = group
    name = data.draw(st.sampled_from(["sticky", "uniform"]))
    if name == "uniform":
        topics = tuple(cluster.partitions_per_topic)
        specs = [(m, topics, owned, gen) for m, _, owned, gen in specs]
    members = build(name, specs)
    result = registry.get(name).assign(cluster, members)
    for m in members:
        owned = {tp for tp in pairs(owned_of("sticky" if name == "sticky" else "cooperative-sticky", m)) if tp[0] in m.topics}
        now = pairs(result[m.member_id])
        lost_topics = {t for t, _ in owned - now}
        gained_topics = {t for t, _ in now - owned}
        assert not lost_topics & gained_topics, f"{m.member_id} lost and gained partitions of {lost_topics & gained_topics}"


@SETTINGS
@given(group=groups(clean_ownership=True))
def test_sticky_user_data_round_trips_through_a_rebalance(group) -> None:
    """Eager sticky: rejoining with the assignment just received in userData changes nothing."""
    cluster, specs = group
    members = build("sticky", specs)
    first = registry.get("sticky").assign(cluster, members)
    again = [member("sticky", m.member_id, m.topics, first[m.member_id], 2) for m in members]
    assert registry.get("sticky").assign(cluster, again) == first


@SETTINGS
@given(
    counts=st.lists(st.integers(0, 7), min_size=1, max_size=5),
    quotas=st.lists(st.integers(0, 6), min_size=1, max_size=6),
)
def test_hand_out_in_blocks_gives_what_the_owner_array_gives(counts, quotas) -> None:
    """The homogeneous builder's shortcut for members that own nothing (runs from block boundaries) equals the
    general path (runs from the owner array), partition for partition."""
    import numpy as np

    from assignors.partition_space import assignment_of_runs, build_assignment, partition_space, runs_of_blocks

    topics = [f"t{i}" for i in range(len(counts))]
    space = partition_space(dict(zip(topics, counts)), topics)
    total = min(space.total, sum(quotas))
    bounds = np.concatenate(([0], np.minimum(np.cumsum(quotas), total)))
    owner = np.full(space.total, -1, dtype=np.int64)
    owner[:total] = np.repeat(np.arange(len(quotas)), np.diff(bounds))
    member_ids = [f"m{i}" for i in range(len(quotas))]
    by_blocks = assignment_of_runs(space, runs_of_blocks(space, bounds), member_ids)
    assert by_blocks == build_assignment(space, owner, member_ids)

"""What a member gives up, keeps and takes in a rebalance, case by case, against Kafka's ConsumerCoordinator
(onJoinPrepare, onJoinComplete; KIP-429 for the cooperative protocol)."""

from __future__ import annotations

import pytest

from client.rebalance import Change, Release, after_join, before_join, rebalance_protocol

A, B, C = ("t", 0), ("t", 1), ("u", 0)
OWNED = frozenset({A, B, C})


@pytest.mark.parametrize(
    "name, protocol, generation_id, member_id, owned, topics, release",
    [
        ("nothing_owned", "EAGER", 1, "m", frozenset(), {"t"}, Release(frozenset())),
        ("no_generation_loses_everything", "COOPERATIVE", -1, "m", OWNED, {"t", "u"},
         Release(frozenset(), lost=OWNED)),
        ("no_member_id_loses_everything", "EAGER", 3, "", OWNED, {"t", "u"}, Release(frozenset(), lost=OWNED)),
        ("eager_revokes_everything", "EAGER", 3, "m", OWNED, {"t", "u"}, Release(frozenset(), revoked=OWNED)),
        ("cooperative_keeps_what_it_still_subscribes_to", "COOPERATIVE", 3, "m", OWNED, {"t", "u"},
         Release(OWNED)),
        ("cooperative_revokes_unsubscribed_topics", "COOPERATIVE", 3, "m", OWNED, {"t"},
         Release(frozenset({A, B}), revoked=frozenset({C}))),
    ],
)
def test_before_join(name, protocol, generation_id, member_id, owned, topics, release):
    assert before_join(protocol, generation_id, member_id, owned, topics) == release


@pytest.mark.parametrize(
    "name, protocol, owned, assignment, change",
    [
        ("eager_hears_the_whole_assignment", "EAGER", frozenset(), frozenset({A, B}),
         Change(frozenset(), frozenset({A, B}))),
        ("cooperative_hears_only_what_moves", "COOPERATIVE", frozenset({A, B}), frozenset({B, C}),
         Change(frozenset({A}), frozenset({C}), rejoin=True)),
        ("cooperative_without_revocation_does_not_rejoin", "COOPERATIVE", frozenset({A}), frozenset({A, B}),
         Change(frozenset(), frozenset({B}))),
        ("cooperative_unchanged_hears_an_empty_assignment", "COOPERATIVE", frozenset({A}), frozenset({A}),
         Change(frozenset(), frozenset())),
    ],
)
def test_after_join(name, protocol, owned, assignment, change):
    assert after_join(protocol, owned, assignment) == change


@pytest.mark.parametrize(
    "strategies, protocol",
    [
        (("cooperative-sticky",), "COOPERATIVE"),
        (("range", "cooperative-sticky"), "EAGER"),
        (("server:uniform",), "EAGER"),
    ],
)
def test_the_protocol_is_cooperative_only_if_every_assignor_supports_it(strategies, protocol):
    assert rebalance_protocol(strategies) == protocol

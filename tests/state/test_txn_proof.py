"""When a TxnOffsetCommit answered from a view is shown settled from the requests topic (`state.views.txn_proof`):
each rule of the module's docstring, one test each, on requests as the gateway and clients write them."""

from __future__ import annotations

import json

from msgspec import UNSET

from state.views.txn_proof import MARGIN_MS, MAX_BEHIND, TxnClaim, TxnEntry, request_entry
from state.views.txn_proof import txn_settles as _settles

MEMBER = "m-1"
SESSION = 45_000
NOW = 1_000_000


def claim(mark: int = 10, offset: int = 20, **fields) -> TxnClaim:
    values = dict(group_id="g", partition=0, mark=mark, offset=offset, member_id=MEMBER, generation=3,
                  instance_id=None, principal=None, session_timeout_ms=SESSION, timestamp_ms=NOW,
                  acknowledged_ms=NOW + 2, request_id="mine")
    values.update(fields)
    return TxnClaim(**values)


def settles(entries: list[TxnEntry], start: int, claimed: TxnClaim) -> bool:
    """As the module's, with the claimed commit's own record at its offset."""
    return _settles([*entries, txn_commit(claimed.offset, claimed.request_id)], start, claimed)


def entry(offset: int, body: dict, timestamp_ms: int = NOW - 1_000) -> TxnEntry:
    return request_entry(offset, timestamp_ms, json.dumps(body).encode())


def liveness(offset: int, heard_ms: int = NOW - 2_000, generation: int = 3, answered: int = 0,
             member: str = MEMBER) -> TxnEntry:
    return entry(offset, {"api": "Liveness", "request_id": "l", "group_id": "g", "members": [
        {"member_id": member, "generation_id": generation, "heard_ms": heard_ms, "answered": answered}]},
        timestamp_ms=heard_ms + 100)


def txn_commit(offset: int, request_id: str = "t") -> TxnEntry:
    return entry(offset, {"api": "TxnOffsetCommit", "request_id": request_id, "group_id": "g", "member_id": MEMBER,
                          "generation_id": 3, "transactional_id": "tx", "producer_id": 1, "producer_epoch": 0,
                          "topics": []})


def test_a_heartbeat_before_the_mark_and_commits_after_it_settle():
    entries = [liveness(5)] + [txn_commit(o) for o in range(11, 20, 2)]
    assert settles(entries, 0, claim())


def test_no_heartbeat_of_the_member_before_the_mark_does_not_settle():
    # the session's end is unknown: the heartbeat after the mark may come after an expiry
    assert not settles([liveness(12)], 0, claim())
    assert not settles([liveness(5, member="other")], 0, claim())


def test_a_heartbeat_before_where_the_reading_began_does_not_count():
    assert not settles([liveness(5)], 6, claim())


def test_a_membership_request_after_the_mark_does_not_settle():
    for api in ("JoinGroup", "SyncGroup", "LeaveGroup", "DeleteGroups", "PendingMember", "LoadGroup"):
        other = entry(15, {"api": api, "request_id": "x", "group_id": "g", "member_id": "another"})
        assert not settles([liveness(5), other], 0, claim()), api


def test_a_membership_request_before_the_mark_is_in_the_view():
    rejoin = entry(7, {"api": "JoinGroup", "request_id": "x", "group_id": "g", "member_id": "another"})
    assert settles([liveness(5), rejoin], 0, claim())


def test_the_members_own_rejoin_after_its_heartbeat_does_not_settle():
    # its session may have restarted with another timeout
    rejoin = entry(7, {"api": "JoinGroup", "request_id": "x", "group_id": "g", "member_id": MEMBER})
    assert not settles([liveness(5), rejoin], 0, claim())


def test_an_unreadable_request_does_not_settle():
    assert not settles([liveness(5), TxnEntry(15, NOW, None)], 0, claim())


def test_a_session_ending_within_the_margin_does_not_settle():
    late = NOW + 2 + MARGIN_MS - SESSION
    assert not settles([liveness(5, heard_ms=late)], 0, claim())
    assert settles([liveness(5, heard_ms=late + 1)], 0, claim())


def test_an_older_heartbeat_after_the_mark_shortens_the_session():
    # the coordinator restarts the session from each heartbeat as it comes, an older one included
    old = NOW + 2 + MARGIN_MS - SESSION
    assert not settles([liveness(5), liveness(15, heard_ms=old)], 0, claim())


def test_a_later_request_of_the_group_raises_the_instant_the_commit_counts_at():
    late = entry(15, {"api": "OffsetFetch", "request_id": "f", "group_id": "g"}, timestamp_ms=NOW + 40_000)
    assert not settles([liveness(5), late], 0, claim())


def test_a_heartbeat_at_another_generation_or_not_answered_none_does_not_count():
    assert not settles([liveness(5, generation=2)], 0, claim())
    assert not settles([liveness(5, answered=27)], 0, claim())
    assert not settles([liveness(5), liveness(15, answered=27)], 0, claim())


def test_a_forwarded_heartbeat_counts_at_its_record_time():
    heartbeat = entry(5, {"api": "Heartbeat", "request_id": "h", "group_id": "g", "member_id": MEMBER,
                          "generation_id": 3}, timestamp_ms=NOW - 1_000)
    assert settles([heartbeat], 0, claim())


def test_a_commit_too_far_past_the_mark_does_not_settle():
    assert not settles([liveness(5)], 0, claim(offset=10 + MAX_BEHIND + 1))
    assert settles([liveness(5)], 0, claim(offset=10 + MAX_BEHIND))


def test_requests_after_the_commit_are_not_looked_at():
    after = entry(25, {"api": "LeaveGroup", "request_id": "x", "group_id": "g", "member_id": MEMBER})
    assert settles([liveness(5), after], 0, claim())


def test_with_other_members_the_join_phase_their_expiry_starts_must_end_past_the_margin():
    # another member may expire right after the member's heartbeat was applied: the join phase it starts ends a
    # rebalance timeout later, and only then moves the generation (the member has not rejoined)
    heard = NOW - 2_000
    short = NOW + 2 + MARGIN_MS - (heard + 100)
    assert settles([liveness(5, heard_ms=heard)], 0, claim(others=True, rebalance_timeout_ms=short + 1))
    assert not settles([liveness(5, heard_ms=heard)], 0, claim(others=True, rebalance_timeout_ms=short))
    assert not settles([liveness(5)], 0, claim(others=True, rebalance_timeout_ms=None))
    assert settles([liveness(5)], 0, claim(others=False, rebalance_timeout_ms=None))


def test_a_record_at_the_commits_offset_that_is_not_the_request_does_not_settle():
    # Kafka acks a write it takes for a duplicate of one of its last batches with that batch's offset
    assert not _settles([liveness(5), txn_commit(20, "an older one")], 0, claim())
    assert not _settles([liveness(5)], 0, claim())


def test_the_claim_is_what_the_view_and_the_write_say():
    from schemas.messages import GroupView, ViewMember
    from state.api import PublishedGroup, decode_request
    from state.views.txn_proof import txn_claim

    def view(state: str = "Stable", generation: int = 3) -> PublishedGroup:
        return PublishedGroup(GroupView(state, generation, "consumer", "range", MEMBER, (
            ViewMember(MEMBER, "static-1", None, SESSION, 300_000), ViewMember("other", None, None, SESSION, 60_000))))

    def req(member: str = MEMBER):
        return decode_request(json.dumps({"api": "TxnOffsetCommit", "request_id": "", "group_id": "g",
                                          "transactional_id": "tx", "producer_id": 1, "producer_epoch": 0,
                                          "generation_id": 3, "member_id": member, "group_instance_id": "static-1",
                                          "topics": []}).encode())

    made = txn_claim(view(), req(), "fast-1", 0, 10, 20, NOW, NOW + 2)
    assert (made.mark, made.offset, made.request_id, made.rebalance_timeout_ms, made.others, made.instance_id,
            made.session_timeout_ms, made.timestamp_ms, made.acknowledged_ms) == \
        (10, 20, "fast-1", 300_000, True, "static-1", SESSION, NOW, NOW + 2)
    assert txn_claim(view(), req(), "fast-1", 0, None, 20, NOW, NOW).mark == -1  # no mark read: nothing settles
    assert not _settles([liveness(5), txn_commit(20, "fast-1")], 0,
                        txn_claim(view(), req(), "fast-1", 0, None, 20, NOW, NOW))
    # rule 1: a Stable classic group's view at the request's generation, with the member
    assert txn_claim(view("PreparingRebalance"), req(), "fast-1", 0, 10, 20, NOW, NOW) is None
    assert txn_claim(view(generation=4), req(), "fast-1", 0, 10, 20, NOW, NOW) is None
    assert txn_claim(view(), req("stranger"), "fast-1", 0, 10, 20, NOW, NOW) is None


# -- a consumer (KIP-848) group's commit: rules 1', 3', 4' ----------------------------------------------------------

def consumer_claim(**fields) -> TxnClaim:
    return claim(consumer=True, **fields)


def heartbeat_of(member: str, offset: int = 15) -> TxnEntry:
    return entry(offset, {"api": "ConsumerGroupHeartbeat", "request_id": "h", "group_id": "g", "member_id": member,
                          "member_epoch": 3})


def test_a_consumer_members_liveness_before_the_mark_and_commits_fetches_and_describes_after_it_settle():
    after = [txn_commit(11), entry(12, {"api": "OffsetFetch", "request_id": "f", "group_id": "g"}),
             entry(13, {"api": "ConsumerGroupDescribe", "request_id": "d", "group_id": "g"}),
             liveness(14, member="other"), liveness(15)]
    assert settles([liveness(5)] + after, 0, consumer_claim())


def test_any_consumer_group_heartbeat_after_the_mark_does_not_settle():
    # the member's own may move its epoch; another's may replace it (its instance id) or change the group
    assert not settles([liveness(5), heartbeat_of(MEMBER)], 0, consumer_claim())
    assert not settles([liveness(5), heartbeat_of("other")], 0, consumer_claim())
    # a classic Heartbeat is not neutral in a consumer group (a classic member's, inside it) either
    classic = entry(15, {"api": "Heartbeat", "request_id": "h", "group_id": "g", "member_id": "other",
                         "generation_id": 3})
    assert not settles([liveness(5), classic], 0, consumer_claim())
    assert settles([liveness(5), classic], 0, claim())  # where a classic group's rule takes it


def test_a_consumer_members_session_restarts_only_from_its_liveness():
    # a forwarded ConsumerGroupHeartbeat may have moved its epoch: it is no restart, and before the mark the
    # member's own request means waiting
    assert not settles([heartbeat_of(MEMBER, offset=5)], 0, consumer_claim())
    assert not settles([liveness(4), heartbeat_of(MEMBER, offset=5)], 0, consumer_claim())
    forwarded = entry(5, {"api": "Heartbeat", "request_id": "h", "group_id": "g", "member_id": MEMBER,
                          "generation_id": 3}, timestamp_ms=NOW - 1_000)
    assert not settles([forwarded], 0, consumer_claim())
    assert settles([liveness(4), heartbeat_of("other", offset=5)], 0, consumer_claim())  # in the view as of M


def test_a_consumer_members_session_ending_within_the_margin_does_not_settle():
    late = NOW + 2 + MARGIN_MS - SESSION
    assert not settles([liveness(5, heard_ms=late)], 0, consumer_claim())
    assert settles([liveness(5, heard_ms=late + 1)], 0, consumer_claim())
    assert not settles([liveness(5, generation=2)], 0, consumer_claim())
    assert not settles([liveness(5, answered=22)], 0, consumer_claim())


def test_the_consumer_claim_is_the_member_at_its_epoch_reconciled_and_on_the_consumer_protocol():
    from schemas.consumer_group import ConsumerGroupView, ConsumerViewCommitter, ConsumerViewMember
    from state.api import decode_request
    from state.views.published import PublishedConsumerGroup
    from state.views.txn_proof import txn_claim

    def view(epoch: int = 3, listed: bool = True, classic: bool = False, committers: bool = True):
        return PublishedConsumerGroup(ConsumerGroupView(
            group_epoch=epoch, heartbeat_interval_ms=5_000, session_timeout_ms=SESSION,
            members=(ConsumerViewMember(MEMBER, "static-1", epoch, None),) if listed else (),
            committers=(ConsumerViewCommitter(MEMBER, epoch, classic, None),) if committers else UNSET))

    def req(epoch: int = 3, member: str = MEMBER):
        return decode_request(json.dumps({"api": "TxnOffsetCommit", "request_id": "", "group_id": "g",
                                          "transactional_id": "tx", "producer_id": 1, "producer_epoch": 0,
                                          "generation_id": epoch, "member_id": member, "group_instance_id": None,
                                          "topics": []}).encode())

    made = txn_claim(view(), req(), "fast-1", 0, 10, 20, NOW, NOW + 2)
    assert (made.consumer, made.generation, made.instance_id, made.session_timeout_ms, made.others,
            made.request_id) == (True, 3, "static-1", SESSION, False, "fast-1")
    assert settles([liveness(5)], 0, made)
    # rule 1': refused where the member is not listed (revoking, owing a heartbeat), at another epoch, on the
    # classic protocol, unknown, or where the view has no committers (an older release's)
    assert txn_claim(view(listed=False), req(), "fast-1", 0, 10, 20, NOW, NOW) is None
    assert txn_claim(view(), req(epoch=2), "fast-1", 0, 10, 20, NOW, NOW) is None
    assert txn_claim(view(classic=True), req(), "fast-1", 0, 10, 20, NOW, NOW) is None
    assert txn_claim(view(), req(member="stranger"), "fast-1", 0, 10, 20, NOW, NOW) is None
    assert txn_claim(view(committers=False), req(), "fast-1", 0, 10, 20, NOW, NOW) is None


def test_at_the_members_own_epoch_the_coordinator_accepts_every_partition_whatever_the_topics():
    """What rule 1' rests on: `commit_member` accepts the member at exactly its epoch without a per-partition check
    (a topic deleted or recreated between the mark and the commit changes nothing), and refuses it at any other."""
    from dataclasses import dataclass

    import pytest

    from state.consumer.offsets import commit_member
    from state.errors import CoordinatorError

    @dataclass
    class Member:
        member_epoch: int
        uses_classic_protocol: bool = False
        principal: str | None = None

    members = {MEMBER: Member(3)}
    assert commit_member(members, "g", member_id=MEMBER, instance_id=None, member_epoch=3, api_version=4,
                         transactional=True) is None
    assert commit_member(members, "g", member_id=MEMBER, instance_id=None, member_epoch=2, api_version=4,
                         transactional=True) is members[MEMBER]  # then checked partition by partition
    with pytest.raises(CoordinatorError):
        commit_member(members, "g", member_id=MEMBER, instance_id=None, member_epoch=4, api_version=4,
                      transactional=True)

"""When a TxnOffsetCommit answered from a view needs no wait for the coordinator's decision (docs/gateway.md,
"Transactions": "When the EndTxn is not held").

A TxnOffsetCommit answered from a view is written inside the client's transaction at offset `c` of the group's
requests-topic partition; the coordinator decides it on the group as it is when it applies `c`. The gateway holds
the transaction's EndTxn(COMMIT) until that decision comes, unless it can show that the decision is the one it
gave: that the group the coordinator will apply `c` to accepts the member exactly as the view did. This is the
coordinator's rule of when that is shown; the gateway only feeds it what it read: the claim it makes of the view
(`txn_claim`) and the partition's requests (`request_entry`, read_uncommitted, `c` included). It settles
(`txn_settles`) when:

1. the view is a classic group's, Stable, at the request's generation, with the committing member in it; where it
   has other members, their expiry can only start a join phase (PreparingRebalance, which does not refuse a
   transactional commit) that ends, without the committing member's JoinGroup, at the rebalance timeout of the
   members left, at least the committing member's (`rebalance_timeout_ms` in the view), counted from an expiry
   after the member's heartbeat of rule 4 was applied: that must come `MARGIN_MS` after the latest instant of
   rule 4 too;
2. the view is as of mark `M` or later: every request of the partition below `M` was applied and its views read
   before the view was taken (`ViewFollower.covered`, read before the view), and `c - M` is below MAX_BEHIND, so
   the batch that first reads `c` cannot be cut before it by `max.requests.per.trigger`;
3. every request of the group in `[M, c)` changes nothing a TxnOffsetCommit is checked against (`NEUTRAL`: commits,
   heartbeats, Liveness, fetches): no JoinGroup, SyncGroup, LeaveGroup, DeleteGroups, PendingMember, LoadGroup, ...;
4. no timer can remove the member before `c`: the member's session, restarted by a heartbeat this module saw
   accepted before `M` (a Liveness entry or a forwarded Heartbeat of the member at the view's generation; the
   group was Stable at that generation from the heartbeat's answer to `M`, so the coordinator restarted it), and by
   every later one it saw (the coordinator takes each as it comes, an older one included), ends at the earliest
   `MARGIN_MS` after the latest of: `c`'s timestamp, the instant its write was acknowledged, and the timestamps of
   the group's requests in `[M, c)`. The coordinator counts `c` at its timestamp, raised to the group's clock,
   which only a batch time or an earlier request of the group raised; a batch that did not read `c` was planned
   before `c` could be read, so its time is at most the acknowledgement plus the time the query takes from
   reading its sources' ends to taking its batch time, plus the clocks' skew (MARGIN_MS covers both).

A consumer (KIP-848) group's commit is shown the same way, with its own rules 1, 3 and 4 (`consumer` in the
claim): the coordinator accepts a transactional commit of a consumer-protocol member at exactly its current
member epoch for every partition, whatever the topics (`state.consumer.offsets.commit_member`), and a member's
epoch moves only in its own ConsumerGroupHeartbeat (Kafka's reconciliation), or it is removed (fenced):
1'. the view is a consumer group's, the committing member in it at the request's epoch (`members`: reconciled to
    the group's target, owing the coordinator no heartbeat, so no revocation is pending and no rebalance timeout
    runs for it) and on the consumer protocol (`committers`: a classic-protocol member of a migrating group is
    left to the coordinator);
3'. every request of the group in `[M, c)` is a commit, a fetch, a describe or a Liveness (`CONSUMER_NEUTRAL`): any
    ConsumerGroupHeartbeat waits (the member's own may move its epoch, another with its instance id replaces it,
    another member's changes the group), and so does a classic Heartbeat, JoinGroup, ... Another member's expiry,
    a timer, bumps the group epoch and its target, but moves this member's epoch only at its own next heartbeat,
    and a rebalance timeout is armed only there (a Liveness heartbeat the coordinator would have answered
    otherwise is not applied: the member then owes one), so no `others` term;
4'. the member's session, restarted by a Liveness entry of it at that epoch answered NONE (a forwarded
    ConsumerGroupHeartbeat is not taken: it may have moved the epoch), ends as in rule 4, with the group's
    session timeout, which the view carries (`group.consumer.session.timeout.ms`, every consumer-protocol member's).

Anything else (no mark, a gap in the log, a read that fails, a record it cannot read) says no, and the EndTxn
waits for the decision as before. The coordinator's decision still comes for every commit answered from a view;
one that differs from a commit shown settled is logged as an error (the gateway's `FastPath`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from state.views.published import PublishedConsumerGroup, PublishedGroup

MARGIN_MS = 10_000
"""How much later than the commit's timestamp, its acknowledgement and the group's requests before it the member's
session must end (the query's planning time, from reading its sources' ends to taking its batch time, and the
clocks' skew between the gateways and the driver, are assumed below it)."""
MAX_BEHIND = 1_000
"""At most this many offsets between the mark and the commit: the source gives every partition an even share of
`max.requests.per.trigger` (50,000 by default, over 16 partitions by default) before the rest."""
NEUTRAL = frozenset({"OffsetCommit", "TxnOffsetCommit", "Heartbeat", "Liveness", "OffsetFetch", "DescribeGroups"})
"""Requests that change neither a classic group's generation, state nor members."""
CONSUMER_NEUTRAL = frozenset({"OffsetCommit", "TxnOffsetCommit", "Liveness", "OffsetFetch", "DescribeGroups",
                              "ConsumerGroupDescribe"})
"""Requests that move no consumer-protocol member's epoch and remove no member of a consumer group (rule 3')."""


class _Heard(msgspec.Struct):
    member_id: str
    generation_id: int
    heard_ms: int
    answered: int
    group_instance_id: str | None = None
    principal: str | None = None


class _Request(msgspec.Struct):
    """What a request of the log says that matters here (msgspec ignores the rest)."""

    api: str = ""
    request_id: str = ""
    member_id: str | None = None
    generation_id: int | None = None
    group_instance_id: str | None = None
    principal: str | None = None
    members: list[_Heard] | None = None


_DECODE = msgspec.json.Decoder(_Request)


@dataclass(frozen=True, slots=True)
class TxnEntry:
    """A request of the partition: its offset, its record's timestamp, and what it says (None: unreadable)."""

    offset: int
    timestamp_ms: int
    request: _Request | None


@dataclass(frozen=True, slots=True)
class TxnClaim:
    """A TxnOffsetCommit answered from `view` (see the module) and written at `offset`."""

    group_id: str
    partition: int
    mark: int
    offset: int
    member_id: str
    generation: int
    instance_id: str | None
    principal: str | None
    session_timeout_ms: int
    timestamp_ms: int
    acknowledged_ms: int
    others: bool = False
    """Whether the view has members besides the committing one."""
    rebalance_timeout_ms: int | None = None
    """The committing member's rebalance timeout (None: the view does not say)."""
    request_id: str = ""
    """The request's id, which the record at `offset` must carry (an upstream that took the write for a duplicate
    of an older one answers that one's offset)."""
    consumer: bool = False
    """A consumer group's claim (rules 1', 3', 4'): `generation` is the member epoch."""


def request_entry(offset: int, timestamp_ms: int, value: bytes | None) -> TxnEntry:
    """A request of the requests topic as `txn_settles` reads it: the record's offset, timestamp and value."""
    try:
        request = _DECODE.decode(value or b"")
    except msgspec.DecodeError:
        request = None
    return TxnEntry(offset, timestamp_ms, request)


def txn_claim(view: Any, req: Any, request_id: str, partition: int, mark: int | None, offset: int,
              timestamp_ms: int, acknowledged_ms: int) -> TxnClaim | None:
    """The claim that the coordinator accepts the TxnOffsetCommit `req` (answered from `view` and written as
    request `request_id` at `offset` of `partition`, stamped `timestamp_ms`, acknowledged at `acknowledged_ms`) as
    the view did, the view being as of `mark` in that partition (None: unknown, and nothing can be shown). None
    where the view is not a Stable classic group's with the member committing at its generation (rule 1): its
    EndTxn waits for the decision."""
    if isinstance(view, PublishedConsumerGroup):
        return _consumer_claim(view, req, request_id, partition, mark, offset, timestamp_ms, acknowledged_ms)
    if not isinstance(view, PublishedGroup) or view.state != "Stable" or req.generation_id != view.generation:
        return None
    member = view.members.get(req.member_id)
    if member is None:
        return None
    return TxnClaim(group_id=req.group_id, partition=partition, mark=-1 if mark is None else mark, offset=offset,
                 member_id=req.member_id, generation=req.generation_id, instance_id=member.group_instance_id,
                 principal=member.principal, session_timeout_ms=member.session_timeout_ms,
                 timestamp_ms=timestamp_ms, acknowledged_ms=acknowledged_ms, others=len(view.members) > 1,
                 rebalance_timeout_ms=member.rebalance_timeout_ms, request_id=request_id)


def _consumer_claim(view: PublishedConsumerGroup, req: Any, request_id: str, partition: int, mark: int | None,
                    offset: int, timestamp_ms: int, acknowledged_ms: int) -> TxnClaim | None:
    """Rule 1': the member in the view's `members` at the request's epoch, on the consumer protocol."""
    member = view.members.get(req.member_id)
    committer = None if view.committers is None else view.committers.get(req.member_id)
    if (member is None or committer is None or committer.uses_classic_protocol or req.generation_id < 0
            or member.member_epoch != req.generation_id or committer.member_epoch != req.generation_id):
        return None
    return TxnClaim(group_id=req.group_id, partition=partition, mark=-1 if mark is None else mark, offset=offset,
                    member_id=req.member_id, generation=req.generation_id, instance_id=member.instance_id,
                    principal=member.principal, session_timeout_ms=view.session_timeout_ms,
                    timestamp_ms=timestamp_ms, acknowledged_ms=acknowledged_ms, request_id=request_id,
                    consumer=True)


def txn_settles(entries: list[TxnEntry], start: int, claim: TxnClaim) -> bool:
    """Whether the coordinator will accept `claim` as the view did, from the group's requests `entries` (every one
    of the partition's from offset `start` on, in order; later ones than `claim.offset` are ignored)."""
    mark, offset = claim.mark, claim.offset
    if not start <= mark <= offset or offset - mark > MAX_BEHIND:
        return False
    if claim.others and claim.rebalance_timeout_ms is None:
        return False
    deadlines: list[int] = []
    latest = max(claim.timestamp_ms, claim.acknowledged_ms)
    if not any(e.offset == offset and e.request is not None and e.request.request_id == claim.request_id
               for e in reversed(entries)):
        return False  # the record at `offset` is not this request
    for entry in reversed(entries):
        if entry.offset >= offset:
            continue
        if entry.offset < start:
            break  # not read from here: what came before is not known
        req = entry.request
        if req is None:
            return False
        restart = _restart(req, entry.timestamp_ms, claim)
        if entry.offset < mark:
            if restart is not None:
                deadlines.append(restart)
                if claim.others:  # another member's expiry, after this heartbeat, and the join phase it starts
                    deadlines.append(entry.timestamp_ms + claim.rebalance_timeout_ms)  # type: ignore[operator]
                return min(deadlines) - latest > MARGIN_MS
            if _names(req, claim.member_id) and req.api not in ("OffsetCommit", "TxnOffsetCommit"):
                return False  # the member's session may have restarted otherwise (a rejoin)
            continue
        if req.api not in (CONSUMER_NEUTRAL if claim.consumer else NEUTRAL):
            return False
        latest = max(latest, entry.timestamp_ms)
        if restart is not None:
            deadlines.append(restart)
        elif _names(req, claim.member_id) and req.api not in ("OffsetCommit", "TxnOffsetCommit"):
            return False
    return False  # no heartbeat of the member seen before the mark


def _restart(req: _Request, timestamp_ms: int, claim: TxnClaim) -> int | None:
    """The session deadline at the earliest that this request sets for the claim's member, where it is a heartbeat
    of the member the coordinator accepts at the claim's generation (None: it is not one)."""
    if req.api == "Heartbeat" and not claim.consumer:
        if (req.member_id == claim.member_id and req.generation_id == claim.generation
                and req.group_instance_id in (None, claim.instance_id) and req.principal == claim.principal):
            return timestamp_ms + claim.session_timeout_ms
        return None
    if req.api != "Liveness" or not req.members:
        return None
    heard = [m for m in req.members if m.member_id == claim.member_id]
    if not heard or not all(m.generation_id == claim.generation and m.answered == 0
                            and m.group_instance_id in (None, claim.instance_id) and m.principal == claim.principal
                            for m in heard):
        return None
    # the coordinator restarts the session from min(heard, its time), its time never before the record's
    return min(min(m.heard_ms for m in heard), timestamp_ms) + claim.session_timeout_ms


def _names(req: _Request, member_id: str) -> bool:
    if req.member_id == member_id:
        return True
    return req.api == "Liveness" and any(m.member_id == member_id for m in req.members or ())

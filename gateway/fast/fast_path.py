"""Heartbeats and commits answered by the gateway from the group's view (docs/gateway.md, "Fast answers").

The coordinator query stays the only authority: it applies every request, in the requests topic's order, with the
core's rules. The gateway answers at once what a fresh view of the group (`gateway.fast.views`) decides positively, with
the same rules (`state.api.heartbeat_from_view`, `commit_from_view`); anything else waits for the coordinator, as
every request did before.

- Heartbeat: answered at once. The coordinator still hears of it, coalesced: at most one internal Liveness request
  per group and liveness interval names every member heard since the last one, when, and what it was answered
  (`Heartbeats`). Before a request of the group that waits for the coordinator is written, the group's pending
  Liveness request is written first, so the coordinator sees the group's requests in the order the gateway got them.
- ConsumerGroupHeartbeat (KIP-848): a heartbeat that changes nothing for its member (`consumer_heartbeat_from_view`:
  a member of the view at its epoch, declaring nothing new) is answered at once and heard like a Heartbeat; where
  the coordinator would have answered otherwise, the member owes it a heartbeat and leaves the view.
- OffsetCommit: appended to the requests topic (acks=all) carrying the answer given (`answered`), then answered
  once the append is acknowledged. The coordinator applies it as always and sends no answer; where it decides
  otherwise (the view was stale), it counts a misprediction. The offsets are the coordinator's decision alone. One
  the view read does not accept waits for the follower's next round (the view after the member's SyncGroup may not
  be read yet) and is answered from that view where it accepts it.
- TxnOffsetCommit: answered as an OffsetCommit, written inside the producer's transaction instead of appended
  (`txn_commit`); its offsets stay pending until the transaction's marker. While a classic JoinGroup, SyncGroup or
  LeaveGroup of the group is forwarded, and until the view that follows its answer is read, it goes to the
  coordinator. The view may still be stale (by the follower's lag) after a change no request of this gateway
  caused: a session that expired, a rebalance through another gateway. The coordinator would then refuse the
  offsets the gateway accepted, and a transaction that committed its output without them would be read again by
  the partition's next owner. So the coordinator sends its decision on every TxnOffsetCommit answered here, and the
  transaction's EndTxn(COMMIT) is held until each has come (`txn_settled`): where one was refused, the EndTxn is
  answered TRANSACTION_ABORTABLE without reaching the upstream, and the client aborts, as Kafka's client aborts a
  transaction whose TxnOffsetCommit failed. Neither the output without the offsets nor the offsets without the
  output are ever committed. This costs the transaction one micro-batch, which the fast answer had saved; a
  gateway of several processes (whose EndTxn may reach another process) leaves TxnOffsetCommit to the
  coordinator.
- OffsetFetch: answered from the offsets a view carries (a Stable classic group's, a consumer group's where none
  can expire), as of the last request the coordinator applied for it, when the follower, woken after the fetch
  arrived, finds nothing written to the group's requests-topic partition since that request; not written to the
  requests topic (it changes nothing). While a request of the group this gateway forwarded is being applied (a
  member acknowledging the partitions it is about to fetch for), the fetch waits for the view that follows it.
- A consumer group's OffsetCommit: as a classic one, where the consumer group's rule accepts it whole (its member
  at its epoch, `state.consumer.offsets.commit_member`), also while the member revokes partitions.
- Once a KIP-848 heartbeat that declares something (a join, a leave, owned partitions) is forwarded to the
  coordinator, the group's heartbeats are not answered from the view until the follower has read the views in a
  round begun after the coordinator's answer (the view that step wrote, before its answer); one that arrives
  meanwhile waits for that view. An older view would tell a member nothing changed, and it would hear of the new
  target a heartbeat interval later.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from typing import Any, Awaitable, Callable

import msgspec

from common.generations import group_log_end
from gateway.upstream.appender import AppendFailed, Appender
from gateway.upstream.control import Json
from gateway.upstream.coordinator import CoordinatorClient, not_written
from gateway.upstream.transactions import NotWritten
from gateway.fast.holds import Holds
from gateway.fast.requests_log import RequestsLog
from gateway.upstream.transactions import Written
from gateway.fast.views import ViewFollower
from state.api import (BadRequest, PublishedGroup, PublishedView, commit_from_view, commit_response,
                       consumer_heartbeat_from_view, declares_nothing_new, decode_request, encode, fetch_from_view,
                       share_heartbeat_from_view, heartbeat_from_view, TxnClaim, txn_claim,
                       txn_commit_from_view)

log = logging.getLogger(__name__)

REFRESH_TIMEOUT_S = 1.0
"""How long an OffsetFetch waits for the view follower's fresh round before asking the coordinator."""

COMMIT_REFRESH_TIMEOUT_S = 0.5
"""How long a commit the view read does not accept waits for the follower's next round before asking the
coordinator (a round takes milliseconds; the coordinator a micro-batch)."""

SETTLE_TIMEOUT_S = 30.0
"""How long a transaction's EndTxn(COMMIT) waits for the coordinator's decisions on the TxnOffsetCommits answered
from views; past it, the transaction is aborted (its offsets may not have been accepted)."""

TRANSACTION_ABORTABLE = 120
"""Kafka's answer (KIP-890) to an EndTxn whose transaction can only be aborted; librdkafka takes any EndTxn error
it does not name as permanent and puts the transaction in its abortable state."""

HOLD_WAIT_S = 2.0
"""How long an OffsetFetch or a held heartbeat waits for the view that follows a request of its group the gateway
forwarded."""

LIVENESS_SESSION_FRACTION = 3
"""A group's liveness interval is at most its smallest session timeout divided by this (Kafka's advice for the
heartbeat interval), so that a member heartbeating at that advice is heard well within its session."""


class Heartbeats:
    """The heartbeats answered from views, per group, until they are written as one Liveness request."""

    def __init__(self, appender: Appender, interval_ms: int, loop: asyncio.AbstractEventLoop,
                 clock: Callable[[], float] = time.time) -> None:
        self._appender = appender
        self._interval_s = interval_ms / 1000
        self._loop = loop
        self._clock = clock
        self._pending: dict[str, dict[str, dict]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._ids = itertools.count()
        self._prefix = f"liveness-{uuid.uuid4().hex[:8]}"

    def heard(self, group_id: str, view: PublishedView, member_id: str, instance: str | None, generation: int,
              principal: str | None, answered: int) -> None:
        members = self._pending.setdefault(group_id, {})
        members[member_id] = {"member_id": member_id, "group_instance_id": instance, "generation_id": generation,
                              "principal": principal, "heard_ms": int(self._clock() * 1000), "answered": answered}
        if group_id not in self._timers:
            interval = self._interval_s
            session = view.min_session_timeout_ms()
            if session is not None:
                interval = min(interval, session / 1000 / LIVENESS_SESSION_FRACTION)
            self._timers[group_id] = self._loop.call_later(interval, self.flush, group_id)

    def flush(self, group_id: str) -> None:
        """Write the group's pending Liveness request now, if it has one (not waited for: a lost one costs at most
        a session restart the coordinator does not see)."""
        timer = self._timers.pop(group_id, None)
        if timer is not None:
            timer.cancel()
        members = self._pending.pop(group_id, None)
        if not members:
            return
        body = {"api": "Liveness", "request_id": f"{self._prefix}-{next(self._ids)}", "group_id": group_id,
                "members": list(members.values())}
        self._appender.append(group_id, encode(body)).add_done_callback(_log_failure)

    def flush_all(self) -> None:
        for group_id in list(self._pending):
            self.flush(group_id)


_MEMBERSHIP_APIS = frozenset({"JoinGroup", "SyncGroup", "LeaveGroup"})
_MEMBERSHIP_HOLD = "\x00membership:"
"""A classic membership request forwarded to the coordinator holds the group's transactional commits (under this
prefix of its id in `Holds`) until the view that follows its answer is read: once a member has learnt its new
generation (or a replacing static member its id), the older view would accept a TxnOffsetCommit of the old
generation (a zombie's), and the coordinator's refusal would come after the client's transaction committed without
those offsets. Commits of a group that is between generations go to the coordinator."""


def _may_change_group(api: str, body: Json) -> bool:
    """A KIP-848 heartbeat that declares something (a join, a leave, owned partitions, a subscription): its answer
    may change what the group's other heartbeats are answered. (A classic JoinGroup is answered only once its join
    phase ends: its answer cannot release a hold, docs/gateway.md.)"""
    if api == "ShareGroupHeartbeat":
        return (body.get("member_epoch", 0) <= 0 or body.get("rack_id") is not None
                or body.get("subscribed_topic_names") is not None)
    if api != "ConsumerGroupHeartbeat":
        return False
    try:
        return not declares_nothing_new(decode_request(encode({**body, "request_id": ""})))
    except BadRequest:
        return False  # the coordinator refuses it


def _at_once(answer: Json) -> Awaitable[Json]:
    """An answer the gateway gives without waiting."""
    done = asyncio.get_running_loop().create_future()
    done.set_result(answer)
    return done


def _log_failure(written: asyncio.Future) -> None:
    if not written.cancelled() and written.exception() is not None:
        log.warning("a Liveness request could not be written: %s", written.exception())


class FastPath:
    def __init__(self, follower: ViewFollower, appender: Appender, heartbeats: Heartbeats,
                 max_metadata_bytes: int, offset_fetch_by_coordinator: bool = False,
                 holds: Holds | None = None, coordinator: CoordinatorClient | None = None) -> None:
        self.follower = follower
        self.coordinator = coordinator
        """Where the coordinator's decisions on the TxnOffsetCommits answered here are awaited (None: they are not
        answered here)."""
        self._unsettled: dict[tuple[str, int, int],
                              list[tuple[str, asyncio.Future, Json, asyncio.Future | None]]] = {}
        """Per transaction (transactional id, producer id, epoch): the TxnOffsetCommits answered from views whose
        decision its EndTxn(COMMIT) waits for unless shown settled: request id, the decision's future, the answer
        given, and the reading of the requests topic that may show it settled (None: none begun)."""
        self.requests_log: RequestsLog | None = None
        """Where the requests topic is read to show a TxnOffsetCommit settled (`state.api.txn_settles`; None: the
        EndTxn always waits for the decisions). Set by the gateway, whose upstream connections it reads on."""
        self.txn_proven = 0
        """TxnOffsetCommits whose EndTxn went on without their decision (shown settled)."""
        self.txn_waited = 0
        """EndTxn(COMMIT)s that waited for the coordinator's decisions."""
        self._proven_ids: set[str] = set()
        """Transactional ids with a commit shown settled (logged once each)."""
        self.txn_proofs_wrong = 0
        """Commits shown settled that the coordinator then decided otherwise (a bug: logged as an error)."""
        self.offset_fetch_by_coordinator = offset_fetch_by_coordinator
        self.appender = appender
        self.heartbeats = heartbeats
        self.max_metadata_bytes = max_metadata_bytes
        self._ids = itertools.count()
        self._prefix = f"fast-{uuid.uuid4().hex[:8]}"
        self._commit_turns: dict[str, asyncio.Future] = {}
        """Per group: the last commit waiting for a fresher view (`_commit`), done once it is written or left to
        the coordinator."""
        self.holds = holds or Holds()
        """Per group: requests that may change it, forwarded to the coordinator and not yet answered, and when the
        last was answered: no view answers its heartbeats before a follower round begun later. Shared by the
        processes of one gateway (`gateway.fast.holds`)."""

    def answer(self, api: str, body: Json) -> Awaitable[Json | None] | None:
        """The answer to a control request `body` (one group's, as the gateway would write it) where the group's
        view decides it; None, or an awaitable that gives None: ask the coordinator."""
        if api == "Heartbeat":
            return self._heartbeat(body)
        if api in ("ConsumerGroupHeartbeat", "ShareGroupHeartbeat"):
            return self._consumer_heartbeat(body)
        if api == "OffsetCommit":
            return self._commit(body)
        return None

    async def offset_fetch(self, body: Json) -> Json | None:
        """The answer to an OffsetFetch control request from the group's view, where its offsets are the group's
        now (`state.api.fetch_from_view`): the follower reads the views and notes the requests topic's ends anew,
        after this request arrived, so a commit acknowledged before it is seen. None: ask the coordinator."""
        if self.offset_fetch_by_coordinator or not self.follower.fresh():
            return None
        try:
            req = decode_request(encode({**body, "request_id": ""}))
            ends = await asyncio.wait_for(self.follower.refresh(), REFRESH_TIMEOUT_S)
        except (BadRequest, asyncio.TimeoutError):
            return None
        view = self.follower.view(req.group_id)
        if ends is None or view is None or view.position is None:
            return None  # no view, or one without offsets
        log_end = group_log_end(ends, view.position.partition)
        answer = fetch_from_view(view, req, log_end)
        if answer is None and self._holds(req.group_id):
            # A request of the group this gateway forwarded (a member acknowledging its partitions, just before
            # its fetch) is being applied: the view its step publishes may cover `log_end`. Asking the
            # coordinator instead would wait for the batch after that one.
            await self._hold_ended(req.group_id)
            answer = fetch_from_view(self.follower.view(req.group_id), req, log_end)
        return None if answer is None else msgspec.to_builtins(answer)

    def before_request(self, api: str, body: Json) -> None:
        """A request of the group that waits for the coordinator is about to be written: the heartbeats answered
        before it go first. One that may change what a heartbeat is answered holds the group's heartbeat answers
        (`after_request`); a classic membership request holds its transactional commits (`txn_commit`)."""
        group_id = body["group_id"]
        self.heartbeats.flush(group_id)
        if _may_change_group(api, body):
            self.holds.forwarding(group_id)
        if api in _MEMBERSHIP_APIS:
            self.holds.forwarding(_MEMBERSHIP_HOLD + group_id)

    def after_request(self, api: str, body: Json) -> None:
        """The coordinator answered a request of the group `before_request` saw (or it failed): heartbeats (and,
        after a classic membership request, transactional commits) wait for the views read in a follower round
        begun after now, which hold the view the step that answered it wrote (written before its answers)."""
        if api in _MEMBERSHIP_APIS:
            self.holds.answered(_MEMBERSHIP_HOLD + body["group_id"], time.monotonic())
            self.follower.wake()
        if not _may_change_group(api, body):
            return
        self.holds.answered(body["group_id"], time.monotonic())
        self.follower.wake()

    def _holds(self, group_id: str) -> bool:
        """Whether a request that may change the group was forwarded to the coordinator and the view that followed
        its answer is not read yet: a heartbeat answered from the older view would be told nothing changed, and
        the member would hear of the change a heartbeat interval later. Commits and fetches need no hold: the
        coordinator checks every commit answered, after the forwarded request, and a fetch is answered only from a
        view as of the last request written to the group's partition."""
        return self.holds.holds(group_id, self.follower.read_as_of)

    async def _hold_ended(self, group_id: str) -> bool:
        """Wait, at most HOLD_WAIT_S, until the group is no longer held; whether it is not. Only a round of the
        follower ends a hold (`_holds`)."""
        return await self._after_rounds(lambda: not self._holds(group_id), HOLD_WAIT_S)

    async def _read_since(self, instant: float, timeout_s: float) -> bool:
        """Wake the follower and wait, at most `timeout_s`, until it has read the views in a round begun at
        `instant` or later; whether it has."""
        self.follower.wake()
        return await self._after_rounds(lambda: self.follower.read_as_of >= instant, timeout_s)

    async def _after_rounds(self, done: Callable[[], bool], timeout_s: float) -> bool:
        """Wait, at most `timeout_s`, until `done()` holds; whether it does. Only a round of the follower changes
        what it reads, so each round's end wakes the wait to look again; the round is asked for before the look,
        so that one ending in between is not missed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            round_ended = self.follower.round_ended()
            if done():
                round_ended.cancel()
                return True
            try:
                await asyncio.wait_for(round_ended, deadline - loop.time())
            except asyncio.TimeoutError:
                return done()

    def _request(self, body: Json):
        view = self.follower.view(body["group_id"])
        if view is None:
            return None, None
        try:
            return view, decode_request(encode({**body, "request_id": ""}))
        except BadRequest:
            return None, None  # the coordinator says what is wrong with it

    def _heartbeat(self, body: Json) -> Awaitable[Json] | None:
        view, req = self._request(body)
        if req is None:
            return None
        error = heartbeat_from_view(view, req)
        if error is None:
            return None
        self.heartbeats.heard(req.group_id, view, req.member_id, req.group_instance_id, req.generation_id,
                              req.principal, error)
        return _at_once({"throttle_time_ms": 0, "error_code": error})

    def _consumer_heartbeat(self, body: Json) -> Awaitable[Json | None] | None:
        """A consumer group's (KIP-848) or share group's (KIP-932) heartbeat that changes nothing for its member: answered at once, and heard
        in the group's Liveness request like a classic one (its member epoch as the generation). While the group is
        held (`_holds`), it waits for the view that follows (at most HOLD_WAIT_S), then is answered from it or asks
        the coordinator: forwarding it at once would cost the same batch and write a request to the group's
        partition, which sends the group's fetches to the coordinator."""
        if self._holds(body["group_id"]):
            return self._after_hold(body)
        return self._consumer_heartbeat_now(body)

    async def _after_hold(self, body: Json) -> Json | None:
        if not await self._hold_ended(body["group_id"]):
            return None
        answer = self._consumer_heartbeat_now(body)
        return None if answer is None else await answer

    def _consumer_heartbeat_now(self, body: Json) -> Awaitable[Json] | None:
        view, req = self._request(body)
        if req is None:
            return None
        if req.api == "ShareGroupHeartbeat":
            response = share_heartbeat_from_view(view, req)
            instance = None
        else:
            response = consumer_heartbeat_from_view(view, req)
            instance = req.instance_id
        if response is None:
            return None
        self.heartbeats.heard(req.group_id, view, req.member_id, instance, req.member_epoch, req.principal,
                              response.error_code)
        return _at_once(msgspec.to_builtins(response))

    def _commit(self, body: Json) -> Awaitable[Json | None] | None:
        """A commit the group's view accepts (`state.api.commit_from_view`), answered once it is appended. One the
        view read does not accept waits for a round of the follower begun after it arrived, and is answered from
        the view that round reads if that one accepts it: the view the coordinator wrote before its answer to the
        member's last request (the SyncGroup that formed the group, the heartbeat that gave it its epoch) may not
        be read yet, and asking the coordinator would cost a micro-batch (docs/gateway.md, "Every client's
        speed"). While one waits, the group's later commits wait their turn behind it, so that the group's
        commits reach the requests topic in the order they came."""
        group_id = body["group_id"]
        ahead = self._commit_turns.get(group_id)
        if ahead is None:
            view, req = self._request(body)
            if req is None:
                return None
            answer = commit_from_view(view, req, self.max_metadata_bytes)
            if answer is not None:
                return self._append_commit(body, req, answer)
        turn = asyncio.get_running_loop().create_future()
        self._commit_turns[group_id] = turn
        return self._commit_in_turn(body, ahead, turn)

    async def _commit_in_turn(self, body: Json, ahead: asyncio.Future | None, turn: asyncio.Future) -> Json | None:
        """The commit's answer from the view once the commit ahead of it is written (or, first in line, once the
        follower's next round is read); None: ask the coordinator. Its turn ends when it is written, or just before
        it returns None, so that the connection writes it to the coordinator before the next commit is looked at
        (`CoordinatorClient.call` writes before it returns)."""
        try:
            if ahead is not None:
                await asyncio.shield(ahead)
            elif not await self._read_since(time.monotonic(), COMMIT_REFRESH_TIMEOUT_S):
                return None
            view, req = self._request(body)
            answer = None if req is None else commit_from_view(view, req, self.max_metadata_bytes)
            if answer is None:
                return None
            written = self._append_commit(body, req, answer)
        finally:
            if not turn.done():
                turn.set_result(None)
            if self._commit_turns.get(body["group_id"]) is turn:
                del self._commit_turns[body["group_id"]]
        return await written

    def _append_commit(self, body: Json, req: Any, answer: Any,
                       write: Callable[[bytes], Awaitable[None]] | None = None) -> Awaitable[Json]:
        """Append the commit carrying its answer (or have `write` write it), and answer once that is
        acknowledged."""
        value = encode({**body, "request_id": f"{self._prefix}-{next(self._ids)}", "answered": answer})
        written = self.appender.append(req.group_id, value) if write is None else asyncio.ensure_future(write(value))
        return self._after(written, msgspec.to_builtins(commit_response(req, answer)), body)

    def txn_commit(self, body: Json, write: Callable[[bytes], Awaitable[Any]]) -> Awaitable[Json] | None:
        """A TxnOffsetCommit the group's view accepts (`state.api.txn_commit_from_view`, the coordinator's member
        checks read on the view), answered as an OffsetCommit is: written by `write` inside the producer's
        transaction (`gateway.upstream.transactions`) carrying the answer given, and answered once the upstream
        acknowledged the write. The coordinator checks it; its offsets stay pending until the transaction's marker,
        as any TxnOffsetCommit's. None: ask the coordinator."""
        group_id = body["group_id"]
        if self.coordinator is None:
            return None
        if self._holds(group_id) or self.holds.holds(_MEMBERSHIP_HOLD + group_id, self.follower.read_as_of):
            return None  # a member's generation may be changing (`_MEMBERSHIP_HOLD`)
        covered = self.follower.covered()  # before the view: the view is as of these marks or later
        view, req = self._request(body)
        if req is None:
            return None
        answer = txn_commit_from_view(view, req, self.max_metadata_bytes)
        if answer is None:
            return None
        request_id, decision = self.coordinator.expect(group_id)
        given = msgspec.to_builtins(commit_response(req, answer))
        value = encode({**body, "request_id": request_id, "answered": answer})
        return self._txn_written(asyncio.ensure_future(write(value)), given, body, request_id,
                                 asyncio.wrap_future(decision),
                                 _provable(view, req, covered, request_id, self.follower.older_covered))

    async def _txn_written(self, written: asyncio.Future, given: Json, body: Json, request_id: str,
                           decision: asyncio.Future, provable: Callable[[Any], TxnClaim | None] | None = None) -> Json:
        """The answer given once the write is acknowledged; from then on the transaction's EndTxn(COMMIT) waits
        for the coordinator's decision on it (`txn_settled`), unless the requests topic shows the decision is the
        answer given (`state.api.txn_settles`, begun now). A write that failed is answered with its error and
        awaited by nothing (the client aborts or retries it)."""
        answer = await self._after(written, given, body)
        if answer is given:
            proof = None
            if provable is not None and self.requests_log is not None and isinstance(written.result(), Written):
                claim = provable(written.result())
                if claim is not None:
                    proof = asyncio.ensure_future(self.requests_log.settles(claim))
            transaction = (body["transactional_id"], body["producer_id"], body["producer_epoch"])
            self._unsettled.setdefault(transaction, []).append((request_id, decision, given, proof))
        else:
            self.coordinator.forget(request_id)
        return answer

    async def txn_settled(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          committed: bool) -> int:
        """The error an EndTxn must be answered with instead of reaching the upstream (0: forward it). A COMMIT
        waits, at most SETTLE_TIMEOUT_S, for the coordinator's decision on each TxnOffsetCommit of the transaction
        answered here that the requests topic does not show settled (`state.api.txn_settles`); one that differs
        from the answer given (the view was stale) makes it TRANSACTION_ABORTABLE, as does a decision that did not
        come. An ABORT forgets them: the marker drops whatever was accepted."""
        unsettled = self._unsettled.pop((transactional_id, producer_id, producer_epoch), [])
        if not committed or not unsettled:
            for request_id, _, _, proof in unsettled:
                self.coordinator.forget(request_id)
                if proof is not None:
                    proof.cancel()
            return 0
        waiting = []
        for request_id, decision, given, proof in unsettled:
            if await _proven(proof):
                self.txn_proven += 1
                if transactional_id not in self._proven_ids:
                    if len(self._proven_ids) >= 10_000:
                        self._proven_ids.clear()
                    self._proven_ids.add(transactional_id)
                    log.info("transactional id %r: a TxnOffsetCommit shown settled from the requests topic, its "
                             "EndTxn not held", transactional_id)
                self._watch(transactional_id, request_id, decision, given)
            else:
                waiting.append((request_id, decision, given))
        if not waiting:
            return 0
        self.txn_waited += 1
        try:
            await asyncio.wait([d for _, d, _ in waiting], timeout=SETTLE_TIMEOUT_S)
        finally:
            for request_id, _, _ in waiting:
                self.coordinator.forget(request_id)
        for request_id, decision, given in waiting:
            if not decision.done():
                log.warning("transaction %r: no decision on TxnOffsetCommit %s within %.0f s: aborting it",
                            transactional_id, request_id, SETTLE_TIMEOUT_S)
                return TRANSACTION_ABORTABLE
            if _partition_errors(decision.result()) != _partition_errors(given):
                log.warning("transaction %r: the coordinator refused offsets answered from a stale view (%s): "
                            "aborting it", transactional_id, _partition_errors(decision.result()))
                return TRANSACTION_ABORTABLE
        return 0

    def _watch(self, transactional_id: str, request_id: str, decision: asyncio.Future, given: Json) -> None:
        """A commit shown settled: its EndTxn went on; the coordinator's decision, when it comes, must agree (an
        error in the log where it does not, which no test may see), and is forgotten after SETTLE_TIMEOUT_S."""
        loop = asyncio.get_running_loop()
        timer = loop.call_later(SETTLE_TIMEOUT_S, self.coordinator.forget, request_id)

        def decided(done: asyncio.Future) -> None:
            timer.cancel()
            self.coordinator.forget(request_id)
            if done.cancelled() or done.exception() is not None:
                return
            if _partition_errors(done.result()) != _partition_errors(given):
                self.txn_proofs_wrong += 1
                log.error("transaction %r: TxnOffsetCommit %s was shown settled but the coordinator decided %s",
                          transactional_id, request_id, _partition_errors(done.result()))

        decision.add_done_callback(decided)

    @staticmethod
    def _after(written: asyncio.Future, answer: Json, body: Json) -> asyncio.Future:
        """`answer` once `written` is acknowledged, the write's error as the answer where it failed: a future
        completed by a callback (a commit's answer takes no task; `gateway.front.connection`)."""
        after = asyncio.get_running_loop().create_future()

        def settled(done: asyncio.Future) -> None:
            if after.done():
                return
            if done.cancelled():
                after.cancel()
                return
            exc = done.exception()
            if exc is None:
                after.set_result(answer)
            elif isinstance(exc, (AppendFailed, NotWritten, ConnectionError, OSError, asyncio.TimeoutError)):
                after.set_result(not_written(body, exc))
            else:
                after.set_exception(exc)

        written.add_done_callback(settled)
        return after

    def close(self) -> None:
        if self.txn_proven or self.txn_waited:
            log.info("transactions: %d TxnOffsetCommits shown settled from the requests topic (EndTxn not held), "
                     "%d EndTxn(COMMIT)s held for the coordinator's decisions, %d shown settled wrongly",
                     self.txn_proven, self.txn_waited, self.txn_proofs_wrong)
        self.heartbeats.flush_all()
        self.follower.close()


PROOF_TIMEOUT_S = 1.0
"""How long an EndTxn waits for the reading of the requests topic before it waits for the decisions instead."""


async def _proven(proof: asyncio.Future | None) -> bool:
    if proof is None:
        return False
    try:
        return bool(await asyncio.wait_for(asyncio.shield(proof), PROOF_TIMEOUT_S))
    except asyncio.TimeoutError:
        return False
    except Exception as exc:  # noqa: BLE001 - unproven: the EndTxn waits for the decision
        log.info("showing a TxnOffsetCommit settled: %s", exc)
        return False


def _provable(view: Any, req: Any, covered: dict[int, int] | None, request_id: str,
              older_covered: Callable[[int, dict[int, int]], bool]) -> Callable[[Written], TxnClaim | None] | None:
    """How to claim, once written, that the coordinator accepts this TxnOffsetCommit as the view did
    (`state.api.txn_claim`: the claim is None where the view cannot show it). None: the marks are not known, and
    its EndTxn waits for the decision. The claim reads the requests written after the mark in its own partition
    only, so where an older generation's partition of the same number holds requests the marks do not cover
    (`ViewFollower.older_covered`), it has no mark and shows nothing."""
    if covered is None:
        return None

    def claim(written: Written) -> TxnClaim | None:
        mark = covered.get(written.partition) if older_covered(written.partition, covered) else None
        return txn_claim(view, req, request_id, written.partition, mark, written.offset,
                         written.timestamp_ms, int(time.time() * 1000))

    return claim


def _partition_errors(answer: Json) -> list[tuple[str, int, int]]:
    """A TxnOffsetCommit answer's error per partition (a whole-request error on all of them)."""
    return sorted((t["name"], p["partition_index"], p["error_code"]) for t in answer.get("topics") or []
                  for p in t["partitions"])

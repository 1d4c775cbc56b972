"""A member of a classic consumer group, speaking to the coordinator through a `Transport`.

The structure follows Kafka's `AbstractCoordinator` / `ConsumerCoordinator` (and kafka-python's
`kafka/coordinator/`): the application thread drives joins and syncs from `poll()` and runs the rebalance
callbacks there; a heartbeat thread keeps the session alive and only *records* what the coordinator said
(rebalance needed, member unknown, fenced), which the next `poll()` acts on. The decisions are pure functions
elsewhere: what to do about each error code in `client.decisions`, what a rebalance gives up, keeps and takes
(eager or cooperative, KIP-429) and the leader's assignment in `client.rebalance`; this module carries them out:
requests, threads, the member's state under its lock, and the listener's callbacks.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Iterable, Protocol

from assignors import consumer_protocol as cp
from client import protocol
from client.decisions import Action, Reaction, commit_error, decide, most_drastic
from client.errors import (
    CommitFailedError,
    FencedInstanceError,
    GroupError,
    RebalanceInProgressError,
    RequestTimeoutError,
    for_code,
)
from client.rebalance import (
    SERVER_ASSIGNOR_PREFIX,
    PartitionCounts,
    TopicPartition,
    after_join,
    before_join,
    compute_assignment,
    rebalance_protocol,
)
from client.transport import Transport, default_client_host
from state.api import PENDING_MEMBER, pending_member_id
from state.errors import Errors

log = logging.getLogger(__name__)


class RebalanceListener(Protocol):
    """Kafka's ConsumerRebalanceListener. Called on the thread that calls `poll()`."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None: ...

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None: ...

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None: ...


class NoOpListener:
    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        pass

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        pass

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        # Kafka's default: lost partitions are handled as revoked ones.
        self.on_partitions_revoked(lost)


class MemberState(enum.Enum):
    UNJOINED = "unjoined"
    REBALANCING = "rebalancing"
    STABLE = "stable"
    FENCED = "fenced"
    CLOSED = "closed"


@dataclass(frozen=True)
class MemberConfig:
    """Kafka consumer settings, same names in snake_case and same defaults."""

    group_id: str
    client_id: str = "groupcoord-consumer"
    group_instance_id: str | None = None
    session_timeout_ms: int = 45_000
    rebalance_timeout_ms: int = 300_000
    """Kafka's `max.poll.interval.ms`, sent as JoinGroup `rebalance_timeout_ms`."""
    heartbeat_interval_ms: int = 3_000
    partition_assignment_strategy: tuple[str, ...] = ("range", "cooperative-sticky")
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30_000
    metadata_max_age_ms: int = 5_000
    """How often the leader re-reads partition counts to notice a topic that grew (Kafka's rebalance trigger)."""
    client_host: str = field(default_factory=default_client_host)


@dataclass(frozen=True)
class Generation:
    generation_id: int = -1
    member_id: str = ""
    protocol_name: str | None = None


NO_GENERATION = Generation()


class GroupMember:
    """Joins `config.group_id` with a subscription, keeps the session alive, tracks the assignment."""

    def __init__(
        self,
        transport: Transport,
        config: MemberConfig,
        partition_counts: PartitionCounts,
        listener: RebalanceListener | None = None,
    ) -> None:
        self.config = config
        self._transport = transport
        self._partition_counts = partition_counts
        self._listener: RebalanceListener = listener or NoOpListener()
        self._protocol = rebalance_protocol(config.partition_assignment_strategy)
        self._topics: tuple[str, ...] = ()
        self._lock = threading.RLock()
        self._generation = NO_GENERATION
        self._state = MemberState.UNJOINED
        self._owned: frozenset[TopicPartition] = frozenset()
        self._rejoin_needed = True
        self._fatal: GroupError | None = None
        self._is_leader = False
        self._assigned_counts: dict[str, int] | None = None
        self._last_metadata_check = 0.0
        self._last_poll = time.monotonic()
        self._closing = threading.Event()
        self._round: Future[tuple[Generation, frozenset[TopicPartition]] | None] | None = None
        self._heartbeat_thread = threading.Thread(
            target=self._heartbeat_loop, name=f"{config.client_id}-heartbeat", daemon=True
        )
        self._heartbeat_thread.start()

    # -- what the application sees ----------------------------------------------------------------------

    @property
    def rebalance_protocol(self) -> str:
        return self._protocol

    @property
    def generation(self) -> Generation:
        with self._lock:
            return self._generation

    @property
    def state(self) -> MemberState:
        with self._lock:
            return self._state

    @property
    def is_leader(self) -> bool:
        with self._lock:
            return self._is_leader

    @property
    def subscription(self) -> tuple[str, ...]:
        with self._lock:
            return self._topics

    @property
    def rejoin_needed(self) -> bool:
        """The member knows it must (re-)join: the next poll() starts a rebalance round."""
        with self._lock:
            return self._rejoin_needed

    def assignment(self) -> frozenset[TopicPartition]:
        with self._lock:
            return self._owned

    def subscribe(self, topics: Iterable[str], listener: RebalanceListener | None = None) -> None:
        """A changed subscription is announced by re-joining, as Kafka does."""
        new = tuple(sorted(set(topics)))
        with self._lock:
            if listener is not None:
                self._listener = listener
            if new != self._topics:
                self._topics = new
                self._rejoin_needed = True

    def poll(self, timeout_s: float | None = None) -> bool:
        """Take part in the group: start a (re-)join when needed and finish it, running the rebalance callbacks
        on this thread. The JoinGroup/SyncGroup exchange runs in the background, as Kafka's join future does,
        so `poll` returns False when `timeout_s` passes mid-rebalance (a cooperative member keeps consuming
        what it owns meanwhile). Returns True once the member is Stable with a current assignment. Raises
        FencedInstanceError after fencing, GroupError for configuration errors (protocol, session timeout)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._lock:
            self._last_poll = time.monotonic()
        while True:
            with self._lock:
                if self._fatal is not None:
                    raise self._fatal
                if self._state is MemberState.CLOSED:
                    raise GroupError(for_code(Errors.UNKNOWN_SERVER_ERROR), "poll", "member is closed")
                need = self._rejoin_needed or self._state is not MemberState.STABLE
            if self._round is not None:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    outcome = self._round.result(timeout=remaining)
                except FutureTimeout:
                    return False
                self._round = None
                if outcome is not None:
                    self._on_join_complete(*outcome)
                continue
            if not need:
                self._maybe_check_partition_counts()
                with self._lock:
                    if not self._rejoin_needed:
                        return True
                continue
            if not self._topics:
                return False
            self._on_join_prepare()
            with self._lock:
                self._state = MemberState.REBALANCING
            self._round = self._start_round()

    def commit(self, offsets: protocol.Offsets, timeout_s: float | None = None) -> None:
        """Commit with this member's generation (Kafka's commitSync). Raises CommitFailedError when the
        generation is gone, RebalanceInProgressError while the group rebalances, FencedInstanceError."""
        if not offsets:
            return
        deadline = time.monotonic() + (timeout_s or self.config.request_timeout_ms / 1000)
        while True:
            with self._lock:
                if self._fatal is not None:
                    raise self._fatal
                gen = self._generation
                rebalancing = self._rejoin_needed or self._state is MemberState.REBALANCING
            if gen.generation_id < 0:
                cls = RebalanceInProgressError if rebalancing else CommitFailedError
                code = Errors.REBALANCE_IN_PROGRESS if rebalancing else Errors.UNKNOWN_MEMBER_ID
                raise cls(for_code(code), "OffsetCommit", "no current generation")
            body = protocol.offset_commit(
                self.config.group_id, gen.generation_id, gen.member_id, self.config.group_instance_id, offsets
            )
            response = self._request(body)
            codes = {c for c in protocol.partition_errors(response).values() if c}
            if response.get("error_code"):
                codes.add(response["error_code"])
            if not codes:
                return
            code = most_drastic("OffsetCommit", codes)
            reaction = decide("OffsetCommit", code)
            if reaction.action is Action.RETRY and time.monotonic() < deadline:
                time.sleep(self.config.retry_backoff_ms / 1000)
                continue
            self._apply(reaction, gen, "OffsetCommit", code)
            raise commit_error(reaction, for_code(code))

    def committed(self, partitions: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, int]:
        """The group's committed offsets (OffsetFetch); partitions without one are left out."""
        response = self._request(protocol.offset_fetch(self.config.group_id, partitions))
        code = response.get("error_code", 0)
        if code:
            raise GroupError(for_code(code), "OffsetFetch")
        return {tp: off for tp, (off, _md) in protocol.fetched_offsets(response).items()}

    def close(self, leave: bool | None = None) -> None:
        """Stop heartbeating; dynamic members send LeaveGroup so the group rebalances at once. Static
        members do not leave by default (Kafka's behaviour): the same instance restarting within the session
        timeout gets its partitions back without a rebalance."""
        with self._lock:
            if self._state is MemberState.CLOSED:
                return
            gen = self._generation
            owned = self._owned
            self._state = MemberState.CLOSED
        self._closing.set()
        self._heartbeat_thread.join(timeout=5)
        if owned:
            if gen.generation_id >= 0 and self._fatal is None:
                self._listener.on_partitions_revoked(set(owned))
            else:
                self._listener.on_partitions_lost(set(owned))
        if leave is None:
            leave = self.config.group_instance_id is None
        if leave and gen.member_id:
            try:
                self._request(
                    protocol.leave_group(
                        self.config.group_id, [(gen.member_id, self.config.group_instance_id)], "the consumer is being closed"
                    ),
                    attempts=1,
                )
            except RequestTimeoutError:
                log.warning("LeaveGroup for %s not answered; the session timeout will remove it", gen.member_id)

    # -- the join protocol --------------------------------------------------------------------------------

    def _start_round(self) -> Future[tuple[Generation, frozenset[TopicPartition]] | None]:
        """Run `_join_round` on a daemon thread: a JoinGroup can be parked for the whole rebalance timeout,
        and a member closed meanwhile must not keep the process from exiting."""
        future: Future[tuple[Generation, frozenset[TopicPartition]] | None] = Future()

        def run() -> None:
            try:
                future.set_result(self._join_round())
            except BaseException as exc:  # handed to poll(), which raises it on the application's thread
                future.set_exception(exc)

        threading.Thread(target=run, name=f"{self.config.client_id}-join", daemon=True).start()
        return future

    def _join_round(self) -> tuple[Generation, frozenset[TopicPartition]] | None:
        """JoinGroup then SyncGroup, retried per the decision table (Kafka's joinGroupIfNeeded), on the round
        thread: no callbacks here. Returns the new generation and assignment, or None when `poll` must
        prepare again first (the generation was reset, so owned partitions are now lost) or stop."""
        while True:
            with self._lock:
                if self._fatal is not None or self._state is MemberState.CLOSED:
                    return None
                gen = self._generation
            try:
                outcome = self._join_and_sync_once(gen)
            except RequestTimeoutError:
                log.info("%s: coordinator did not answer, joining again", self.config.group_id)
                time.sleep(self.config.retry_backoff_ms / 1000)
                continue
            if outcome != "retry":
                return outcome  # type: ignore[return-value]
            with self._lock:
                if self._owned and self._generation.generation_id < 0:
                    return None

    def _join_and_sync_once(self, gen: Generation) -> tuple[Generation, frozenset[TopicPartition]] | None | str:
        """One JoinGroup and, once joined, one SyncGroup: the new generation and assignment, "retry" to send
        JoinGroup again now, or None to stop the round."""
        if gen.member_id == "" and self.config.group_instance_id is None:
            member_id = self._member_id_round()
            if member_id is not None:  # the coordinator keeps it pending: join again with it
                with self._lock:
                    self._generation = Generation(-1, member_id)
                return "retry"
        join = self._request(self._join_request(gen), timeout_ms=self.config.rebalance_timeout_ms + 5000)
        code = join.get("error_code", 0)
        if code == Errors.MEMBER_ID_REQUIRED:  # the answer carries the id to join with
            with self._lock:
                self._generation = Generation(-1, str(join.get("member_id") or ""))
            return "retry"
        reaction = decide("JoinGroup", code)
        if reaction.action is not Action.PROCEED:
            return "retry" if self._apply(reaction, gen, "JoinGroup", code) else None
        new_gen = Generation(int(join["generation_id"]), str(join["member_id"]), join.get("protocol_name"))
        leader = join.get("leader") == new_gen.member_id
        with self._lock:
            self._generation = new_gen
            self._is_leader = leader
        assignments = self._assign_as_leader(new_gen, join) if leader else {}
        if assignments is None:
            return None
        return self._sync(new_gen, assignments)

    def _member_id_round(self) -> str | None:
        """KIP-394's member-id round without waiting for the coordinator, as the gateway answers it
        (docs/gateway.md): the JoinGroup appended as a `PendingMember` request, the member id derived from that
        request by the core's rule, which the coordinator applies too. None when the transport cannot append or the
        append failed: the JoinGroup then goes the usual way."""
        append = getattr(self._transport, "append", None)
        if append is None:
            return None
        body = {**self._join_request(Generation(-1, "")), "api": PENDING_MEMBER}
        request_id, _, appended = append(self.config.group_id, body)
        self._transport.forget(request_id)  # the coordinator's own answer is not needed
        try:
            appended.result(timeout=self.config.request_timeout_ms / 1000)
        except Exception as exc:  # noqa: BLE001 - not appended: the coordinator answers the JoinGroup itself
            log.info("%s: member-id round left to the coordinator: %s", self.config.group_id, exc)
            return None
        return pending_member_id(self.config.group_id, self.config.client_id, request_id)

    def _assign_as_leader(self, gen: Generation, join: protocol.Json) -> dict[str, bytes] | None:
        """The leader's assignments for SyncGroup (none when the coordinator assigned), remembering the partition
        counts they were made for; None when the coordinator should have assigned but did not (fatal)."""
        if join.get("skip_assignment"):
            counts = {t: n for t, n in self._partition_counts(self._topics).items() if n > 0}
            with self._lock:
                self._assigned_counts = counts
            return {}
        strategy = str(gen.protocol_name)
        if strategy.startswith(SERVER_ASSIGNOR_PREFIX):
            with self._lock:
                self._fatal = GroupError(for_code(Errors.INCONSISTENT_GROUP_PROTOCOL), "JoinGroup",
                                         f"coordinator did not assign for {strategy}")
            return None
        assignments, counts = compute_assignment(strategy, join.get("members") or [], self._partition_counts)
        with self._lock:
            self._assigned_counts = counts
        return assignments

    def _sync(self, new_gen: Generation, assignments: dict[str, bytes]
              ) -> tuple[Generation, frozenset[TopicPartition]] | None | str:
        sync = self._request(
            protocol.sync_group(
                self.config.group_id,
                new_gen.generation_id,
                new_gen.member_id,
                self.config.group_instance_id,
                str(new_gen.protocol_name),
                assignments,
            )
        )
        code = sync.get("error_code", 0)
        reaction = decide("SyncGroup", code)
        if reaction.action is not Action.PROCEED:
            return "retry" if self._apply(reaction, new_gen, "SyncGroup", code) else None
        assignment = cp.decode_assignment(protocol.unb64(sync.get("assignment")))
        return new_gen, frozenset(assignment.partitions())

    def _join_request(self, gen: Generation) -> protocol.Json:
        with self._lock:
            owned = self._owned
            topics = self._topics
        metadata = cp.encode_subscription(
            cp.Subscription(
                topics=topics,
                owned_partitions=cp.group_partitions(set(owned)),
                generation_id=gen.generation_id,
            )
        )
        strategies = self.config.partition_assignment_strategy
        server_side = any(s.startswith(SERVER_ASSIGNOR_PREFIX) for s in strategies)
        return protocol.join_group(
            group_id=self.config.group_id,
            member_id=gen.member_id,
            group_instance_id=self.config.group_instance_id,
            client_id=self.config.client_id,
            client_host=self.config.client_host,
            session_timeout_ms=self.config.session_timeout_ms,
            rebalance_timeout_ms=self.config.rebalance_timeout_ms,
            protocols=[(name, metadata) for name in strategies],
            topic_partitions=dict(self._partition_counts(topics)) if server_side else None,
        )

    def _on_join_prepare(self) -> None:
        """Kafka's onJoinPrepare: give up what this member may no longer keep before joining."""
        with self._lock:
            gen, owned, topics = self._generation, self._owned, set(self._topics)
        release = before_join(self._protocol, gen.generation_id, gen.member_id, owned, topics)
        if release.keep != owned:
            self._set_owned(release.keep)
        if release.lost:
            self._listener.on_partitions_lost(set(release.lost))
        if release.revoked:
            self._listener.on_partitions_revoked(set(release.revoked))

    def _on_join_complete(self, gen: Generation, assigned: frozenset[TopicPartition]) -> None:
        with self._lock:
            if self._generation != gen:
                return  # the heartbeat thread saw the group move on meanwhile; poll() joins again
            owned = self._owned
            self._owned = assigned
            self._state = MemberState.STABLE
            self._last_poll = time.monotonic()  # a long rebalance inside poll() is not the application's idling
            self._rejoin_needed = False
        change = after_join(self._protocol, owned, assigned)
        if change.revoked:
            self._listener.on_partitions_revoked(set(change.revoked))
        if change.rejoin:
            with self._lock:
                self._rejoin_needed = True
        self._listener.on_partitions_assigned(set(change.assigned))

    def _set_owned(self, owned: frozenset[TopicPartition]) -> None:
        with self._lock:
            self._owned = owned

    def _apply(self, reaction: Reaction, gen: Generation, api: str, code: int) -> bool:
        """Carry out a non-PROCEED reaction. Returns True when the caller should retry or re-join now."""
        error = for_code(code)
        log.info("%s %s: %s -> %s", self.config.group_id, api, error, reaction)
        with self._lock:
            if self._generation != gen and api == "Heartbeat":
                return False  # an answer about a generation we already left (Kafka's generationUnchanged)
            if reaction.action is Action.RAISE:
                return False  # only this request failed
            if reaction.action is Action.FENCED:
                self._fatal = FencedInstanceError(error, api)
                self._state = MemberState.FENCED
                return False
            if reaction.action is Action.FAIL:
                self._fatal = GroupError(error, api)
                return False
            if reaction.action is Action.RESET_MEMBER_ID:
                self._generation = NO_GENERATION
            elif reaction.reset_generation:
                self._generation = Generation(-1, gen.member_id)
            if reaction.action in (Action.REJOIN, Action.RESET_MEMBER_ID):
                self._rejoin_needed = True
        if reaction.action is Action.RETRY or reaction.action is Action.RESET_MEMBER_ID:
            time.sleep(self.config.retry_backoff_ms / 1000)
        return True

    def _maybe_check_partition_counts(self) -> None:
        """The leader re-joins when a subscribed topic's partition count changed since it assigned."""
        now = time.monotonic()
        with self._lock:
            if not self._is_leader or self._assigned_counts is None:
                return
            if now - self._last_metadata_check < self.config.metadata_max_age_ms / 1000:
                return
            self._last_metadata_check = now
            assigned = self._assigned_counts
        current = {t: n for t, n in self._partition_counts(self._topics).items() if n > 0}
        if current != assigned:
            log.info("%s: partition counts changed %s -> %s, re-joining", self.config.group_id, assigned, current)
            with self._lock:
                self._rejoin_needed = True

    # -- heartbeats ---------------------------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        interval = self.config.heartbeat_interval_ms / 1000
        while not self._closing.wait(interval):
            with self._lock:
                gen = self._generation
                active = self._state is MemberState.STABLE and gen.generation_id >= 0 and self._fatal is None
                idle_s = time.monotonic() - self._last_poll
            if not active:
                continue
            if idle_s > self.config.rebalance_timeout_ms / 1000:
                self._leave_after_poll_timeout(gen)
            else:
                self._heartbeat(gen)

    def _heartbeat(self, gen: Generation) -> None:
        try:
            response = self._request(
                protocol.heartbeat(self.config.group_id, gen.generation_id, gen.member_id, self.config.group_instance_id),
                # One heartbeat in flight at a time, waited for as long as the session lasts (Kafka waits
                # request.timeout.ms): answers come a micro-batch later, often after the next interval, and
                # dropping a late REBALANCE_IN_PROGRESS would keep the member from re-joining.
                timeout_ms=min(self.config.request_timeout_ms, self.config.session_timeout_ms),
                attempts=1,
            )
        except RequestTimeoutError:
            return  # Kafka marks the coordinator unknown and tries again; the session may expire meanwhile
        except Exception:
            log.exception("heartbeat failed")
            return
        code = response.get("error_code", 0)
        reaction = decide("Heartbeat", code)
        if reaction.action is not Action.PROCEED:
            self._apply(reaction, gen, "Heartbeat", code)

    def _leave_after_poll_timeout(self, gen: Generation) -> None:
        """Kafka's poll timeout (`max.poll.interval.ms`): an application that stopped polling is presumed stuck,
        so its partitions go to others. A dynamic member leaves the group; both kinds forget their generation,
        so the next poll() reports the partitions lost and joins again."""
        log.warning("%s: poll() not called for %d ms, leaving the group", self.config.group_id,
                    self.config.rebalance_timeout_ms)
        with self._lock:
            if self._generation != gen:
                return
            self._generation = NO_GENERATION
            self._rejoin_needed = True
        if self.config.group_instance_id is None:
            try:
                self._request(
                    protocol.leave_group(self.config.group_id, [(gen.member_id, None)], "consumer poll timeout has expired"),
                    attempts=1,
                )
            except RequestTimeoutError:
                log.warning("LeaveGroup for %s not answered; the session timeout will remove it", gen.member_id)

    def _request(self, body: protocol.Json, timeout_ms: int | None = None, attempts: int = 3) -> protocol.Json:
        timeout_s = (timeout_ms or self.config.request_timeout_ms) / 1000
        return self._transport.request(self.config.group_id, body, timeout_s, attempts)


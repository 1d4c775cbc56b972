"""The holder: the share-partitions this gateway process serves under the query's grants (docs/share-groups.md).

A share-partition is acquired from by one process at a time, the one the query granted it to. This process takes a
share-partition when a share session here names it, runs it in memory with the core's rules (`state.api.acquire`,
`acknowledge`, `release_member`, `expire_locks`, ...), and:

- appends every transition out of ACQUIRED to the control topic (an internal ShareUpdate of the group, acks=all,
  the gateway's one idempotent producer, so in order) before anything depends on it: an acknowledgement is answered,
  and records acquired, only once the appends before them are acknowledged; an append that fails drops the
  share-partition from memory (the query's durable state is what the next take starts from);
- serves only until its lease deadline, `sent + lease - margin` on its own monotonic clock, from when it sent the
  take or renewal the query answered; renews every third of the lease for all its share-partitions of a group in
  one request, and drops a share-partition whose renewal is refused;
- expires locks on timers, and wakes the long polls waiting on a share-partition when it changes (an
  acknowledgement, a release, an expiry, a take) or its log grows (polled while someone waits, at once after a
  Produce through this gateway);
- releases a share-partition as soon as no share session here names it, or another gateway wants it and it has
  been held `HANDOVER_MS`.

The time the rules see is this process's monotonic clock in ms: lock deadlines never leave this process (a new
holder starts with nothing ACQUIRED), so no other clock is ever compared with it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from gateway.upstream.control import Json
from gateway.share.log import EARLIEST, LATEST, LogBatch, PartitionLog, UpstreamReads
from state.api import (AcknowledgementBatch, Errors, Limits, PersistedState, RecordState, SharePartition, StateBatch,
                       acknowledge, acquire, encode, expire_locks, lease_deadline, move_log_start, next_fetch_offset,
                       next_lock_deadline, release_member, resolve_start_offset, share_partition_from_snapshot)

log = logging.getLogger(__name__)

SPKey = tuple[str, str, int]
"""(group id, topic id as Kafka's Uuid text, partition)."""

LEASE_MARGIN_MS = 3000
"""`share.partition.lease.margin.ms`: the holder stops this long before the lease it counts would end."""
HANDOVER_MS = 5000
"""`share.partition.handover.ms`: held at least this long before a share-partition another gateway wants is
released to it."""
RETAKE_S = 1.0
"""How long after a refused take the holder asks again while a session here still names the share-partition."""
POLL_INTERVAL_S = 0.025
"""How often the log of a share-partition somebody waits on is read for new records (a Produce through this gateway
wakes it at once)."""
GRANT_TIMEOUT_S = 25.0
CLOSE_WAIT_S = 2.0
"""How long a stopping gateway waits for its appends in flight before it writes its releases."""


def now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass
class Held:
    """One share-partition this process holds."""

    key: SPKey
    log: PartitionLog
    grant_epoch: int
    state_epoch: int
    deadline_ms: int
    """Serve only before this (monotonic ms)."""
    partition: SharePartition
    limits: Limits
    config: Json | None
    """The group's settings as the query's last grant or renewal said (`ShareViewConfig`'s fields)."""
    held_since_ms: int
    appending: int = 0
    """Appends in flight: acquisition waits for them (a change is durable before it is built on)."""
    quiet: asyncio.Event = field(default_factory=asyncio.Event)
    lock_timer: asyncio.TimerHandle | None = None
    dropped: bool = False

    def __post_init__(self) -> None:
        self.quiet.set()

    @property
    def serving(self) -> bool:
        return not self.dropped and now_ms() < self.deadline_ms


class AppendError(Exception):
    """A transition could not be made durable in time: the acknowledgement is not answered as done."""


class Holder:
    def __init__(self, coordinator: Any, reads: UpstreamReads, share_view: Callable[[str], Any],
                 topic_name: Callable[[str], str | None]) -> None:
        """`coordinator`: the gateway's CoordinatorClient (its `call` for ShareGrant, its appender for ShareUpdate);
        `share_view(group_id)`: the group's share view as read (grants, configs), or None; `topic_name(topic_id)`:
        a topic id's name as the gateway knows it."""
        self.id = f"gw-{uuid.uuid4().hex[:12]}"
        self._coordinator = coordinator
        self._reads = reads
        self._share_view = share_view
        self._topic_name = topic_name
        self._held: dict[SPKey, Held] = {}
        self._taking: dict[SPKey, asyncio.Task] = {}
        self._wanted: dict[SPKey, int | None] = {}
        """Share-partitions some session here names: -> the node id its members reach it through."""
        self._waiters: dict[SPKey, set[asyncio.Future]] = {}
        self._pollers: dict[SPKey, asyncio.Task] = {}
        self._poll_now: dict[SPKey, asyncio.Event] = {}
        self._renewers: dict[str, asyncio.Task] = {}
        self._ids = itertools.count()

    # -- what the ShareFetch handler asks ------------------------------------------------------------------------

    def serving(self, key: SPKey) -> Held | None:
        held = self._held.get(key)
        return held if held is not None and held.serving else None

    def want(self, key: SPKey, node_id: int | None) -> None:
        """A session here names the share-partition: hold it (take it if nobody here does)."""
        self._wanted[key] = node_id
        if key not in self._held and key not in self._taking:
            self._taking[key] = asyncio.get_running_loop().create_task(self._take(key))

    def unwanted(self, key: SPKey) -> None:
        """No session here names the share-partition any more: release it to whoever wants it."""
        self._wanted.pop(key, None)
        held = self._held.get(key)
        if held is not None:
            asyncio.get_running_loop().create_task(self._release(held))

    async def acquire(self, held: Held, member_id: str, max_records: int, batch_size: int, max_bytes: int,
                      record_limit: bool, isolation_level: int) -> tuple[list[Any], list[LogBatch], int]:
        """Acquire for the member (Kafka's SharePartition.acquire): (AcquiredRecords, the log batches holding
        them, error). Waits for the appends in flight first."""
        await held.quiet.wait()
        if not held.serving:
            return [], [], 0
        partition_log = held.log
        offset = next_fetch_offset(held.partition)
        batches = await partition_log.read(offset, max_bytes, isolation_level)
        if partition_log.error:
            return [], [], partition_log.error
        if partition_log.log_start_offset > held.partition.start_offset >= 0:
            held.partition = move_log_start(held.partition, partition_log.log_start_offset)
            offset = next_fetch_offset(held.partition)
            batches = await partition_log.read(offset, max_bytes, isolation_level)
        await held.quiet.wait()
        if not held.serving or not batches:
            return [], [], 0
        offset = next_fetch_offset(held.partition)
        acquired = acquire(held.partition, member_id, offset, [(b.base, b.last) for b in batches], max_records,
                           batch_size, now_ms(), held.limits, record_limit)
        held.partition = acquired.partition
        if acquired.transitions:
            # offsets no longer in the log, archived: written before anything is built on them
            self._append(held, acquired.transitions).add_done_callback(_retrieved)
        if not acquired.records:
            return [], [], 0
        self._schedule_expiry(held)
        spans = [(r.first, r.last) for r in acquired.records]
        used = [b for b in batches if any(b.base <= last and first <= b.last for first, last in spans)]
        partition_log.trim(held.partition.start_offset)
        return list(acquired.records), used, 0

    @staticmethod
    def acquirable(held: Held) -> bool:
        """Whether a fetch could acquire anything from the share-partition now (Kafka's `canAcquireRecords`):
        served, its start offset resolved, and below `partition_max_record_locks` in flight or with records
        released (or expired) to acquire again."""
        partition = held.partition
        if not held.serving or not partition.resolved:
            return False
        return (next_fetch_offset(partition) < partition.end_offset
                or partition.in_flight() < held.limits.max_record_locks)

    async def fetchable_bytes(self, held: Held, max_bytes: int, isolation_level: int) -> int | None:
        """The bytes a fetch could acquire from an acquirable share-partition, as Kafka's DelayedShareFetch counts
        them for MinBytes (`isMinBytesSatisfied`): the log's from the next fetch offset on, at most `max_bytes`,
        as if every record there were acquirable; None when the log could not be read (an error answers the
        fetch, as in Kafka)."""
        offset = next_fetch_offset(held.partition)
        batches = await held.log.read(offset, max_bytes, isolation_level)
        if held.log.error:
            return None
        return min(sum(len(b.data) for b in batches if b.last >= offset), max_bytes)

    async def acknowledge(self, key: SPKey, member_id: str, batches: list[AcknowledgementBatch]) -> int:
        """A member's acknowledgements of one share-partition: Kafka's per-partition error, answered once the
        transitions are durable."""
        held = self.serving(key)
        if held is None:
            # records are acquired only from a share-partition this process serves: none of these is held
            return Errors.INVALID_RECORD_STATE
        settled = acknowledge(held.partition, member_id, batches, now_ms(), held.limits)
        if settled.error is not None:
            return int(settled.error)
        held.partition = settled.partition
        if not settled.transitions:
            return Errors.NONE
        self._wake(key)
        try:
            await self._append(held, settled.transitions)
        except AppendError as exc:
            log.warning("acknowledgements of %s not made durable: %s", key, exc)
            return Errors.NOT_LEADER_OR_FOLLOWER
        return Errors.NONE

    async def release_member(self, group_id: str, member_id: str, partitions: list[tuple[str, int]]) -> None:
        """A member's share session closed: its records in those share-partitions go back at once (durable)."""
        appends = []
        for topic_id, partition in partitions:
            held = self._held.get((group_id, topic_id, partition))
            if held is None or held.dropped:
                continue
            settled = release_member(held.partition, member_id, held.limits)
            if settled.transitions:
                held.partition = settled.partition
                appends.append(self._append(held, settled.transitions))
                self._wake(held.key)
        for done in await asyncio.gather(*appends, return_exceptions=True):
            if isinstance(done, Exception):
                log.warning("a release of %s's records was not made durable: %s", member_id, done)

    def limits(self, group_id: str) -> tuple[Limits, Json | None]:
        """The group's share settings and its config (or None): as the query's last answer to a grant of the group
        said, else as its view says, else the coordinator's defaults."""
        for held in self._held.values():
            if held.key[0] == group_id and held.config is not None:
                return held.limits, held.config
        config = getattr(self._share_view(group_id), "config", None)
        return _limits(None if config is None else {
            f: getattr(config, f) for f in ("auto_offset_reset", "record_lock_duration_ms", "delivery_count_limit",
                                            "partition_max_record_locks", "isolation_level")})

    # -- long polls ----------------------------------------------------------------------------------------------

    @property
    def waiting(self) -> bool:
        """Whether some ShareFetch waits for records (a Produce through this gateway then wakes it)."""
        return bool(self._waiters)

    def waiter(self, keys: list[SPKey]) -> asyncio.Future:
        """A future completed at the next change of any of these share-partitions, from now on (an
        acknowledgement, a release, an expiry, a take), or at new records in their logs once `watch_logs` reads
        them."""
        done = asyncio.get_running_loop().create_future()
        for key in keys:
            self._waiters.setdefault(key, set()).add(done)
        done.add_done_callback(lambda _: self._forget_waiter(keys, done))
        return done

    def watch_logs(self, keys: list[SPKey]) -> None:
        """Read the logs of these share-partitions for new records while someone waits on them."""
        for key in keys:
            if key in self._held and key in self._waiters and key not in self._pollers:
                self._pollers[key] = asyncio.get_running_loop().create_task(self._poll(key))

    def _forget_waiter(self, keys: list[SPKey], done: asyncio.Future) -> None:
        for key in keys:
            waiting = self._waiters.get(key)
            if waiting is not None:
                waiting.discard(done)
                if not waiting:
                    del self._waiters[key]

    def _wake(self, key: SPKey) -> None:
        for done in list(self._waiters.get(key, ())):
            if not done.done():
                done.set_result(None)

    def produced(self, topic: str) -> None:
        """Records were produced to `topic` through this gateway: read its logs waited on at once."""
        for key, event in self._poll_now.items():
            held = self._held.get(key)
            if held is not None and held.log.topic == topic:
                event.set()

    async def _poll(self, key: SPKey) -> None:
        wake = self._poll_now.setdefault(key, asyncio.Event())
        try:
            while self._waiters.get(key):
                held = self._held.get(key)
                if held is None or held.dropped:
                    return
                try:
                    grew = await held.log.poll(next_fetch_offset(held.partition) if held.partition.resolved else -1)
                except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
                    log.info("reading %s: %s", key, exc)
                    grew = False
                if grew:
                    self._wake(key)
                wake.clear()
                try:
                    await asyncio.wait_for(wake.wait(), POLL_INTERVAL_S)
                except asyncio.TimeoutError:
                    pass
        finally:
            self._pollers.pop(key, None)
            self._poll_now.pop(key, None)

    # -- the grant -----------------------------------------------------------------------------------------------

    async def _take(self, key: SPKey) -> None:
        """Take the share-partition at the epoch it is free at: the view's to begin with, then each refusal's (the
        query's answer is newer than any view: a share-partition freed since, by this process's own release or a
        lease's end, is taken at once at its new epoch). Held by another, the take is asked again every RETAKE_S
        (the query notes this process as wanting it, so its holder hands it over)."""
        group_id, topic_id, partition = key
        epoch, _ = self._seen_grant(key)
        try:
            while key in self._wanted and key not in self._held:
                sent = now_ms()
                answer = await self._grant_call(group_id, [_grant_op(topic_id, partition, "take", epoch)])
                granted = _answer_for(answer, topic_id, partition)
                if granted is None:
                    await asyncio.sleep(RETAKE_S)
                    epoch, _ = self._seen_grant(key)
                    continue
                if granted.get("error_code") == Errors.NONE and granted.get("holder") == self.id:
                    await self._start(key, granted, sent)
                    return
                free_now = granted.get("holder") is None and granted.get("epoch") != epoch
                if granted.get("error_code") == Errors.FENCED_STATE_EPOCH:
                    epoch = granted["epoch"]
                if not free_now:
                    await asyncio.sleep(RETAKE_S)
        except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
            log.warning("taking %s: %s", key, exc)
        finally:
            self._taking.pop(key, None)

    def _view_grant(self, key: SPKey) -> Any:
        """The share-partition's grant as the group's view shows it (None: no view, or never granted)."""
        grants = getattr(self._share_view(key[0]), "grants", None) or {}
        return grants.get(key[1:])

    def _seen_grant(self, key: SPKey) -> tuple[int, str | None]:
        """The grant epoch and holder of the share-partition as the group's view shows it (-1: never held)."""
        grant = self._view_grant(key)
        return (-1, None) if grant is None else (grant.epoch, grant.holder)

    async def _grant_call(self, group_id: str, ops: list[Json]) -> Json:
        body = {"api": "ShareGrant", "group_id": group_id, "holder": self.id, "partitions": ops}
        return await self._coordinator.call(group_id, body, GRANT_TIMEOUT_S)

    async def _start(self, key: SPKey, granted: Json, sent_ms: int) -> None:
        """Granted: run the share-partition from its durable state (resolving its start offset first, if it is
        the first holder ever)."""
        group_id, topic_id, partition = key
        limits, config = _limits(granted.get("config")) if granted.get("config") else self.limits(group_id)
        persisted = PersistedState(granted["start_offset"], granted.get("state_epoch", 0), tuple(
            StateBatch(b["first_offset"], b["last_offset"], RecordState(b["delivery_state"]), b["delivery_count"])
            for b in granted.get("state_batches") or ()))
        topic = self._topic_name(topic_id)
        node_id = self._wanted.get(key)
        lease_ms = granted["lease_ms"]
        held = Held(key, PartitionLog(self._reads, node_id, topic or "", partition), granted["epoch"],
                    persisted.state_epoch, lease_deadline(sent_ms, lease_ms, LEASE_MARGIN_MS),
                    share_partition_from_snapshot(persisted), limits, config, now_ms())
        self._held[key] = held
        if not held.partition.resolved:
            if topic is None:
                self._drop(held, "its topic id is unknown")
                return
            reset = (config or {}).get("auto_offset_reset", "latest")
            offset = await self._reset_offset(held, reset)
            if offset is None:
                self._drop(held, "its start offset could not be resolved")
                return
            held.partition = resolve_start_offset(held.partition, offset)
            try:
                await self._append(held, ())
            except AppendError:
                return
        self._renew_later(group_id, lease_ms)
        self._wake(key)
        if self._waiters.get(key) and key not in self._pollers:
            self._pollers[key] = asyncio.get_running_loop().create_task(self._poll(key))
        if key not in self._wanted:
            await self._release(held)

    async def _reset_offset(self, held: Held, reset: str) -> int | None:
        """`share.auto.offset.reset` against the log: earliest, latest, or by_duration:<ISO 8601 duration>."""
        if reset == "earliest":
            timestamp = EARLIEST
        elif reset.startswith("by_duration:"):
            timestamp = int(time.time() * 1000) - _duration_ms(reset.split(":", 1)[1])
        else:
            timestamp = LATEST
        try:
            error, offset = await self._reads.list_offset(held.log.node_id, held.log.topic, held.key[2], timestamp)
            if error == 0 and offset < 0:  # by_duration past the last record: the end
                error, offset = await self._reads.list_offset(held.log.node_id, held.log.topic, held.key[2], LATEST)
        except (ConnectionError, OSError, asyncio.TimeoutError):
            return None
        return offset if error == 0 else None

    def _renew_later(self, group_id: str, lease_ms: int) -> None:
        if group_id not in self._renewers:
            self._renewers[group_id] = asyncio.get_running_loop().create_task(self._renew(group_id, lease_ms))

    async def _renew(self, group_id: str, lease_ms: int) -> None:
        try:
            while True:
                await asyncio.sleep(lease_ms / 3000)
                mine = [h for h in self._held.values() if h.key[0] == group_id and not h.dropped]
                if not mine:
                    return
                sent = now_ms()
                try:
                    answer = await self._grant_call(group_id, [
                        _grant_op(h.key[1], h.key[2], "renew", h.grant_epoch) for h in mine])
                except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
                    log.warning("renewing %s's share-partitions: %s", group_id, exc)
                    continue
                for held in mine:
                    renewed = _answer_for(answer, held.key[1], held.key[2])
                    if renewed is None or renewed.get("error_code") != Errors.NONE:
                        if renewed is None or renewed.get("error_code") == Errors.COORDINATOR_NOT_AVAILABLE:
                            # the query did not decide (no answer, or the whole request refused, as a new driver's
                            # first batches may): the deadline stands, asked again next round
                            continue
                        self._drop(held, f"its renewal was refused ({renewed and renewed.get('error_code')})")
                        continue
                    held.deadline_ms = max(held.deadline_ms, lease_deadline(sent, renewed.get("lease_ms", lease_ms),
                                                                            LEASE_MARGIN_MS))
                    if renewed.get("config"):
                        held.limits, held.config = _limits(renewed["config"])
                    if self._handover_due(held):
                        await self._release(held)
        finally:
            self._renewers.pop(group_id, None)

    def _handover_due(self, held: Held) -> bool:
        grant = self._view_grant(held.key)
        wanted_by = None if grant is None else grant.wanted_by
        return wanted_by not in (None, self.id) and now_ms() - held.held_since_ms >= HANDOVER_MS

    async def _release(self, held: Held) -> None:
        """Give the share-partition back, after its appends (the same producer: they reach the log first)."""
        if held.dropped:
            return
        self._drop(held, None)
        await held.quiet.wait()
        try:
            await self._grant_call(held.key[0], [_grant_op(held.key[1], held.key[2], "release", held.grant_epoch)])
        except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
            log.info("releasing %s: %s (its lease ends it)", held.key, exc)

    def _drop(self, held: Held, why: str | None) -> None:
        """Stop serving the share-partition and forget it (its durable state is the query's)."""
        if why is not None:
            log.warning("share-partition %s dropped: %s", held.key, why)
        held.dropped = True
        if held.lock_timer is not None:
            held.lock_timer.cancel()
        if self._held.get(held.key) is held:
            del self._held[held.key]
        self._wake(held.key)
        if why is not None and held.key in self._wanted:
            self.want(held.key, self._wanted[held.key])

    # -- durability ----------------------------------------------------------------------------------------------

    def _append(self, held: Held, transitions: tuple[StateBatch, ...] | list[StateBatch]) -> asyncio.Future:
        """Append the transitions (with the start offset now) as a ShareUpdate; the future fails with AppendError
        when the append fails or is acknowledged after the lease deadline."""
        group_id, topic_id, partition = held.key
        body = {"api": "ShareUpdate", "request_id": f"{self.id}-{next(self._ids)}", "group_id": group_id,
                "holder": self.id, "partitions": [{
                    "topic_id": topic_id, "partition": partition, "grant_epoch": held.grant_epoch,
                    "state_epoch": held.state_epoch, "start_offset": held.partition.start_offset,
                    "state_batches": [{"first_offset": b.first, "last_offset": b.last,
                                       "delivery_state": int(b.state), "delivery_count": b.delivery_count}
                                      for b in transitions]}]}
        held.appending += 1
        held.quiet.clear()
        written = self._coordinator.appender.append(group_id, encode(body))
        done = asyncio.get_running_loop().create_future()

        def settled(w: asyncio.Future) -> None:
            held.appending -= 1
            if held.appending == 0:
                held.quiet.set()
            if w.cancelled() or w.exception() is not None:
                self._drop(held, f"an update could not be appended: {w.exception() if not w.cancelled() else ''}")
                done.set_exception(AppendError("the control topic did not take the update"))
            elif now_ms() >= held.deadline_ms:
                done.set_exception(AppendError("appended after the lease deadline"))
            else:
                done.set_result(None)

        written.add_done_callback(settled)
        return done

    def _schedule_expiry(self, held: Held) -> None:
        deadline = next_lock_deadline(held.partition)
        if held.lock_timer is not None:
            held.lock_timer.cancel()
            held.lock_timer = None
        if deadline is None or held.dropped:
            return
        delay = max(deadline - now_ms(), 0) / 1000
        held.lock_timer = asyncio.get_running_loop().call_later(delay, self._expire, held)

    def _expire(self, held: Held) -> None:
        held.lock_timer = None
        if held.dropped:
            return
        settled = expire_locks(held.partition, now_ms(), held.limits)
        if settled.transitions:
            held.partition = settled.partition
            self._append(held, settled.transitions).add_done_callback(_retrieved)
            self._wake(held.key)
        self._schedule_expiry(held)

    # -- lifecycle -----------------------------------------------------------------------------------------------

    async def close(self) -> None:
        """Release everything held (a clean stop: the next holder need not wait for the leases). The releases are
        written after the appends in flight, and not waited for: the gateway's producer flushes them as it
        closes."""
        for task in list(self._taking.values()) + list(self._pollers.values()) + list(self._renewers.values()):
            task.cancel()
        held = list(self._held.values())
        for h in held:
            self._drop(h, None)
        if held:
            await asyncio.wait([asyncio.ensure_future(h.quiet.wait()) for h in held], timeout=CLOSE_WAIT_S)
        for h in held:
            body = {"api": "ShareGrant", "group_id": h.key[0], "holder": self.id,
                    "partitions": [_grant_op(h.key[1], h.key[2], "release", h.grant_epoch)]}
            _retrieved_later(self._coordinator.call(h.key[0], body, CLOSE_WAIT_S))


def _limits(config: Json | None) -> tuple[Limits, Json | None]:
    """The share-partition rules' limits from a group's settings (None: the coordinator's defaults)."""
    if config is None:
        return Limits(), None
    return Limits(config["delivery_count_limit"], config["record_lock_duration_ms"],
                  config["partition_max_record_locks"]), config


def _grant_op(topic_id: str, partition: int, operation: str, epoch: int) -> Json:
    return {"topic_id": topic_id, "partition": partition, "operation": operation, "epoch": epoch}


def _answer_for(answer: Json, topic_id: str, partition: int) -> Json | None:
    for p in answer.get("partitions") or ():
        if (p.get("topic_id"), p.get("partition")) == (topic_id, partition):
            return p
    return None


def _retrieved(done: asyncio.Future) -> None:
    if not done.cancelled():
        done.exception()


def _retrieved_later(answer: Any) -> None:
    asyncio.ensure_future(answer).add_done_callback(_retrieved)


def _duration_ms(iso: str) -> int:
    """An ISO 8601 duration as Java's Duration.parse takes it (PnDTnHnMn.nS), in ms."""
    import re

    match = re.fullmatch(r"(-)?P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", iso.strip().upper())
    if not match or iso.strip().upper() in ("P", "PT"):
        raise ValueError(f"not an ISO 8601 duration: {iso!r}")
    sign, days, hours, minutes, seconds = match.groups()
    total = ((int(days or 0) * 24 + int(hours or 0)) * 60 + int(minutes or 0)) * 60 + float(seconds or 0)
    return int(total * 1000) * (-1 if sign else 1)

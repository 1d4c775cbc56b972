"""One driver per checkpoint, held by a lease in Kafka; a standby takes over when the active driver stops renewing it.

Spark cannot tell two driver processes on one checkpoint apart: both would write its offset log and state. So
`coordinator run` runs the query only while it holds the checkpoint's lease, a record keyed by the checkpoint
location in a small topic (`topic.lease`: one partition, compacted). That works wherever the checkpoint lives (a
local disk, `hdfs://`, `s3a://`), and nothing is written under the checkpoint.

- **Holding.** The holder owns a transactional producer whose `transactional.id` is derived from the checkpoint
  location, and renews the lease every `lease.renew.interval.ms` with a one-record transaction. A driver that takes
  over first calls `init_transactions()` with the same id, which bumps the producer epoch: the broker refuses every
  later transaction of the old holder (ProducerFencedError), so an old holder can never renew again.
- **Standing by.** Every driver reads the lease topic. One that has read no record from another driver for
  `lease.timeout.ms` (or whose latest record is a release) takes the lease; until then it is a standby. It counts from
  when it *read* a record, on its own clock, so clocks need not agree between hosts.
- **Halting.** A holder that is fenced, reads another driver's record after its own, or has not renewed for
  `lease.timeout.ms` less one interval, calls `on_lost`: `coordinator run` halts its JVM at once (no further batch)
  and exits with `EXIT_LEASE_LOST`. Its deadline runs from the start of its last successful renewal and a standby
  counts from the moment it read that record, so the holder's deadline always comes first. The JVM carries the
  deadline too (`DriverHalt.arm`), half an interval later, so a driver whose Python process is stopped or hung halts
  all the same.

A driver that takes the lease reads its own record back. If another driver's record came between the moment it
found the lease free and its own (two standbys decided at once), it waits a timeout before it returns: the rival was
fenced by its `init_transactions()` and halts within that time.

The lease is a lifecycle (`LeaseStatus`, as quix-streams' transaction status): WATCHING, then TAKING, then HOLDING
(or back to WATCHING when another driver got in first), then LOST or CLOSED. `TRANSITIONS` lists every move and
`Lease._move` refuses any other, so a lost lease is never renewed nor released. Its timing is `Deadline` values: when
the lease is free (`LeaseLog.free_at`), until when a holder trusts its last renewal (`valid_until`) and when its JVM
halts itself (`halt_at`), both counted from the start of that renewal.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import json
import logging
import math
import os
import signal
import socket
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable, Mapping, NoReturn, TypeVar
from urllib.parse import urlparse

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError, ProducerFencedError

from streaming.kafka_io.kafka_clients import high_watermarks

log = logging.getLogger(__name__)

EXIT_LEASE_LOST = 75
"""`coordinator run`'s exit code when it lost its lease (sysexits' EX_TEMPFAIL): start it again and it stands by."""

HISTORY = 256
"""Records a driver reads back when it starts watching: enough to find the release the last holder wrote."""

HELD, RELEASED = "held", "released"
T = TypeVar("T")


def checkpoint_key(location: str) -> str:
    """The lease's key: one string for a checkpoint however a driver names it (a path, `file:`, a symlink)."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        return "file://" + os.path.realpath(parsed.path if parsed.scheme else location)
    return location.rstrip("/")


@dataclass(frozen=True)
class LeaseSettings:
    topic: str
    key: str
    timeout_s: float
    interval_s: float

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> "LeaseSettings":
        timeout_ms, interval_ms = int(props["lease.timeout.ms"]), int(props["lease.renew.interval.ms"])
        if not 0 < 2 * interval_ms <= timeout_ms:
            raise ValueError(f"lease.renew.interval.ms ({interval_ms}) must be positive and at most half of "
                             f"lease.timeout.ms ({timeout_ms}): a holder gets several tries within its timeout")
        return cls(props["topic.lease"], checkpoint_key(props["checkpoint.location"]), timeout_ms / 1000,
                   interval_ms / 1000)

    @property
    def transactional_id(self) -> str:
        """The holder's producer: the lease topic's name (one PREFIXED ACL covers every checkpoint) and a digest
        of the key (a location can be longer than a broker likes an id to be)."""
        return f"{self.topic}-{hashlib.sha256(self.key.encode()).hexdigest()[:16]}"

    @property
    def holding_s(self) -> float:
        """How long a holder trusts its last renewal: one interval less than a standby waits."""
        return self.timeout_s - self.interval_s

    @property
    def halt_s(self) -> float:
        """When the JVM halts itself without a renewal: after the holder's own check, before any standby acts."""
        return self.timeout_s - self.interval_s / 2


@dataclass(frozen=True)
class LeaseRecord:
    """The value under a checkpoint's key: who holds it, the hand-over count, and the timeout it promised."""

    holder: str
    epoch: int
    state: str
    timeout_ms: int

    def encode(self) -> bytes:
        return json.dumps({"holder": self.holder, "epoch": self.epoch, "state": self.state,
                           "timeout_ms": self.timeout_ms, "time_ms": int(time.time() * 1000)},
                          separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes | None) -> "LeaseRecord | None":
        try:
            body = json.loads(raw)
            return cls(str(body["holder"]), int(body["epoch"]), str(body["state"]), int(body["timeout_ms"]))
        except (TypeError, ValueError, KeyError):
            return None


class LeaseError(RuntimeError):
    """This driver can neither judge nor keep the lease: its topic cannot be read, the lease was lost while being
    taken, or the lease was asked for what its status does not allow."""


@dataclass(frozen=True)
class Deadline:
    """A moment on this process's monotonic clock, as quix-streams' `Deadline`: the lease's timing is values like
    this one, asked `expired()` or `remaining()`, not flags one thread sets for another."""

    at: float

    @classmethod
    def after(cls, seconds: float, now: float | None = None) -> "Deadline":
        return cls((time.monotonic() if now is None else now) + seconds)

    def remaining(self, now: float | None = None) -> float:
        return max(0.0, self.at - (time.monotonic() if now is None else now))

    def expired(self, now: float | None = None) -> bool:
        return (time.monotonic() if now is None else now) >= self.at


PASSED = Deadline(-math.inf)
"""A deadline that has always passed: a released lease's, and a holding's before its first record is written."""


class LeaseStatus(enum.Enum):
    """Where this driver is with its checkpoint's lease; it moves only as `TRANSITIONS` allows."""

    WATCHING = "watching"
    """Reading the lease topic; while another driver holds the lease, this one is a standby."""
    TAKING = "taking"
    """Fencing every earlier holder (`init_transactions`) and writing this driver's first record."""
    HOLDING = "holding"
    """This driver's record is written; renewed every interval, trusted until `Lease._valid_until`."""
    LOST = "lost"
    """Fenced, overtaken by another driver's record, not renewed in time, or the topic unreadable while taking or
    holding: the driver must stop at once (`on_lost`, called once)."""
    CLOSED = "closed"
    """Closed, released or not; the renewer and the watchdog have stopped, and the reader stops."""


TRANSITIONS: dict[LeaseStatus, frozenset[LeaseStatus]] = {
    LeaseStatus.WATCHING: frozenset({LeaseStatus.TAKING, LeaseStatus.CLOSED}),
    LeaseStatus.TAKING: frozenset({LeaseStatus.WATCHING, LeaseStatus.HOLDING, LeaseStatus.LOST, LeaseStatus.CLOSED}),
    LeaseStatus.HOLDING: frozenset({LeaseStatus.LOST, LeaseStatus.CLOSED}),
    LeaseStatus.LOST: frozenset({LeaseStatus.CLOSED}),
    LeaseStatus.CLOSED: frozenset(),
}
"""status -> the statuses it may move to: a take that fails goes back to watching, and a lost lease is only closed
(a driver that lost it starts again, as a new standby)."""


class LeaseTransitionError(LeaseError):
    """A move `TRANSITIONS` does not allow, or a call its status does not allow; nothing changed."""


def check_transition(current: LeaseStatus, to: LeaseStatus) -> None:
    if to not in TRANSITIONS[current]:
        raise LeaseTransitionError(f"a lease that is {current.value} cannot become {to.value}")


def _requires(*statuses: LeaseStatus) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A `Lease` method allowed only in `statuses` (quix-streams' `validate_transaction_status`)."""

    def wrap(method: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(method)
        def guarded(self: "Lease", *args, **kwargs) -> T:
            status = self.status
            if status not in statuses:
                raise LeaseTransitionError(f"{method.__name__}() of a lease that is {status.value}")
            return method(self, *args, **kwargs)

        return guarded

    return wrap


@dataclass
class LeaseLog:
    """What this driver has read under its checkpoint's key, in log order. The reader thread feeds it, the others
    read it, all under the lease's condition; times are handed in, so the rules below are plain functions of it."""

    holder: str
    timeout_s: float
    heard_at: float
    """When another driver's record was last read, on this driver's clock (until one is: when watching began)."""
    latest: LeaseRecord | None = None
    """Another driver's latest record."""
    caught_up: bool = False
    """The history is read: a release in it is the latest word, and the records read from now on are live."""
    live: bool = False
    """Another driver's latest record was read after the history: that driver renews the lease now."""
    epoch_seen: int = -1
    own_epoch: int = -1
    """The epoch of this driver's own records read back."""
    read_error: BaseException | None = None

    def observe(self, record: LeaseRecord, now: float) -> bool:
        """Take in a record read at `now`; True if another driver wrote it."""
        self.epoch_seen = max(self.epoch_seen, record.epoch)
        if record.holder == self.holder:
            self.own_epoch = max(self.own_epoch, record.epoch)
            return False
        self.latest = record
        self.heard_at = now
        self.live = self.caught_up
        return True

    def silent_until(self) -> Deadline:
        """By when the last other driver to write has stopped if it wrote nothing since: one timeout after its record
        was read, the longer of this driver's and the one it promised. A record of the history counts from when it
        is read, just after watching began, so a holder that renews shows itself in time."""
        promised = self.latest.timeout_ms / 1000 if self.latest is not None else 0.0
        return Deadline(self.heard_at + max(self.timeout_s, promised))

    def free_at(self) -> Deadline:
        """When the lease is free as far as this driver knows: at once after a release, else `silent_until`."""
        if self.caught_up and self.latest is not None and self.latest.state == RELEASED:
            return PASSED
        return self.silent_until()

    def held_elsewhere(self) -> bool:
        return self.live and self.latest is not None and self.latest.state == HELD

    def check_readable(self, topic: str) -> None:
        if self.read_error is not None:
            raise LeaseError(f"cannot read the lease topic {topic}") from self.read_error


class Lease:
    """A driver's view of its checkpoint's lease from the moment it is made, and the lease itself once `acquire`
    returns. Make it early: a live holder shows itself while the driver's session starts.

    Its status is a `LeaseStatus`, moved only by `_move` (which checks `TRANSITIONS`); its timing is `Deadline`s.
    Four threads share it under one condition (`_changed`), each with its own part: the reader feeds the `LeaseLog`
    (and loses a lease overtaken or unreadable), the driver's thread moves WATCHING -> TAKING -> HOLDING (or back to
    WATCHING) and closes, the renewer moves the holding's deadlines, and the watchdog loses a lease past them."""

    def __init__(self, client: Mapping[str, object], settings: LeaseSettings) -> None:
        self.settings = settings
        self.holder = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"
        self._client = dict(client)
        self._key = settings.key.encode()
        self._changed = threading.Condition()
        # All guarded by _changed.
        self._log = LeaseLog(self.holder, settings.timeout_s, heard_at=time.monotonic())
        self._status = LeaseStatus.WATCHING
        self._epoch = -1  # this driver's, once TAKING has fenced the earlier holders
        self._producer: KafkaProducer | None = None
        self._valid_until = PASSED  # the holder trusts its last renewal until then
        self._halt_at = PASSED  # the JVM halts itself then, without a further renewal (`on_renewed`)
        self._lost_reason: str | None = None
        self._on_lost: Callable[[str], object] = _once(lambda reason: None)
        self._on_renewed: Callable[[float], object] = lambda until: None
        self._consumer = KafkaConsumer(**self._client, group_id=None, enable_auto_commit=False,
                                       auto_offset_reset="earliest", fetch_max_wait_ms=100)
        self._threads = [threading.Thread(target=self._read, name="lease-reader", daemon=True)]
        self._threads[0].start()

    @property
    def status(self) -> LeaseStatus:
        with self._changed:
            return self._status

    def _move(self, to: LeaseStatus) -> None:
        """The one way the status changes. Call with _changed held."""
        check_transition(self._status, to)
        self._status = to
        self._changed.notify_all()

    # --- reading the lease topic ----------------------------------------------------------------------------------

    def _read(self) -> None:
        tp = TopicPartition(self.settings.topic, 0)
        consumer = self._consumer
        try:
            start = consumer.beginning_offsets([tp])[tp]
            end = high_watermarks(consumer, {tp: start})[tp]
            consumer.seek(tp, max(start, end - HISTORY))
            while self._status is not LeaseStatus.CLOSED:
                try:
                    batches = consumer.poll(timeout_ms=100)
                except KafkaError as exc:
                    if not exc.retriable:
                        raise
                    log.warning("reading the lease topic %s: %s", self.settings.topic, exc)
                    time.sleep(self.settings.interval_s)
                    continue
                for record in batches.get(tp, ()):
                    if record.key == self._key:
                        self._observe(LeaseRecord.decode(record.value))
                if not self._log.caught_up and consumer.position(tp) >= end:
                    with self._changed:
                        self._log.caught_up = True
                        self._changed.notify_all()
        except BaseException as exc:  # noqa: BLE001 - without its log the lease can be neither judged nor kept
            log.error("cannot read the lease topic %s: %r", self.settings.topic, exc)
            with self._changed:
                self._log.read_error = exc
                self._changed.notify_all()
            self._lose(f"cannot read the lease topic {self.settings.topic}: {exc!r}")
        finally:
            consumer.close()

    def _observe(self, record: LeaseRecord | None) -> None:
        if record is None:
            log.warning("ignoring a malformed record under %s in %s", self.settings.key, self.settings.topic)
            return
        with self._changed:
            other = self._log.observe(record, time.monotonic())
            if other and 0 <= self._epoch <= self._log.own_epoch:
                # After this driver's own record: only a driver that called init_transactions after this one
                # could write it, so this one is fenced whether or not its producer has heard yet.
                self._lose_locked(f"{record.holder} took the lease (epoch {record.epoch})")
            self._changed.notify_all()

    # --- taking the lease -----------------------------------------------------------------------------------------

    @_requires(LeaseStatus.WATCHING)
    def acquire(self, on_standby: Callable[[], object], on_lost: Callable[[str], object],
                on_renewed: Callable[[float], object] = lambda until: None) -> None:
        """Return once this driver holds the lease. While another driver holds it, call `on_standby` once and wait.

        From then on the lease renews itself; `on_renewed(t)` gets the monotonic time by which the driver must be
        halted if no further renewal succeeds, and `on_lost(reason)` is called (from another thread) when the lease
        is lost: the driver must then stop at once."""
        self._on_lost, self._on_renewed = _once(on_lost), on_renewed
        stood_by = False
        while True:
            decided_at = self._wait_free(report_held=not stood_by)
            with self._changed:
                previous, quiet_s = self._log.latest, (decided_at or 0.0) - self._log.heard_at
            if decided_at is None:
                stood_by = True
                on_standby()
            elif self._take():
                break
            else:
                time.sleep(self.settings.interval_s)
        with self._changed:
            halt_at = self._halt_at
        on_renewed(halt_at.at)
        for target, name in ((self._renew, "lease-renewer"), (self._watch, "lease-watchdog")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            self._threads.append(thread)
            thread.start()
        with self._changed:
            while self._log.own_epoch < self._epoch:  # our own record, read back: everything before it is read too
                self._check_holding()
                self._changed.wait(self.settings.interval_s)
            rival = self._log.latest.holder if self._log.heard_at > decided_at and self._log.latest else None
            # A record another driver wrote after this one found the lease free: it was fenced by this driver's
            # init_transactions, and has halted once it has been silent for a timeout.
            while self._log.heard_at > decided_at and not (silent := self._log.silent_until()).expired():
                self._check_holding()
                self._changed.wait(silent.remaining())
            self._check_holding()
        if rival:
            log.warning("%s wrote the lease while this driver took it; waited for it to halt", rival)
        after = "" if previous is None else (
            f", from {previous.holder}: released" if previous.state == RELEASED
            else f", from {previous.holder}: no renewal read for {quiet_s:.2f} s")
        log.info("took the lease on %s (epoch %d, holder %s%s)", self.settings.key, self._epoch, self.holder, after)

    @_requires(LeaseStatus.WATCHING)
    def held_elsewhere(self) -> bool:
        """Whether another driver holds the lease, once this driver can tell: as soon as a live holder's renewal is
        read (True), or once the lease is free as `acquire` judges it (False), which for a checkpoint never leased is
        a timeout after watching began. A driver asks before work that must not be done while another driver runs the
        query on its checkpoint, but must not be done under the lease either (a rebuild's loads)."""
        return self._wait_free(report_held=True) is None

    def _wait_free(self, report_held: bool) -> float | None:
        """The moment the lease was found free; with `report_held`, None as soon as another driver holds it."""
        with self._changed:
            while True:
                self._log.check_readable(self.settings.topic)
                now = time.monotonic()
                free_at = self._log.free_at()
                if free_at.expired(now):
                    return now
                if report_held and self._log.held_elsewhere():
                    return None
                self._changed.wait(min(free_at.remaining(now), 1.0))

    def _take(self) -> bool:
        """Fence every earlier holder and write this driver's record; False if another driver got in first."""
        with self._changed:
            self._move(LeaseStatus.TAKING)
        producer = None
        try:
            producer = self._new_producer()
            producer.init_transactions()  # bumps the epoch: every earlier holder's next transaction fails
            with self._changed:
                self._epoch = self._log.epoch_seen + 1
            started = time.monotonic()
            _in_time(lambda: self._write(producer, HELD), self.settings.timeout_s, "taking the lease")
        except (KafkaError, TimeoutError) as exc:
            log.warning("could not take the lease on %s: %r; standing by", self.settings.key, exc)
            with self._changed:
                self._epoch = -1
                if self._status is LeaseStatus.TAKING:
                    self._move(LeaseStatus.WATCHING)
            if producer is not None:
                producer.close(timeout=0)
            return False
        with self._changed:
            self._producer = producer
            self._renewed(started)
            if self._status is LeaseStatus.TAKING:  # not LOST meanwhile (the topic became unreadable)
                self._move(LeaseStatus.HOLDING)
        return True

    # --- keeping it -----------------------------------------------------------------------------------------------

    def _renewed(self, started: float) -> None:
        """A renewal (or the taking) that started at `started` succeeded. Call with _changed held."""
        self._valid_until = Deadline(started + self.settings.holding_s)
        self._halt_at = Deadline(started + self.settings.halt_s)
        self._changed.notify_all()

    def _renew(self) -> None:
        interval = self.settings.interval_s
        next_renewal = Deadline.after(interval)
        while True:
            with self._changed:
                while self._still_holding() and not next_renewal.expired():
                    self._changed.wait(next_renewal.remaining())
                if not self._still_holding():
                    return
                producer, left = self._producer, self._valid_until.remaining()
            started = time.monotonic()
            next_renewal = Deadline.after(interval, started)
            try:
                if producer is None:
                    raise KafkaError("no producer")
                # Given up on at half the validity left, so that a new producer still has time to start.
                _in_time(lambda: self._write(producer, HELD), max(interval, left / 2), "lease renewal")
            except ProducerFencedError:
                self._lose("fenced: another driver called init_transactions on the lease's transactional.id")
                return
            except Exception as exc:  # noqa: BLE001 - a broker that went away or lost its state: a new producer
                log.warning("renewing the lease on %s: %r", self.settings.key, exc)
                self._replace_producer(producer)
                continue
            with self._changed:
                if self._valid_until.expired() or self._status is not LeaseStatus.HOLDING:
                    continue  # too late (the watchdog has the last word), or lost or closed meanwhile
                self._renewed(started)
                halt_at = self._halt_at
            try:
                self._on_renewed(halt_at.at)
            except Exception as exc:  # noqa: BLE001 - the driver would halt at its old deadline: say why now
                self._lose(f"could not move the driver's deadline: {exc!r}")
                return

    def _replace_producer(self, broken: KafkaProducer | None) -> None:
        """A new producer for a holder whose producer failed (not fenced), e.g. on a broker that lost its state.

        Its init_transactions fences nobody but this driver's old producer: a standby calls it only after this
        holder's deadline, and this one calls it only with more than an interval of its validity left."""
        with self._changed:
            self._producer = None
            left = self._valid_until.remaining() - self.settings.interval_s
        if broken is not None:
            broken.close(timeout=0)
        if left <= 0:
            return
        producer = self._new_producer()
        try:
            _in_time(producer.init_transactions, left, "lease producer start")
        except Exception as exc:  # noqa: BLE001 - the next renewal tries again while time is left
            log.warning("a new lease producer for %s: %r", self.settings.key, exc)
            producer.close(timeout=0)
            return
        with self._changed:
            self._producer = producer

    def _watch(self) -> None:
        with self._changed:
            while self._still_holding():
                self._changed.wait(self._valid_until.remaining())
        self._report_lost()

    def _still_holding(self) -> bool:
        """Whether this driver holds the lease now: a holding past its deadline is lost here. Call with _changed
        held."""
        if self._status is LeaseStatus.HOLDING and self._valid_until.expired():
            self._lose_locked(f"not renewed for {self.settings.holding_s:.2f} s (lease.timeout.ms less one "
                              "lease.renew.interval.ms)")
        return self._status is LeaseStatus.HOLDING

    def _report_lost(self) -> None:
        """`on_lost`, once, if the lease was lost; whichever thread gets here first (the driver may be closing)."""
        with self._changed:
            reason = self._lost_reason
        if reason is not None:
            self._on_lost(reason)

    def _lose(self, reason: str) -> None:
        with self._changed:
            self._lose_locked(reason)

    def _lose_locked(self, reason: str) -> None:
        """Only a lease being taken or held can be lost; the first reason stays."""
        if self._status in (LeaseStatus.TAKING, LeaseStatus.HOLDING):
            self._lost_reason = reason
            self._move(LeaseStatus.LOST)

    def _check_holding(self) -> None:
        self._log.check_readable(self.settings.topic)
        if self._status is LeaseStatus.LOST:
            raise LeaseError(f"lost the lease on {self.settings.key} while taking it: {self._lost_reason}")

    def _new_producer(self) -> KafkaProducer:
        return KafkaProducer(**self._client, transactional_id=self.settings.transactional_id,
                             max_block_ms=max(10_000, int(self.settings.timeout_s * 1000)))

    def _write(self, producer: KafkaProducer, state: str) -> None:
        record = LeaseRecord(self.holder, self._epoch, state, int(self.settings.timeout_s * 1000))
        producer.begin_transaction()
        producer.send(self.settings.topic, key=self._key, value=record.encode(), partition=0)
        producer.commit_transaction()

    # --- letting go -----------------------------------------------------------------------------------------------

    def close(self, release: bool = False) -> bool:
        """Stop renewing and reading. With `release` (only once this driver's query has certainly stopped), a
        standby may take over at once instead of after a timeout. Returns whether the lease was released."""
        with self._changed:
            if self._status is LeaseStatus.CLOSED:
                return False
            holding = self._still_holding()
            self._move(LeaseStatus.CLOSED)
        self._report_lost()  # a driver that lost its lease says so however it got here
        for thread in self._threads[1:]:
            thread.join(self.settings.timeout_s)
        producer = self._producer
        released = False
        if release and holding and producer is not None:
            try:
                _in_time(lambda: self._write(producer, RELEASED), self.settings.timeout_s, "lease release")
                released = True
                log.info("released the lease on %s", self.settings.key)
            except Exception as exc:  # noqa: BLE001 - a standby then waits one timeout instead
                log.warning("could not release the lease on %s: %r", self.settings.key, exc)
        if producer is not None:
            producer.close(timeout=1)
        self._threads[0].join(self.settings.timeout_s)
        return released


def _once(action: Callable[[str], object]) -> Callable[[str], None]:
    """`action`, run by the first thread that calls it and by no other."""
    lock = threading.Lock()
    pending = [action]

    def call(reason: str) -> None:
        with lock:
            if not pending:
                return
            todo = pending.pop()
        todo(reason)

    return call


def _in_time(action: Callable[[], T], timeout_s: float, what: str) -> T:
    """Run a kafka-python call that has no bound of its own on a thread of its own, and give up on it after
    `timeout_s`: commit_transaction waits forever on a broker that lost the transaction's state (a restarted tansu).
    A call given up on is left to its daemon thread; its producer is closed and not used again."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = action()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            outcome["error"] = exc

    thread = threading.Thread(target=run, name=what, daemon=True)
    thread.start()
    thread.join(max(0.0, timeout_s))
    if thread.is_alive():
        raise TimeoutError(f"{what}: no answer within {timeout_s:.2f} s")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome.get("value")  # type: ignore[return-value]


class DriverHalt:
    """How `coordinator run` stops for good when it loses its lease, and the JVM's own deadline meanwhile.

    Stopping the query could still complete a batch, so the JVM is halted instead (`Runtime.halt`: no shutdown
    hooks, nothing more written), then this process exits with `EXIT_LEASE_LOST`. `arm(t)` also schedules that halt
    inside the JVM for monotonic time `t`, from JDK classes only (a `Runnable` made from a method handle on
    `Runtime.halt`, run by `CompletableFuture.delayedExecutor`), so the JVM stops at its deadline even when this
    Python process is stopped or hung and cannot tell it to."""

    def __init__(self, spark, key: str) -> None:
        jvm = spark._jvm
        gateway = spark.sparkContext._gateway
        self._key = key
        self._jvm = jvm
        self._process = getattr(gateway, "proc", None)  # the JVM, when pyspark started it (not under spark-submit)
        cls = jvm.java.lang.Class.forName
        handles, method_type, void = (jvm.java.lang.invoke.MethodHandles, jvm.java.lang.invoke.MethodType,
                                      jvm.java.lang.Void.TYPE)
        lookup = handles.publicLookup()
        halt = lookup.findVirtual(cls("java.lang.Runtime"), "halt",
                                  method_type.methodType(void, jvm.java.lang.Integer.TYPE))
        bound = gateway.new_array(jvm.java.lang.Object, 2)
        bound[0], bound[1] = jvm.java.lang.Runtime.getRuntime(), EXIT_LEASE_LOST
        proxies = jvm.java.lang.invoke.MethodHandleProxies
        self._halt = proxies.asInterfaceInstance(cls("java.lang.Runnable"), handles.insertArguments(halt, 0, bound))
        run = lookup.findVirtual(cls("java.lang.Runnable"), "run", method_type.methodType(void))
        # Runs the halt on the delay scheduler's own thread rather than in a shared pool that may be busy.
        self._direct = proxies.asInterfaceInstance(cls("java.util.concurrent.Executor"), run)
        self._pending = None
        self._lock = threading.Lock()

    def arm(self, until: float) -> None:
        """Halt the JVM at monotonic time `until` unless armed again before."""
        futures = self._jvm.java.util.concurrent
        delay_ms = max(0, int((until - time.monotonic()) * 1000))
        with self._lock:
            pending = futures.CompletableFuture.runAsync(self._halt, futures.CompletableFuture.delayedExecutor(
                delay_ms, futures.TimeUnit.MILLISECONDS, self._direct))
            if self._pending is not None:
                self._pending.cancel(False)  # a cancelled future's task does not run
            self._pending = pending

    def disarm(self) -> None:
        with self._lock:
            if self._pending is not None:
                self._pending.cancel(False)
                self._pending = None

    def __call__(self, reason: str) -> NoReturn:
        message = (f"lost the lease on {self._key}: {reason}; halting this driver (exit {EXIT_LEASE_LOST}, "
                   "no further batch)")
        log.error(message)
        print(message, flush=True)
        sys.stderr.flush()
        if self._process is not None:
            os.kill(self._process.pid, signal.SIGKILL)
        else:  # under spark-submit the JVM is this process's parent: it halts itself
            try:
                _in_time(lambda: self._jvm.java.lang.Runtime.getRuntime().halt(EXIT_LEASE_LOST), 2.0, "JVM halt")
            except Exception:  # noqa: BLE001 - the call never returns when it works
                pass
        os._exit(EXIT_LEASE_LOST)

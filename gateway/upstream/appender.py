"""The gateway's writes to the requests topic, all through one librdkafka producer.

One producer for every control request of this gateway (the ones it waits for the coordinator to answer, the
commits it answers itself, the Liveness requests), so a group's requests reach the topic in the order the gateway
wrote them: they share a partition (the key is the group id, murmur2 as Kafka's and kafka-python's partitioner) and
the producer is idempotent. librdkafka because a commit answered here waits for its append: an acks=all produce
from Python took 0.17 ms (p50) with librdkafka and a poll thread, 1.1 ms with kafka-python's producer (p99 0.4 vs
17 ms, same broker, same run). A poll thread serves the delivery reports and hands each to the event loop.
Nagle's algorithm is off on its broker sockets (librdkafka leaves it on; Kafka's Java clients and asyncio's sockets
turn it off): a small request written while another waits for its acknowledgement would otherwise wait for that
acknowledgement, a commit's answer with it.
One Produce request in flight (`max.in.flight.requests.per.connection` 1; librdkafka's idempotent producer allows
up to five): with more, while requests waited for their acknowledgement and records were queued behind them,
librdkafka's broker thread woke 340,000-550,000 times a second and used a third of a core doing nothing (its
`wakeups` statistic; 100 concurrent appends at load 12-19, issue 36). With one, the records that arrive meanwhile
go in the next request: 28,474 appends/s against 10,517, p50 2.2 against 4.7 ms, 80,617 wakeups/s, a tenth of a
core; a lone append as fast (0.17 ms p50 both). docs/gateway.md, "Many committers".
The delivery reports one poll serves (a Produce request's records) go to the event loop in one hand-over: each
`call_soon_threadsafe` writes to the loop's wake-up socket, a system call and a wake of the loop per report.

Where the query rotates the requests topic (`common.generations`), the gateway's view follower tells the appender of
each new generation (`move_to`): it holds new records until every record in flight to the older one is
acknowledged, then writes them and all later ones to the new one, so a group's requests keep the order the gateway
wrote them in (the query reads a newer generation's ends before an older one's). Until the follower has read the
views once (`follow_generations`), records wait for it: a restarted gateway must not write to generation 0 while
the query's marks name a newer one.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from common.librdkafka_config import confluent_config

log = logging.getLogger(__name__)

FIRST_GENERATION_WAIT_S = 10.0
"""How long records wait for the view follower's first generation (`follow_generations`) before they are written
to the topic the appender was made with: a query that writes no views names none."""


class AppendFailed(Exception):
    """The requests topic did not take a record (the broker refused it, or it could not be sent in time).
    `code`: Kafka's error code for why (librdkafka's local MSG_SIZE_TOO_LARGE shares the broker's 10), or None."""

    def __init__(self, error: Any) -> None:
        super().__init__(str(error))
        self.code = error.code() if isinstance(error, KafkaError) and error.code() >= -1 else None


class Appender:
    def __init__(self, bootstrap_servers: str, topic: str, kafka_config: dict[str, Any],
                 loop: asyncio.AbstractEventLoop, timeout_ms: int = 10_000) -> None:
        """`kafka_config`: the gateway's kafka-python settings (security), mapped to librdkafka's."""
        self.topic = topic
        """Where records are written now."""
        self._moving_to: str | None = None
        """A generation to write to once the records in flight are acknowledged (`move_to`)."""
        self._in_flight = 0
        self._first: asyncio.TimerHandle | None = None
        """While records wait for the follower's first generation (`follow_generations`)."""
        self._held: list[tuple[str, bytes, asyncio.Future]] = []
        """Records waiting for the move, in the order they were appended."""
        self._loop = loop
        self._producer = Producer({
            **confluent_config({"bootstrap_servers": bootstrap_servers, **kafka_config}), "logger": log,
            "acks": "all", "enable.idempotence": True, "max.in.flight.requests.per.connection": 1, "linger.ms": 0,
            "socket.nagle.disable": True,
            # librdkafka's producer refreshes every topic it wrote to every 5 minutes, asking the broker to create
            # those missing: on tansu that brought back the retired generations the query had deleted
            "allow.auto.create.topics": False,
            "partitioner": "murmur2_random",
            "message.timeout.ms": timeout_ms, "client.id": "groupcoord-gateway"})
        self._reports: list[tuple[asyncio.Future, Any]] = []
        """Delivery reports served by the poll in progress, handed to the event loop together once it returns; only
        the thread that polls (or flushes) touches it."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="control-appender", daemon=True)
        self._thread.start()

    def append(self, key: str, value: bytes) -> asyncio.Future:
        """Send one record keyed by `key` (a group id); the future completes when the topic has it (acks=all),
        or fails with AppendFailed."""
        done = self._loop.create_future()
        done.add_done_callback(_retrieved)
        if self._moving_to is not None:
            self._held.append((key, value, done))
        else:
            self._produce(key, value, done)
        return done

    def _produce(self, key: str, value: bytes, done: asyncio.Future) -> None:
        def delivered(error: Any, message: Any) -> None:
            self._reports.append((done, error))

        try:
            self._producer.produce(self.topic, value, key.encode("utf-8"), on_delivery=delivered)
        except BufferError as exc:
            done.set_exception(AppendFailed(exc))
        except KafkaException as exc:
            done.set_exception(AppendFailed(exc.args[0]))
        else:
            self._in_flight += 1

    def follow_generations(self) -> None:
        """Hold records until the first `move_to` (the view follower's first round), or `FIRST_GENERATION_WAIT_S`.
        Called from the event loop's thread, as every method here but `close`."""
        self._moving_to = self.topic
        self._first = self._loop.call_later(FIRST_GENERATION_WAIT_S, self._first_wait_over)

    def _first_wait_over(self) -> None:
        log.warning("no generation of the requests topic read from the views within %.0f s: writing to %s",
                    FIRST_GENERATION_WAIT_S, self.topic)
        self.move_to(self.topic)

    def move_to(self, topic: str) -> None:
        """Write to `topic` from now on, once the records in flight are acknowledged (see the module's docstring)."""
        if self._first is not None:
            self._first.cancel()
            self._first = None
        if topic == self.topic and self._moving_to is None:
            return
        self._moving_to = topic
        self._move_when_settled()

    def _move_when_settled(self) -> None:
        if self._moving_to is None or self._in_flight:
            return
        if self._moving_to != self.topic:
            log.info("writing requests to %s (was %s)", self._moving_to, self.topic)
        self.topic, self._moving_to = self._moving_to, None
        held, self._held = self._held, []
        for key, value, done in held:
            self._produce(key, value, done)

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(0.1)
            self._hand_over()

    def _hand_over(self) -> None:
        if self._reports:
            reports, self._reports = self._reports, []
            try:
                self._loop.call_soon_threadsafe(self._settle_all, reports)
            except RuntimeError:  # the loop is closed: nobody waits for them any more
                pass

    def _settle_all(self, reports: list[tuple[asyncio.Future, Any]]) -> None:
        self._in_flight -= len(reports)
        for done, error in reports:
            if done.done():
                continue
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(AppendFailed(error))
        self._move_when_settled()

    def close(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout=timeout_s)
        self._producer.flush(timeout_s)
        self._hand_over()


def _retrieved(done: asyncio.Future) -> None:
    """A write nobody waits for (a request whose answer came first) fails quietly; callers that wait see it."""
    if not done.cancelled():
        done.exception()



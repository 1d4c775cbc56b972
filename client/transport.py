"""Request/response over two Kafka topics: requests to the control topic, answers from the response topic.

The coordinator answers on the response topic with record key = the request's key (the `group_id`; for
ListGroups, the key the request was sent with), so all answers for one group land in one partition: the one
Kafka's default partitioner picks for that key (murmur2). A transport reads only the partitions of the keys it
has asked about, and matches answers to requests by `request_id`; everything else there (other members'
answers, duplicates written again after a coordinator restart, late answers to a request already answered) is
skipped. A retry re-sends the same body with the same `request_id`, so whichever answer comes first completes
it: every group request is safe to repeat in Kafka's protocol (a re-sent JoinGroup replaces the parked one).
"""

from __future__ import annotations

import itertools
import json
import logging
import socket
import threading
import uuid
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, Protocol

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.partitioner.default import murmur2

from client.errors import RequestTimeoutError
from client.protocol import Json

log = logging.getLogger(__name__)

DEFAULT_CONTROL_TOPIC = "group-coordinator-requests"
DEFAULT_RESPONSE_TOPIC = "group-coordinator-responses"
IDLE_READ_S = 1.0
"""With no request awaiting its answer, the response partitions are read this often (positions kept: nothing is
missed, a later answer is read from where the reader stopped)."""


class Transport(Protocol):
    """What group members and the admin CLI need from the wire: one call, one answer."""

    def request(self, key: str, body: Json, timeout_s: float, attempts: int = 1) -> Json:
        """Send `body` keyed by `key` and return the matching response; re-send the same request up to
        `attempts` times, `timeout_s` apart; raise RequestTimeoutError if none answers."""
        ...

    def close(self) -> None: ...


def response_partition(key: str, num_partitions: int) -> int:
    """The partition Kafka's default partitioner (Java's and kafka-python's) picks for `key`."""
    return (murmur2(key.encode("utf-8")) & 0x7FFFFFFF) % num_partitions


class PendingRequests:
    """request_id -> Future, shared by callers and the reader thread. Completing a future removes it, so a
    second answer with the same id finds nothing and is dropped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._futures: dict[str, Future[Json]] = {}
        self._ids = itertools.count()
        self._prefix = uuid.uuid4().hex[:12]
        self._added = threading.Event()

    def new(self) -> tuple[str, Future[Json]]:
        request_id = f"{self._prefix}-{next(self._ids)}"
        fut: Future[Json] = Future()
        with self._lock:
            self._futures[request_id] = fut
        self._added.set()
        return request_id, fut

    def wait_for_any(self, timeout_s: float) -> None:
        """Return once a request awaits its answer, or after `timeout_s`: the reader has nothing to fetch for
        meanwhile (an idle gateway's reader fetched twenty times a second, issue 37)."""
        with self._lock:
            if self._futures:
                return
            self._added.clear()
        self._added.wait(timeout_s)

    def complete(self, response: Json) -> None:
        with self._lock:
            fut = self._futures.pop(str(response.get("request_id")), None)
        if fut is not None:
            fut.set_result(response)

    def forget(self, request_id: str) -> None:
        with self._lock:
            self._futures.pop(request_id, None)


def encode_request(body: Json, request_id: str) -> bytes:
    return json.dumps({**body, "request_id": request_id}, separators=(",", ":")).encode("utf-8")


def send_and_wait(
    send: Callable[[str, bytes], None], waiters: PendingRequests, key: str, body: Json, timeout_s: float, attempts: int
) -> Json:
    """The retry loop both transports share: same request id on every attempt."""
    request_id, fut = waiters.new()
    raw = encode_request(body, request_id)
    try:
        for attempt in range(max(1, attempts)):
            send(key, raw)
            try:
                return fut.result(timeout=timeout_s)
            except FutureTimeout:
                log.debug("no answer to %s %s (attempt %d)", body.get("api"), request_id, attempt + 1)
        raise RequestTimeoutError(f"{body.get('api')} {request_id}: no response after {attempts} x {timeout_s}s")
    finally:
        waiters.forget(request_id)


class KafkaTransport:
    """The real transport: a kafka-python producer and a reader thread on the response partitions."""

    def __init__(
        self,
        bootstrap_servers: str,
        control_topic: str = DEFAULT_CONTROL_TOPIC,
        response_topic: str = DEFAULT_RESPONSE_TOPIC,
        client_id: str = "groupcoord-client",
        fetch_max_wait_ms: int = 50,
        producing: bool = True,
        **kafka_config: Any,
    ) -> None:
        """`producing=False`: this transport only reads answers; the caller sends the requests (`expect`)."""
        self.control_topic = control_topic
        self.response_topic = response_topic
        self._waiters = PendingRequests()
        self._producer = KafkaProducer(
            bootstrap_servers=bootstrap_servers, client_id=client_id, linger_ms=0, **kafka_config
        ) if producing else None
        self._consumer = KafkaConsumer(
            bootstrap_servers=bootstrap_servers,
            client_id=f"{client_id}-responses",
            group_id=None,
            enable_auto_commit=False,
            # A start position past the log end (a wrong ListOffsets answer) falls back to re-reading from
            # the beginning: answers are matched by request_id, so reading too much is safe, too little is not.
            auto_offset_reset="earliest",
            # How long the broker may hold a fetch of the response partitions. Kafka answers a waiting fetch as
            # soon as an answer is written; tansu holds it this long, which then bounds every round trip.
            fetch_max_wait_ms=fetch_max_wait_ms,
            **kafka_config,
        )
        self._num_partitions: int | None = None
        self._watched: dict[int, threading.Event] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, name=f"{client_id}-responses", daemon=True)
        self._reader.start()

    def request(self, key: str, body: Json, timeout_s: float, attempts: int = 1) -> Json:
        self._watch(key, timeout_s)
        return send_and_wait(self._send, self._waiters, key, body, timeout_s, attempts)

    def submit(self, key: str, body: Json) -> tuple[str, Future[Json]]:
        """Send one request and return at once with its id and the future its answer completes; `forget` the id
        when done. For callers with their own event loop (the Kafka gateway): it neither waits for the answer nor
        flushes, and after `watch_all` it does not wait for the reader either."""
        request_id, fut = self.expect(key)
        self._producer.send(self.control_topic, key=key.encode("utf-8"), value=encode_request(body, request_id))
        return request_id, fut

    def append(self, key: str, body: Json) -> tuple[str, Future[Json], Future[None]]:
        """As `submit`, plus a future completed once the broker has acknowledged the request (or failed as the
        append failed): for callers that act on the request being in the control topic."""
        self._watch(key, 60.0)
        request_id, fut = self._waiters.new()
        appended: Future[None] = Future()
        sent = self._producer.send(self.control_topic, key=key.encode("utf-8"), value=encode_request(body, request_id))
        sent.add_callback(lambda _metadata: appended.set_result(None))
        sent.add_errback(appended.set_exception)
        return request_id, fut, appended

    def expect(self, key: str) -> tuple[str, Future[Json]]:
        """A request id and the future its answer completes, for a request keyed by `key` that the caller sends
        itself (with `encode_request`); `forget` the id when done."""
        self._watch(key, 60.0)
        return self._waiters.new()

    def forget(self, request_id: str) -> None:
        self._waiters.forget(request_id)

    def watch_all(self, timeout_s: float) -> None:
        """Read every response partition from now on, so that no later request waits for its partition."""
        for partition in range(self._partition_count()):
            self._watch_partition(partition, timeout_s)

    def _send(self, key: str, raw: bytes) -> None:
        self._producer.send(self.control_topic, key=key.encode("utf-8"), value=raw)
        self._producer.flush()

    def _partition_count(self) -> int:
        with self._lock:
            if self._num_partitions is None:
                if self._producer is not None:
                    self._num_partitions = len(self._producer.partitions_for(self.response_topic))
                else:
                    self._num_partitions = len(self._consumer.partitions_for_topic(self.response_topic) or ())
                    if not self._num_partitions:
                        self._num_partitions = None
                        raise RequestTimeoutError(f"topic {self.response_topic} has no partitions yet")
            return self._num_partitions

    def _watch(self, key: str, timeout_s: float) -> None:
        """Make sure the reader reads the partition answers for `key` land in, from a position no later than
        where the answer to a request sent now can be written."""
        self._watch_partition(response_partition(key, self._partition_count()), timeout_s)

    def _watch_partition(self, partition: int, timeout_s: float) -> None:
        with self._lock:
            ready = self._watched.get(partition)
            if ready is None:
                ready = self._watched[partition] = threading.Event()
        if not ready.wait(timeout_s):
            raise RequestTimeoutError(f"response partition {partition} not readable within {timeout_s}s")

    def _read_loop(self) -> None:
        positioned: set[int] = set()
        while not self._closed.is_set():
            with self._lock:
                wanted = {p: e for p, e in self._watched.items() if p not in positioned}
            if wanted:
                self._add_partitions(wanted, positioned)
            if not positioned:
                self._closed.wait(0.02)
                continue
            self._waiters.wait_for_any(IDLE_READ_S)
            try:
                batches = self._consumer.poll(timeout_ms=100)
            except Exception:  # a broker hiccup must not kill the reader; callers time out and retry
                log.exception("reading responses failed")
                self._closed.wait(0.5)
                continue
            for records in batches.values():
                for record in records:
                    self._dispatch(record.value)

    def _add_partitions(self, wanted: dict[int, threading.Event], positioned: set[int]) -> None:
        tps = [TopicPartition(self.response_topic, p) for p in sorted(set(wanted) | positioned)]
        self._consumer.assign(tps)
        new = [TopicPartition(self.response_topic, p) for p in wanted]
        self._consumer.seek_to_end(*new)
        for tp in new:
            self._consumer.position(tp)  # resolve now, before any request is sent for this partition
        positioned.update(wanted)
        for event in wanted.values():
            event.set()

    def _dispatch(self, value: bytes | None) -> None:
        try:
            response = json.loads(value or b"")
        except ValueError:
            return
        if isinstance(response, dict):
            self._waiters.complete(response)

    def close(self) -> None:
        self._closed.set()
        self._reader.join(timeout=5)
        self._consumer.close()
        if self._producer is not None:
            self._producer.close(timeout=5)


def default_client_host() -> str:
    """What Kafka stores as `client_host`: the client's address as `/a.b.c.d`. The coordinator never sees a
    socket here, so the client reports it."""
    try:
        return "/" + socket.gethostbyname(socket.gethostname())
    except OSError:
        return "/127.0.0.1"

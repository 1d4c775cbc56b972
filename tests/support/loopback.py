"""A test double: the coordinator in-process, requests straight into the real `state.batch.step_group`, no Kafka,
no Spark.

The core is pure and deterministic, so this is the real coordinator minus the streaming shell: the same
`route` / `step_group` calls the Spark job makes, one group at a time, with the group's state bytes kept in a
dict instead of Spark's state store, and its timers fired by a thread at the deadlines the core asks for. Tests
drive group members through it in milliseconds, and can jump the clock forward (`advance`) to expire sessions.
ListGroups, which the Spark job answers from the group directory, is answered here from the same directory,
fed with the records the groups write. The cluster's topics (`TopicMetadata`, which the job keeps per state bucket)
are kept once and passed to every group.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Callable

from client.protocol import Json
from client.transport import PendingRequests, send_and_wait
from state.batch import TOPIC_METADATA_GROUP, StoredGroup, route, step_group
from state.config import CoordinatorConfig
from state.views.directory import GroupDirectory
from state.handling.timers import is_due


class LoopbackCoordinator:
    """Every group's coordinator state, one lock, and a timer thread; `transport()` hands out clients."""

    def __init__(self, config: CoordinatorConfig | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config or CoordinatorConfig()
        self._clock = clock
        self._offset_ms = 0
        self._lock = threading.Condition()
        self._states: dict[str, StoredGroup | None] = {}
        self._deadlines: dict[str, int] = {}
        self._topics: StoredGroup | None = None
        self.records: list[tuple[bytes, bytes | None]] = []
        """Every record written to the records topic, in order: what `--history` reads."""
        self.requests: list[Json] = []
        """Every request received, in order, for tests that assert on what members sent."""
        self._waiters = PendingRequests()
        self._closed = False
        self._timer = threading.Thread(target=self._timer_loop, name="loopback-timers", daemon=True)
        self._timer.start()

    def now_ms(self) -> int:
        return int(self._clock() * 1000) + self._offset_ms

    def advance(self, ms: int) -> None:
        """Jump the coordinator's clock forward (members keep real time): sessions of members that do not
        heartbeat within the jump expire at once."""
        with self._lock:
            self._offset_ms += ms
            self._lock.notify_all()

    def transport(self) -> "LoopbackTransport":
        return LoopbackTransport(self)

    def handle(self, key: str, raw: bytes) -> None:
        """One control-topic record, as the Spark job would route and process it."""
        r = route(key.encode("utf-8"), raw)
        with self._lock:
            self.requests.append(json.loads(raw))
            if r.kind == "topics":
                self._topics = step_group(TOPIC_METADATA_GROUP, self._topics, [raw], self.now_ms(),
                                          self.config).stored(self._topics)
            elif r.kind == "group" and r.group_id is not None:
                self._step(r.group_id, [raw])
            elif r.kind == "directory":
                self._list_groups(json.loads(raw))
            elif r.response is not None:
                self._deliver([r.response])

    def _step(self, group_id: str, requests: list[bytes]) -> None:
        before = self._states.get(group_id)
        result = step_group(group_id, before, requests, self.now_ms(), self.config,
                            topics=None if self._topics is None else self._topics.metadata)
        self._states[group_id] = result.stored(before)
        self.records.extend(result.records)
        if result.next_deadline_ms is None:
            self._deadlines.pop(group_id, None)
        else:
            self._deadlines[group_id] = result.next_deadline_ms
        self._lock.notify_all()
        self._deliver(result.responses)

    def _deliver(self, responses: list[bytes]) -> None:
        for raw in responses:
            self._waiters.complete(json.loads(raw))

    def _list_groups(self, request: Json) -> None:
        directory = GroupDirectory()
        for key, value in self.records:
            directory.apply(key, value)
        self._deliver([directory.answer(json.dumps(request).encode())])

    def _timer_loop(self) -> None:
        with self._lock:
            while not self._closed:
                now = self.now_ms()
                due = [g for g, d in self._deadlines.items() if is_due(d, now)]
                for group_id in due:
                    self._step(group_id, [])
                if due:
                    continue
                wait_ms = min(self._deadlines.values(), default=now + 1000) - now
                self._lock.wait(timeout=max(wait_ms, 1) / 1000)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self._timer.join(timeout=5)


class LoopbackTransport:
    """A `Transport` whose control topic is a function call."""

    def __init__(self, coordinator: LoopbackCoordinator) -> None:
        self._coordinator = coordinator

    def request(self, key: str, body: Json, timeout_s: float, attempts: int = 1) -> Json:
        return send_and_wait(self._coordinator.handle, self._coordinator._waiters, key, body, timeout_s, attempts)

    def close(self) -> None:
        pass

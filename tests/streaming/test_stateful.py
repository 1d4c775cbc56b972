"""The applyInPandasWithState adapter with an in-memory GroupState stand-in (no Spark)."""

from __future__ import annotations

import json

import pandas as pd

from state.batch import GroupStep, route
from state.config import CoordinatorConfig
from streaming.stateful import ENVELOPE_VERSION, INPUT_COLUMNS, coordinator_function
from tests.support import protocol as p


class FakeState:
    """The parts of pyspark's GroupState the adapter uses; the timeout is kept absolute, as Spark keeps it."""

    def __init__(self, now_ms: int, value: tuple | None = None, timed_out: bool = False) -> None:
        self.now_ms, self.value, self.hasTimedOut = now_ms, value, timed_out
        self.timeout_at: int | None = None
        self.removed = False

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple:
        return self.value

    def update(self, value: tuple) -> None:
        self.value = value

    def remove(self) -> None:
        self.value, self.removed = None, True

    def setTimeoutDuration(self, ms: int) -> None:
        assert ms > 0
        self.timeout_at = self.now_ms + ms

    def getCurrentProcessingTimeMs(self) -> int:
        return self.now_ms


def rows(*requests: dict, partition: int = 0, timestamp: int = 0) -> pd.DataFrame:
    out = []
    for offset, request in enumerate(requests):
        value = json.dumps(request).encode()
        r = route(None, value)
        out.append({"kind": r.kind, "group_id": r.group_id or "", "partition": partition, "offset": offset,
                    "key": None, "value": value, "reply_key": r.reply_key, "reason": r.reason,
                    "response": r.response, "timestamp": timestamp})
    return pd.DataFrame(out, columns=INPUT_COLUMNS)


def call(key: tuple, frames: list[pd.DataFrame], state: FakeState, config: CoordinatorConfig | None = None):
    fn = coordinator_function(config or CoordinatorConfig(group_initial_rebalance_delay_ms=100), {})
    return pd.concat(list(fn(key, iter(frames), state)))


def test_a_group_call_stores_state_emits_responses_and_arms_the_timer():
    state = FakeState(now_ms=1_000)
    out = call(("group", "g"), [rows({**p.join("g"), "request_id": "a"})], state)
    assert state.value[0] == ENVELOPE_VERSION and state.value[1]
    responses = out[out.sink == "response"]
    assert [json.loads(v)["error_code"] for v in responses.value] == [79]
    assert set(responses.key) == {b"g"}
    timer = out[out.sink == "timer"]
    assert len(timer) == 1 and timer.deadline.iloc[0] == state.timeout_at


def test_requests_reach_the_core_in_partition_and_offset_order_across_frames(monkeypatch):
    seen = []

    def recording_step(group_id, stored, requests, now_ms, config, request_times_ms):
        seen.extend(json.loads(r)["request_id"] for r in requests)
        assert len(request_times_ms) == len(requests)
        return GroupStep(state=b"{}")

    monkeypatch.setattr("streaming.stateful.step_group", recording_step)
    p1 = rows({**p.heartbeat("g", "m", 1), "request_id": "p1-o0"}, partition=1)
    p0 = rows({**p.heartbeat("g", "m", 1), "request_id": "p0-o0"}, {**p.heartbeat("g", "m", 1),
                                                                     "request_id": "p0-o1"}, partition=0)
    call(("group", "g"), [p1, p0.iloc[::-1]], FakeState(now_ms=0))
    assert seen == ["p0-o0", "p0-o1", "p1-o0"]


def test_a_timeout_call_lets_the_core_fire_due_timers():
    state = FakeState(now_ms=0)
    member = json.loads(call(("group", "g"), [rows({**p.join("g"), "request_id": "m"})],
                             state).value.iloc[0])["member_id"]
    call(("group", "g"), [rows({**p.join("g", member), "request_id": "j"})], state)
    fired = FakeState(now_ms=state.timeout_at + 1, value=state.value, timed_out=True)
    out = call(("group", "g"), [], fired)
    joined = [json.loads(v) for v in out[out.sink == "response"].value]
    assert [r["request_id"] for r in joined] == ["j"] and joined[0]["error_code"] == 0


def test_rejects_become_dead_letters_with_the_original_bytes_and_an_error_response():
    frame = rows({"api": "NoSuchApi", "request_id": "bad", "group_id": "g"})
    out = call(("reject", ""), [frame], FakeState(now_ms=0))
    dead = out[out.sink == "dead_letter"]
    assert list(dead.value) == [frame.value.iloc[0]] and dead.reason.iloc[0]
    assert json.loads(out[out.sink == "response"].value.iloc[0])["request_id"] == "bad"


def test_the_same_call_gives_byte_identical_output():
    frame = rows({**p.join("g"), "request_id": "a"})
    first = call(("group", "g"), [frame], FakeState(now_ms=5))
    second = call(("group", "g"), [frame], FakeState(now_ms=5))
    assert first.equals(second)


def test_each_request_reaches_the_core_with_its_record_timestamp():
    """A heartbeat that reached the topic before its member's deadline counts then, even in a late batch."""
    state = FakeState(now_ms=0)
    member = json.loads(call(("group", "g"), [rows({**p.join("g"), "request_id": "m"})],
                             state).value.iloc[0])["member_id"]
    state.now_ms = 60_000  # the batch runs long after the pending member's session timeout
    late = call(("group", "g"), [rows({**p.join("g", member), "request_id": "j"}, timestamp=1_000)], state)
    assert not [json.loads(v) for v in late[late.sink == "response"].value]  # parked, not UNKNOWN_MEMBER_ID

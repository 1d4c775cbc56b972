"""The applyInPandasWithState adapter with an in-memory GroupState stand-in (no Spark): one key per bucket of groups."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from state.batch import GroupStep, route
from state.config import CoordinatorConfig
from streaming.buckets import bucket_of
from streaming.sink import SUMMARY_COLUMNS
from streaming.source import ROUTED_ARROW, record_batches, timer_rows
from streaming.timers import read_deadlines
from streaming.stateful import (ENVELOPE_VERSION, INPUT_COLUMNS, coordinator_function, pack_groups,
                                unpack_groups)
from tests.support import protocol as p


class FakeState:
    """The parts of pyspark's GroupState the adapter uses; the timeout is kept absolute, as Spark keeps it, and
    setting one without `ProcessingTimeTimeout` fails, as it does in Spark."""

    def __init__(self, now_ms: int, value: tuple | None = None, timed_out: bool = False,
                 processing_time_timeout: bool = False) -> None:
        self.now_ms, self.value, self.hasTimedOut = now_ms, value, timed_out
        self.processing_time_timeout = processing_time_timeout
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
        assert self.processing_time_timeout, "a timeout needs GroupStateTimeout.ProcessingTimeTimeout"
        assert ms > 0
        self.timeout_at = self.now_ms + ms

    def getCurrentProcessingTimeMs(self) -> int:
        return self.now_ms


def rows(*requests: dict, partition: int = 0, timestamp: int = 0, resumed: bool = False) -> pd.DataFrame:
    out = []
    for offset, request in enumerate(requests):
        value = json.dumps(request).encode()
        r = route(None, value)
        out.append({"kind": r.kind, "bucket": 0, "group_id": r.group_id or "", "partition": partition, "offset": offset,
                    "key": None, "value": value, "reply_key": r.reply_key, "reason": r.reason,
                    "response": r.response, "timestamp": timestamp, "resumed": resumed})
    return pd.DataFrame(out, columns=INPUT_COLUMNS)


def timer(bucket: int = 0, resumed: bool = False) -> pd.DataFrame:
    """The source's timer row for `bucket`, as the state call receives it."""
    return next(record_batches(timer_rows([bucket], resumed), ROUTED_ARROW)).to_pandas()[INPUT_COLUMNS]


OUT_COLUMNS = ["sink", "key", "value", "reason", "partition", "offset"]


class Collected:
    """Where the calls' output records go here; the job sends them with `streaming.sink.KafkaOutput`."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def send(self, rows) -> None:
        self.rows.extend(rows)


def run(key: tuple, frames: list[pd.DataFrame], state: FakeState, config: CoordinatorConfig | None = None,
        buckets: int = 4) -> tuple[pd.DataFrame, pd.Series]:
    """One call: (the output records it sent, its summary row)."""
    output = Collected()
    fn = coordinator_function(config or CoordinatorConfig(group_initial_rebalance_delay_ms=100), {}, output, buckets,
                              processing_time_timeout=state.processing_time_timeout)
    summaries = list(fn(key, iter(frames), state))
    assert len(summaries) == 1 and len(summaries[0]) == 1
    assert list(summaries[0].columns) == SUMMARY_COLUMNS
    return pd.DataFrame(output.rows, columns=OUT_COLUMNS), summaries[0].iloc[0]


def call(key: tuple, frames: list[pd.DataFrame], state: FakeState, config: CoordinatorConfig | None = None,
         buckets: int = 4) -> pd.DataFrame:
    return run(key, frames, state, config, buckets)[0]


def stored_groups(state: FakeState) -> dict[str, tuple[bytes, int | None]]:
    version, buckets, packed = state.value
    assert version == ENVELOPE_VERSION and buckets == 4
    return unpack_groups(packed)


def stored(groups: dict[str, tuple[bytes, int | None]], buckets: int = 4) -> tuple:
    return ENVELOPE_VERSION, buckets, pack_groups(groups)


def recording(monkeypatch, steps: dict[str, GroupStep] | None = None) -> list[tuple[str, bytes | None, list[str]]]:
    """Replace the core with a recorder: (group_id, stored, request ids) per call; `steps` says what each group's
    call returns (default: state `<group>-<n>` and a deadline 1,000 ms after now)."""
    calls = []

    def step(group_id, stored, requests, now_ms, config, request_times_ms, resumed=False):
        calls.append((group_id, stored, [json.loads(r)["request_id"] for r in requests]))
        if steps and group_id in steps:
            return steps[group_id]
        return GroupStep(state=f"{group_id}-{len(calls)}".encode(), next_deadline_ms=now_ms + 1_000)

    monkeypatch.setattr("streaming.stateful.step_group", step)
    return calls


def test_a_group_call_stores_state_emits_responses_and_arms_the_timer():
    state = FakeState(now_ms=1_000)
    out, summary = run(("group", bucket_of("g", 4)), [rows({**p.join("g"), "request_id": "a"})], state)
    assert state.value[:2] == (ENVELOPE_VERSION, 4) and list(stored_groups(state)) == ["g"]
    responses = out[out.sink == "response"]
    assert [json.loads(v)["error_code"] for v in responses.value] == [79]
    assert set(responses.key) == {b"g"}
    assert summary.deadline == stored_groups(state)["g"][1] and state.timeout_at is None  # the timer file's job
    assert (summary.kind, summary.bucket, summary.responses, summary.groups_called) == (
        "group", bucket_of("g", 4), 1, 1)


def test_the_summary_counts_output_and_group_state_changes():
    state = FakeState(now_ms=0)
    member = json.loads(call(("group", 0), [rows({**p.join("g"), "request_id": "m"})],
                             state).value.iloc[0])["member_id"]
    out, summary = run(("group", 0), [rows({**p.join("g", member), "request_id": "j"})], state,
                       CoordinatorConfig(group_initial_rebalance_delay_ms=0))
    assert summary.records == (out.sink == "record").sum() >= 1
    assert summary.groups_to_PreparingRebalance + summary.groups_to_CompletingRebalance >= 1
    assert summary.groups_with_timer == 1 and summary.dead_letters == 0


def test_requests_reach_the_core_in_partition_and_offset_order_across_frames(monkeypatch):
    seen = []

    def recording_step(group_id, stored, requests, now_ms, config, request_times_ms, resumed):
        seen.extend(json.loads(r)["request_id"] for r in requests)
        assert len(request_times_ms) == len(requests)
        return GroupStep(state=b"{}")

    monkeypatch.setattr("streaming.stateful.step_group", recording_step)
    p1 = rows({**p.heartbeat("g", "m", 1), "request_id": "p1-o0"}, partition=1)
    p0 = rows({**p.heartbeat("g", "m", 1), "request_id": "p0-o0"}, {**p.heartbeat("g", "m", 1),
                                                                     "request_id": "p0-o1"}, partition=0)
    call(("group", 0), [p1, p0.iloc[::-1]], FakeState(now_ms=0))
    assert seen == ["p0-o0", "p0-o1", "p1-o0"]


def test_a_timer_row_lets_the_core_fire_due_timers():
    state = FakeState(now_ms=0)
    member = json.loads(call(("group", 0), [rows({**p.join("g"), "request_id": "m"})],
                             state).value.iloc[0])["member_id"]
    call(("group", 0), [rows({**p.join("g", member), "request_id": "j"})], state)
    fired = FakeState(now_ms=stored_groups(state)["g"][1] + 1, value=state.value)
    out = call(("group", 0), [timer(0)], fired)
    joined = [json.loads(v) for v in out[out.sink == "response"].value]
    assert [r["request_id"] for r in joined] == ["j"] and joined[0]["error_code"] == 0


def test_the_summary_counts_expired_members():
    state = FakeState(now_ms=0)
    call(("group", 0), [rows({**p.join("g", session_timeout_ms=10_000), "request_id": "m"})], state)
    expired = FakeState(now_ms=stored_groups(state)["g"][1] + 1, value=state.value)
    _, summary = run(("group", 0), [timer(0)], expired)
    assert summary.members_expired == 1  # the pending member's session ran out


def test_the_first_batch_after_a_restart_restarts_sessions_instead_of_expiring_them():
    """The source marks the first new batch after a restart `resumed`; the core then restarts every session of the
    groups it calls, as Kafka does when a coordinator loads a group."""
    state = FakeState(now_ms=0)
    member = json.loads(call(("group", 0), [rows({**p.join("g", session_timeout_ms=10_000), "request_id": "m"})],
                             state).value.iloc[0])["member_id"]
    call(("group", 0), [rows({**p.join("g", member, session_timeout_ms=10_000), "request_id": "j"})], state)
    state.now_ms = stored_groups(state)["g"][1] + 1  # the initial rebalance delay ends
    joined = call(("group", 0), [timer(0)], state)
    generation = json.loads(joined[joined.sink == "response"].value.iloc[0])["generation_id"]
    call(("group", 0), [rows({**p.sync("g", member, generation, {member: ""}), "request_id": "s"})], state)
    late = stored_groups(state)["g"][1] + 1  # the member's session deadline has passed
    _, expired = run(("group", 0), [timer(0)], FakeState(now_ms=late, value=state.value))
    _, resumed = run(("group", 0), [timer(0, resumed=True)], FakeState(now_ms=late, value=state.value))
    assert (expired.members_expired, resumed.members_expired) == (1, 0)


def test_rejects_become_dead_letters_with_the_original_bytes_and_an_error_response():
    frame = rows({"api": "NoSuchApi", "request_id": "bad", "group_id": "g"})
    out = call(("reject", 0), [frame], FakeState(now_ms=0))
    dead = out[out.sink == "dead_letter"]
    assert list(dead.value) == [frame.value.iloc[0]] and dead.reason.iloc[0]
    assert json.loads(out[out.sink == "response"].value.iloc[0])["request_id"] == "bad"


def test_the_same_call_gives_byte_identical_output():
    frame = rows({**p.join("g"), "request_id": "a"})
    first = run(("group", 0), [frame], FakeState(now_ms=5))
    second = run(("group", 0), [frame], FakeState(now_ms=5))
    timings = ["call_us", "produce_us"]  # measured, so not part of the output
    assert first[0].equals(second[0]) and first[1].drop(timings).equals(second[1].drop(timings))


def test_each_request_reaches_the_core_with_its_record_timestamp():
    """A heartbeat that reached the topic before its member's deadline counts then, even in a late batch."""
    state = FakeState(now_ms=0)
    member = json.loads(call(("group", 0), [rows({**p.join("g"), "request_id": "m"})],
                             state).value.iloc[0])["member_id"]
    state.now_ms = 60_000  # the batch runs long after the pending member's session timeout
    late = call(("group", 0), [rows({**p.join("g", member), "request_id": "j"}, timestamp=1_000)], state)
    assert not [json.loads(v) for v in late[late.sink == "response"].value]  # parked, not UNKNOWN_MEMBER_ID


def test_bucket_of_is_crc32_of_the_group_id_mod_buckets():
    import zlib

    assert bucket_of("g", 64) == zlib.crc32(b"g") % 64
    assert {bucket_of(f"g{i}", 8) for i in range(100)} == set(range(8))


def test_several_groups_in_one_bucket_each_get_their_own_requests_state_and_timer(monkeypatch):
    calls = recording(monkeypatch)
    state = FakeState(now_ms=100)
    frame = rows({**p.heartbeat("b", "m", 1), "request_id": "b1"}, {**p.heartbeat("a", "m", 1), "request_id": "a1"},
                 {**p.heartbeat("b", "m", 1), "request_id": "b2"})
    _, summary = run(("group", 0), [frame], state)
    assert calls == [("a", None, ["a1"]), ("b", None, ["b1", "b2"])]
    assert stored_groups(state) == {"a": (b"a-1", 1_100), "b": (b"b-2", 1_100)}
    assert (summary.groups_called, summary.groups_with_timer, summary.deadline) == (2, 2, 1_100)


def test_real_core_groups_sharing_a_bucket_are_independent():
    state = FakeState(now_ms=1_000)
    out = call(("group", 0), [rows({**p.join("x"), "request_id": "x"}, {**p.join("y"), "request_id": "y"})], state)
    responses = out[out.sink == "response"]
    assert sorted(responses.key) == [b"x", b"y"]
    assert {json.loads(v)["request_id"]: json.loads(v)["error_code"] for v in responses.value} == {"x": 79, "y": 79}
    assert sorted(stored_groups(state)) == ["x", "y"]


def test_a_timer_row_steps_only_the_due_groups_and_keeps_the_others_bytes(monkeypatch):
    calls = recording(monkeypatch)
    state = FakeState(now_ms=5_000, value=stored({"early": (b"e", 4_000), "late": (b"l", 9_000),
                                                        "none": (b"n", None)}))
    _, summary = run(("group", 0), [timer(0)], state)
    assert calls == [("early", b"e", [])]  # the timer row itself reaches no group
    assert stored_groups(state) == {"early": (b"early-1", 6_000), "late": (b"l", 9_000), "none": (b"n", None)}
    assert summary.groups_called == 1 and summary.deadline == 6_000 and summary.timer_rows == 1


def test_a_group_call_records_its_buckets_earliest_deadline_in_the_timer_file(monkeypatch, tmp_path):
    recording(monkeypatch, {"g": GroupStep(state=b"s", next_deadline_ms=7_000), "gone": GroupStep(state=None)})
    path = str(tmp_path / "timers.json")
    fn = coordinator_function(CoordinatorConfig(), {}, Collected(), 4, timer_file=path)
    list(fn(("group", 2), iter([rows({**p.heartbeat("g", "m", 1), "request_id": "h"})]), FakeState(now_ms=0)))
    assert read_deadlines(path) == {2: 7_000}
    list(fn(("group", 2), iter([rows({**p.heartbeat("gone", "m", 1), "request_id": "x"})]),
            FakeState(now_ms=0, value=stored({"gone": (b"g", 3_000)}))))
    assert read_deadlines(path) == {}  # the bucket's last group went: nothing left to schedule


def test_with_spark_timeouts_a_timed_out_call_steps_the_due_groups_and_rearms(monkeypatch):
    """`timer.ticks.enabled=false`: Spark's ProcessingTimeTimeout calls the bucket with no rows."""
    calls = recording(monkeypatch)
    state = FakeState(now_ms=5_000, value=stored({"early": (b"e", 4_000), "late": (b"l", 9_000)}), timed_out=True,
                      processing_time_timeout=True)
    _, summary = run(("group", 0), [], state)
    assert calls == [("early", b"e", [])]
    assert summary.deadline == 6_000 and state.timeout_at == 6_000  # the earliest of 6,000 and 9,000


def test_a_call_with_requests_also_steps_due_groups_without_requests(monkeypatch):
    calls = recording(monkeypatch)
    state = FakeState(now_ms=5_000, value=stored({"due": (b"d", 5_000), "idle": (b"i", 8_000)}))
    call(("group", 0), [rows({**p.heartbeat("new", "m", 1), "request_id": "n1"})], state)
    assert calls == [("due", b"d", []), ("new", None, ["n1"])]
    assert stored_groups(state)["idle"] == (b"i", 8_000)


def test_a_removed_group_leaves_the_others_in_the_bucket(monkeypatch):
    calls = recording(monkeypatch, {"gone": GroupStep(state=None)})
    state = FakeState(now_ms=0, value=stored({"gone": (b"g", None), "stays": (b"s", 7_000)}))
    _, summary = run(("group", 0), [rows({**p.heartbeat("gone", "m", 1), "request_id": "x"})], state)
    assert calls == [("gone", b"g", ["x"])]
    assert not state.removed and stored_groups(state) == {"stays": (b"s", 7_000)}
    assert (summary.groups_called, summary.groups_with_timer, summary.deadline) == (1, 0, 7_000)


def test_the_bucket_row_is_removed_when_its_last_group_goes(monkeypatch):
    recording(monkeypatch, {"only": GroupStep(state=None)})
    state = FakeState(now_ms=10, value=stored({"only": (b"o", 5)}))
    _, summary = run(("group", 0), [timer(0)], state)
    assert state.removed and state.value is None and state.timeout_at is None
    assert pd.isna(summary.deadline)  # the bucket leaves the timer file


def test_with_spark_timeouts_an_overdue_bucket_times_out_in_one_millisecond(monkeypatch):
    recording(monkeypatch, {"g": GroupStep(state=b"s", next_deadline_ms=50)})
    state = FakeState(now_ms=100, processing_time_timeout=True)
    call(("group", 0), [rows({**p.heartbeat("g", "m", 1), "request_id": "h"})], state)
    assert state.timeout_at == 101


def test_a_checkpoint_made_with_another_bucket_count_is_refused(monkeypatch):
    calls = recording(monkeypatch)
    state = FakeState(now_ms=0, value=stored({"g": (b"s", None)}, buckets=8))
    with pytest.raises(ValueError, match="state.buckets=8.*state.buckets=4"):
        call(("group", 0), [rows({**p.heartbeat("g", "m", 1), "request_id": "h"})], state)
    assert not calls


def test_an_unknown_envelope_version_is_refused():
    state = FakeState(now_ms=0, value=(1, b"old"))
    with pytest.raises(ValueError, match="envelope version 1"):
        call(("group", 0), [], state)


def test_packed_groups_round_trip_in_group_id_order():
    groups = {"z": (b"", None), "\u00e9t\u00e9": (b'{"v":1}', 0), "a": (b"x" * 70_000, 2**40)}
    packed = pack_groups(groups)
    assert unpack_groups(packed) == groups and list(unpack_groups(packed)) == sorted(groups)
    assert pack_groups(dict(reversed(list(groups.items())))) == packed

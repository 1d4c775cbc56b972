"""A bucket call (`streaming.stateful.step_bucket`) over each operator's store, with the real core and in-memory
stand-ins for Spark's state (no Spark): what is read and written, and when a group's deadline brings it back."""

from __future__ import annotations

import json

import pytest

from state.batch import route
from state.config import CoordinatorConfig
from state.errors import Errors
from streaming.group_stores.bucket_blobs import ENVELOPE_VERSION, BlobStore, pack_groups, unpack_groups
from streaming.group_stores.group_rows import RowStore
from streaming.stateful import CallStats, Input, step_bucket
from tests.support import protocol as p

CONFIG = CoordinatorConfig(group_min_session_timeout_ms=1_000, group_initial_rebalance_delay_ms=0)


class MapState:
    """What `RowStore` uses of PySpark's `MapState`, in a dict; counts calls (each a JVM round trip in the job)."""

    def __init__(self) -> None:
        self.values: dict[tuple, tuple] = {}
        self.calls = 0

    def getValue(self, key: tuple) -> tuple | None:
        self.calls += 1
        return self.values.get(key)

    def getValues(self, keys: list[tuple]) -> list[tuple | None]:
        """`streaming.group_stores.state_pipe.PipelinedMap`'s: one exchange for many keys."""
        self.calls += 1
        return [self.values.get(key) for key in keys]

    def updateValue(self, key: tuple, value: tuple) -> None:
        self.calls += 1
        self.values[key] = value

    def removeKey(self, key: tuple) -> None:
        self.calls += 1
        self.values.pop(key, None)


class GroupState:
    """What `BlobStore` uses of PySpark's `GroupState`."""

    def __init__(self) -> None:
        self.value: tuple | None = None

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple:
        return self.value

    def update(self, value: tuple) -> None:
        self.value = value

    def remove(self) -> None:
        self.value = None


class RowBucket:
    def __init__(self) -> None:
        self.groups, self.offsets, self.deadlines = MapState(), MapState(), MapState()
        self.hints: dict[str, bool] = {}

    def open(self) -> RowStore:
        return RowStore(self.groups, self.offsets, self.deadlines, hints=self.hints)

    def calls(self) -> int:
        return self.groups.calls + self.offsets.calls + self.deadlines.calls


class BlobBucket:
    def __init__(self) -> None:
        self.state = GroupState()

    def open(self) -> BlobStore:
        return BlobStore(self.state, buckets=16)


def inputs(*requests: dict, at_ms: int = 0, timer_row: bool = False) -> list[Input]:
    rows = [Input(-1, -1, None, None, None, None, None, 0, None, False)] if timer_row else []
    for offset, request in enumerate(requests):
        value = json.dumps({"request_id": f"r{offset}", **request}).encode()
        rows.append(Input(0, offset, None, value, None, None, None, at_ms, route(None, value).group_id, False))
    return rows


def call(bucket, rows: list[Input], now_ms: int) -> tuple[list[dict], CallStats]:
    stats = CallStats()
    out = step_bucket(rows, bucket.open(), now_ms, CONFIG, False, stats)
    return [json.loads(row.value) for row in out if row.sink == "response"], stats


@pytest.fixture(params=[RowBucket, BlobBucket], ids=["transformWithState", "applyInPandasWithState"])
def bucket(request):
    return request.param()


def stable_member(bucket, group_id: str, session_ms: int) -> dict:
    """A one-member group made Stable at time 0 (JoinGroup v3 has no member-id round trip); its only deadline is
    then the member's session. Returns the JoinGroup response."""
    call(bucket, inputs({**p.join(group_id, session_timeout_ms=session_ms), "api_version": 3}), now_ms=0)
    (joined,), _ = call(bucket, inputs(timer_row=True), now_ms=0)  # the join phase ends (no initial delay)
    (synced,), _ = call(bucket, inputs(p.sync(group_id, joined["member_id"], joined["generation_id"],
                                               {joined["member_id"]: p.ASSIGNMENT})), now_ms=0)
    assert synced["error_code"] == Errors.NONE
    return joined


def test_a_member_that_stops_heartbeating_expires_when_its_deadline_comes(bucket):
    joined = stable_member(bucket, "g", 1_500)
    _, stats = call(bucket, inputs(timer_row=True), now_ms=1_000)
    assert stats.groups == 0 and stats.deadline == 1_500  # not due yet: nothing stepped
    _, stats = call(bucket, inputs(timer_row=True), now_ms=1_600)
    assert stats.groups == 1 and stats.members_expired == 1
    (answer,), _ = call(bucket, inputs(p.heartbeat("g", joined["member_id"], joined["generation_id"])), 2_000)
    assert answer["error_code"] == Errors.UNKNOWN_MEMBER_ID


def test_heartbeats_keep_a_member_past_its_first_deadline(bucket):
    joined = stable_member(bucket, "g", 1_500)
    heartbeat = p.heartbeat("g", joined["member_id"], joined["generation_id"])
    for now in (1_000, 2_000, 3_000):
        (answer,), _ = call(bucket, inputs(heartbeat, at_ms=now), now_ms=now)
        assert answer["error_code"] == Errors.NONE
    _, stats = call(bucket, inputs(timer_row=True), now_ms=4_000)
    assert stats.members_expired == 0 and stats.deadline == 4_500
    _, stats = call(bucket, inputs(timer_row=True), now_ms=4_600)
    assert stats.members_expired == 1


def test_groups_of_a_bucket_are_stepped_only_when_they_have_requests_or_are_due(bucket):
    for group_id, session in (("a", 1_500), ("b", 60_000)):
        stable_member(bucket, group_id, session)
    _, stats = call(bucket, inputs(timer_row=True), now_ms=2_000)
    assert stats.groups == 1 and stats.members_expired == 1  # a only


def test_a_heartbeat_costs_one_read_and_one_write_of_its_group_row():
    bucket = RowBucket()
    joined = stable_member(bucket, "g", 10_000)
    commit = p.commit("g", joined["member_id"], joined["generation_id"], {("t", 0): 5})
    heartbeat = p.heartbeat("g", joined["member_id"], joined["generation_id"])
    call(bucket, inputs(commit, at_ms=10), now_ms=10)
    offsets_before = bucket.offsets.calls
    call(bucket, inputs(commit, at_ms=20), now_ms=20)
    # The commit's offsets were read ahead with the group rows (its last step read them), then written.
    assert bucket.offsets.calls - offsets_before == 2
    call(bucket, inputs(heartbeat, at_ms=30), now_ms=30)  # read ahead again: the group's last step used them
    before, offsets_before = bucket.calls(), bucket.offsets.calls
    call(bucket, inputs(heartbeat, at_ms=40), now_ms=40)
    # The schedule read, then the group row read and written; the offsets row is not touched.
    assert bucket.calls() - before == 3
    assert bucket.offsets.calls == offsets_before


def test_the_rows_of_every_group_a_call_steps_are_read_in_one_exchange():
    bucket = RowBucket()
    members = {group_id: stable_member(bucket, group_id, 10_000) for group_id in ("a", "b", "c", "d")}
    before = bucket.groups.calls
    call(bucket, inputs(*(p.heartbeat(g, m["member_id"], m["generation_id"]) for g, m in members.items()), at_ms=20),
         now_ms=20)
    assert bucket.groups.calls - before == 1 + len(members)  # one read for all, then each group's write


def test_an_early_entry_files_its_group_again_at_its_real_deadline():
    """Heartbeats move a deadline later without touching the index; its old entry then comes due early, and the
    call only files the group again, where its deadline now is."""
    bucket = RowBucket()
    joined = stable_member(bucket, "g", 1_500)
    call(bucket, inputs(p.heartbeat("g", joined["member_id"], joined["generation_id"]), at_ms=1_000), 1_000)
    _, stats = call(bucket, inputs(timer_row=True), now_ms=1_600)  # the entry filed at 1,500
    assert stats.groups == 0 and stats.deadline == 2_500
    _, stats = call(bucket, inputs(timer_row=True), now_ms=2_600)
    assert stats.members_expired == 1


def test_a_deleted_group_leaves_no_row():
    bucket = RowBucket()
    call(bucket, inputs(p.commit("g", "", -1, {("t", 0): 1})), now_ms=0)
    assert bucket.groups.values and bucket.offsets.values
    (answer,), _ = call(bucket, inputs({"api": "DeleteGroups", "group_id": "g"}), now_ms=10)
    assert answer["error_code"] == Errors.NONE
    assert bucket.groups.values == {} and bucket.offsets.values == {}


def test_a_bucket_row_packs_every_group_deterministically():
    bucket = BlobBucket()
    for group_id in ("b", "a"):
        stable_member(bucket, group_id, 60_000)
    version, buckets, packed = bucket.state.value
    assert (version, buckets) == (ENVELOPE_VERSION, 16)
    groups = unpack_groups(packed)
    assert list(groups) == ["a", "b"] and pack_groups(groups) == packed
    assert {g: deadline for g, (_, deadline) in groups.items()} == {"a": 60_000, "b": 60_000}


def test_a_bucket_row_of_another_bucket_count_is_refused():
    bucket = BlobBucket()
    stable_member(bucket, "g", 60_000)
    with pytest.raises(ValueError, match="made with state.buckets=16 but the query runs with state.buckets=8"):
        BlobStore(bucket.state, buckets=8)


def test_a_call_publishes_the_views_that_changed_and_counts_what_gateways_answered(bucket):
    joined = stable_member(bucket, "g", 60_000)
    rows = inputs(p.heartbeat("g", joined["member_id"], joined["generation_id"]),
                  {"api": "Liveness", "group_id": "g", "members": [
                      {"member_id": joined["member_id"], "generation_id": 1, "heard_ms": 0, "answered": 0},
                      {"member_id": "gone", "generation_id": 1, "heard_ms": 0, "answered": 0}]})
    stats = CallStats()
    out = step_bucket(rows, bucket.open(), 1_000, CONFIG, False, stats)
    assert [row.sink for row in out] == ["response"]  # the heartbeat's; no view changed, Liveness is not answered
    assert (stats.fast_answers, stats.mispredictions) == ({"Heartbeat": 2}, {"Heartbeat": 1})
    out = step_bucket(inputs(p.leave("g", joined["member_id"])), bucket.open(), 2_000, CONFIG, False, CallStats())
    (view,) = [(row.key, json.loads(row.value)) for row in out if row.sink == "view"]
    assert view == (b"g", {"group_state": "Empty", "generation": 2, "protocol_type": "consumer",
                           "protocol_name": None, "leader": None, "members": []})

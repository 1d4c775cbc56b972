"""Invariants over random request sequences (hypothesis).

Every step of GroupContext already checks determinism (two runs, byte-identical), schema validity of everything
emitted and that the records written so far rebuild the durable state. On top of that, per step: generations
never decrease, at most one leader and it is a member, a Stable group's members all have the assignment the
leader gave and match what was persisted, and no request is answered twice. At the end, once every timer has
had time to fire, every parked JoinGroup and SyncGroup has been answered (except one a member replaced by
sending another, which Kafka leaves unanswered too).
"""

from __future__ import annotations

import json
from functools import cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.batch import StoredGroup, step_group
from state.config import CoordinatorConfig
from state.errors import Errors
from state.classic.group import GroupState
from tests.state.context import GroupContext, assignment, subscription

CONFIG = CoordinatorConfig(
    group_min_session_timeout_ms=100,
    group_initial_rebalance_delay_ms=100,
    offsets_retention_minutes=1,
    offsets_retention_check_interval_ms=5_000,
    group_max_size=4,
)
PROTOCOLS = [
    [("range", subscription("t"))],
    [("roundrobin", subscription("t", "u")), ("range", subscription("t", "u"))],
    [("server:uniform", subscription("t")), ("range", subscription("t"))],
]

member_index = st.integers(0, 7)
ops = st.one_of(
    st.tuples(st.just("new"), st.integers(0, 3), st.booleans(), st.sampled_from([3, 9])),
    st.tuples(st.just("join"), member_index, st.integers(0, 2)),
    st.tuples(st.just("sync"), member_index),
    st.tuples(st.just("round"), st.integers(0, 2)),
    st.tuples(st.just("heartbeat"), member_index),
    st.tuples(st.just("leave"), member_index),
    st.tuples(st.just("commit"), member_index, st.integers(-1, 1)),
    st.tuples(st.just("sleep"), st.sampled_from([0, 50, 100, 300, 1_000, 1_500, 6_000])),
    st.tuples(st.just("describe")),
)
"""`round` is a whole rebalance by every known member (join together, wait, sync, leader last), so that random
sequences reach Stable often and then get disturbed."""


class Driver:
    """Plays well-formed but arbitrary clients against one group, remembering what each was told."""

    def __init__(self) -> None:
        self.ctx = GroupContext(CONFIG)
        self.members: list[str] = []
        self.instance: dict[str, str | None] = {}
        self.generation: dict[str, int] = {}
        self.leader_view: dict[str, list[str]] = {}
        self.answered: set[str] = set()
        self.parked: set[str] = set()
        """JoinGroup/SyncGroup request ids sent and not answered yet."""
        self.max_generation = 0

    def member(self, index: int) -> str | None:
        return self.members[index % len(self.members)] if self.members else None

    def run(self, op: tuple) -> None:
        ctx, kind = self.ctx, op[0]
        if kind == "new":
            _, client, static, version = op
            instance = f"i{client}" if static else None
            self.observe(ctx.join(client_id=f"c{client}", instance=instance, version=version, session=1_000,
                                  rebalance=1_500, protocols=PROTOCOLS[0]), instance)
            return
        if kind == "sleep":
            self.observe(ctx.sleep(op[1]))
            return
        if kind == "describe":
            self.observe([ctx.describe()])
            return
        if kind == "round":
            if not self.members:
                return
            for m in self.members:
                self.supersede(m, "join")
            self.observe(ctx.step(*(ctx.join_request(m, instance=self.instance[m], session=1_000, rebalance=1_500,
                                                     protocols=PROTOCOLS[op[1]]) for m in self.members)))
            for _ in range(20):
                group = ctx.group
                if group is None or group.state != GroupState.PREPARING_REBALANCE:
                    break
                self.observe(ctx.sleep(100))
            leaders = [m for m in self.members if self.leader_view.get(m)]  # last to sync, as clients do
            for m in [m for m in self.members if m not in leaders] + leaders:
                self.run(("sync", self.members.index(m)))
            return
        member_id = self.member(op[1])
        if member_id is None:
            return
        instance = self.instance.get(member_id)
        generation = self.generation.get(member_id, -1)
        if kind in ("join", "sync"):
            self.supersede(member_id, kind)
        if kind == "join":
            self.observe(ctx.join(member_id, instance=instance, session=1_000, rebalance=1_500,
                                  protocols=PROTOCOLS[op[2]], topic_partitions=[{"name": "t", "partitions": 3}]),
                         instance)
        elif kind == "sync":
            group = ctx.group
            name = group.protocol_name if group is not None and group.protocol_name else "range"
            assignments = {m: assignment(("t", (n,))) for n, m in enumerate(self.leader_view.get(member_id, []))}
            self.observe(ctx.sync(member_id, generation, assignments, instance=instance, protocol_name=name))
        elif kind == "heartbeat":
            self.observe(ctx.heartbeat(member_id, generation, instance=instance))
        elif kind == "leave":
            self.observe(ctx.leave((member_id, instance)))
        elif kind == "commit":
            self.observe(ctx.commit({("t", 0): 1}, member_id=member_id,
                                    generation=generation if op[2] >= 0 else -1, group_instance_id=instance))

    def supersede(self, member_id: str, kind: str) -> None:
        """A member that sends JoinGroup (SyncGroup) while one is parked replaces it; Kafka never answers the
        first (unspecified), so it is not owed an answer."""
        group = self.ctx.group
        member = group.members.get(member_id) if group is not None else None
        parked = member is not None and (member.join if kind == "join" else member.sync)
        if parked:
            self.parked.discard(parked.request_id)

    def finish(self) -> None:
        """Long enough for every session, rebalance and new-member timeout: every parked request is answered."""
        for _ in range(3):
            self.observe(self.ctx.sleep(200_000))
        assert not self.parked, f"never answered: {self.parked}"

    def observe(self, responses: list[dict], instance: str | None = None) -> None:
        sent = self.ctx.last_requests
        self.parked |= {r["request_id"] for r in sent if r["api"] in ("JoinGroup", "SyncGroup")}
        for r in responses:
            self.parked.discard(r["request_id"])
            assert r["request_id"] not in self.answered, f"answered twice: {r}"
            self.answered.add(r["request_id"])
            if r["api"] != "JoinGroup" or r["error_code"] not in (0, 79):
                continue
            member_id = r["member_id"]
            if member_id not in self.members:
                self.members.append(member_id)
                self.instance[member_id] = instance
            if r["error_code"] == Errors.NONE:
                self.generation[member_id] = r["generation_id"]
                self.leader_view[member_id] = [m["member_id"] for m in r["members"]]
        self.check()

    def check(self) -> None:
        group = self.ctx.group
        if group is None:  # deleted (retention): a new group starts again at generation 0
            self.max_generation = 0
            return
        assert group.generation >= self.max_generation
        self.max_generation = group.generation
        if group.members:
            assert group.leader in group.members
        else:
            assert group.leader is None
        if group.state == GroupState.STABLE:
            assert all(m.assignment for m in group.members.values()), "Stable member without assignment"
            persisted = {m.member_id: m.assignment for m in group.persisted.members}
            assert persisted == {m.member_id: m.assignment for m in group.members.values()}
        assert group.state != GroupState.EMPTY or not group.members
        assert group.num_awaiting_join() == sum(m.join is not None for m in group.members.values())
        counts: dict[str, int] = {}
        for m in group.members.values():
            for name, _ in m.protocols:
                counts[name] = counts.get(name, 0) + 1
        assert {k: v for k, v in group.supported_protocols.items() if v} == counts


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ops, min_size=1, max_size=30))
def test_invariants_hold_over_random_request_sequences(sequence):
    driver = Driver()
    for op in sequence:
        driver.run(op)
    driver.finish()


FIELD_NAMES = ["member_id", "generation_id", "session_timeout_ms", "rebalance_timeout_ms", "protocol_type",
               "protocols", "assignments", "members", "topics", "group_instance_id", "api_version",
               "retention_time_ms", "states_filter", "topic_partitions", "protocol_name"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8) | st.just("AAE="),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["name", "metadata", "member_id", "partitions", "partition_index", "committed_offset",
                         "assignment", "partition_indexes", "group_instance_id"]), children, max_size=4),
    max_leaves=12,
)
requests = st.fixed_dictionaries(
    {"api": st.sampled_from(["JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch",
                             "OffsetDelete", "DescribeGroups", "DeleteGroups", "ListGroups", "Nope"]),
     "request_id": st.just("x"), "group_id": st.just("g")},
    optional={name: json_values for name in FIELD_NAMES},
)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.one_of(requests.map(lambda r: json.dumps(r).encode()), st.binary(max_size=40)),
                max_size=6), st.integers(0, 10**7))
def test_no_input_raises_or_fails_inside_the_core(raw_requests, now_ms):
    """Arbitrary bytes and arbitrary JSON against a live group: every request is answered or dead-lettered as
    bad input, never an internal error, and the result is deterministic."""
    state, start = stable_two_members()
    result = step_group("g", state, raw_requests, start + now_ms, CONFIG)
    assert not [reason for _, reason in result.dead_letters if reason.startswith("internal error")]
    assert result == step_group("g", state, raw_requests, start + now_ms, CONFIG)


@cache
def stable_two_members() -> tuple[StoredGroup, int]:
    ctx = GroupContext(CONFIG)
    ctx.stable_group(2, session=1_000, rebalance=1_500)
    return ctx.state, ctx.now_ms

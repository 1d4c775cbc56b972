"""Group members against the real coordinator core, in-process (tests.support.loopback): the protocol end to end in
milliseconds. Each member's application loop runs on its own thread, as it would in its own process."""

from __future__ import annotations

import threading
import time
from typing import Callable

import pytest

from client import protocol
from client.errors import CommitFailedError, FencedInstanceError, GroupError
from client.member import GroupMember, MemberConfig, MemberState
from state.config import CoordinatorConfig
from state.errors import Errors
from tests.support.listener import Recorder
from tests.support.loopback import LoopbackCoordinator

FAST = CoordinatorConfig(group_initial_rebalance_delay_ms=50, group_min_session_timeout_ms=100)


class Loop:
    """Calls `member.poll()` in a thread until stopped, like an application's consume loop."""

    def __init__(self, member: GroupMember) -> None:
        self.member = member
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.member.poll(0.05)
            except BaseException as exc:  # surfaced by the test through .error
                self.error = exc
                return
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def wait_until(predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


@pytest.fixture
def coordinator():
    c = LoopbackCoordinator(FAST)
    yield c
    c.close()


@pytest.fixture
def make(coordinator):
    members: list[GroupMember] = []
    loops: list[Loop] = []
    counts = {"t": 6}

    def new(client_id: str, *, strategy=("range",), instance: str | None = None, loop: bool = True,
            topics=("t",), session_timeout_ms: int = 1000):
        recorder = Recorder()
        member = GroupMember(
            coordinator.transport(),
            MemberConfig(group_id="g", client_id=client_id, group_instance_id=instance,
                         session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=2000, heartbeat_interval_ms=50,
                         partition_assignment_strategy=tuple(strategy), request_timeout_ms=5000,
                         metadata_max_age_ms=50, retry_backoff_ms=10),
            lambda ts: {t: counts[t] for t in ts if t in counts},
            recorder,
        )
        member.subscribe(topics)
        members.append(member)
        if loop:
            loops.append(Loop(member))
        return member, recorder

    new.counts = counts
    new.loops = loops
    yield new
    for lp in loops:
        lp.stop()
    for m in members:
        m.close()


def stable(*members: GroupMember) -> bool:
    gens = {m.generation.generation_id for m in members}
    return all(m.state is MemberState.STABLE and not m.rejoin_needed for m in members) and len(gens) == 1


def covers(members, n=6, topic="t") -> bool:
    owned = [tp for m in members for tp in m.assignment()]
    return sorted(owned) == [(topic, p) for p in range(n)]


def test_one_member_joins_after_the_member_id_handshake_and_owns_everything(coordinator, make):
    m, rec = make("c1")
    wait_until(lambda: stable(m) and covers([m]))
    joins = [r for r in coordinator.requests if r["api"] == "JoinGroup"]
    assert joins[0]["member_id"] == "" and joins[1]["member_id"] == m.generation.member_id
    assert m.generation.member_id.startswith("c1-") and m.is_leader
    assert rec.of("assigned") == [frozenset(("t", p) for p in range(6))]
    heartbeats = len([r for r in coordinator.requests if r["api"] == "Heartbeat"])
    wait_until(lambda: len([r for r in coordinator.requests if r["api"] == "Heartbeat"]) > heartbeats + 3)
    assert stable(m)


def test_eager_members_share_partitions_and_rebalance_when_one_joins_and_leaves(make):
    a, rec_a = make("a")
    wait_until(lambda: stable(a))
    b, rec_b = make("b")
    wait_until(lambda: stable(a, b) and covers([a, b]) and a.assignment() and b.assignment())
    assert len(a.assignment()) == len(b.assignment()) == 3
    # Eager: a gave up everything before re-joining.
    assert rec_a.of("revoked")[-1] == frozenset(("t", p) for p in range(6))
    make.loops[1].stop()
    b.close()
    wait_until(lambda: stable(a) and covers([a]))


def test_commits_carry_the_generation_and_come_back_from_offset_fetch(make):
    m, _ = make("c1")
    wait_until(lambda: stable(m))
    m.commit({("t", 0): (42, "meta"), ("t", 5): (7, None)})
    assert m.committed() == {("t", 0): 42, ("t", 5): 7}
    assert m.committed([("t", 0), ("t", 1)]) == {("t", 0): 42}


def test_an_expired_member_loses_its_partitions_and_joins_again_with_a_new_id(coordinator, make):
    m, rec = make("c1", loop=False)
    m.poll(5)
    old = m.generation
    m._closing.set()  # silence the heartbeat thread: the session will expire
    m._heartbeat_thread.join()
    coordinator.advance(5_000)
    time.sleep(0.2)
    with pytest.raises(CommitFailedError):
        m.commit({("t", 0): (1, "")})
    assert m.generation.member_id == ""  # UNKNOWN_MEMBER_ID: the id is forgotten (RESET_MEMBER_ID)
    m.poll(5)
    assert m.generation.member_id not in ("", old.member_id)
    assert rec.of("lost") == [frozenset(("t", p) for p in range(6))]


def test_a_commit_to_a_group_that_is_gone_fails_that_commit_not_the_member(coordinator, make):
    """OffsetCommit v9 answers GROUP_ID_NOT_FOUND for a group that no longer exists (v8: ILLEGAL_GENERATION). Kafka's
    consumer raises it from that commit ("Unexpected error in commit") and carries on: it joins again."""
    m, _ = make("c1", loop=False)
    m.poll(5)
    old = m.generation
    m._closing.set()  # silence the heartbeat thread: the session expires and the group is left Empty
    m._heartbeat_thread.join()
    coordinator.advance(5_000)
    time.sleep(0.2)
    assert coordinator.transport().request("g", protocol.delete_group("g"), 5)["error_code"] == Errors.NONE
    with pytest.raises(GroupError) as raised:
        m.commit({("t", 0): (1, "")})
    assert raised.value.error.code == Errors.GROUP_ID_NOT_FOUND and m.generation == old
    assert m.poll(0)  # not fatal: the member goes on as it was
    m._heartbeat(old)  # what its (silenced) heartbeat thread would send next: the member is unknown
    assert m.generation.member_id == ""
    m.poll(5)
    assert m.generation.member_id not in ("", old.member_id) and m.assignment()


def test_cooperative_sticky_never_revokes_partitions_that_keep_their_owner(make):
    a, rec_a = make("a", strategy=("cooperative-sticky",))
    assert a.rebalance_protocol == "COOPERATIVE"
    wait_until(lambda: stable(a) and covers([a]))
    b, rec_b = make("b", strategy=("cooperative-sticky",))
    wait_until(lambda: stable(a, b) and covers([a, b]) and len(b.assignment()) == 3)
    kept = a.assignment()
    revoked = set().union(*rec_a.of("revoked"))
    assert len(revoked) == 3 and not (revoked & kept)
    assert revoked == set(b.assignment())


def test_a_static_member_restarted_within_its_session_gets_its_partitions_back_without_a_rebalance(make):
    a, rec_a = make("a", instance="i-a", session_timeout_ms=3000)
    b, _ = make("b", instance="i-b", session_timeout_ms=3000)
    wait_until(lambda: stable(a, b) and covers([a, b]) and a.assignment() and b.assignment())
    generation, before = b.generation.generation_id, b.assignment()
    events_a = list(rec_a.events)
    make.loops[1].stop()
    b.close()  # static: no LeaveGroup
    b2, rec_b2 = make("b", instance="i-b", session_timeout_ms=3000)
    wait_until(lambda: stable(b2) and b2.assignment() == before)
    assert b2.generation.generation_id == generation
    assert b2.generation.member_id != b.generation.member_id
    time.sleep(0.3)
    assert rec_a.events == events_a and a.generation.generation_id == generation


def test_the_old_incarnation_of_a_static_member_is_fenced(make):
    old, _ = make("old", instance="i-1", loop=False)
    old.poll(5)
    new, _ = make("new", instance="i-1")
    wait_until(lambda: stable(new))
    with pytest.raises(FencedInstanceError):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            old.poll(0.1)
            time.sleep(0.05)


def test_the_leader_rejoins_when_a_subscribed_topic_grows(make):
    a, _ = make("a")
    b, _ = make("b")
    wait_until(lambda: stable(a, b) and covers([a, b]))
    make.counts["t"] = 8
    wait_until(lambda: stable(a, b) and covers([a, b], n=8))


def test_server_side_assignment_skips_the_leader(coordinator, make):
    a, _ = make("a", strategy=("server:uniform",))
    b, _ = make("b", strategy=("server:uniform",))
    wait_until(lambda: stable(a, b) and covers([a, b]) and a.assignment() and b.assignment())
    joins = [r for r in coordinator.requests if r["api"] == "JoinGroup" and r["member_id"]]
    assert joins[-1]["topic_partitions"] == [{"name": "t", "partitions": 6}]
    syncs = [r for r in coordinator.requests if r["api"] == "SyncGroup"]
    assert syncs and all(s["assignments"] == [] for s in syncs)


def test_a_member_that_stops_polling_leaves_and_its_partitions_move(make):
    a, rec_a = make("a", loop=False)
    b, _ = make("b")
    deadline = time.monotonic() + 10
    while not (stable(a, b) and a.assignment() and b.assignment()) and time.monotonic() < deadline:
        a.poll(0.05)
    assert a.assignment() and b.assignment()
    # a's application hangs for longer than max.poll.interval.ms (the rebalance timeout, 2 s here).
    wait_until(lambda: covers([b]), timeout_s=15)
    a.poll(5)
    assert rec_a.events[-2][0] == "lost"
    wait_until(lambda: (a.poll(0.05) or True) and stable(a, b) and covers([a, b]) and a.assignment(), timeout_s=15)

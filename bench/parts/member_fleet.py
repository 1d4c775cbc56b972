"""A fleet of simulated classic consumer-group members speaking the control topic's protocol (issue 35's big group).

One object drives every member of one group in lock step, as many clients would: all join (MEMBER_ID_REQUIRED,
then again with the id), the leader assigns with a real assignor (`range` over one topic), all sync; one leaves and
the others heartbeat, learn of the rebalance (REBALANCE_IN_PROGRESS) and join again. Requests go through a
`Transport`: the real query (`QueryTransport`: produced to the control topic, answers read from the response topic)
or the core alone (`CoreTransport`: `step_group` in this process, time advanced by hand), so the same members
measure both. Nothing here is a test double of the product: the coordinator each transport reaches is the real one.
"""

from __future__ import annotations

import base64
import itertools
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Protocol

from assignors import registry
from assignors.api import Cluster, MemberSubscription
from assignors.consumer_protocol import Assignment, Subscription, encode_assignment, encode_subscription

REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79


class Transport(Protocol):
    def exchange(self, requests: list[dict], answered: list[str], timeout_s: float) -> dict[str, dict]:
        """Send `requests` (in order, at once) and return the answers to the request ids in `answered` (requests
        without an answer, a Liveness, are not in it)."""


@dataclass
class Fleet:
    """The members of one group. `session_timeout_ms` per member id may differ (`sessions`)."""

    transport: Transport
    group_id: str
    members: int
    partitions: int
    topic: str = "orders"
    session_timeout_ms: int = 300_000
    ids: list[str] = field(default_factory=list)
    leader: str = ""
    generation: int = -1
    assigned: dict[str, tuple[int, ...]] = field(default_factory=dict)
    assignor_s: float = 0.0
    sessions: dict[int, int] = field(default_factory=dict)
    """member index -> its session timeout, where it is not `session_timeout_ms` (for its first JoinGroup)."""
    _session_of: dict[str, int] = field(default_factory=dict)
    _rids: itertools.count = field(default_factory=itertools.count)
    _prefix: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    def request(self, api: str, **fields) -> dict:
        return {"api": api, "request_id": f"{self._prefix}-{next(self._rids)}", "group_id": self.group_id,
                **fields}

    def join(self, member_id: str, session_timeout_ms: int | None = None) -> dict:
        metadata = base64.b64encode(encode_subscription(Subscription((self.topic,)))).decode()
        return self.request("JoinGroup", member_id=member_id, group_instance_id=None, client_id="fleet",
                            client_host="/127.0.0.1",
                            session_timeout_ms=session_timeout_ms or self.session_timeout_ms,
                            rebalance_timeout_ms=300_000, protocol_type="consumer",
                            protocols=[{"name": "range", "metadata": metadata}])

    def _exchange(self, requests: list[dict], timeout_s: float, answered: bool = True) -> list[dict]:
        answers = self.transport.exchange(requests, [r["request_id"] for r in requests] if answered else [],
                                          timeout_s)
        return [answers[r["request_id"]] for r in requests] if answered else []

    def form(self, timeout_s: float = 600) -> None:
        """Every member joins (new: MEMBER_ID_REQUIRED, then with its id) and syncs: a Stable group."""
        first = self._exchange([self.join("", self.sessions.get(i)) for i in range(self.members)], timeout_s)
        if {a["error_code"] for a in first} != {MEMBER_ID_REQUIRED}:
            raise RuntimeError(f"first JoinGroup answers: {sorted({a['error_code'] for a in first})}")
        self.ids = [a["member_id"] for a in first]
        self._session_of = {self.ids[i]: ms for i, ms in self.sessions.items()}
        self._join_and_sync(self.ids, timeout_s)

    def _join_and_sync(self, ids: list[str], timeout_s: float) -> None:
        joined = self._exchange([self.join(m, self._session_of.get(m)) for m in ids], timeout_s)
        if {a["error_code"] for a in joined} != {0}:
            raise RuntimeError(f"JoinGroup answers: {sorted({a['error_code'] for a in joined})}")
        self.generation = joined[0]["generation_id"]
        self.leader = joined[0]["leader"]
        leader_answer = next(a for a, m in zip(joined, ids) if m == self.leader)
        start = time.perf_counter()
        assignment = registry.get("range").assign(
            Cluster({self.topic: self.partitions}),
            [MemberSubscription(m["member_id"], (self.topic,)) for m in leader_answer["members"]])
        encoded = [{"member_id": m, "assignment": base64.b64encode(encode_assignment(Assignment(parts))).decode()}
                   for m, parts in assignment.items()]
        self.assignor_s = time.perf_counter() - start
        self.assigned = {m: next((p for t, p in parts if t == self.topic), ()) for m, parts in assignment.items()}
        syncs = [self.request("SyncGroup", member_id=m, generation_id=self.generation, group_instance_id=None,
                              protocol_type="consumer", protocol_name="range",
                              assignments=encoded if m == self.leader else [])
                 for m in ids]
        synced = self._exchange(syncs, timeout_s)
        if {a["error_code"] for a in synced} != {0}:
            raise RuntimeError(f"SyncGroup answers: {sorted({a['error_code'] for a in synced})}")
        self.ids = list(ids)

    def commit(self, member_id: str, offset: int) -> dict:
        """An OffsetCommit of every partition the member was assigned, at `offset`."""
        return self.request("OffsetCommit", member_id=member_id, generation_id_or_member_epoch=self.generation,
                            group_instance_id=None,
                            topics=[{"name": self.topic, "partitions": [
                                {"partition_index": p, "committed_offset": offset, "committed_leader_epoch": -1,
                                 "committed_metadata": ""} for p in self.assigned[member_id]]}])

    def liveness(self, member_id: str, heard_ms: int) -> dict:
        """The Liveness a gateway writes for a heartbeat it answered from the group's view."""
        return self.request("Liveness", members=[{"member_id": member_id, "generation_id": self.generation,
                                                  "heard_ms": heard_ms, "answered": 0}])

    def heartbeat(self, member_id: str) -> dict:
        return self.request("Heartbeat", member_id=member_id, generation_id=self.generation, group_instance_id=None)

    def commit_all(self, offset: int, timeout_s: float = 600) -> None:
        answers = self._exchange([self.commit(m, offset) for m in self.ids], timeout_s)
        errors = {p["error_code"] for a in answers for t in a["topics"] for p in t["partitions"]}
        if errors != {0}:
            raise RuntimeError(f"OffsetCommit partition errors: {sorted(errors)}")

    def leave_and_rejoin(self, leaving: str, timeout_s: float = 600) -> dict:
        """`leaving` leaves; every other member heartbeats at once (as if its interval came due), is told
        REBALANCE_IN_PROGRESS, joins again and syncs. Seconds from the leave to each phase's last answer."""
        start = time.monotonic()
        staying = [m for m in self.ids if m != leaving]
        leave = self.request("LeaveGroup", members=[{"member_id": leaving, "group_instance_id": None}])
        answers = self._exchange([leave, *(self.heartbeat(m) for m in staying)], timeout_s)
        if answers[0]["error_code"] != 0 or {a["error_code"] for a in answers[1:]} != {REBALANCE_IN_PROGRESS}:
            raise RuntimeError(f"LeaveGroup {answers[0]['error_code']}, heartbeats "
                               f"{sorted({a['error_code'] for a in answers[1:]})}")
        told = time.monotonic() - start
        self.ids = staying
        self._join_and_sync(staying, timeout_s)
        return {"told_s": round(told, 3), "rebalanced_s": round(time.monotonic() - start, 3),
                "assignor_s": round(self.assignor_s, 3), "generation": self.generation}


class QueryTransport:
    """Through the running query: `client` is a `bench.stream_bench.JobClient` on its control and response topics."""

    def __init__(self, client) -> None:
        self.client = client

    def exchange(self, requests: list[dict], answered: list[str], timeout_s: float) -> dict[str, dict]:
        want = set(answered)
        for r in requests:
            self.client.send(r, keep=r["request_id"] in want)
        self.client.wait(answered, timeout_s)
        return {rid: self.client.bodies[rid] for rid in answered}


class CoreTransport:
    """The core alone (`state.batch.step_group`), one group: every exchange is one call at `now_ms`; answers held
    (a JoinGroup waiting for the rebalance delay) come from calls without requests, `tick_ms` later each."""

    def __init__(self, group_id: str, config, now_ms: int = 1_000_000, tick_ms: int = 100) -> None:
        self.group_id = group_id
        self.config = config
        self.now_ms = now_ms
        self.tick_ms = tick_ms
        self.stored = None
        self.step_s: list[float] = []

    def call(self, raw: list[bytes]):
        from state.batch import step_group

        start = time.perf_counter()
        step = step_group(self.group_id, self.stored, raw, self.now_ms, self.config)
        self.step_s.append(time.perf_counter() - start)
        self.stored = step.stored(self.stored)
        return step

    def exchange(self, requests: list[dict], answered: list[str], timeout_s: float) -> dict[str, dict]:
        got: dict[str, dict] = {}
        step = self.call([json.dumps(r).encode() for r in requests])
        for _ in range(100_000):
            got.update((a["request_id"], a) for a in map(json.loads, step.responses))
            if all(rid in got for rid in answered):
                return {rid: got[rid] for rid in answered}
            self.now_ms += self.tick_ms
            step = self.call([])
        raise TimeoutError(f"{sum(rid not in got for rid in answered)} requests unanswered")

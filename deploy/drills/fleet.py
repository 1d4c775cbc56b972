"""Client load for drills and benchmarks: a fleet of simulated group members speaking the wire protocol over the
job's topics, and the ledger that judges a drill.

Every member behaves like a Kafka consumer: member-id handshake, JoinGroup, SyncGroup (the leader assigns), then
heartbeats and offset commits on timers, re-joining on REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION and starting over
on UNKNOWN_MEMBER_ID. One request is in flight per member. A request that gets no answer is never re-sent: the job
must answer it eventually (after a crash, from the control topic it re-reads), which is one of the checks.

Commits go to topic `orders`, partition = the member's slot in its group, offset = a per-slot counter that only
grows, so "no committed offset lost" is exact: at the end, OffsetFetch must return the highest offset whose commit
was acknowledged with error 0 for every slot.

The `Ledger` keeps every response copy by `request_id` (duplicates must be byte-identical), the generations each
group's JoinGroup responses carried in arrival order (they must never go back), and the UNKNOWN_MEMBER_ID answers
members got while they believed they were Stable (a session expired).
"""

from __future__ import annotations

import base64
import json
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from client import protocol as wire
from state.errors import Errors

SUBSCRIPTION = base64.b64decode("AAMAAAABAAZvcmRlcnP/////AAAAAP///////w==")
"""ConsumerProtocol v3 subscription to topic `orders` (what a Kafka consumer sends as JoinGroup metadata)."""
ASSIGNMENT = b"\x00\x03\x00\x00\x00\x01\x00\x06orders\x00\x00\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"
COMMIT_TOPIC = "orders"


@dataclass
class Sent:
    body: dict
    at: float
    member: "Member | None"


class Wire:
    """One producer to the control topic, one consumer of every response partition (from the beginning)."""

    def __init__(self, bootstrap: str, requests_topic: str, responses_topic: str) -> None:
        self.requests_topic = requests_topic
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=2, acks=1)
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                                      fetch_max_wait_ms=20, max_poll_records=10000)
        deadline = time.monotonic() + 30
        while not (parts := self.consumer.partitions_for_topic(responses_topic)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {responses_topic} not found")
            time.sleep(0.1)
        tps = [TopicPartition(responses_topic, p) for p in sorted(parts)]
        self.consumer.assign(tps)
        for tp in tps:
            self.consumer.seek(tp, 0)
        self.prefix = uuid.uuid4().hex[:8]
        self.counter = 0

    def send(self, body: dict) -> str:
        self.counter += 1
        request_id = body.get("request_id") or f"{self.prefix}-{self.counter}"
        body = {**body, "request_id": request_id}
        key = body.get("group_id")
        self.producer.send(self.requests_topic, key=key.encode() if isinstance(key, str) else None,
                           value=json.dumps(body, separators=(",", ":")).encode())
        return request_id

    def flush(self) -> None:
        self.producer.flush()

    def poll(self, timeout_ms: int = 20) -> list[bytes]:
        out = []
        for records in self.consumer.poll(timeout_ms=timeout_ms).values():
            out.extend(r.value for r in records)
        return out

    def close(self) -> None:
        self.producer.close()
        self.consumer.close()


@dataclass
class Ledger:
    sent: dict[str, Sent] = field(default_factory=dict)
    copies: dict[str, list[bytes]] = field(default_factory=dict)
    first_at: dict[str, float] = field(default_factory=dict)
    generations: dict[str, list[int]] = field(default_factory=dict)
    acked: dict[tuple[str, int], int] = field(default_factory=dict)
    expired_while_stable: list[tuple[float, str, str]] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    """`api:error_code` -> count, for every first copy with a non-zero error (diagnostics for the verdict)."""

    def record(self, raw: bytes, now: float) -> tuple[str, dict] | None:
        """Store one response copy; return (request_id, body) for the first copy of a request of ours."""
        try:
            body = json.loads(raw)
        except ValueError:
            self.unexpected.append(f"unreadable response {raw[:80]!r}")
            return None
        request_id = str(body.get("request_id"))
        self.copies.setdefault(request_id, []).append(raw)
        if len(self.copies[request_id]) > 1 or request_id not in self.sent:
            return None
        self.first_at[request_id] = now
        codes = [body.get("error_code", 0)] + [p.get("error_code", 0) for t in body.get("topics") or []
                                               for p in t.get("partitions") or [] if isinstance(p, dict)]
        if any(codes):
            key = f"{body.get('api')}:{max(codes)}"
            self.errors[key] = self.errors.get(key, 0) + 1
        if body.get("api") == "JoinGroup" and body.get("error_code") == Errors.NONE:
            self.generations.setdefault(body["group_id"], []).append(body["generation_id"])
        return request_id, body

    def unanswered(self) -> list[str]:
        return [rid for rid in self.sent if rid not in self.copies]

    def duplicated(self) -> list[str]:
        return [rid for rid, c in self.copies.items() if len(c) > 1]

    def non_identical(self) -> list[str]:
        return [rid for rid, c in self.copies.items() if len(set(c)) > 1]

    def generations_back(self) -> dict[str, list[int]]:
        return {g: gens for g, gens in self.generations.items() if any(b < a for a, b in zip(gens, gens[1:]))}

    def latencies(self, since: float = 0.0) -> list[float]:
        return sorted(self.first_at[rid] - s.at for rid, s in self.sent.items()
                      if rid in self.first_at and s.at >= since)


@dataclass
class Member:
    group: str
    slot: int
    member_id: str = ""
    generation: int = -1
    phase: str = "new"          # new | joining | syncing | stable | left
    in_flight: str | None = None
    next_heartbeat: float = 0.0
    next_commit: float = 0.0
    joined_at: float = 0.0
    stable_at: float | None = None

    @property
    def name(self) -> str:
        return f"{self.group}/{self.slot}"


class Fleet:
    """Members of `groups` groups; `tick()` sends what is due and handles what arrived."""

    def __init__(self, wire_: Wire, groups: Iterable[str], members_per_group: int, *,
                 session_timeout_ms: int = 60000, rebalance_timeout_ms: int = 60000,
                 heartbeat_interval_ms: int = 1000, commit_interval_ms: int = 1000, seed: int = 1) -> None:
        self.wire = wire_
        self.ledger = Ledger()
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_s = heartbeat_interval_ms / 1000
        self.commit_s = commit_interval_ms / 1000
        self.rng = random.Random(seed)
        self.members: list[Member] = []
        self.slot_offsets: dict[tuple[str, int], int] = {}
        self.by_request: dict[str, Member] = {}
        self.sending = True
        for group in groups:
            for slot in range(members_per_group):
                self.members.append(Member(group, slot))

    # -- sending ---------------------------------------------------------------------------------------------

    def _send(self, member: Member | None, body: dict) -> str:
        rid = self.wire.send(body)
        self.ledger.sent[rid] = Sent(body, time.monotonic(), member)
        if member is not None:
            member.in_flight = rid
            self.by_request[rid] = member
        return rid

    def _join(self, m: Member) -> None:
        m.phase = "joining"
        m.joined_at = m.joined_at or time.monotonic()
        self._send(m, wire.join_group(m.group, m.member_id, None, f"drill-{m.slot}", "/127.0.0.1",
                                      self.session_timeout_ms, self.rebalance_timeout_ms,
                                      [("range", SUBSCRIPTION)]))

    def add_member(self, group: str) -> Member:
        slot = 1 + max((m.slot for m in self.members if m.group == group), default=-1)
        member = Member(group, slot)
        self.members.append(member)
        return member

    def leave(self, member: Member) -> None:
        member.phase = "left"
        self._send(None, wire.leave_group(member.group, [(member.member_id, None)]))

    def send_admin(self, body: dict) -> str:
        return self._send(None, body)

    def tick(self, poll_ms: int = 20) -> None:
        now = time.monotonic()
        if self.sending:
            for m in self.members:
                if m.in_flight is not None or m.phase == "left":
                    continue
                if m.phase == "new":
                    self._join(m)
                elif m.phase == "stable" and now >= m.next_commit:
                    key = (m.group, m.slot)
                    self.slot_offsets[key] = self.slot_offsets.get(key, 0) + 1
                    m.next_commit = now + self.commit_s
                    self._send(m, wire.offset_commit(m.group, m.generation, m.member_id, None,
                                                     {(COMMIT_TOPIC, m.slot): (self.slot_offsets[key], "")}))
                elif m.phase == "stable" and now >= m.next_heartbeat:
                    m.next_heartbeat = now + self.heartbeat_s
                    self._send(m, wire.heartbeat(m.group, m.generation, m.member_id, None))
        self.wire.flush()
        for raw in self.wire.poll(poll_ms):
            got = self.ledger.record(raw, time.monotonic())
            if got is not None:
                self._handle(*got)

    # -- reacting --------------------------------------------------------------------------------------------

    def _handle(self, rid: str, body: dict) -> None:
        m = self.by_request.pop(rid, None)
        if m is None or m.in_flight != rid:
            return
        m.in_flight = None
        if m.phase == "left":
            return
        api, error = body.get("api"), body.get("error_code", 0)
        if api == "OffsetCommit":
            errors = wire.partition_errors(body)
            error = next(iter(errors.values()), error)
            if error == Errors.NONE:
                sent = self.ledger.sent[rid].body
                offset = sent["topics"][0]["partitions"][0]["committed_offset"]
                key = (m.group, m.slot)
                self.ledger.acked[key] = max(self.ledger.acked.get(key, 0), offset)
                return
        if api == "JoinGroup":
            if error == Errors.MEMBER_ID_REQUIRED:
                m.member_id = body["member_id"]
                return self._join(m)
            if error == Errors.NONE:
                m.member_id, m.generation = body["member_id"], body["generation_id"]
                assignments = {}
                if body.get("leader") == m.member_id:
                    assignments = {x["member_id"]: ASSIGNMENT for x in body.get("members", [])}
                m.phase = "syncing"
                self._send(m, wire.sync_group(m.group, m.generation, m.member_id, None,
                                              body.get("protocol_name") or "range", assignments))
                return
        if api == "SyncGroup" and error == Errors.NONE:
            m.phase = "stable"
            m.stable_at = m.stable_at or time.monotonic()
            now = time.monotonic()
            m.next_heartbeat, m.next_commit = now + self.heartbeat_s, now + self.rng.uniform(0, self.commit_s)
            return
        if api == "Heartbeat" and error == Errors.NONE:
            return
        # Errors: Kafka's consumer reactions.
        if error == Errors.UNKNOWN_MEMBER_ID:
            if m.member_id and m.generation >= 0:
                # A member that had joined is unknown now: its session expired (or it was removed).
                self.ledger.expired_while_stable.append((time.monotonic(), m.name, f"{api} while {m.phase}"))
            m.member_id, m.generation = "", -1
        elif error not in (Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION):
            self.ledger.unexpected.append(f"{m.name} {api} error {error}")
        self._join(m)

    # -- driving ---------------------------------------------------------------------------------------------

    def run_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.tick()

    def run_until(self, predicate, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            self.tick()
            if predicate():
                return True
        return False

    def all_stable(self) -> bool:
        return all(m.phase in ("stable", "left") for m in self.members)

    def rebalancing(self) -> bool:
        return any(m.phase in ("joining", "syncing") and m.in_flight for m in self.members)

    def commit_in_flight(self) -> bool:
        return any(m.in_flight and self.ledger.sent[m.in_flight].body.get("api") == "OffsetCommit"
                   for m in self.members)

    def quiesce(self, timeout_s: float) -> bool:
        """Stop sending new requests; wait until every request sent has an answer."""
        self.sending = False
        return self.run_until(lambda: not self.ledger.unanswered(), timeout_s)

    def fetch_committed(self, timeout_s: float) -> dict[tuple[str, int], int]:
        """OffsetFetch every group (all partitions) and return what the coordinator has committed."""
        groups = sorted({m.group for m in self.members})
        rids = {self.send_admin(wire.offset_fetch(g)): g for g in groups}
        self.run_until(lambda: all(r in self.ledger.copies for r in rids), timeout_s)
        out: dict[tuple[str, int], int] = {}
        for rid, group in rids.items():
            if rid in self.ledger.copies:
                body = json.loads(self.ledger.copies[rid][0])
                for (topic, partition), (offset, _) in wire.fetched_offsets(body).items():
                    if topic == COMMIT_TOPIC:
                        out[(group, partition)] = offset
        return out

    def offsets_lost(self, committed: dict[tuple[str, int], int]) -> list[str]:
        return [f"{g}/{p}: acked {acked}, fetched {committed.get((g, p))}"
                for (g, p), acked in sorted(self.ledger.acked.items()) if committed.get((g, p), -1) < acked]


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]

"""Which upstream broker takes each of the gateway's own requests, found as Kafka's clients find it.

A client of the gateway finds its brokers itself: its Metadata and FindCoordinator (a transaction's too) go upstream,
and the answers name the gateway's node listeners, each forwarded to its broker (`gateway.front.server`), so its
InitProducerId, AddOffsetsToTxn, EndTxn and Produce reach the broker Kafka named. The gateway's own requests find
theirs here, by the same two lookups:
- a transactional id's **transaction coordinator** (FindCoordinator, key type 1, TRANSACTION): the AddPartitionsToTxn
  that puts a group's control-topic partition into a producer's transaction (TxnOffsetCommit), and the InitProducerId
  that aborts a transaction past its timeout (`gateway.upstream.transactions`);
- a partition's **leader** (Metadata): the transactional write to the control topic, the read of a producer's last
  sequence from it, and the fast path's reads of the requests topic (`gateway.fast.requests_log`).
Both are remembered until the broker says otherwise or its connection breaks; then looked up again and the request
sent again, by the Java client's rules (`next_step`), within the request's budget. A node's address has one
definition (`Gateway.upstream_addresses`); each owner keeps its own connection per node (`NodeConnections`): a client
connection its own (its requests are answered in order on it), the gateway-wide ones theirs. On the embedded default,
one tansu broker names itself for every lookup.
"""

from __future__ import annotations

import asyncio
import logging
import time
from enum import Enum
from typing import Awaitable, Callable, Iterable

from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from gateway.upstream.broker import Upstream, UpstreamSecurity
from gateway.upstream.control import from_json
from state.api import Errors

log = logging.getLogger(__name__)

TRANSACTION = 1
"""FindCoordinator's key type of a transactional id."""
FIND_COORDINATOR_VERSION = 1
"""One key per request, key type included: every broker since Kafka 0.11 (v0 is gone in 4.0), and tansu."""
METADATA_VERSION = 8
RETRY_BACKOFF_S = 0.1
"""The Java client's `retry.backoff.ms` (100), doubled on each retry up to `RETRY_BACKOFF_MAX_S`
(`retry.backoff.max.ms`, KIP-580)."""
RETRY_BACKOFF_MAX_S = 1.0


class Step(Enum):
    DONE = "done"
    RETRY = "retry"
    LOOK_UP_AGAIN = "look up again"


BROKEN = -1
"""`next_step`'s code for a connection that broke under the request (Kafka's NetworkException, retriable)."""

COORDINATOR_RULE = {
    Errors.NOT_COORDINATOR: Step.LOOK_UP_AGAIN, Errors.COORDINATOR_NOT_AVAILABLE: Step.LOOK_UP_AGAIN,
    BROKEN: Step.LOOK_UP_AGAIN,
    Errors.COORDINATOR_LOAD_IN_PROGRESS: Step.RETRY, Errors.CONCURRENT_TRANSACTIONS: Step.RETRY}
"""A transaction coordinator's answer, as the Java client's TransactionManager takes it (AddPartitionsToTxn,
InitProducerId): NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE (and a disconnection) look the coordinator up again
and send again; COORDINATOR_LOAD_IN_PROGRESS and CONCURRENT_TRANSACTIONS send again to the same one; anything else
is the answer."""
LEADER_RULE = {Errors.NOT_LEADER_OR_FOLLOWER: Step.LOOK_UP_AGAIN, Errors.LEADER_NOT_AVAILABLE: Step.LOOK_UP_AGAIN}
"""A partition leader's answer to a write: a broker that is not (or no longer) the leader makes the leader be looked
up again and the batch sent again (it was not written). A connection that broke under a write is not sent again (the
write's fate is unknown; the TxnOffsetCommit's answer says so and the client sends it again), only looked up again
next time."""


def next_step(rule: dict[int, Step], code: int) -> Step:
    """What follows an answer with error `code` (`BROKEN`: the connection broke) under `rule`."""
    return rule.get(code, Step.DONE)


class LookupFailed(ConnectionError):
    """A lookup the upstream answered with an error (`code`), e.g. COORDINATOR_NOT_AVAILABLE while it loads."""

    def __init__(self, what: str, code: int) -> None:
        super().__init__(f"{what}: error {code}")
        self.code = code


async def retried(rule: dict[int, Step], attempt: Callable[[], Awaitable[int]], look_up_again: Callable[[], None],
                  budget_s: float) -> int:
    """`attempt` (look up, connect, send: the upstream's error code; a ConnectionError or OSError when the connection
    broke, a `LookupFailed` when the lookup was refused) until `rule` says it is done or `budget_s` is spent, with the
    Java client's backoff between attempts; `look_up_again` forgets what the attempt looked up. The last answer's
    code, or the last failure raised, when the budget ends first."""
    deadline = time.monotonic() + budget_s
    backoff = RETRY_BACKOFF_S
    while True:
        failure: BaseException | None = None
        try:
            code = await asyncio.wait_for(attempt(), max(deadline - time.monotonic(), 0.001))
        except LookupFailed as exc:
            code, failure = exc.code, exc
        except (ConnectionError, OSError) as exc:
            code, failure = BROKEN, exc
        step = next_step(rule, code)
        if step is Step.DONE and code != BROKEN:
            return code
        if step is Step.LOOK_UP_AGAIN or code == BROKEN:
            look_up_again()
        if step is Step.DONE or time.monotonic() + backoff >= deadline:
            if code == BROKEN or (failure is not None and not isinstance(failure, LookupFailed)):
                raise failure
            return code
        await asyncio.sleep(backoff)
        backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)


class NodeConnections:
    """An owner's connections to the upstream brokers, one per node (None: any broker, the bootstrap's way)."""

    def __init__(self, addresses: Callable[[int | None], list[tuple[str, int]]], security: UpstreamSecurity,
                 connect_timeout_s: float) -> None:
        """`addresses`: where a node's connection goes (`Gateway.upstream_addresses`)."""
        self._addresses = addresses
        self._security = security
        self._connect_timeout_s = connect_timeout_s
        self._connections: dict[int | None, Upstream] = {}
        self._connecting: dict[int | None, asyncio.Lock] = {}

    async def connection(self, node_id: int | None) -> Upstream:
        upstream = self._connections.get(node_id)
        if upstream is not None and not upstream.closed:
            return upstream
        lock = self._connecting.setdefault(node_id, asyncio.Lock())
        async with lock:
            upstream = self._connections.get(node_id)
            if upstream is not None and not upstream.closed:
                return upstream
            errors = []
            for host, port in self._addresses(node_id):
                try:
                    upstream = await Upstream.connect(host, port, self._security, self._connect_timeout_s)
                except (OSError, asyncio.TimeoutError, ConnectionError) as exc:
                    errors.append(f"{host}:{port}: {exc or type(exc).__name__}")
                    continue
                self._connections[node_id] = upstream
                return upstream
        raise ConnectionError(f"no upstream broker for node {node_id}: {'; '.join(errors) or 'unknown node'}")

    def drop(self, node_id: int | None) -> None:
        """Close the node's connection (it broke, or a request on it was given up): the next use connects again."""
        upstream = self._connections.pop(node_id, None)
        if upstream is not None:
            upstream.close()

    def close(self) -> None:
        for upstream in self._connections.values():
            upstream.close()
        self._connections.clear()


class Routes:
    """The transaction coordinators and partition leaders the gateway has looked up, shared by its connections."""

    def __init__(self, lookups: NodeConnections,
                 learn_brokers: Callable[[Iterable[tuple[int, str, int]]], None]) -> None:
        """`lookups`: the connections the lookups are asked on (any broker); `learn_brokers`: where the brokers an
        answer names are remembered (`Gateway.learn_brokers`, which `upstream_addresses` reads)."""
        self._lookups = lookups
        self._learn = learn_brokers
        self._coordinators: dict[str, int] = {}
        self._leaders: dict[str, dict[int, int]] = {}
        self.lookups = 0
        """FindCoordinator and Metadata requests sent (the tests read it)."""

    async def transaction_coordinator(self, transactional_id: str) -> int:
        """The node of the transaction coordinator of `transactional_id` (looked up when not known)."""
        node = self._coordinators.get(transactional_id)
        if node is not None:
            return node
        upstream = await self._lookups.connection(None)
        self.lookups += 1
        try:
            answer = await upstream.request(from_json(FindCoordinatorRequest, FIND_COORDINATOR_VERSION, {
                "key": transactional_id, "key_type": TRANSACTION}), FIND_COORDINATOR_VERSION, FindCoordinatorResponse)
        except (ConnectionError, OSError):
            self._lookups.drop(None)
            raise
        if answer.error_code or answer.node_id < 0:
            raise LookupFailed(f"transaction coordinator of {transactional_id!r}",
                               answer.error_code or Errors.COORDINATOR_NOT_AVAILABLE)
        self._learn([(answer.node_id, answer.host, answer.port)])
        if len(self._coordinators) >= COORDINATORS_KEPT:
            self._coordinators.clear()
        self._coordinators[transactional_id] = answer.node_id
        log.info("transaction coordinator of %r: node %d (%s:%d)", transactional_id, answer.node_id, answer.host,
                 answer.port)
        return answer.node_id

    def close(self) -> None:
        self._lookups.close()

    def forget_coordinator(self, transactional_id: str) -> None:
        self._coordinators.pop(transactional_id, None)

    async def partitions(self, topic: str) -> dict[int, int]:
        """Partition -> the node of its leader (-1: none now), from Metadata (looked up when not known)."""
        known = self._leaders.get(topic)
        if known is not None:
            return known
        upstream = await self._lookups.connection(None)
        self.lookups += 1
        try:
            metadata = await upstream.request(MetadataRequest[METADATA_VERSION](
                topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False, include_topic_authorized_operations=False),
                METADATA_VERSION, MetadataResponse)
        except (ConnectionError, OSError):
            self._lookups.drop(None)
            raise
        self._learn([(b.node_id, b.host, b.port) for b in metadata.brokers])
        (found,) = [t for t in metadata.topics if t.name == topic] or [None]
        if found is None or found.error_code or not found.partitions:
            raise LookupFailed(f"partitions of {topic}",
                               found.error_code if found is not None and found.error_code
                               else Errors.UNKNOWN_TOPIC_OR_PARTITION)
        leaders = self._leaders[topic] = {p.partition_index: p.leader_id for p in found.partitions}
        log.info("partition leaders of %s: %s", topic, _ranges(leaders))
        return leaders

    async def leader(self, topic: str, partition: int) -> int:
        """The node of the partition's leader."""
        node = (await self.partitions(topic)).get(partition, -1)
        if node < 0:
            self.forget_leaders(topic)
            raise LookupFailed(f"leader of {topic}-{partition}", Errors.LEADER_NOT_AVAILABLE)
        return node

    def forget_leaders(self, topic: str) -> None:
        self._leaders.pop(topic, None)

    async def to_coordinator(self, connections: NodeConnections, transactional_id: str,
                             send: Callable[[Upstream], Awaitable[int]], budget_s: float) -> int:
        """`send` (the upstream's error code) on `connections`' connection to the transaction coordinator of
        `transactional_id`, looked up again and sent again by `COORDINATOR_RULE` within `budget_s`."""
        node: list[int | None] = [None]

        async def attempt() -> int:
            node[0] = await self.transaction_coordinator(transactional_id)
            return await send(await connections.connection(node[0]))

        def look_up_again() -> None:
            self.forget_coordinator(transactional_id)
            if node[0] is not None:
                connections.drop(node[0])

        return await retried(COORDINATOR_RULE, attempt, look_up_again, budget_s)


def bootstrap_addresses(servers: str) -> list[tuple[str, int]]:
    """(host, port) of each entry of a `bootstrap.servers` list."""
    out = []
    for item in servers.split(","):
        host, _, port = item.strip().rpartition(":")
        out.append((host.strip("[]"), int(port)))
    return out


def node_addresses(node_id: int | None, brokers: dict[int, tuple[str, int]],
                   bootstrap: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Where a connection to `node_id` goes: the broker's own address as a Metadata or FindCoordinator answer named
    it (`brokers`); for None (any broker), every broker known, then the bootstrap servers."""
    if node_id is not None:
        return [brokers[node_id]] if node_id in brokers else []
    return list(brokers.values()) + bootstrap


COORDINATORS_KEPT = 100_000
"""Transactional ids whose coordinator is remembered; past that the memory starts again."""


def _ranges(leaders: dict[int, int]) -> str:
    """Partition -> leader as `node 1: 0-3, 8; node 2: 4-7`."""
    by_node: dict[int, list[int]] = {}
    for partition, node in sorted(leaders.items()):
        by_node.setdefault(node, []).append(partition)
    parts = []
    for node, partitions in sorted(by_node.items()):
        spans, start = [], partitions[0]
        for a, b in zip(partitions, partitions[1:] + [None]):
            if b != a + 1:
                spans.append(f"{start}" if start == a else f"{start}-{a}")
                start = b
        parts.append(f"node {node}: {', '.join(spans)}")
    return "; ".join(parts)

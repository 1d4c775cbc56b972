"""The gateway: listeners that stand for the upstream brokers, and what all connections share.

Port per broker, as kroxylicious does it: the bootstrap listener (`--listen HOST:PORT`) and one listener per
upstream broker, on PORT+1, PORT+2, ... in the order brokers are first seen (ephemeral ports when PORT is 0).
Metadata, FindCoordinator and DescribeCluster answers name these listeners under the upstream brokers' own node
ids, so every connection a client opens lands on the gateway, and a connection to a node listener is forwarded to
that broker. The group coordinator of a group is one of those nodes (librdkafka drops a coordinator whose node id
Metadata does not name); which one is a hash of the group id, as Kafka spreads groups over brokers, so that
ListGroups sent to every broker lists each group once. Every gateway answers for every group: several may run side
by side, and any of them serves any client.
"""

from __future__ import annotations

import asyncio
import logging
import ssl as ssl_module
import time
import zlib
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest

from gateway.upstream.control import Json, to_json
from gateway.upstream.coordinator import CoordinatorClient
from gateway.fast.fast_path import FastPath
from gateway.upstream.routes import NodeConnections, Routes, bootstrap_addresses, node_addresses
from gateway.upstream.transactions import ControlPartitions, TimedOut
from gateway.protocol import strict
from gateway.protocol.frames import MAX_REQUEST_BYTES, STREAM_BUFFER_BYTES
from gateway.security.acl import Authorizer
from gateway.security.authentication import Authenticator
from gateway.fast.member_id_round import MemberIdRound
from gateway.front.processes import Shared
from gateway.front.profile import RequestProfile
from gateway.security.topics import SecurityTopics
from gateway.share.fetch import Shares
from gateway.share.log import UpstreamReads
from gateway.upstream.broker import Upstream, UpstreamSecurity
from gateway.front.versions import Versions, advertised
from state.api import CoordinatorConfig

log = logging.getLogger(__name__)

JOIN_GRACE_MS = 2000
"""Added to a JoinGroup's rebalance timeout for the coordinator's batch latency. Kafka answers a JoinGroup within
the rebalance timeout; clients wait that plus 3 s (librdkafka) or 5 s (Java, kafka-python), so an answer the
coordinator gives late but within this grace still reaches them, and a gateway that gives up answers before they
do."""


@dataclass(frozen=True)
class GatewaySettings:
    bootstrap_servers: str
    listen_host: str
    listen_port: int
    advertised_host: str
    requests_topic: str
    responses_topic: str
    kafka_config: dict[str, Any] = field(default_factory=dict)
    """kafka-python settings of the control-topic clients (security)."""
    upstream: UpstreamSecurity = UpstreamSecurity()
    authenticator: Authenticator | None = None
    """SASL on the listeners when set (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)."""
    authorization: bool = False
    """Kafka's ACLs enforced on every request (`gateway.security.authz`), from the security topics."""
    ssl: ssl_module.SSLContext | None = None
    """TLS on the listeners when set."""
    request_timeout_ms: int = 25_000
    """How long a group request other than JoinGroup waits for the coordinator: less than Kafka clients' default
    request timeout (30 s), so they get COORDINATOR_NOT_AVAILABLE and retry rather than drop the connection."""
    response_fetch_wait_ms: int = 50
    """How long the broker may hold the fetch that reads the coordinator's answers (`client.transport`)."""
    views_topic: str = "group-coordinator-views"
    fast_answers_by_coordinator: bool = False
    """Every heartbeat, commit and fetch waits for the coordinator; no views are followed (`gateway.fast`)."""
    view_bound_ms: int = 2000
    """How recent a group's view must be for the gateway to answer heartbeats and commits from it
    (`gateway.fast.views`)."""
    view_bound_max_ms: int = 10000
    """How far that bound may follow the query's pace when its batches are slow (`gateway.fast.views`)."""
    liveness_interval_ms: int = 5000
    """The longest a heartbeat answered from a view waits before the coordinator hears of it
    (`gateway.fast.fast_path`)."""
    offset_fetch_by_coordinator: bool = False
    """Every OffsetFetch waits for the coordinator, even where a view holds the group's offsets now
    (`gateway.fast.fast_path`)."""
    max_request_bytes: int = MAX_REQUEST_BYTES
    connect_timeout_ms: int = 10_000
    shared: Shared | None = None
    """The directory the processes of one gateway share (`gateway.front.processes`); None: one process."""
    process_index: int = 0
    member_id_round_by_coordinator: bool = False
    """JoinGroup's member-id round waits for the coordinator instead of being answered here at once
    (`gateway.fast.member_id_round`)."""
    profile_interval_s: float = 0.0
    """Log the requests of each kind, where they were answered and how long they took, every this long
    (`gateway.front.profile`; 0: off)."""
    coordinator_config: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    """The coordinator's settings (the `group.*` and `offset.*` properties, as the query reads them), for the
    member-id round the gateway answers itself and the commits it answers from a view, by the core's rules."""


ALLOW_ALL = Authorizer(allow_everyone_if_no_acl_found=True)
"""Who may do what while authorization is off: everyone everything (the SCRAM management APIs still ask)."""
TOPIC_IDS_REFRESH_S = 1.0
"""At most one metadata request per this long to learn topic ids the gateway does not know."""


class Gateway:
    def __init__(self, settings: GatewaySettings, coordinator: CoordinatorClient,
                 security: SecurityTopics | None = None, fast_path: FastPath | None = None) -> None:
        self.settings = settings
        self.coordinator = coordinator
        self.member_id_round = (None if settings.member_id_round_by_coordinator
                                else MemberIdRound(coordinator, settings.coordinator_config))
        self.security = security
        """The ACLs and SCRAM credentials the gateway follows (when authorization or SCRAM is on)."""
        self.fast_path = fast_path
        """Heartbeats and commits answered from the groups' views (None: every request waits for the coordinator)."""
        connect_timeout_s = settings.connect_timeout_ms / 1000
        self.routes = Routes(NodeConnections(self.upstream_addresses, settings.upstream, connect_timeout_s),
                             self.learn_brokers)
        """The transaction coordinators and partition leaders of the gateway's own requests (`gateway.upstream.routes`)."""
        self.control_partitions = ControlPartitions(settings.requests_topic, self.routes,
                                                    lambda: coordinator.appender.topic)
        """Adds a group's control-topic partition to a producer's transaction (TxnOffsetCommit)."""
        self.transaction_timeouts: dict[str, int] = {}
        """Transactional id -> the transaction timeout its producer's last InitProducerId through this process
        asked for: a TxnOffsetCommit carries it (`transaction_timeout_ms`) into the query's open transactions."""
        self.timed_out = (TimedOut(fast_path.follower.open_transactions, self.routes,
                                   NodeConnections(self.upstream_addresses, settings.upstream, connect_timeout_s))
                          if fast_path is not None and settings.process_index == 0 else None)
        """Aborts at the upstream the transactions open past their timeout (one process of a gateway does)."""
        self._timed_out_task: asyncio.Task | None = None
        self.authorizing = settings.authorization and security is not None
        self._topic_names: dict[bytes, str] = {}
        self._topic_ids_learned = 0.0
        self.list_groups_key = coordinator.client_id
        self._told_intervals: dict[tuple[str, str], int] = {}
        """(group id, member id) -> the heartbeat interval the member's last answer told it (`timeout_s`)."""
        self.brokers: dict[int, tuple[str, int]] = {}
        """Upstream node id -> the broker's own address."""
        self.versions: Versions = {}
        self.features: Json = {}
        """The upstream's ApiVersions fields other than the versions (features), passed on as they are."""
        self._addresses: dict[int, tuple[str, int]] = {}
        self.servers: list[asyncio.AbstractServer] = []
        self._listener_lock = asyncio.Lock()
        self.bootstrap_port = 0
        self.share = Shares(self, UpstreamReads(self.upstream_addresses, settings.upstream,
                                                settings.connect_timeout_ms / 1000))
        if fast_path is not None and fast_path.coordinator is not None:
            from gateway.fast.requests_log import RequestsLog

            fast_path.requests_log = RequestsLog(self.share.reads, settings.requests_topic, self.routes)
        self.profile = RequestProfile(settings.profile_interval_s) if settings.profile_interval_s > 0 else None
        """The requests per kind, logged every `profile_interval_s` (None: not counted)."""
        self._profile_task: asyncio.Task | None = None
        """Share sessions and the share-partitions this process holds (ShareFetch, ShareAcknowledge)."""

    # -- lifecycle ---------------------------------------------------------------------------------------------

    async def start(self) -> None:
        await self._learn_upstream()
        s = self.settings
        server = await asyncio.start_server(partial(self.serve, None), s.listen_host, s.listen_port, ssl=s.ssl,
                                            limit=STREAM_BUFFER_BYTES, reuse_port=s.shared is not None)
        self.servers.append(server)
        self.bootstrap_port = server.sockets[0].getsockname()[1]
        for node_id in sorted(self.brokers):
            await self.node_address(node_id)
        if self.profile is not None:
            self._profile_task = asyncio.get_running_loop().create_task(self.profile.run())
        if self.timed_out is not None:
            self._timed_out_task = asyncio.get_running_loop().create_task(self.timed_out.run())

    def note_transaction_timeout(self, frame: bytes, version: int) -> None:
        """Remember the transaction timeout of an InitProducerId with a transactional id that goes upstream."""
        try:
            request = strict.decode(InitProducerIdRequest, frame, version)
        except Exception:  # noqa: BLE001 - a request the upstream will judge; nothing to remember
            return
        if request.transactional_id:
            if len(self.transaction_timeouts) >= 100_000:
                self.transaction_timeouts.clear()
            self.transaction_timeouts[request.transactional_id] = request.transaction_timeout_ms

    @property
    def bootstrap_address(self) -> str:
        return f"{self.settings.advertised_host}:{self.bootstrap_port}"

    async def close(self) -> None:
        if self._profile_task is not None:
            self._profile_task.cancel()
        if self._timed_out_task is not None:
            self._timed_out_task.cancel()
        if self.timed_out is not None:
            self.timed_out.close()
        self.routes.close()
        for server in self.servers:
            server.close()
        for server in self.servers:
            await server.wait_closed()
        await self.share.close()
        if self.fast_path is not None:
            self.fast_path.close()

    async def serve(self, node_id: int | None, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve one client connection, a listener's (`node_id`: the upstream node it stands for, None: the
        bootstrap listener) or any other pair of streams, until it closes."""
        from gateway.front.connection import ClientConnection

        try:
            await ClientConnection(self, node_id, reader, writer).serve()
        except asyncio.CancelledError:  # shutting down; Python 3.11's streams would log the cancellation
            pass

    # -- the upstream cluster ----------------------------------------------------------------------------------

    async def _learn_upstream(self) -> None:
        """API versions, features and brokers, asked of the first bootstrap server that answers."""
        errors = []
        for host, port in bootstrap_addresses(self.settings.bootstrap_servers):
            try:
                upstream = await Upstream.connect(host, port, self.settings.upstream,
                                                  self.settings.connect_timeout_ms / 1000)
            except (OSError, asyncio.TimeoutError, ConnectionError) as exc:
                errors.append(f"{host}:{port}: {exc}")
                continue
            try:
                answer = await upstream.request(ApiVersionsRequest[3](
                    client_software_name="groupcoord-gateway", client_software_version="1"), 3, ApiVersionsResponse)
                if answer.error_code != 0:  # an older broker answers v0 with its versions
                    answer = await upstream.request(ApiVersionsRequest[0](), 0, ApiVersionsResponse)
                upstream_versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
                version = min(upstream_versions.get(MetadataRequest.API_KEY, (0, 0))[1], 12)
                metadata = await upstream.request(MetadataRequest[version](topics=[]), version, MetadataResponse)
                self.know_upstream(upstream_versions,
                                   {k: v for k, v in to_json(answer, 3).items() if k not in ("api_keys", "error_code")},
                                   [(b.node_id, b.host, b.port) for b in metadata.brokers])
                return
            finally:
                upstream.close()
        raise ConnectionError(f"no upstream broker answered: {'; '.join(errors)}")

    def know_upstream(self, versions: Versions, features: Json, brokers: list[tuple[int, str, int]]) -> None:
        """What the gateway takes from the upstream cluster before it serves: its API versions (what the gateway
        advertises follows from them), its ApiVersions features, and its brokers."""
        self.features = features
        self.versions = advertised(versions, self.settings.authenticator is not None, self.authorizing,
                                   self.security is not None)
        self.learn_brokers(brokers)

    @property
    def authorizer(self) -> Authorizer:
        """The current ACL snapshot (every request sees one consistent set)."""
        return self.security.authorizer if self.authorizing else ALLOW_ALL

    async def topic_names(self, ids: list[bytes]) -> dict[bytes, str]:
        """Names of topic ids (Fetch v13+ names topics by id; ACLs name them by name). Ids the gateway has not
        seen make it ask the cluster's metadata, at most once per TOPIC_IDS_REFRESH_S; unknown ones are left out."""
        if any(i not in self._topic_names for i in ids) and \
                time.monotonic() - self._topic_ids_learned > TOPIC_IDS_REFRESH_S:
            self._topic_ids_learned = time.monotonic()
            for host, port in self.upstream_addresses(None):
                try:
                    upstream = await Upstream.connect(host, port, self.settings.upstream,
                                                      self.settings.connect_timeout_ms / 1000)
                except (OSError, asyncio.TimeoutError, ConnectionError):
                    continue
                try:
                    metadata = await upstream.request(MetadataRequest[12](topics=None), 12, MetadataResponse)
                    self._topic_names.update((t.topic_id.bytes, t.name) for t in metadata.topics if t.name)
                    break
                finally:
                    upstream.close()
        return {i: self._topic_names[i] for i in ids if i in self._topic_names}

    def learn_brokers(self, brokers: Any) -> None:
        """(node_id, host, port) of upstream brokers, as a Metadata or DescribeCluster answer names them."""
        for node_id, host, port in brokers:
            self.brokers[node_id] = (host, port)

    def upstream_addresses(self, node_id: int | None) -> list[tuple[str, int]]:
        """Where a connection to `node_id`'s listener goes; the bootstrap listener's goes to any broker."""
        return node_addresses(node_id, self.brokers, bootstrap_addresses(self.settings.bootstrap_servers))

    async def node_address(self, node_id: int) -> tuple[str, int]:
        """The gateway listener that stands for upstream node `node_id` (started on first use)."""
        if node_id not in self._addresses:
            async with self._listener_lock:
                if node_id not in self._addresses:
                    port = await self._node_listener(node_id)
                    self._addresses[node_id] = (self.settings.advertised_host, port)
                    log.info("node %d (upstream %s) on %s:%d", node_id, self.brokers.get(node_id),
                             *self._addresses[node_id])
        return self._addresses[node_id]

    async def _node_listener(self, node_id: int) -> int:
        """Listen for node `node_id` and return the port: the next after the bootstrap listener's (or any, with
        port 0). With several processes, on the port the first of them to meet the node took (SO_REUSEPORT)."""
        s = self.settings

        async def listen(port: int) -> int:
            server = await asyncio.start_server(partial(self.serve, node_id), s.listen_host, port, ssl=s.ssl,
                                                limit=STREAM_BUFFER_BYTES, reuse_port=s.shared is not None)
            self.servers.append(server)
            return server.sockets[0].getsockname()[1]

        if s.shared is None:
            return await listen(0 if s.listen_port == 0 else s.listen_port + 1 + len(self._addresses))
        with s.shared.ports() as ports:
            if str(node_id) not in ports:
                ports[str(node_id)] = await listen(0 if s.shared.ephemeral else s.listen_port + 1 + len(ports))
                return ports[str(node_id)]
            return await listen(ports[str(node_id)])

    def coordinator_for(self, key: str) -> int | None:
        """The node the gateway names as the coordinator of group `key` (None: no broker known)."""
        nodes = sorted(self.brokers)
        return nodes[zlib.crc32(key.encode("utf-8")) % len(nodes)] if nodes else None

    # -- group requests ----------------------------------------------------------------------------------------

    def timeout_s(self, api: str, request: Json) -> float:
        """How long a group request may wait for the coordinator (JoinGroup: a long poll, JOIN_GRACE_MS; a
        ConsumerGroupHeartbeat: within the interval its member was told, `INTERVAL_TIMED`)."""
        if api == "JoinGroup":
            rebalance = request.get("rebalance_timeout_ms")
            if rebalance is None or rebalance < 0:
                rebalance = request.get("session_timeout_ms", 0)
            return (max(rebalance, 0) + JOIN_GRACE_MS) / 1000
        budget = self.settings.request_timeout_ms / 1000
        if api in INTERVAL_TIMED:
            told = self._told_intervals.get((request.get("group_id"), request.get("member_id")))
            if told is not None:
                return min(budget, told * ANSWER_WITHIN_INTERVAL / 1000)
        return budget

    def heard_answer(self, api: str, request: Json, answer: Json) -> None:
        """Note the heartbeat interval a consumer group's member was told (`timeout_s`)."""
        if api in INTERVAL_TIMED and answer.get("heartbeat_interval_ms", 0) > 0 and answer.get("member_id"):
            if len(self._told_intervals) >= TOLD_INTERVALS_KEPT:
                self._told_intervals.clear()
            self._told_intervals[(request.get("group_id"), answer["member_id"])] = answer["heartbeat_interval_ms"]


INTERVAL_TIMED = frozenset({"ConsumerGroupHeartbeat"})
"""Heartbeats that librdkafka gives the heartbeat interval last told to be answered (its ShareGroupHeartbeat has
no such timeout: socket.timeout.ms applies, so a late answer still reaches it), then drops the answer (and,
with its default `socket.max.fails=1`, the connection) and sends its next heartbeat without asking again for what
the lost answer said: a revocation lost that way left three consumer-protocol consumers at 6/0/0 partitions until
the rebalance timeout. So the coordinator's answer to one of these waits at most `ANSWER_WITHIN_INTERVAL` of the
interval its member was last told (through this process, on any connection: the timeout closed the last one); past
that the member gets COORDINATOR_NOT_AVAILABLE in time, on which librdkafka (as Kafka's Java client on any failed
heartbeat) sends its next heartbeat in full, with the partitions it owns, and Kafka's rules answer a full request
with the member's assignment (docs/gateway.md, "Timeouts and failures")."""
ANSWER_WITHIN_INTERVAL = 0.8
"""librdkafka times a heartbeat out between the interval and a second later (it looks for timeouts each second):
four fifths leave room for the answer's way back on a loaded machine."""
TOLD_INTERVALS_KEPT = 100_000
"""Members whose interval is remembered; past that the memory starts again (a member's next answer tells it)."""



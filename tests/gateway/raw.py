"""A raw Kafka connection for the gateway tests: kafka-python's message classes over a plain socket (to a listener,
or one end of an in-memory pair: `tests.gateway.memory`)."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                 SaslHandshakeResponse)


def address(servers: str) -> tuple[str, int]:
    host, _, port = servers.rpartition(":")
    return host, int(port)


class Connection:
    """A raw Kafka connection: requests out, responses in, in order."""

    def __init__(self, servers: str | None = None, sock: socket.socket | None = None) -> None:
        self.sock = sock if sock is not None else socket.create_connection(address(servers), timeout=30)
        self.next_id = 0

    def send(self, request: Any, version: int) -> int:
        self.next_id += 1
        request.with_header(correlation_id=self.next_id, client_id="gateway-test")
        self.sock.sendall(request.encode(version=version, header=True, framed=True))
        return self.next_id

    def receive(self, response_class: Any, version: int) -> Any:
        size = struct.unpack(">i", self.read(4))[0]
        return response_class.decode(self.read(size), version=version, header=True)

    def call(self, request: Any, version: int, response_class: Any) -> Any:
        self.send(request, version)
        return self.receive(response_class, version)

    def read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed by the gateway")
            data += chunk
        return data

    def closed_by_peer(self, timeout_s: float = 10.0) -> bool:
        self.sock.settimeout(timeout_s)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()


def login(servers: str | Connection, username: str, password: str) -> Connection:
    """A connection (to `servers`, or the one given) authenticated with SASL/PLAIN (handshake v1, then
    SaslAuthenticate)."""
    connection = servers if isinstance(servers, Connection) else Connection(servers)
    handshake = connection.call(SaslHandshakeRequest[1](mechanism="PLAIN"), 1, SaslHandshakeResponse)
    assert (handshake.error_code, handshake.mechanisms) == (0, ["PLAIN"])
    answer = connection.call(SaslAuthenticateRequest[1](auth_bytes=f"\0{username}\0{password}".encode()), 1,
                             SaslAuthenticateResponse)
    assert answer.error_code == 0, answer
    return connection


class RawMember:
    """One consumer-group member over a raw connection: the requests a Kafka consumer sends, at fixed versions, each
    answered before the next (JoinGroup v9, SyncGroup v5, Heartbeat v4, OffsetCommit v8, OffsetFetch v7,
    LeaveGroup v4)."""

    def __init__(self, servers: str, group: str, session_timeout_ms: int = 30_000) -> None:
        self.connection = Connection(servers)
        self.group = group
        self.session_timeout_ms = session_timeout_ms
        self.member_id = ""
        self.generation = -1

    def join_and_sync(self, topic: str = "t") -> None:
        """The member-id handshake, the join phase and the sync: a one-member group, Stable."""
        self.join(topic)
        self.sync()

    def join(self, topic: str = "t") -> None:
        """The member-id handshake and the join phase: a one-member group, CompletingRebalance."""
        from assignors.consumer_protocol import Subscription, encode_subscription
        from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse

        protocol = JoinGroupRequest.JoinGroupRequestProtocol(
            name="range", metadata=encode_subscription(Subscription((topic,))))
        for _ in range(5):  # MEMBER_ID_REQUIRED, then the join itself; COORDINATOR_NOT_AVAILABLE: again, as clients
            joined = self.connection.call(JoinGroupRequest[9](
                group_id=self.group, session_timeout_ms=self.session_timeout_ms, rebalance_timeout_ms=10_000,
                member_id=self.member_id, group_instance_id=None, protocol_type="consumer", protocols=[protocol],
                reason=None), 9, JoinGroupResponse)
            self.member_id = joined.member_id or self.member_id
            if joined.error_code == 0:
                break
        assert joined.error_code == 0, joined
        self.generation = joined.generation_id

    def sync(self) -> None:
        """The leader's SyncGroup: the group turns Stable."""
        from kafka.protocol.consumer.group import SyncGroupRequest, SyncGroupResponse

        assignment = SyncGroupRequest.SyncGroupRequestAssignment(member_id=self.member_id, assignment=b"")
        synced = self.connection.call(SyncGroupRequest[5](
            group_id=self.group, generation_id=self.generation, member_id=self.member_id, group_instance_id=None,
            protocol_type="consumer", protocol_name="range", assignments=[assignment]), 5, SyncGroupResponse)
        assert synced.error_code == 0, synced

    def heartbeat_request(self) -> Any:
        from kafka.protocol.consumer.group import HeartbeatRequest

        return HeartbeatRequest[4](group_id=self.group, generation_id=self.generation, member_id=self.member_id,
                                   group_instance_id=None)

    def heartbeat(self) -> int:
        from kafka.protocol.consumer.group import HeartbeatResponse

        return self.connection.call(self.heartbeat_request(), 4, HeartbeatResponse).error_code

    def commit_request(self, offsets: dict[tuple[str, int], int]) -> Any:
        from kafka.protocol.consumer.group import OffsetCommitRequest

        topic, partition = OffsetCommitRequest.OffsetCommitRequestTopic, \
            OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
        names = sorted({t for t, _ in offsets})
        return OffsetCommitRequest[8](
            group_id=self.group, generation_id_or_member_epoch=self.generation, member_id=self.member_id,
            group_instance_id=None, topics=[topic(name=name, partitions=[
                partition(partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata="")
                for (t, p), o in sorted(offsets.items()) if t == name]) for name in names])

    def commit(self, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """Error code per partition."""
        from kafka.protocol.consumer.group import OffsetCommitResponse

        answer = self.connection.call(self.commit_request(offsets), 8, OffsetCommitResponse)
        return {(t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}

    def committed(self, topic: str, partitions: list[int]) -> dict[int, int]:
        from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse

        answer = self.connection.call(OffsetFetchRequest[7](group_id=self.group, require_stable=False, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)]), 7,
            OffsetFetchResponse)
        return {p.partition_index: p.committed_offset for t in answer.topics for p in t.partitions}

    def leave(self) -> int:
        from kafka.protocol.consumer.group import LeaveGroupRequest, LeaveGroupResponse

        answer = self.connection.call(LeaveGroupRequest[4](group_id=self.group, members=[
            LeaveGroupRequest.MemberIdentity(member_id=self.member_id, group_instance_id=None)]), 4,
            LeaveGroupResponse)
        return answer.members[0].error_code

    def close(self) -> None:
        self.connection.close()

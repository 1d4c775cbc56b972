"""Many members committing as fast as they can, through the gateway and on tansu's own coordinator
(`bench.gateway_bench --speed` runs it; issue 36).

`groups` groups of `members` members each, simulated raw-protocol clients (not a client library: one asyncio
connection per member in this process, every request built once and only its offset and correlation id changed, so
that the load costs this process little). Each group is formed as a consumer forms it (JoinGroup with the member-id
round, SyncGroup with the leader's assignment: member i owns partition i of a topic of `members` partitions); then
every member commits its partition's next offset (OffsetCommit v8), waits for the answer, and commits again, for
`seconds`, with a Heartbeat every 3 s between its commits. Printed: commits/s of all members together, commits
refused, and the CPU seconds each process used meanwhile (`bench.parts.gateway_fast.cpu_seconds`).
"""

from __future__ import annotations

import asyncio
import struct
import time
import uuid
from dataclasses import dataclass
from typing import Any

from kafka.protocol.consumer.group import (HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse,
                                           OffsetCommitRequest, OffsetCommitResponse, SyncGroupRequest,
                                           SyncGroupResponse)

from assignors.consumer_protocol import Assignment, Subscription, encode_assignment, encode_subscription
from bench.parts.gateway_fast import cpu_between, cpu_seconds, create_topic
from bench.stream_bench import RawConnection, percentiles

HEARTBEAT_S = 3.0
SESSION_MS = 30_000
_SIZE = struct.Struct(">i")


@dataclass
class Member:
    connection: RawConnection
    group: str
    member_id: str = ""
    generation: int = -1
    partition: int = 0


async def _form(port: int, group: str, topic: str, members: int) -> list[Member]:
    """`members` members of `group`, Stable, member i owning partition i (again from the start on a refusal)."""
    for _ in range(10):
        joined = [Member(await RawConnection.open(port), group) for _ in range(members)]
        protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range",
                                                             metadata=encode_subscription(Subscription((topic,))))

        async def join(member: Member) -> Any:
            for _ in range(5):
                answer = await member.connection.send(JoinGroupRequest[5](
                    group_id=group, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=30_000,
                    member_id=member.member_id, group_instance_id=None, protocol_type="consumer",
                    protocols=[protocol]), 5, JoinGroupResponse)
                member.member_id = answer.member_id or member.member_id
                if answer.error_code == 0:
                    member.generation = answer.generation_id
                    return answer
            return answer

        answers = await asyncio.gather(*(join(m) for m in joined))
        if all(a.error_code == 0 for a in answers) and len({a.generation_id for a in answers}) == 1:
            leader = answers[0].leader
            ids = sorted(m.member_id for m in joined)
            for member in joined:
                member.partition = ids.index(member.member_id)
            assignments = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=encode_assignment(
                Assignment(((topic, (ids.index(m),)),)))) for m in ids]

            async def sync(member: Member) -> int:
                answer = await member.connection.send(SyncGroupRequest[3](
                    group_id=group, generation_id=member.generation, member_id=member.member_id,
                    group_instance_id=None, assignments=assignments if member.member_id == leader else []), 3,
                    SyncGroupResponse)
                return answer.error_code

            if not any(await asyncio.gather(*(sync(m) for m in joined))):
                return joined
        for member in joined:
            member.connection.close()
    raise RuntimeError(f"group {group} did not form")


class _Committer:
    """One member's commit loop over pre-built frames."""

    def __init__(self, member: Member, topic: str) -> None:
        self.member = member
        partition = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
        request = OffsetCommitRequest[8](
            group_id=member.group, generation_id_or_member_epoch=member.generation, member_id=member.member_id,
            group_instance_id=None, topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                partition(partition_index=member.partition, committed_offset=0x0123456789AB,
                          committed_leader_epoch=-1, committed_metadata="")])])
        request.with_header(correlation_id=0, client_id="bench-many")
        self.frame = bytearray(request.encode(header=True, framed=True))
        self.offset_at = bytes(self.frame).index(struct.pack(">q", 0x0123456789AB))
        heartbeat = HeartbeatRequest[4](group_id=member.group, generation_id=member.generation,
                                        member_id=member.member_id, group_instance_id=None)
        heartbeat.with_header(correlation_id=0, client_id="bench-many")
        self.heartbeat = bytearray(heartbeat.encode(header=True, framed=True))
        self.commits = 0
        self.times: list[float] = []
        self.refused = 0
        self.heartbeats = 0

    async def _call(self, frame: bytearray, correlation: int) -> bytes:
        struct.pack_into(">i", frame, 8, correlation)  # size, api key, version, then the correlation id
        connection = self.member.connection
        connection.writer.write(frame)
        size = _SIZE.unpack(await connection.reader.readexactly(4))[0]
        payload = await connection.reader.readexactly(size)
        if _SIZE.unpack_from(payload)[0] != correlation:
            raise RuntimeError("an answer out of order")
        return payload

    async def run(self, until: float) -> None:
        reader = self.member.connection.task  # this loop reads the answers itself
        reader.cancel()
        try:
            await reader
        except asyncio.CancelledError:
            pass
        first = await self._call(self.frame, 1)
        # The answer of one partition ends with its error code and three empty tagged-field sections.
        decoded = OffsetCommitResponse.decode(first, version=8, header=True)
        if decoded.topics[0].partitions[0].error_code != struct.unpack(">h", first[-5:-3])[0]:
            raise RuntimeError(f"an answer of another layout: {decoded}")
        correlation, next_heartbeat = 1, time.monotonic() + HEARTBEAT_S
        while time.monotonic() < until:
            correlation += 1
            if time.monotonic() >= next_heartbeat:
                answer = await self._call(self.heartbeat, correlation)
                self.heartbeats += 1
                next_heartbeat += HEARTBEAT_S
                if HeartbeatResponse.decode(answer, version=4, header=True).error_code != 0:
                    self.refused += 1
                continue
            self.commits += 1
            struct.pack_into(">q", self.frame, self.offset_at, self.commits)
            sent = time.perf_counter()
            answer = await self._call(self.frame, correlation)
            self.times.append(time.perf_counter() - sent)
            if answer[-5:-3] != b"\0\0":
                self.refused += 1


async def _run(port: int, broker: str, groups: int, members: int, seconds: float,
               processes: dict[str, int]) -> dict[str, Any]:
    topic = create_topic(broker, partitions=members)
    suffix = uuid.uuid4().hex[:6]
    started = time.monotonic()
    formed = await asyncio.gather(*(_form(port, f"bench-many-{suffix}-{g}", topic, members) for g in range(groups)))
    forming_s = time.monotonic() - started
    committers = [_Committer(m, topic) for group in formed for m in group]
    await asyncio.sleep(2)  # the views of the groups just formed
    before = cpu_seconds(processes)
    began = time.monotonic()
    await asyncio.gather(*(c.run(began + seconds) for c in committers))
    elapsed = time.monotonic() - began
    cpu = cpu_between(before, cpu_seconds(processes))
    for group in formed:
        for member in group:
            member.connection.writer.close()
    commits = sum(c.commits for c in committers)
    return {"groups": groups, "members": groups * members, "seconds": round(elapsed, 2),
            "forming_s": round(forming_s, 2), "commits": commits, "commits_per_s": round(commits / elapsed, 1),
            "commit": percentiles([t for c in committers for t in c.times]),
            "refused": sum(c.refused for c in committers), "heartbeats": sum(c.heartbeats for c in committers),
            "cpu_seconds": cpu, "cpu_cores": {name: round(s / elapsed, 2) for name, s in cpu.items()}}


def many_committers(servers: str, broker: str, groups: int = 10, members: int = 10, seconds: float = 20.0,
                    processes: dict[str, int] | None = None) -> dict[str, Any]:
    """`groups` x `members` simulated members committing as fast as they can through `servers` for `seconds`."""
    port = int(servers.rpartition(":")[2])
    return asyncio.run(_run(port, broker, groups, members, seconds, processes or {}))

"""A gateway of two processes on one address (`coordinator gateway --processes 2`, docs/gateway.md "Several
processes"), in front of the package's query: a member whose connections land on different processes keeps its
membership, a commit acknowledged by either process is read back through the other at once, and a process killed
with -9 loses no acknowledged commit (and is started again). Connections are opened until one lands on the process
wanted (`tests.support.sockets`: the kernel picks, by a hash of the addresses)."""

from __future__ import annotations

import os
import signal
import time
import uuid
from typing import Iterator

import pytest
from kafka.protocol.admin.groups import DescribeGroupsRequest, DescribeGroupsResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse

from gateway.front.process import GatewayProcess, start_gateway
from state.errors import Errors
from tests.gateway.conftest import GatewayEnv, wait_for
from tests.gateway.raw import Connection, RawMember
from tests.support.sockets import children, server_owner

pytestmark = [pytest.mark.spark, pytest.mark.broker]


@pytest.fixture(scope="module")
def two(gateway_env: GatewayEnv) -> Iterator[GatewayProcess]:
    # Two more gateway processes starting while the query runs its first batch (its Python workers starting) made
    # those workers miss Spark's connect-back timeout at load 15-20: they start once it has answered one.
    wait_for(lambda: gateway_env.run.query.lastProgress is not None or not gateway_env.run.query.isActive,
             timeout_s=180, what="the query's first batch")
    props = {k: v for k, v in gateway_env.run.props.items() if k.startswith(("topic.", "group."))}
    process = start_gateway(gateway_env.broker, props, args=["--processes", "2"],
                            log_path=gateway_env.logs / "two-processes.log")
    try:
        yield process
    finally:
        process.stop()


def workers(gateway: GatewayProcess) -> list[int]:
    return wait_for(lambda: sorted(children(gateway.process.pid)) if len(children(gateway.process.pid)) == 2
                    else None, timeout_s=60, what="two gateway processes")


def on(gateway: GatewayProcess, pid: int) -> Connection:
    """A connection to the gateway that the process `pid` serves (once it listens)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        connection = Connection(gateway.bootstrap_servers)
        # answered, so accepted: the server end is in its process's file table now
        connection.call(ApiVersionsRequest[3](client_software_name="t", client_software_version="1"), 3,
                        ApiVersionsResponse)
        if server_owner(connection.sock, [pid]) == pid:
            return connection
        connection.close()
    raise AssertionError(f"no connection landed on process {pid} within 60 s")


def describe(connection: Connection, group: str) -> tuple[str, list[str]]:
    answer = connection.call(DescribeGroupsRequest[5](groups=[group], include_authorized_operations=False), 5,
                             DescribeGroupsResponse)
    (described,) = answer.groups
    return described.group_state, [m.member_id for m in described.members]


def test_a_member_whose_connections_land_on_different_processes_keeps_its_membership(two: GatewayProcess):
    first, second = workers(two)
    member = RawMember(two.bootstrap_servers, f"two-{uuid.uuid4().hex[:8]}", session_timeout_ms=6000)
    member.connection.close()
    member.connection = on(two, first)  # joins and syncs through the first process
    other = on(two, second)
    try:
        member.join_and_sync()
        joined_through = member.connection
        # Its heartbeats and commits now through the second process, for twice its session: the coordinator must
        # hear of it from there (Liveness requests written by the second process).
        member.connection = other
        deadline = time.monotonic() + 12
        offset = 0
        while time.monotonic() < deadline:
            assert member.heartbeat() == Errors.NONE
            offset += 1
            assert member.commit({("t", 0): offset}) == {("t", 0): Errors.NONE}
            time.sleep(1)
        assert describe(joined_through, member.group) == ("Stable", [member.member_id])
        member.connection = joined_through
        assert member.heartbeat() == Errors.NONE
        assert member.committed("t", [0]) == {0: offset}
    finally:
        member.connection.close()
        other.close()


def test_a_commit_through_either_process_is_read_back_through_the_other_at_once(two: GatewayProcess):
    first, second = workers(two)
    member = RawMember(two.bootstrap_servers, f"ryw-{uuid.uuid4().hex[:8]}")
    connections = {first: on(two, first), second: on(two, second)}
    try:
        member.connection = connections[first]
        member.join_and_sync()
        for offset in range(1, 21):
            writer, reader = (first, second) if offset % 2 else (second, first)
            member.connection = connections[writer]
            assert member.commit({("t", 0): offset}) == {("t", 0): Errors.NONE}
            member.connection = connections[reader]
            assert member.committed("t", [0]) == {0: offset}
    finally:
        for connection in connections.values():
            connection.close()


def test_a_process_killed_with_9_loses_no_acknowledged_commit_and_is_started_again(two: GatewayProcess):
    first, second = workers(two)
    member = RawMember(two.bootstrap_servers, f"kill-{uuid.uuid4().hex[:8]}")
    member.connection.close()
    member.connection = on(two, second)
    survivor = on(two, first)
    try:
        member.join_and_sync()
        for offset in range(1, 11):
            assert member.commit({("t", 0): offset}) == {("t", 0): Errors.NONE}
        os.kill(second, signal.SIGKILL)
        member.connection.close()
        member.connection = survivor
        assert member.committed("t", [0]) == {0: 10}
        assert member.commit({("t", 0): 11}) == {("t", 0): Errors.NONE}
        restarted = wait_for(lambda: [p for p in workers(two) if p not in (first, second)], timeout_s=60,
                             what="the killed process started again")
        member.connection = on(two, restarted[0])
        assert member.committed("t", [0]) == {0: 11}
    finally:
        member.connection.close()
        survivor.close()

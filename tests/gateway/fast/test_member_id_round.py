"""The member-id round the gateway answers (`gateway.fast.member_id_round`) against the real query: the coordinator
keeps the member the gateway named, and a group that refuses a newcomer refuses it at its next JoinGroup."""

from __future__ import annotations

import uuid

from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse

from state.errors import Errors
from tests.gateway.raw import Connection


def join(group: str, member_id: str, protocol_type: str = "consumer") -> JoinGroupRequest:
    # A long rebalance timeout: the gateway waits it (plus 2 s) for the query, whose first batches after its start
    # take tens of seconds on a loaded machine.
    return JoinGroupRequest[5](group_id=group, session_timeout_ms=6000, rebalance_timeout_ms=100_000,
                               member_id=member_id, group_instance_id=None, protocol_type=protocol_type,
                               protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")])


def test_the_named_member_joins_and_a_refused_newcomer_meets_the_refusal_at_its_rejoin(gateway_env):
    group = f"round-{uuid.uuid4().hex[:8]}"
    first, second = Connection(gateway_env.bootstrap), Connection(gateway_env.bootstrap)
    for connection in (first, second):
        connection.sock.settimeout(120)
    try:
        named = first.call(join(group, ""), 5, JoinGroupResponse)
        assert named.error_code == Errors.MEMBER_ID_REQUIRED
        joined = first.call(join(group, named.member_id), 5, JoinGroupResponse)
        assert (joined.error_code, joined.member_id, joined.leader, joined.generation_id) == (
            Errors.NONE, named.member_id, named.member_id, 1)

        # The group's protocol type is "consumer": Kafka refuses a "connect" newcomer at its first JoinGroup; the
        # gateway has named it already, so the refusal comes at its second.
        other = second.call(join(group, "", "connect"), 5, JoinGroupResponse)
        assert other.error_code == Errors.MEMBER_ID_REQUIRED
        refused = second.call(join(group, other.member_id, "connect"), 5, JoinGroupResponse)
        assert refused.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
    finally:
        first.close()
        second.close()

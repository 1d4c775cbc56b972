"""JoinGroup's member-id round (KIP-394), answered by the gateway without waiting for the coordinator.

A dynamic member (no group instance id) whose JoinGroup (v4+) carries no member id gets MEMBER_ID_REQUIRED with a
new member id, and joins again with it. Kafka keeps the new id as a pending member, with a session timeout, and
otherwise leaves the group as it was. That answer depends on the request and the coordinator's settings, and on the
group only where the group refuses a newcomer (GROUP_MAX_SIZE_REACHED when a `group.max.size` is set,
INCONSISTENT_GROUP_PROTOCOL when its protocols do not match), so a gateway may give it at once, at the cost of an
append to the control topic instead of a micro-batch:

- `is_member_id_round` says whether a JoinGroup is such a round by these rules (the gateway asks it);
- the gateway appends the JoinGroup as a `PendingMember` request (the JoinGroup's own fields, `api` aside), waits
  for the append to be acknowledged, and answers `member_id_required(...)`, whose member id is `pending_member_id`
  of the group, the client id and the appended request's id;
- the coordinator handles the `PendingMember` request as the JoinGroup it is (`state.batch`), with that
  same id for the new member: it keeps it pending (or refuses the join exactly as it would have) and answers it
  as it answers any JoinGroup, on the response topic. The gateway has answered already; where the group refused,
  the member meets the same refusal at its next JoinGroup, one round later than with Kafka.

The id is derived, never read from the request: an appended request cannot name a member id of its choosing.
"""

from __future__ import annotations

import uuid

from schemas.messages import JoinGroupResponse
from state.config import CoordinatorConfig
from state.errors import MEMBER_ID_REQUIRED

PENDING_MEMBER = "PendingMember"
"""The internal request a gateway appends for a member-id round it answered (never sent by clients)."""
_UNLIMITED = 2_147_483_647


def is_member_id_round(version: int, group_id: str, member_id: str, group_instance_id: str | None,
                       session_timeout_ms: int, config: CoordinatorConfig) -> bool:
    """Whether a JoinGroup gets MEMBER_ID_REQUIRED from any group that accepts newcomers: dynamic, v4+, no member
    id, a valid group id and session timeout, and no `group.max.size` (a full group would refuse it instead)."""
    return (version >= 4 and member_id == "" and group_instance_id is None and group_id != ""
            and config.group_min_session_timeout_ms <= session_timeout_ms <= config.group_max_session_timeout_ms
            and config.group_max_size >= _UNLIMITED)


def pending_member_id(group_id: str, client_id: str, request_id: str) -> str:
    """Kafka's `clientId-UUID` for the member of a member-id round the gateway answered; the UUID comes from the
    group id and the `PendingMember` request's id (unique per request), so the gateway and the coordinator derive
    the same id without asking each other, and a replay derives it again."""
    name = "\x00".join((PENDING_MEMBER, group_id, request_id))
    return f"{client_id}-{uuid.uuid5(uuid.NAMESPACE_URL, name)}"


def member_id_required(group_id: str, request_id: str, member_id: str) -> JoinGroupResponse:
    """The coordinator's answer to the round, as the gateway gives it."""
    return JoinGroupResponse(request_id=request_id, group_id=group_id, error_code=MEMBER_ID_REQUIRED,
                             member_id=member_id)


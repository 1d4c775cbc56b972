"""JoinGroup's member-id round (KIP-394) answered here, at once, instead of in a micro-batch of the coordinator.

A new dynamic member's first JoinGroup only gets MEMBER_ID_REQUIRED and a member id to join again with; the group
does not change, and the answer follows from the request and the coordinator's settings by the core's rules
(`state.api.is_member_id_round`). So the gateway appends the JoinGroup to the control topic as a `PendingMember`
request, and once the broker has acknowledged it, answers MEMBER_ID_REQUIRED with the member id the core derives from
that request (`state.api.pending_member_id`). The coordinator handles the appended request as the JoinGroup it is,
with the same id: it keeps the member pending, for its session timeout, exactly as when it answers the round
itself (`state.classic.member_id_round`). The member's second JoinGroup, which joins the group, takes the coordinator's way,
after the appended request in the control topic, since it is sent only once this answer is read.

The coordinator's own answer to the appended request still comes on the response topic: it is read and compared,
and where it differs (the group refused the newcomer: INCONSISTENT_GROUP_PROTOCOL; the gateway's settings differ
from the coordinator's), the difference is counted and logged once per group and minute. The member then meets the
same refusal at its next JoinGroup, one round later than with Kafka.

A JoinGroup that is no such round, or whose append fails, takes the coordinator's way as before.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import msgspec

from gateway.upstream.control import Json
from state.api import PENDING_MEMBER, CoordinatorConfig, Errors, is_member_id_round, member_id_required, \
    pending_member_id

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 60.0
"""How long the coordinator's own answer to an appended request is waited for, to compare it with ours."""
_LOG_EVERY_S = 60.0


class MemberIdRound:
    def __init__(self, coordinator: Any, config: CoordinatorConfig) -> None:
        """`coordinator`: the gateway's `gateway.upstream.coordinator.CoordinatorClient`; `config`: the coordinator's
        settings, read from the same properties as the query's (`coordinator gateway --config/--set`)."""
        self._coordinator = coordinator
        self._config = config
        self.answered = 0
        self.mispredictions = 0
        self._logged: dict[str, float] = {}
        self._checks: set[asyncio.Task] = set()

    async def answer(self, version: int, body: Json) -> Json | None:
        """The answer to the JoinGroup whose control body is `body`, when it is a member-id round and its
        `PendingMember` request is in the control topic; None: it takes the coordinator's way."""
        if not is_member_id_round(version, body.get("group_id", ""), body.get("member_id", ""),
                                  body.get("group_instance_id"), body.get("session_timeout_ms", -1), self._config):
            return None
        group_id = body["group_id"]
        try:
            request_id, coordinator_answer = await self._coordinator.append(group_id, {**body, "api": PENDING_MEMBER})
        except Exception as exc:  # noqa: BLE001 - not appended: the coordinator answers the JoinGroup itself
            log.info("member-id round of group %s left to the coordinator: %s", group_id, exc)
            return None
        member_id = pending_member_id(group_id, body.get("client_id", ""), request_id)
        check = asyncio.get_running_loop().create_task(self._check(group_id, member_id, request_id,
                                                                    coordinator_answer))
        self._checks.add(check)
        check.add_done_callback(self._checks.discard)
        self.answered += 1
        return msgspec.to_builtins(member_id_required(group_id, request_id, member_id))

    async def _check(self, group_id: str, member_id: str, request_id: str, coordinator_answer: Any) -> None:
        """Compare the coordinator's own answer with the one given (see the module's docstring)."""
        try:
            answer = await asyncio.wait_for(coordinator_answer, CHECK_TIMEOUT_S)
        except asyncio.TimeoutError:
            return  # the coordinator is away; the member's next JoinGroup waits for it as any request does
        finally:
            self._coordinator.forget(request_id)
        if answer.get("error_code") == Errors.MEMBER_ID_REQUIRED and answer.get("member_id") == member_id:
            return
        self.mispredictions += 1
        now = time.monotonic()
        if now - self._logged.get(group_id, -_LOG_EVERY_S) >= _LOG_EVERY_S:
            self._logged[group_id] = now
            log.warning("group %s: the coordinator answered the member-id round of %s with error %s (%s), where the "
                        "gateway had answered MEMBER_ID_REQUIRED; the member meets it at its next JoinGroup",
                        group_id, member_id, answer.get("error_code"), answer.get("error_message"))

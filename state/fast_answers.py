"""Answers from a group's published view (docs/gateway.md, "Fast answers"): a gateway's, and the coordinator's check.

A gateway answers a Heartbeat or an OffsetCommit itself only where the view decides positively, with the rules of
`state.rules` (`heartbeat_from_view`, `commit_from_view`); everything else waits for the coordinator.

The coordinator stays the only authority: every fast-answered request still reaches it, in the control topic's
order, and it decides as always. Its own answer is not sent (the client has one already); where it differs from
the one given, that is a misprediction (`FastAnswer.mispredicted`), which the shell counts and logs. What it
stores (offsets, sessions) is what it decided, never what the gateway answered.

- An OffsetCommit a gateway answered carries that answer (`answered`): `settle_commit`.
- Heartbeats a gateway answered reach the coordinator coalesced, as one internal `Liveness` request per group and
  interval naming each member heard, when and with which answer: `handle_liveness` takes each as that member's
  Heartbeat (the same rule, the session restarted from when it was heard).
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from schemas.messages import (CommitAnswer, HeartbeatRequest, Liveness, OffsetCommitRequest, OffsetCommitResponse,
                              OffsetCommitResponsePartition, OffsetCommitResponseTopic, PartitionError)
from state import rules
from state.context import Context
from state.errors import NONE
from state.membership import heartbeat
from state.views import PublishedGroup
from state.wire import BadRequest, simple_response

LIVENESS = "Liveness"


@dataclass(frozen=True, slots=True)
class FastAnswer:
    """A request a gateway answered from a view, checked by the coordinator: what the gateway answered and what
    the coordinator decided (error codes; for a commit, the request's)."""

    api: str
    member_id: str
    answered: int
    decided: int
    detail: str = ""

    @property
    def mispredicted(self) -> bool:
        return self.answered != self.decided or bool(self.detail)


def heartbeat_from_view(view: PublishedGroup | None, req: HeartbeatRequest) -> int | None:
    """The answer to a Heartbeat where the view decides it positively (a member of the view with the view's
    generation: NONE, REBALANCE_IN_PROGRESS while preparing a rebalance); None: ask the coordinator."""
    error = rules.heartbeat_error(view, req)
    return error if view is not None and rules.restarts_session(error) else None


def commit_from_view(view: PublishedGroup | None, req: OffsetCommitRequest,
                     max_metadata_bytes: int) -> CommitAnswer | None:
    """The answer to an OffsetCommit where the view accepts it (a member of the view with the view's generation in
    Stable or PreparingRebalance, or a commit without generation to an Empty group), with the per-partition errors
    that do not depend on the group; None: ask the coordinator."""
    if view is None or rules.commit_error(view, req) != NONE:
        return None
    return CommitAnswer(NONE, tuple(
        PartitionError(t.name, p.partition_index, code) for t in req.topics for p in t.partitions
        if (code := rules.partition_error(p.committed_metadata, max_metadata_bytes)) != NONE))


def commit_response(req: OffsetCommitRequest, answer: CommitAnswer) -> OffsetCommitResponse:
    """The response `answer` stands for, as the coordinator would have sent it."""
    errors = {(e.topic, e.partition): e.error_code for e in answer.partition_errors}
    return simple_response(req, answer.error_code, topics=tuple(  # type: ignore[return-value]
        OffsetCommitResponseTopic(t.name, tuple(OffsetCommitResponsePartition(
            p.partition_index, errors.get((t.name, p.partition_index), answer.error_code)) for p in t.partitions))
        for t in req.topics))


def commit_answer(response: OffsetCommitResponse) -> CommitAnswer:
    """An OffsetCommit response as `CommitAnswer`: its error and the partitions with another one."""
    return CommitAnswer(response.error_code, tuple(
        PartitionError(t.name, p.partition_index, p.error_code)
        for t in response.topics for p in t.partitions if p.error_code != response.error_code))


def settle_commit(ctx: Context, req: OffsetCommitRequest, response: OffsetCommitResponse) -> None:
    """Send the coordinator's answer, unless a gateway answered already: then compare."""
    if req.answered is None:
        return ctx.respond(response)
    decided = commit_answer(response)
    detail = "" if decided.partition_errors == req.answered.partition_errors else \
        f"partitions answered {_errors(req.answered)}, decided {_errors(decided)}"
    ctx.fast_answers.append(FastAnswer("OffsetCommit", req.member_id, req.answered.error_code, decided.error_code,
                                       detail))


def _errors(answer: CommitAnswer) -> str:
    return ", ".join(f"{e.topic}-{e.partition}: {e.error_code}" for e in answer.partition_errors) or "none"


def handle_liveness(ctx: Context, body: dict) -> list[str]:
    """Each member heard, as its Heartbeat at the time it was heard (never later than now). Nothing in it is a dead
    letter of its own (the list `state.batch` takes from internal requests)."""
    try:
        liveness = msgspec.convert(body, Liveness)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"Liveness: {exc}") from None
    for heard in liveness.members:
        req = HeartbeatRequest(request_id=liveness.request_id, api_version=4, principal=heard.principal,
                               group_id=liveness.group_id, generation_id=heard.generation_id,
                               member_id=heard.member_id, group_instance_id=heard.group_instance_id)
        decided = heartbeat(ctx, req, min(heard.heard_ms, ctx.now_ms))
        ctx.fast_answers.append(FastAnswer("Heartbeat", heard.member_id, heard.answered, decided))
    return []

"""Answers from a group's published view (docs/gateway.md, "Fast answers"): a gateway's, and the coordinator's check.

A gateway answers a Heartbeat or an OffsetCommit itself only where the view decides positively, with the rules of
`state.rules` (`heartbeat_from_view`, `commit_from_view`); everything else waits for the coordinator.

The coordinator stays the only authority: every fast-answered request still reaches it, in the control topic's
order, and it decides as always. Its own answer is not sent (the client has one already); where it differs from
the one given, that is a misprediction (`FastAnswer.mispredicted`), which the shell counts and logs. What it
stores (offsets, sessions) is what it decided, never what the gateway answered.

- An OffsetCommit or a TxnOffsetCommit a gateway answered carries that answer (`answered`): `settle_commit`.
- Heartbeats a gateway answered reach the coordinator coalesced, as one internal `Liveness` request per group and
  interval naming each member heard, when and with which answer: `liveness` takes each as that member's
  Heartbeat (the same rule, the session restarted from when it was heard).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from msgspec import structs

from schemas.consumer_group import (ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
                                    ConsumerViewCommitter)
from schemas.messages import (CommitAnswer, HeardMember, HeartbeatRequest, Liveness, OffsetCommitRequest,
                              OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
                              PartitionError, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
                              TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic)
from state import rules
from state.consumer import handlers as consumer
from state.classic.group import ClassicGroup
from state.consumer.group import ConsumerGroup
from state.consumer.offsets import commit_member
from state.records import HeartbeatOwed
from state.consumer import replay as consumer_replay
from state.handling.step import NOTHING, CoordinatorResult, Env, answer
from state.handling.timers import consumer_session_timeout_key
from state.share.heartbeat import share_session_timeout_key
from state.errors import NONE, CoordinatorError
from state.classic.handlers import heartbeat
from state.views.published import PublishedConsumerGroup, PublishedGroup, PublishedShareGroup, PublishedView
from schemas.share_group import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
from state.share import handlers as share
from state.share import replay as share_replay
from state.share.group import ShareGroup
from state.wire import simple_response

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


def heartbeat_from_view(view: PublishedView | None, req: HeartbeatRequest) -> int | None:
    """The answer to a Heartbeat where the view decides it positively (a member of the view with the view's
    generation: NONE, REBALANCE_IN_PROGRESS while preparing a rebalance); None: ask the coordinator (a consumer
    group's view never decides a classic request)."""
    if not isinstance(view, PublishedGroup):
        return None
    error = rules.heartbeat_error(view, req)
    return error if rules.restarts_session(error) else None


def consumer_heartbeat_from_view(view: PublishedView | None,
                                 req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse | None:
    """The answer to a ConsumerGroupHeartbeat that changes nothing, where the view decides it: a member of the view
    (reconciled to the group's target) at its epoch, declaring nothing new (every field null or -1, as a regular
    heartbeat of librdkafka's is) but perhaps the partitions it owns, of the principal the member is bound to; it is
    answered with its epoch, the interval and no assignment. None: ask the coordinator (another principal's member,
    a join, a leave, a change of subscription, a member it must tell something).

    The owned partitions change nothing for such a member: the coordinator reads them only from a member behind its
    epoch (`_throw_if_member_epoch_is_invalid`) or one that must revoke partitions (a member not reconciled, so not
    in the view), and answers an assignment only to a full request (a rebalance timeout and a subscription with
    them) or when the member's partitions change. So librdkafka's acknowledgement of a new assignment, sent at once
    after the heartbeat that gave it, is answered here: forwarded, it waited for a micro-batch, and held back the
    member's commits behind it on the coordinator connection (docs/gateway.md, "Every client's speed")."""
    if not isinstance(view, PublishedConsumerGroup):
        return None
    member = view.members.get(req.member_id)
    if (member is None or not rules.acts_for(member, req.principal)
            or req.member_epoch != member.member_epoch or req.member_epoch != view.group_epoch
            or (req.instance_id is not None and req.instance_id != member.instance_id)
            or not declares_nothing_new(structs.replace(req, topic_partitions=None))):
        return None
    return ConsumerGroupHeartbeatResponse(request_id=req.request_id, group_id=req.group_id, error_code=NONE,
                                          member_id=req.member_id, member_epoch=req.member_epoch,
                                          heartbeat_interval_ms=view.heartbeat_interval_ms)


def share_heartbeat_from_view(view: PublishedView | None,
                              req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse | None:
    """The answer to a ShareGroupHeartbeat that changes nothing, where a share group's view decides it: a member
    of the view at the group epoch, of the principal it is bound to, declaring nothing (no rack, no subscription:
    librdkafka's regular share heartbeat); answered with its epoch and the interval, no assignment. None: ask the
    coordinator."""
    if not isinstance(view, PublishedShareGroup):
        return None
    member = view.members.get(req.member_id)
    if (member is None or not rules.acts_for(member, req.principal) or req.member_epoch <= 0
            or req.member_epoch != member.member_epoch or req.member_epoch != view.group_epoch
            or req.rack_id is not None or req.subscribed_topic_names is not None):
        return None
    return ShareGroupHeartbeatResponse(request_id=req.request_id, group_id=req.group_id, error_code=NONE,
                                       member_id=req.member_id, member_epoch=req.member_epoch,
                                       heartbeat_interval_ms=view.heartbeat_interval_ms)


def declares_nothing_new(req: ConsumerGroupHeartbeatRequest) -> bool:
    """A member's regular heartbeat, as librdkafka sends it between changes: at an epoch (no join, no leave), every
    other field null or -1 (no subscription, assignor, rack, rebalance timeout or owned partitions). Only the
    coordinator's state can make its answer other than "nothing changed"."""
    return (req.member_epoch > 0 and req.rack_id is None and req.rebalance_timeout_ms == -1
            and req.subscribed_topic_names is None and req.subscribed_topic_regex is None
            and req.server_assignor is None and req.topic_partitions is None)


def commit_from_view(view: PublishedView | None, req: OffsetCommitRequest,
                     max_metadata_bytes: int) -> CommitAnswer | None:
    """The answer to an OffsetCommit where the view accepts it, with the per-partition errors that do not depend on
    the group; None: ask the coordinator. A classic group's: a member of the view with the view's generation in
    Stable or PreparingRebalance, or a commit without generation to an Empty group. A consumer group's: a commit
    the consumer group's rule accepts for every partition (`state.consumer.offsets.commit_member`: its member at
    its epoch, with v9+ for a member of the consumer protocol, or without member to a group without members); a
    member one epoch behind, whose partitions are checked one by one (KIP-1251), is left to the coordinator."""
    if isinstance(view, PublishedGroup):
        if rules.commit_error(view, req) != NONE:
            return None
    elif view is None or view.committers is None or not commits_whole(
            view.committers, req, req.generation_id_or_member_epoch):  # type: ignore[arg-type]
        return None
    return accepted(req, max_metadata_bytes)


def commits_whole(committers: Mapping[str, ConsumerViewCommitter], req: OffsetCommitRequest | TxnOffsetCommitRequest,
                  member_epoch: int, transactional: bool = False) -> bool:
    """Whether a consumer group's commit rule (`commit_member`) accepts the commit for every partition."""
    try:
        return commit_member(committers, req.group_id, member_id=req.member_id, instance_id=req.group_instance_id,
                             member_epoch=member_epoch, api_version=req.version, transactional=transactional,
                             principal=req.principal) is None
    except CoordinatorError:
        return False


def accepted(req: OffsetCommitRequest | TxnOffsetCommitRequest, max_metadata_bytes: int) -> CommitAnswer:
    """The answer to a commit whose member is accepted: the per-partition errors that do not depend on the group."""
    return CommitAnswer(NONE, tuple(
        PartitionError(t.name, p.partition_index, code) for t in req.topics for p in t.partitions
        if (code := rules.partition_error(p.committed_metadata, max_metadata_bytes)) != NONE))


_COMMIT_SHAPES = {"OffsetCommit": (OffsetCommitResponseTopic, OffsetCommitResponsePartition),
                  "TxnOffsetCommit": (TxnOffsetCommitResponseTopic, TxnOffsetCommitResponsePartition)}


def commit_response(req: OffsetCommitRequest | TxnOffsetCommitRequest,
                    answer: CommitAnswer) -> OffsetCommitResponse | TxnOffsetCommitResponse:
    """The response `answer` stands for, as the coordinator would have sent it (an OffsetCommit's or a
    TxnOffsetCommit's: the same shape)."""
    topic_of, partition_of = _COMMIT_SHAPES[req.api]
    errors = {(e.topic, e.partition): e.error_code for e in answer.partition_errors}
    return simple_response(req, answer.error_code, topics=tuple(  # type: ignore[return-value]
        topic_of(t.name, tuple(partition_of(
            p.partition_index, errors.get((t.name, p.partition_index), answer.error_code)) for p in t.partitions))
        for t in req.topics))


def commit_answer(response: OffsetCommitResponse | TxnOffsetCommitResponse) -> CommitAnswer:
    """An OffsetCommit or TxnOffsetCommit response as `CommitAnswer`: its error and the partitions with another
    one."""
    return CommitAnswer(response.error_code, tuple(
        PartitionError(t.name, p.partition_index, p.error_code)
        for t in response.topics for p in t.partitions if p.error_code != response.error_code))


def settle_commit(req: OffsetCommitRequest | TxnOffsetCommitRequest,
                  response: OffsetCommitResponse | TxnOffsetCommitResponse) -> CoordinatorResult:
    """The coordinator's answer, unless a gateway answered already: then the comparison of the two. An answered
    TxnOffsetCommit's decision is sent all the same: the gateway holds the transaction's EndTxn(COMMIT) until it has
    it, so that a transaction whose offsets the coordinator refused (the view was stale) is aborted, never committed
    without them (`gateway.fast.fast_path`, "TxnOffsetCommit")."""
    if req.answered is None:
        return answer(response)
    decided = commit_answer(response)
    detail = "" if decided.partition_errors == req.answered.partition_errors else \
        f"partitions answered {_errors(req.answered)}, decided {_errors(decided)}"
    sent = [response] if isinstance(req, TxnOffsetCommitRequest) else []
    return CoordinatorResult(responses=sent, fast_answers=[FastAnswer(req.api, req.member_id,
                                                                      req.answered.error_code, decided.error_code,
                                                                      detail)])


def _errors(given: CommitAnswer) -> str:
    return ", ".join(f"{e.topic}-{e.partition}: {e.error_code}" for e in given.partition_errors) or "none"


def liveness(group: ClassicGroup | ConsumerGroup | ShareGroup | None, request: Liveness,
             env: Env) -> CoordinatorResult:
    """Each member heard, as its Heartbeat at the time it was heard (never later than now), in the one handler shape
    (`state.handling.step`): its session restarted from then where the coordinator accepts it, no answer sent (the
    gateway answered), and what the gateway answered beside what the coordinator decided (`FastAnswer`)."""
    done = NOTHING
    for heard in request.members:
        heard_ms = min(heard.heard_ms, env.now_ms)
        if isinstance(group, ShareGroup):
            checked = _share_liveness(group, request, heard, env, heard_ms)
        elif isinstance(group, ConsumerGroup) and not _classic_member(group, heard.member_id):
            checked = _consumer_liveness(group, request, heard, env, heard_ms)
        else:
            req = HeartbeatRequest(request_id=request.request_id, api_version=4, principal=heard.principal,
                                   group_id=request.group_id, generation_id=heard.generation_id,
                                   member_id=heard.member_id, group_instance_id=heard.group_instance_id)
            # a classic member's heartbeat heard before its group became a consumer group is served inside it
            if isinstance(group, ConsumerGroup):
                kept, decided = consumer.classic_heard(group, req, env, heard_ms)
            else:
                result = heartbeat(group, req, env, heard_ms)  # its answer was the gateway's: not sent
                kept = CoordinatorResult(result.records, [], result.timers)
                decided = result.response.error_code  # type: ignore[union-attr]
            checked = kept + CoordinatorResult(fast_answers=[FastAnswer("Heartbeat", heard.member_id,
                                                                        heard.answered, decided)])
        compose = share_replay.then if isinstance(group, ShareGroup) else consumer_replay.then  # its kind's replay
        group, done = compose(group, done, checked)
    return done


def _classic_member(group: ConsumerGroup, member_id: str) -> bool:
    member = group.members.get(member_id)
    return member is not None and member.uses_classic_protocol


def _consumer_liveness(group: ConsumerGroup, liveness: Liveness, heard: HeardMember, env: Env,
                       heard_ms: int) -> CoordinatorResult:
    """A consumer group's heartbeat a gateway answered "nothing changed" (`consumer_heartbeat_from_view`; its
    member epoch is `generation_id`), checked by the coordinator (`state.consumer.handlers.heard`). It carries
    the member's client id and host as the group has them: a Liveness request names neither, and a heartbeat with
    others would change the member (Kafka takes them from each heartbeat's header and socket, which do not change
    while the member heartbeats on one connection), so every heartbeat answered from the view was found
    mispredicted and sent the member's next one to the coordinator."""
    req = ConsumerGroupHeartbeatRequest(request_id=liveness.request_id, principal=heard.principal,
                                        group_id=liveness.group_id, member_id=heard.member_id,
                                        member_epoch=heard.generation_id, instance_id=heard.group_instance_id,
                                        **_client(group, heard))
    kept, decided = _checked(group, req.member_id, req.member_epoch, consumer.heard(group, req, env, heard_ms),
                             consumer_session_timeout_key(req.member_id))
    return kept + CoordinatorResult(fast_answers=[FastAnswer(
        "Heartbeat", heard.member_id, heard.answered, NONE if decided is None else decided,
        "a consumer group's heartbeat the coordinator would have answered otherwise" if decided is None else "")])


def _client(group: ConsumerGroup | ShareGroup, heard: HeardMember) -> dict[str, str | None]:
    """The heard member's client id and host as the group has them (`_consumer_liveness`)."""
    member = group.members.get(heard.member_id)
    return {} if member is None else {"client_id": member.client_id, "client_host": member.client_host}


def _share_liveness(group: ShareGroup, liveness: Liveness, heard: HeardMember, env: Env,
                    heard_ms: int) -> CoordinatorResult:
    """A share group's heartbeat a gateway answered from its view (`share_heartbeat_from_view`; its member epoch
    is `generation_id`), checked as a consumer group's (`state.share.handlers.heard`), with the member's client
    id and host as the group has them (`_consumer_liveness`)."""
    req = ShareGroupHeartbeatRequest(request_id=liveness.request_id, principal=heard.principal,
                                     group_id=liveness.group_id, member_id=heard.member_id,
                                     member_epoch=heard.generation_id, **_client(group, heard))
    kept, decided = _checked(group, req.member_id, req.member_epoch, share.heard(group, req, env, heard_ms),
                             share_session_timeout_key(req.member_id))
    return kept + CoordinatorResult(fast_answers=[FastAnswer(
        "Heartbeat", heard.member_id, heard.answered, NONE if decided is None else decided,
        "a share group's heartbeat the coordinator would have answered otherwise" if decided is None else "")])


def _checked(group: ConsumerGroup | ShareGroup, member_id: str, member_epoch: int, result: CoordinatorResult,
             session: str) -> tuple[CoordinatorResult, int | None]:
    """What the coordinator keeps of a consumer or share group's heartbeat a gateway answered "nothing changed"
    (`result`: the heartbeat as the coordinator decides it, as of when it was heard). Applied only when it changes
    nothing, as answered: no record, no error, no assignment, the same epoch; then its timers (the member's session
    restarts from when it was heard), and no response (the member has its answer). Otherwise, where the
    coordinator would have answered it without an error, the member was alive and its session (`session`, its
    timer's key) restarts all the same, but nothing else of it is applied, since the member never got what the
    coordinator would tell it: the member owes a heartbeat (`HeartbeatOwed`), which takes it out of the view, so
    that its next heartbeat reaches the coordinator and gets the answer. Returns what is kept and the error decided,
    None where the coordinator would have answered otherwise with no error."""
    response = result.response
    error = response.error_code  # type: ignore[union-attr]
    unchanged = (error == NONE and not result.records and response.assignment is None  # type: ignore[union-attr]
                 and response.member_epoch == member_epoch)  # type: ignore[union-attr]
    kept = CoordinatorResult([], [], [op for op in result.timers
                                      if unchanged or (error == NONE and op.key == session)])
    if unchanged:
        return kept, NONE
    if member_id in group.members and member_id not in group.heartbeat_owed:
        kept = kept + CoordinatorResult([HeartbeatOwed(member_id, True)])
    return kept, error or None

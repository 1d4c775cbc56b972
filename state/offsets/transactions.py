"""Transactional offset commits (KIP-98, KIP-447), after Kafka's OffsetMetadataManager: TxnOffsetCommit writes the
offsets as pending, by producer id; the transaction's end marker commits them (COMMIT) or drops them (ABORT).

Both have the one handler shape (`state.handling.step`): records, replayed (`state.runtime.replay`), are the only
change. A pending offset is a record under its own key (`schemas.messages.TxnOffsetCommitKey`); the marker writes
the committed offset record of each (COMMIT) and each one's tombstone, so a rebuild from the records topic comes
back with the same committed and pending offsets.

The outcome is the upstream's: a gateway writes the TxnOffsetCommit into the producer's own transaction, on the
group's control-topic partition, so the transaction coordinator's COMMIT or ABORT marker lands in that partition
after it, and the job's source turns the marker into a `TransactionMarker` for each group with a TxnOffsetCommit of
that producer before it (docs/gateway.md, "Transactions").
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

import msgspec

from schemas.messages import (
    CommitAnswer,
    OpenTransaction,
    OpenTransactions,
    TransactionMarker,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from state import rules
from state.classic.group import ClassicGroup, GroupState
from state.classic.handlers import create_group
from state.consumer.group import ConsumerGroup
from state.consumer.offsets import validate_offset_commit
from state.errors import COORDINATOR_NOT_AVAILABLE, ILLEGAL_GENERATION, NONE, CoordinatorError, Errors
from state.offset_values import OffsetValue
from state.records import offset_record, pending_offset_record, pending_offset_tombstone
from state.consumer.replay import then
from state.handling.step import NOTHING, CoordinatorResult, Env
from state.views import fast_answers
from state.views.published import PublishedConsumerGroup, PublishedGroup, PublishedView
from state.wire import encode, simple_response


def txn_offset_commit(group: ClassicGroup | ConsumerGroup | None, req: TxnOffsetCommitRequest,
                      env: Env) -> CoordinatorResult:
    """Kafka's commitTransactionalOffset: the member checks of an OffsetCommit, transactional
    (`_commit_error`), then a pending offset record per partition (metadata too long: OFFSET_METADATA_TOO_LARGE
    for that partition). A commit without a generation to no group creates the "simple" group that holds the
    offsets; the member's session is not restarted (Kafka's TxnOffsetCommit does not)."""
    error = _commit_error(group, req, env)
    done = NOTHING
    if error == NONE and group is None:
        group, done = then(group, done, create_group(req.group_id, env))
    max_metadata = env.config.offset_metadata_max_bytes
    written = []
    topics = []
    for topic in req.topics:
        partitions = []
        for p in topic.partitions:
            metadata = p.committed_metadata or ""
            code = error if error != NONE else rules.partition_error(metadata, max_metadata)
            if code == NONE:
                written.append(pending_offset_record(req.group_id, req.producer_id, topic.name, p.partition_index,
                                                     OffsetValue(p.committed_offset, p.committed_leader_epoch,
                                                                 metadata, env.now_ms, None)))
            partitions.append(TxnOffsetCommitResponsePartition(p.partition_index, code))
        topics.append(TxnOffsetCommitResponseTopic(topic.name, tuple(partitions)))
    settled = fast_answers.settle_commit(req, simple_response(req, error, topics=tuple(topics)))
    return done + CoordinatorResult(written, settled.responses, fast_answers=settled.fast_answers)


def txn_commit_from_view(view: PublishedView | None, req: TxnOffsetCommitRequest,
                         max_metadata_bytes: int) -> CommitAnswer | None:
    """The answer to a TxnOffsetCommit where the group's view accepts it, with the per-partition errors that do not
    depend on the group (as `state.views.fast_answers.commit_from_view` for an OffsetCommit); None: ask the
    coordinator. The member checks are the coordinator's own (`_commit_error`), read on the view: a classic group's
    member at the view's generation (or a commit without member to an Empty group, or without member fields at
    all); a consumer group's member at its epoch (`commit_member`), or a commit without member. A member one epoch
    behind, whose partitions are checked one by one, and a group the view does not know, are left to the
    coordinator."""
    if isinstance(view, PublishedGroup):
        if classic_commit_error(view, req) != NONE:  # type: ignore[arg-type]
            return None
    elif not (isinstance(view, PublishedConsumerGroup) and view.committers is not None
              and fast_answers.commits_whole(view.committers, req, req.generation_id, transactional=True)):
        return None
    return fast_answers.accepted(req, max_metadata_bytes)


def _commit_error(group: ClassicGroup | ConsumerGroup | None, req: TxnOffsetCommitRequest, env: Env) -> int:
    """Kafka's validateTransactionalOffsetCommit: a missing group is created for a commit without generation,
    else ILLEGAL_GENERATION; then the group's own check with isTransactional (a consumer group's stale member
    epoch, of the request or of a partition, is ILLEGAL_GENERATION)."""
    if group is None:
        return NONE if req.generation_id < 0 else ILLEGAL_GENERATION
    if isinstance(group, ConsumerGroup):
        try:
            check = validate_offset_commit(group, member_id=req.member_id, instance_id=req.group_instance_id,
                                           member_epoch=req.generation_id, api_version=req.version,
                                           transactional=True, principal=req.principal)
        except CoordinatorError as exc:
            return ILLEGAL_GENERATION if exc.code == Errors.STALE_MEMBER_EPOCH else exc.code
        by_name = env.image.by_name
        for topic in req.topics:
            found = by_name.get(topic.name)
            for p in topic.partitions:
                if check(found.topic_id if found is not None else "", p.partition_index) != NONE:
                    return ILLEGAL_GENERATION
        return NONE
    return classic_commit_error(group, req)


def classic_commit_error(group: ClassicGroup, req: TxnOffsetCommitRequest) -> int:
    """A classic group's validateOffsetCommit for a transactional commit: without generation, to an Empty group,
    accepted; with a generation, a member id or an instance id, the member and its generation must be current;
    with none of them (TxnOffsetCommit v0-2 sends none), accepted whatever the state, as is a commit while the
    group is CompletingRebalance (unlike OffsetCommit)."""
    if group.state == GroupState.DEAD:
        return COORDINATOR_NOT_AVAILABLE
    if req.generation_id < 0 and group.state == GroupState.EMPTY:
        return NONE
    if req.generation_id >= 0 or req.member_id != "" or req.group_instance_id is not None:
        try:
            rules.validate_member(group, req.member_id, req.group_instance_id, req.principal)
        except CoordinatorError as exc:
            return exc.code
        if req.generation_id != group.generation:
            return ILLEGAL_GENERATION
    return NONE


def transaction_marker(group: ClassicGroup | ConsumerGroup | None, marker: TransactionMarker,
                       env: Env) -> CoordinatorResult:
    """Kafka's replayEndTransactionMarker, as records: on COMMIT, each pending offset of the producer becomes the
    committed offset of its partition, unless a plain commit of that partition came after it; on either outcome
    the pending offsets go. A producer with nothing pending in the group (its transaction committed no offsets
    here, or the marker was seen already): nothing."""
    if group is None:
        return NOTHING
    records = []
    for (topic, partition), pending in group.offsets.pending_of(marker.producer_id):
        if marker.committed and not pending.superseded:
            records.append(offset_record(group.group_id, topic, partition, pending.value))
        records.append(pending_offset_tombstone(group.group_id, marker.producer_id, topic, partition))
    return CoordinatorResult(records)


def pending_tombstones(group: ClassicGroup | ConsumerGroup, keep: Callable[[str, int], bool] | None = None) -> list:
    """The tombstones of the group's pending offsets (of the partitions `keep` says no to, when given): a deleted
    offset or group takes its pending ones along (Kafka's tombstone removes both)."""
    return [pending_offset_tombstone(group.group_id, pid, topic, partition)
            for pid, topic, partition in sorted(group.offsets.pending)
            if keep is None or not keep(topic, partition)]




# -- which groups a marker is for (the job's state buckets) ---------------------------------------------------------

TRANSACTIONS_GROUP = "\x00transactions"
"""The reserved group id under which a state bucket keeps its open transactions (`deliver_markers`); the source
sends every transaction marker of the control topic to every bucket under it."""
OPEN_TRANSACTIONS_KEY = b"\xfftransactions/"
"""The views topic's key (then the bucket's number) of a bucket's open transactions (`open_transactions`): not
UTF-8, so never a group id."""
TRANSACTION_MAX_TIMEOUT_MS = 900_000
"""A transaction's timeout where its TxnOffsetCommit does not say it (the gateway that wrote it did not forward the
producer's InitProducerId): Kafka's `transaction.max.timeout.ms`, the longest a producer may ask for."""


class _TxnPeek(msgspec.Struct):
    """What the bucket reads of a request to keep its open transactions: a TxnOffsetCommit's producer."""

    api: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    transactional_id: str = ""
    transaction_timeout_ms: int | None = None


_PEEK = msgspec.json.Decoder(_TxnPeek)


def marker_request(group_id: str, producer_id: int, producer_epoch: int, committed: bool) -> bytes:
    """The `TransactionMarker` request of a marker, for one group."""
    return encode(TransactionMarker(group_id=group_id, producer_id=producer_id, producer_epoch=producer_epoch,
                                    committed=committed))


def deliver_markers(index: bytes | None, requests: Iterable[tuple[str, int, int, int, bytes | None]],
                    markers: Iterable[tuple[int, int, bytes | None]]) -> tuple[bytes | None, list[tuple]]:
    """Which groups of a bucket each transaction marker is for: those with a TxnOffsetCommit of its producer in the
    same control-topic partition before it and after that producer's previous marker there, in this call or an
    earlier one (`index`, the bucket's open transactions: partition -> producer id -> the groups, and the
    transaction's id, epoch, first TxnOffsetCommit's timestamp and timeout, as stored; an index of an older
    release holds the groups only).

    `requests`: the call's group requests as (group id, partition, offset, timestamp, value); `markers`: the
    markers read in the control topic as (partition, offset, value: a TransactionMarker for TRANSACTIONS_GROUP).
    Returns the index to store (None: none open) and the requests to add, (group id, partition, offset, value),
    each to be handled at its marker's place among the group's requests."""
    open_txns: dict[str, dict[str, Any]] = json.loads(index) if index else {}
    events = []
    for group_id, partition, offset, timestamp, value in requests:
        if value is not None and b'"TxnOffsetCommit"' in value:
            try:
                peek = _PEEK.decode(value)
            except msgspec.DecodeError:
                continue
            if peek.api == "TxnOffsetCommit" and peek.producer_id >= 0:
                events.append((partition, offset, 0, group_id, (peek, timestamp)))
    for partition, offset, value in markers:
        try:
            marker = msgspec.json.decode(value or b"", type=TransactionMarker)
        except msgspec.DecodeError:
            continue
        events.append((partition, offset, 1, "", marker))
    added = []
    for partition, offset, kind, group_id, what in sorted(events, key=lambda e: e[:3]):
        by_producer = open_txns.setdefault(str(partition), {})
        if kind == 0:
            peek, timestamp = what
            held = by_producer.get(str(peek.producer_id))
            if not isinstance(held, dict):  # none open, or an older release's (the groups only)
                held = by_producer[str(peek.producer_id)] = {
                    "groups": held or [], "transactional_id": peek.transactional_id, "epoch": peek.producer_epoch,
                    "since_ms": timestamp, "timeout_ms": peek.transaction_timeout_ms or TRANSACTION_MAX_TIMEOUT_MS}
            if group_id not in held["groups"]:
                held["groups"].append(group_id)
            continue
        held = by_producer.pop(str(what.producer_id), None)
        groups = held["groups"] if isinstance(held, dict) else held or []
        for target in sorted(groups):
            added.append((target, partition, offset,
                          marker_request(target, what.producer_id, what.producer_epoch, what.committed)))
        if not by_producer:
            del open_txns[str(partition)]
    if not open_txns:
        return None, added
    return json.dumps(open_txns, sort_keys=True, separators=(",", ":")).encode(), added


def open_transactions(index: bytes | None) -> bytes:
    """What a bucket publishes of its open transactions (`deliver_markers`' index) on the views topic, under
    OPEN_TRANSACTIONS_KEY and its number: each transaction with TxnOffsetCommits waiting for its marker, and when
    its timeout has passed (its first TxnOffsetCommit's timestamp plus the producer's transaction timeout). A
    gateway has the upstream abort one still open well past that (`gateway.upstream.transactions.TimedOut`), as
    Kafka's transaction coordinator aborts a transaction at its timeout (tansu never does)."""
    found: dict[tuple[str, int, int], int] = {}
    for by_producer in (json.loads(index) if index else {}).values():
        for producer_id, held in by_producer.items():
            if isinstance(held, dict) and held.get("transactional_id"):
                key = (held["transactional_id"], int(producer_id), held["epoch"])
                deadline = held["since_ms"] + held["timeout_ms"]
                found[key] = min(deadline, found.get(key, deadline))
    return encode(OpenTransactions(transactions=tuple(
        OpenTransaction(transactional_id=t, producer_id=p, producer_epoch=e, deadline_ms=d)
        for (t, p, e), d in sorted(found.items()))))


_OPEN = msgspec.json.Decoder(OpenTransactions)


def decode_open_transactions(value: bytes) -> tuple[OpenTransaction, ...]:
    """A bucket's open transactions as `open_transactions` published them."""
    return _OPEN.decode(value).transactions


__all__ = ["OPEN_TRANSACTIONS_KEY", "OpenTransaction", "TRANSACTIONS_GROUP", "TRANSACTION_MAX_TIMEOUT_MS", "decode_open_transactions",
           "deliver_markers",
           "marker_request", "open_transactions", "pending_tombstones", "transaction_marker", "txn_commit_from_view",
           "txn_offset_commit"]

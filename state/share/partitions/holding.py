"""The query's side of the share-partitions (docs/share-groups.md): the grants it makes to gateways, the leases it
keeps, and the holders' updates it replays into the durable state.

`share_grant(group, request, env)` answers a gateway's take, renew or release of share-partitions of the group with
the grant rules (`state.share.partitions.grant`); a take's answer carries the durable state the holder starts from. A lease is
a timer of the group (`share_lease_key`); when it fires the share-partition is FREE at the next epoch.
`share_update(group, request, env)` applies a holder's `ShareUpdate` with `state.share.partitions.partition.apply_update`,
after checking its grant epoch (`state.share.partitions.grant.accepts_update`) and its state epoch; it answers nothing (the
holder answered its client before it appended) and returns why each refused share-partition was refused. Each
change of a share-partition writes its snapshot (version 100); the shell keeps the last of a key per step.
Leases use the step's time (`Env.batch_ms`), never a request's arrival time: no gateway's clock is compared with
the driver's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from schemas.share_group import (
    ShareGrantAnswer,
    ShareGrantRequest,
    ShareGrantResponse,
    ShareUpdateRequest,
)
from state.handling.step import CoordinatorResult
from state.errors import Errors
from state.records import Record
from state.share.partitions import grant as grants
from state.share import records
from state.share.group import ShareGroup, SharePartitionKey, ShareSnapshot
from state.share.heartbeat import Env
from state.share.view import holder_config
from state.share.partitions.partition import UNRESOLVED, PersistedState, RecordState, StateBatch, UpdateRefused, apply_update
from state.handling.timers import Cancel, Schedule, TimerOperation

SHARE_LEASE_PREFIX = "share-lease:"
"""+ topic id:partition: a share-partition's lease; it is freed when it fires."""
NEVER_HELD = -1
"""A take's epoch for a share-partition that has no grant yet."""


def share_lease_key(topic_id: str, partition: int) -> str:
    return f"{SHARE_LEASE_PREFIX}{topic_id}:{partition}"


def parse_share_lease_key(key: str) -> SharePartitionKey:
    topic_id, _, partition = key[len(SHARE_LEASE_PREFIX):].rpartition(":")
    return topic_id, int(partition)


@dataclass(frozen=True)
class Updated:
    """What `share_update` returns: the result, and why each refused share-partition was refused."""

    result: CoordinatorResult
    refused: tuple[str, ...] = ()


def current_grant(group: ShareGroup, tp: SharePartitionKey, env: Env) -> grants.Grant | None:
    """The share-partition's grant with its lease from the group's timers (None: never granted)."""
    snapshot = group.partitions.get(tp)
    if snapshot is None:
        return None
    return replace(snapshot.grant, lease_until_ms=env.timers.get(share_lease_key(*tp), 0),
                   wanted_by=group.wanted.get(tp))


def share_grant(group: ShareGroup, request: ShareGrantRequest, env: Env, batch_ms: int) -> CoordinatorResult:
    """Take, renew or release each named share-partition for `request.holder`; one answer per partition."""
    out: list[Record | records.SharePartitionWanted] = []
    timers: list[TimerOperation] = []
    answers = []
    lease_ms = env.config.share_partition_lease_ms
    config = holder_config(env.settings)
    for p in request.partitions:
        tp = (p.topic_id, p.partition)
        if not group.is_assignable(*tp):
            answers.append(ShareGrantAnswer(p.topic_id, p.partition, Errors.UNKNOWN_TOPIC_OR_PARTITION, NEVER_HELD,
                                            None))
            continue
        grant = current_grant(group, tp, env)
        if grant is None:
            if p.operation != "take" or p.epoch != NEVER_HELD:
                answers.append(ShareGrantAnswer(p.topic_id, p.partition, Errors.FENCED_STATE_EPOCH, NEVER_HELD, None))
                continue
            grant = grants.new_grant(batch_ms)
            snapshot = ShareSnapshot(PersistedState(UNRESOLVED, group.group_epoch), grant, batch_ms, batch_ms)
            epoch = grant.epoch
        else:
            snapshot = group.partitions[tp]
            epoch = p.epoch
        if p.operation == "take":
            after, ok = grants.take(grant, request.holder, epoch, batch_ms, lease_ms)
        elif p.operation == "renew":
            after, ok = grants.renew(grant, request.holder, epoch, batch_ms, lease_ms)
        else:
            after, ok = grants.release(grant, request.holder, epoch)
        if ok and (after.epoch != grant.epoch or tp not in group.partitions):
            out.append(records.snapshot(group.group_id, *tp, replace(snapshot, grant=after, write_timestamp_ms=batch_ms)))
        if ok and after.held:
            timers.append(Schedule(share_lease_key(*tp), after.lease_until_ms))
        elif ok:
            timers.append(Cancel(share_lease_key(*tp)))
        elif after.wanted_by != grant.wanted_by:
            out.append(records.SharePartitionWanted(group.group_id, *tp, after.wanted_by))
        persisted = snapshot.persisted
        give_state = ok and p.operation == "take"
        answers.append(ShareGrantAnswer(
            p.topic_id, p.partition, Errors.NONE if ok else Errors.FENCED_STATE_EPOCH, after.epoch, after.holder,
            lease_ms=lease_ms if ok and after.held else 0, state_epoch=persisted.state_epoch,
            start_offset=persisted.start_offset if give_state else UNRESOLVED,
            state_batches=tuple(records.batch_value(b) for b in persisted.batches) if give_state else (),
            config=config if ok and after.held else None))
    response = ShareGrantResponse(request_id=request.request_id, group_id=request.group_id, error_code=Errors.NONE,
                                  partitions=tuple(answers))
    return CoordinatorResult(out, [response], timers)  # type: ignore[arg-type]


def share_update(group: ShareGroup, request: ShareUpdateRequest, batch_ms: int) -> Updated:
    """A holder's transitions, each share-partition applied or refused whole."""
    out: list[Record] = []
    refused: list[str] = []
    for p in request.partitions:
        tp = (p.topic_id, p.partition)
        snapshot = group.partitions.get(tp)
        where = f"{p.topic_id}:{p.partition}"
        if snapshot is None:
            refused.append(f"ShareUpdate {where}: no such share-partition in group {group.group_id}")
            continue
        if not grants.accepts_update(snapshot.grant, request.holder, p.grant_epoch):
            refused.append(f"ShareUpdate {where}: holder {request.holder} at grant epoch {p.grant_epoch} is fenced "
                           f"(epoch {snapshot.grant.epoch}, holder {snapshot.grant.holder})")
            continue
        if p.state_epoch != snapshot.persisted.state_epoch:
            refused.append(f"ShareUpdate {where}: state epoch {p.state_epoch} is fenced "
                           f"({snapshot.persisted.state_epoch})")
            continue
        try:
            persisted = apply_update(snapshot.persisted, p.start_offset, [
                StateBatch(b.first_offset, b.last_offset, RecordState(b.delivery_state), b.delivery_count)
                for b in p.state_batches])
        except (UpdateRefused, ValueError) as exc:
            refused.append(f"ShareUpdate {where}: {exc}")
            continue
        if persisted != snapshot.persisted:
            out.append(records.snapshot(group.group_id, *tp, replace(snapshot, persisted=persisted,
                                                                      write_timestamp_ms=batch_ms)))
    return Updated(CoordinatorResult(out), tuple(refused))  # type: ignore[arg-type]


def on_lease_expired(group: ShareGroup, tp: SharePartitionKey, batch_ms: int) -> CoordinatorResult:
    """The lease's timer fired (a renewal re-arms it, so it is due only once the lease ran out, at a time no later
    than the step's): FREE at the next epoch."""
    snapshot = group.partitions.get(tp)
    if snapshot is None or not snapshot.grant.held:
        return CoordinatorResult()
    after, _ = grants.expire(replace(snapshot.grant, lease_until_ms=batch_ms), batch_ms)
    return CoordinatorResult([records.snapshot(group.group_id, *tp, replace(snapshot, grant=after,
                                                                            write_timestamp_ms=batch_ms))])


def restart_leases(group: ShareGroup, batch_ms: int, lease_ms: int) -> list[TimerOperation]:
    """A new driver's first step: every held share-partition's lease counts again from now."""
    return [Schedule(share_lease_key(*tp), batch_ms + lease_ms) for tp in group.held()]

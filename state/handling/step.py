"""The one handler shape of every kind of group: (group, request, environment) -> `CoordinatorResult`.

A handler reads the group and the request, decides, and returns what it decided: the records to write (replayed,
they are the change), the responses, and the timer operations. It assigns nothing to the group, fills nothing it was
given, and writes to no context; the step loop (`state.runtime.coordinator`) applies the result with `applied`:
each record is replayed onto the group (`state.runtime.replay.replay`, which sends it to its kind's replay, the
only code that changes a group), each timer operation is applied to the group's timers, the responses are sent. As
Kafka's GroupMetadataManager methods return a `CoordinatorResult` that its runtime replays.

    def offset_delete(group, request: OffsetDeleteRequest, env: Env) -> CoordinatorResult:
        if group is None:
            return answer(simple_response(request, GROUP_ID_NOT_FOUND))
        tombstones = [offset_tombstone(request.group_id, t.name, p.partition_index) for t in request.topics ...]
        return CoordinatorResult(tombstones, [simple_response(request, NONE, topics=...)])

Where a handler must read its own writes mid-way (Kafka's runtime replays each record of an operation before the
next one runs; a classic JoinGroup that adds a member and then asks whether everyone has joined), it composes
sub-results explicitly: `group, done = then(group, done, sub)` replays `sub` onto the group and passes it on, with
the two results as one; what was replayed so is not replayed again by the step loop. A group is a value the call
passes on: after `then`, the group to read is the one it returned. Each kind's handlers compose with their own
kind's replay (`state.classic.replay.then`, `state.consumer.replay.then`, `state.share.replay.then`), which knows
every record they write, a change of kind included; `applied` and `then` here take the replay to use, so this
shape, which every kind is written in, knows none of them.

`Env` is what a handler reads besides the group and the request: the time, the configuration, the cluster's topics
(`image`, decoded on first use), the group's scheduled timers (Kafka's `timer.isScheduled`), the server-side
assignors, how long the request waited for its batch, the group id's configs and the step's own time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from assignors.api import ServerAssignor
from schemas.messages import Response
from state.config import CoordinatorConfig
from state.errors import CoordinatorError, Errors
from state.handling.timers import Cancel, Schedule, TimerOperation
from state.records import Record
from state.topics.image import EMPTY_IMAGE, MetadataImage, decode_image_row

Replay = Callable[[Any, Any], Any]
"""`replay(group, record) -> group`: a kind's (`state.classic.replay.replay`, ...) or the runtime's, which sends a
record of any group to its kind's (`state.runtime.replay.replay`)."""


@dataclass(slots=True)
class CoordinatorResult:
    """What one request or one fired timer decided, in order (Kafka's CoordinatorResult plus its timer calls).

    A value: a handler builds it and returns it; `+` joins two. `members_expired` and `fast_answers` are what the
    job counts: members whose session ran out, and requests a gateway answered from a view, as the coordinator
    checked them (`state.views.fast_answers.FastAnswer`)."""

    records: list = field(default_factory=list)
    """Written records (`state.records.Record`) and in-memory ones (`state.records`, `state.classic.records`)."""
    responses: list[Response] = field(default_factory=list)
    timers: list[TimerOperation] = field(default_factory=list)
    members_expired: int = 0
    fast_answers: list = field(default_factory=list)
    replayed: tuple[int, int] = field(default=(0, 0), repr=False, compare=False)
    """How many of `records` and `timers`, from the first, are on the group already (`then`) ..."""
    after: Any = field(default=None, repr=False, compare=False)
    """... and the group they left (a record may create, replace or remove the group object)."""
    view_changed: bool = False
    """Its records change the group's view though their keys would not say so (a share-partition's grant: its
    snapshot is otherwise view-neutral, `state.batch`)."""

    @property
    def response(self) -> Response | None:
        """The response of a result that has at most one (a single request's); None when it has none (a timer's)."""
        if len(self.responses) > 1:
            raise ValueError(f"a result of {len(self.responses)} responses has no single response")
        return self.responses[0] if self.responses else None

    @property
    def written(self) -> list:
        """The records for the records topic (the in-memory ones left out)."""
        return [r for r in self.records if isinstance(r, Record)]

    def __add__(self, other: CoordinatorResult) -> CoordinatorResult:
        if not (other.records or other.responses or other.timers or other.members_expired or other.fast_answers
                or other.view_changed):
            return self
        if not (self.records or self.responses or self.timers or self.members_expired or self.fast_answers
                or self.view_changed or self.replayed != (0, 0)):
            return other
        if other.replayed == (0, 0):
            replayed, after = self.replayed, self.after
        elif self.replayed == (len(self.records), len(self.timers)):
            replayed = (len(self.records) + other.replayed[0], len(self.timers) + other.replayed[1])
            after = other.after
        else:
            raise ValueError("a replayed result after one that is not: replay the first (`then`)")
        return CoordinatorResult(self.records + other.records, self.responses + other.responses,
                                 self.timers + other.timers, self.members_expired + other.members_expired,
                                 self.fast_answers + other.fast_answers, replayed, after,
                                 self.view_changed or other.view_changed)

    def is_replayed(self) -> bool:
        """Whether all of it is on the group already (`then`): nothing is left to replay."""
        return self.replayed == (len(self.records), len(self.timers))


NOTHING = CoordinatorResult()
"""A result that decided nothing (never changed: results are values)."""


def answer(response: Response, *timers: TimerOperation) -> CoordinatorResult:
    """A result that only answers (and operates timers): no record."""
    return CoordinatorResult([], [response], list(timers), 0, [])


def applied(group: Any, result: CoordinatorResult, replay: Replay) -> Any:
    """The group after `result`: its records replayed with `replay`, its timer operations applied (a timer of a
    group the records removed goes with it), from where `then` left it when part of it was replayed on the way. The
    step loop's one way to take a result (with the runtime's replay: `state.runtime.replay.applied`)."""
    records, timers = result.replayed
    if records or timers:
        group = result.after
    elif not result.records and not result.timers:
        return group
    for record in result.records[records:]:
        group = replay(group, record)
    if group is not None:
        for op in result.timers[timers:]:
            if isinstance(op, Schedule):
                group.timers[op.key] = op.deadline_ms
            else:
                group.timers.pop(op.key, None)
    return group


def then(group: Any, done: CoordinatorResult, more: CoordinatorResult,
         replay: Replay) -> tuple[Any, CoordinatorResult]:
    """`done` and `more` as one result, replayed onto `group` (which holds `done` so far) with `replay`: the group
    to read next, and the result, which the step loop will not replay again. A kind's handlers call their kind's
    (`state.classic.replay.then`, ...), which passes its replay."""
    if done is NOTHING:
        result = more
    elif more is NOTHING:
        result = done
    else:
        result = done + more
    if result.is_replayed():
        return (result.after if result.replayed != (0, 0) else group), result
    group = applied(group, result, replay)
    return group, CoordinatorResult(result.records, result.responses, result.timers, result.members_expired,
                                    result.fast_answers, (len(result.records), len(result.timers)), group,
                                    result.view_changed)


class Env:
    """What a handler reads besides the group and the request."""

    __slots__ = ("now_ms", "config", "_image", "timers", "assignors", "waited_ms", "_topics", "group_configs",
                 "batch_ms")

    def __init__(self, now_ms: int, config: CoordinatorConfig | None = None, image: MetadataImage | None = None,
                 timers: Mapping[str, int] | None = None, assignors: Mapping[str, ServerAssignor] | None = None,
                 waited_ms: int = 0, topics: bytes | None = None, group_configs: Mapping[str, str] | None = None,
                 batch_ms: int | None = None) -> None:
        self.now_ms = now_ms
        self.config = config if config is not None else CoordinatorConfig()
        self._image = image
        self.timers: Mapping[str, int] = timers if timers is not None else {}
        """The group's scheduled timers, key -> deadline."""
        self.assignors = assignors
        """By name; None: `group.consumer.assignors` from `assignors.registry`."""
        self.waited_ms = waited_ms
        """How long the request waited for its batch: the heartbeat interval told grows with it
        (`state.consumer.heartbeat.heartbeat_interval_ms`)."""
        self._topics = topics
        self.group_configs: Mapping[str, str] = group_configs if group_configs is not None else {}
        """The group id's dynamic configs (IncrementalAlterConfigs on a GROUP resource), whatever its kind: record
        version 101 sets them, and the step loop keeps them beside the group (`state.batch`)."""
        self.batch_ms = now_ms if batch_ms is None else batch_ms
        """The step's time (the micro-batch's); `now_ms` follows each request's arrival. What no gateway's clock
        may move (a share-partition's lease) counts on this one."""

    @property
    def image(self) -> MetadataImage:
        """The cluster's topics as the groups' assignors see them (`state.topics.image`): given, or the state
        bucket's stored topic metadata (`state.batch`), decoded on first use."""
        if self._image is None:
            self._image = decode_image_row(self._topics) if self._topics is not None else EMPTY_IMAGE
        return self._image

    def replace(self, **changes: Any) -> Env:
        """This environment with some of its fields changed (`now_ms`, `timers`, ...)."""
        fields = {"now_ms": self.now_ms, "config": self.config, "image": self._image, "timers": self.timers,
                  "assignors": self.assignors, "waited_ms": self.waited_ms, "topics": self._topics,
                  "group_configs": self.group_configs, "batch_ms": self.batch_ms}
        return type(self)(**{**fields, **changes})

    def assignor(self, name: str) -> ServerAssignor:
        if self.assignors is not None:
            found = self.assignors.get(name)
        else:
            from assignors import registry

            found = registry.get(name, kind="server") if name in self.config.group_consumer_assignors else None
        if found is None:
            raise CoordinatorError(Errors.UNKNOWN_SERVER_ERROR, f"The server assignor {name} is not configured.")
        return found  # type: ignore[return-value]

    @property
    def assignor_names(self) -> tuple[str, ...]:
        return tuple(self.assignors) if self.assignors is not None else self.config.group_consumer_assignors


__all__ = ["NOTHING", "CoordinatorResult", "Env", "answer", "applied", "then", "Cancel", "Schedule"]

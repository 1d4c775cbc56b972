"""A share group driven through its pure handlers: each result's records replayed (the only way the group changes),
its timer operations applied, as the runtime does."""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.share_group import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
from state.config import CoordinatorConfig
from state.topics.image import MetadataImage, TopicImage
from state.handling.step import CoordinatorResult
from state.share import heartbeat
from state.share.group import ShareGroup
from state.share.replay import replay
from state.handling.timers import Schedule

T = 1_700_000_000_000
FOO, BAR = "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"


def image(**topics: tuple[str, int]) -> MetadataImage:
    """name=(topic id, partitions)."""
    return MetadataImage.of(1, [TopicImage(tid, name, n) for name, (tid, n) in topics.items()])


@dataclass
class Share:
    image: MetadataImage = field(default_factory=lambda: image(foo=(FOO, 1)))
    config: CoordinatorConfig = field(default_factory=lambda: CoordinatorConfig(group_share_assignment_interval_ms=0))
    group_configs: dict = field(default_factory=dict)
    group: ShareGroup | None = None
    timers: dict = field(default_factory=dict)
    now: int = T
    written: list = field(default_factory=list)
    _ids: int = 0

    def env(self) -> heartbeat.Env:
        return heartbeat.Env(self.now, self.config, self.image, dict(self.timers), self.group_configs)

    def apply(self, result: CoordinatorResult) -> CoordinatorResult:
        for record in result.records:
            self.group = replay(self.group, record)
            self.written.append(record)
        for op in result.timers:
            if isinstance(op, Schedule):
                self.timers[op.key] = op.deadline_ms
            else:
                self.timers.pop(op.key, None)
        return result

    def heartbeat(self, member: str, epoch: int, topics: tuple[str, ...] | None = None, rack: str | None = None,
                  principal: str | None = None) -> ShareGroupHeartbeatResponse:
        self._ids += 1
        request = ShareGroupHeartbeatRequest(request_id=str(self._ids), group_id="g", member_id=member,
                                             member_epoch=epoch, subscribed_topic_names=topics, rack_id=rack,
                                             principal=principal, client_id="c", client_host="/127.0.0.1")
        return self.apply(heartbeat.share_group_heartbeat(self.group, request, self.env())).response  # type: ignore

    def fire(self, now: int) -> None:
        """Fire every timer due at `now`, earliest first, as the runtime does."""
        self.now = now
        while True:
            due = sorted((d, k) for k, d in self.timers.items() if d <= now)
            if not due or self.group is None:
                return
            key = due[0][1]
            del self.timers[key]
            if key.startswith(heartbeat.SHARE_SESSION_TIMEOUT_PREFIX):
                self.apply(heartbeat.on_session_timeout(self.group, key[len(heartbeat.SHARE_SESSION_TIMEOUT_PREFIX):],
                                                        self.env()))
            elif key == heartbeat.SHARE_ASSIGNMENT:
                self.apply(heartbeat.on_assignment_timer(self.group, self.env()))

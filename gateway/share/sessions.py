"""Share sessions, as a Kafka broker keeps them (KIP-932's ShareSessionCache and ShareSessionContext).

A share session is a member's set of share-partitions on one broker, with an epoch the member and the broker step
together; the gateway stands for every upstream broker with a listener of its own, so a session is keyed by
(node, group, member) and lives in the gateway process that serves that listener's connection.

- ShareFetch at epoch 0 opens a session (replacing any the member had on that node) with the partitions it names,
  and the next expected epoch is 1; acknowledgements in it are INVALID_REQUEST; beyond `max_sessions`,
  SHARE_SESSION_LIMIT_REACHED. At epoch n > 0 the session must exist (SHARE_SESSION_NOT_FOUND) at epoch n
  (INVALID_SHARE_SESSION_EPOCH); it then adds the partitions named, drops the forgotten ones, and steps to n + 1
  (after INT32_MAX: 1). At -1 it must exist; it closes once the request is answered, and the member's records in
  its partitions are released.
- ShareAcknowledge shares the epoch: 0 is INVALID_SHARE_SESSION_EPOCH, -1 closes, n must match and steps.
- A session is bound to the connection that opened it: when that connection closes, the session closes as at -1.
  A session replaced from another connection is no longer that connection's (KAFKA-19950): the old connection's
  close leaves the new session alone.

Everything here is synchronous and does no I/O: the ShareFetch handler asks, then releases what a close returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Iterable

from state.api import Errors

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT32_MAX = (1 << 31) - 1
MAX_SESSIONS = 2000
"""Kafka's `group.share.max.share.sessions`."""

TopicIdPartition = tuple[str, int]
"""(topic id as Kafka's Uuid text, partition)."""
SessionKey = tuple[int | None, str, str]
"""(node id of the listener, group id, member id)."""


class SessionError(Exception):
    """A top-level error of the request (Kafka's `error_code` of the whole response)."""

    def __init__(self, code: Errors, message: str) -> None:
        super().__init__(message)
        self.code = code


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= INT32_MAX else epoch + 1


@dataclass
class ShareSession:
    key: SessionKey
    connection: Hashable
    epoch: int
    """The epoch the member's next request must carry."""
    partitions: dict[TopicIdPartition, None] = field(default_factory=dict)
    """The session's share-partitions, in the order they were added (a dict as an ordered set)."""

    @property
    def group_id(self) -> str:
        return self.key[1]

    @property
    def member_id(self) -> str:
        return self.key[2]

    def update(self, added: Iterable[TopicIdPartition], forgotten: Iterable[TopicIdPartition]) -> None:
        for tp in added:
            self.partitions.setdefault(tp, None)
        for tp in forgotten:
            self.partitions.pop(tp, None)


class ShareSessions:
    """Every share session of one gateway process."""

    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[SessionKey, ShareSession] = {}
        self._by_connection: dict[Hashable, set[SessionKey]] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, key: SessionKey) -> ShareSession | None:
        return self._sessions.get(key)

    def fetch(self, key: SessionKey, connection: Hashable, epoch: int, added: list[TopicIdPartition],
              forgotten: list[TopicIdPartition], acknowledging: bool) -> ShareSession:
        """The session a ShareFetch at `epoch` works in (Kafka's `newContext`). At -1 the session is returned, still
        open: `close` it once the request is answered."""
        if epoch == FINAL_EPOCH:
            return self._existing(key)
        if epoch == INITIAL_EPOCH:
            if acknowledging:
                raise SessionError(Errors.INVALID_REQUEST, "acknowledgements in a request that opens a share session")
            self._remove(key)
            if len(self._sessions) >= self.max_sessions:
                raise SessionError(Errors.SHARE_SESSION_LIMIT_REACHED,
                                   f"this gateway has {self.max_sessions} share sessions")
            session = ShareSession(key, connection, next_epoch(INITIAL_EPOCH))
            session.update(added, ())
            self._sessions[key] = session
            self._by_connection.setdefault(connection, set()).add(key)
            return session
        if epoch < FINAL_EPOCH:
            raise SessionError(Errors.INVALID_SHARE_SESSION_EPOCH, f"share session epoch {epoch}")
        session = self._stepped(key, epoch)
        session.update(added, forgotten)
        return session

    def acknowledge(self, key: SessionKey, epoch: int) -> ShareSession:
        """The session a ShareAcknowledge at `epoch` works in; at -1 still open (`close` it once answered)."""
        if epoch == INITIAL_EPOCH or epoch < FINAL_EPOCH:
            raise SessionError(Errors.INVALID_SHARE_SESSION_EPOCH,
                               f"share session epoch {epoch} cannot acknowledge")
        if epoch == FINAL_EPOCH:
            return self._existing(key)
        return self._stepped(key, epoch)

    def close(self, key: SessionKey) -> ShareSession | None:
        """Remove the session (epoch -1 answered); its partitions are the member's records to release."""
        return self._remove(key)

    def disconnected(self, connection: Hashable) -> list[ShareSession]:
        """A connection closed: the sessions still bound to it, removed (their members' records to release)."""
        closed = []
        for key in self._by_connection.pop(connection, set()):
            session = self._sessions.get(key)
            if session is not None and session.connection == connection:
                del self._sessions[key]
                closed.append(session)
        return closed

    def sessions_of(self, group_id: str, tp: TopicIdPartition) -> int:
        """How many sessions of the group name the share-partition (the holder keeps it while one does)."""
        return sum(1 for s in self._sessions.values() if s.group_id == group_id and tp in s.partitions)

    def _existing(self, key: SessionKey) -> ShareSession:
        session = self._sessions.get(key)
        if session is None:
            raise SessionError(Errors.SHARE_SESSION_NOT_FOUND, "no such share session")
        return session

    def _stepped(self, key: SessionKey, epoch: int) -> ShareSession:
        session = self._existing(key)
        if session.epoch != epoch:
            raise SessionError(Errors.INVALID_SHARE_SESSION_EPOCH,
                               f"share session epoch {epoch}, expected {session.epoch}")
        session.epoch = next_epoch(session.epoch)
        return session

    def _remove(self, key: SessionKey) -> ShareSession | None:
        session = self._sessions.pop(key, None)
        if session is not None:
            keys = self._by_connection.get(session.connection)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_connection[session.connection]
        return session

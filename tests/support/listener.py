"""A rebalance listener for tests: every callback it receives, in order."""

from __future__ import annotations


class Recorder:
    """A rebalance listener that keeps every callback, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset]] = []

    def on_partitions_revoked(self, revoked):
        self.events.append(("revoked", frozenset(revoked)))

    def on_partitions_assigned(self, assigned):
        self.events.append(("assigned", frozenset(assigned)))

    def on_partitions_lost(self, lost):
        self.events.append(("lost", frozenset(lost)))

    def of(self, kind: str) -> list[frozenset]:
        return [p for k, p in self.events if k == kind]

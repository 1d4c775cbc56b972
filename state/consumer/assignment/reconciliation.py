"""One member's next assignment on its way to the group's target: Kafka's CurrentAssignmentBuilder.

A member never gets a partition that another member still holds, and gives up the partitions it loses before it
moves to the target's epoch. From its current state, the target (with its epoch), who holds which partition now
(`partition_epoch`: the epoch of the holder, -1 when free) and the partitions the heartbeat says the member owns:

- STABLE, behind the target: compute the next assignment (below) from the member's epoch;
- UNREVOKED_PARTITIONS: stay while the member still owns one of the partitions to revoke (an unknown ownership,
  a heartbeat without `topic_partitions`, counts as owning them); once it owns none, compute from its epoch;
- UNRELEASED_PARTITIONS: compute again (picks up the partitions their holders released meanwhile);
- UNKNOWN: fenced (FENCED_MEMBER_EPOCH) unless the heartbeat says it owns nothing; then compute from the target.

Computing the next assignment, topic by topic: kept = assigned ∩ target; to revoke = assigned - kept; to assign =
target - kept, minus the partitions another member holds ("unreleased"; a partition the member itself is revoking
is not one of them, KAFKA-19449). Then the first that applies: something to revoke that the member still owns ->
UNREVOKED_PARTITIONS at its epoch; something to assign -> assigned, target epoch, UNRELEASED_PARTITIONS if
something was unreleased else STABLE; something unreleased -> UNRELEASED_PARTITIONS at the target epoch; else
STABLE at the target epoch.

Newer than Kafka 4.0, and followed here: leaving UNREVOKED_PARTITIONS does not bump the member epoch by one
(KAFKA-19974, 4.2), topics the member no longer subscribes to count as not targeted, and a changed subscription
revokes them at once even when the member is reconciled (KAFKA-19431, `enforce_subscription`); newly assigned
partitions carry the target epoch as their assignment epoch, kept ones keep theirs (KIP-1251, 4.3).
"""

from __future__ import annotations

from typing import Callable, Mapping

from state.consumer.group import ConsumerGroupMember, MemberState, PartitionEpochs, Partitions
from state.topics.image import MetadataImage, topic_ids
from state.errors import CoordinatorError, Errors

PartitionEpoch = Callable[[str, int], int]
"""(topic id, partition) -> the epoch of the member holding it, -1 when nobody does."""


def subscribed_topic_ids(member: ConsumerGroupMember, resolved_regexes: Mapping[str, frozenset[str]],
                         image: MetadataImage) -> frozenset[str]:
    """The ids of the topics the member subscribes to by name or through its resolved regular expression (an
    unresolved one matches nothing, to be safe)."""
    names: set[str] = set(member.subscribed_topic_names)
    if member.regex is not None:
        names |= resolved_regexes.get(member.regex, frozenset())
    return topic_ids(names, image)


def is_subscription_consistent(member: ConsumerGroupMember, resolved_regexes: Mapping[str, frozenset[str]],
                               image: MetadataImage) -> bool:
    """Whether every topic the member is assigned is one it subscribes to and still exists (a fact of the member's
    state, so it holds the same after a replay)."""
    subscribed = subscribed_topic_ids(member, resolved_regexes, image)
    return all(topic in subscribed for topic in member.assigned_partitions)


def reconcile(
    member: ConsumerGroupMember,
    *,
    target_epoch: int,
    target: Partitions,
    partition_epoch: PartitionEpoch,
    owned: Partitions | None,
    subscribed: frozenset[str],
    enforce_subscription: bool = False,
) -> ConsumerGroupMember:
    """The member's next state (the same object when nothing moves). `owned`: the heartbeat's `topic_partitions`
    (None: not sent); `subscribed`: the topic ids the member subscribes to (`subscribed_topic_ids`)."""
    step = _Step(member, target_epoch, target, partition_epoch, owned, subscribed)
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return step.next_assignment(member.member_epoch)
        return step.drop_unsubscribed(member.member_epoch) if enforce_subscription else member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if step.owns_any(member.partitions_pending_revocation):
            return step.drop_unsubscribed(member.member_epoch) if enforce_subscription else member
        return step.next_assignment(member.member_epoch)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return step.next_assignment(member.member_epoch)
    if owned is None or owned:
        raise CoordinatorError(Errors.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                               "The member must abandon all its partitions and rejoin.")
    return step.next_assignment(target_epoch)


class _Step:
    __slots__ = ("member", "target_epoch", "target", "partition_epoch", "owned", "subscribed")

    def __init__(self, member: ConsumerGroupMember, target_epoch: int, target: Partitions,
                 partition_epoch: PartitionEpoch, owned: Partitions | None, subscribed: frozenset[str]) -> None:
        self.member = member
        self.target_epoch = target_epoch
        self.target = target
        self.partition_epoch = partition_epoch
        self.owned = owned
        self.subscribed = subscribed

    def owns_any(self, revoking: PartitionEpochs) -> bool:
        """Whether the heartbeat still owns one of `revoking` (not knowing counts as owning)."""
        if self.owned is None:
            return True
        return any(not parts.isdisjoint(revoking.get(topic, {})) for topic, parts in self.owned.items())

    def drop_unsubscribed(self, epoch: int) -> ConsumerGroupMember:
        """Revoke at once the assigned topics the member no longer subscribes to (Kafka's updateCurrentAssignment);
        the same member when there is none."""
        member = self.member
        assigned = member.assigned_partitions
        if not self.subscribed and not member.partitions_pending_revocation:
            kept: dict[str, Mapping[int, int]] = {}
            revoking: dict[str, Mapping[int, int]] = dict(assigned)
        else:
            kept = {t: p for t, p in assigned.items() if t in self.subscribed}
            revoking = dict(member.partitions_pending_revocation)
            for topic, parts in assigned.items():
                if topic not in self.subscribed:
                    revoking[topic] = {**revoking.get(topic, {}), **parts}
        if kept == assigned:
            return member
        if revoking and self.owns_any(revoking):
            return member.with_member_epoch(epoch, state=MemberState.UNREVOKED_PARTITIONS,
                                            assigned_partitions=kept, partitions_pending_revocation=revoking)
        return member.with_member_epoch(epoch, assigned_partitions=kept)

    def next_assignment(self, epoch: int) -> ConsumerGroupMember:
        member = self.member
        assigned = member.assigned_partitions
        kept: dict[str, dict[int, int]] = {}
        revoking: dict[str, dict[int, int]] = {}
        to_assign: dict[str, list[int]] = {}
        unreleased = False
        for topic in sorted(set(self.target) | set(assigned)):
            target = self.target.get(topic, frozenset()) if topic in self.subscribed else frozenset()
            current = assigned.get(topic, {})
            own_revoking = member.partitions_pending_revocation.get(topic, {})
            topic_kept = {p: e for p, e in current.items() if p in target}
            topic_revoking = {p: e for p, e in current.items() if p not in target}
            topic_assign = []
            for partition in sorted(target - topic_kept.keys()):
                if self.partition_epoch(topic, partition) != -1 and partition not in own_revoking:
                    unreleased = True
                else:
                    topic_assign.append(partition)
            if topic_kept:
                kept[topic] = topic_kept
            if topic_revoking:
                revoking[topic] = topic_revoking
            if topic_assign:
                to_assign[topic] = topic_assign
        if revoking and self.owns_any(revoking):
            return member.with_member_epoch(epoch, state=MemberState.UNREVOKED_PARTITIONS,
                                            assigned_partitions=kept, partitions_pending_revocation=revoking)
        for topic, partitions in to_assign.items():
            kept.setdefault(topic, {}).update(dict.fromkeys(partitions, self.target_epoch))
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return member.with_member_epoch(self.target_epoch, state=state,
                                        assigned_partitions={t: dict(sorted(p.items())) for t, p in kept.items()},
                                        partitions_pending_revocation={})

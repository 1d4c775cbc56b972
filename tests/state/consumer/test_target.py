"""The group's target assignment (state.consumer.assignment.target), as Kafka's TargetAssignmentBuilderTest checks it: what
the assignor is given, and a record only for members whose target changed, then the epoch record. Inputs and
expected records are Kafka's; each test names Kafka's case it ports. Group "my-group", epoch 20."""

from __future__ import annotations

from assignors.api import SubscriptionType
from state.consumer import records
from state.consumer.group import ConsumerGroupMember
from state.consumer.assignment.target import build_target_assignment
from tests.state.consumer.support import MockAssignor, assignment, image, topic_id

IMAGE = image(("foo", 6), ("bar", 6))
NOW = 1_000


class Context:
    """Kafka's TargetAssignmentBuilderTestContext: members with their current target, updates, a prepared
    assignment."""

    def __init__(self) -> None:
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target: dict[str, dict[str, frozenset[int]]] = {}
        self.static: dict[str, str] = {}
        self.updated: dict[str, ConsumerGroupMember | None] = {}
        self.assignor = MockAssignor()

    def add(self, member_id, topics, target, instance_id=None):
        self.members[member_id] = ConsumerGroupMember(member_id, instance_id=instance_id,
                                                      subscribed_topic_names=tuple(sorted(topics)))
        self.target[member_id] = assignment(*target)
        if instance_id is not None:
            self.static[instance_id] = member_id

    def update(self, member_id, topics, instance_id=None, rack_id=None):
        base = self.members.get(member_id, ConsumerGroupMember(member_id))
        self.updated[member_id] = ConsumerGroupMember(
            member_id, instance_id=instance_id or base.instance_id, rack_id=rack_id or base.rack_id,
            subscribed_topic_names=tuple(sorted(topics)))

    def build(self, prepared):
        self.assignor.prepare({m: assignment(*a) for m, a in prepared.items()})
        return build_target_assignment(
            group_id="my-group", group_epoch=20, assignor=self.assignor, members=self.members, updated=self.updated,
            static_members=self.static, subscription_type=SubscriptionType.HOMOGENEOUS, target=self.target,
            resolved_regexes={}, image=IMAGE, now_ms=NOW)


EPOCH_RECORD = records.target_assignment_epoch("my-group", 20, NOW)
FOO_BAR = ("foo", "bar", "zar")


def test_the_assignor_sees_each_member_with_its_existing_topics_and_current_target():
    """Kafka: testCreateMemberSubscriptionSpecImpl (zar does not exist: left out)."""
    ctx = Context()
    ctx.update("member-id", FOO_BAR, instance_id="instanceId", rack_id="rackId")
    ctx.target["member-id"] = assignment(("foo", (1, 2, 3)), ("bar", (1, 2, 3)))
    ctx.build({})
    (cluster, spec), = ctx.assignor.calls
    (member,) = spec.members
    assert (member.member_id, member.group_instance_id, member.rack_id) == ("member-id", "instanceId", "rackId")
    assert member.topics == ("bar", "foo")
    assert member.owned_partitions == (("bar", (1, 2, 3)), ("foo", (1, 2, 3)))
    assert dict(cluster.partitions_per_topic) == {"bar": 6, "foo": 6}
    assert dict(cluster.topic_ids) == {"bar": topic_id("bar"), "foo": topic_id("foo")}


def test_an_empty_group_writes_only_the_assignment_epoch():
    """Kafka: testEmpty."""
    result = Context().build({})
    assert result.records == (EPOCH_RECORD,)
    assert result.members == {}


def test_an_unchanged_assignment_writes_only_the_epoch():
    """Kafka: testAssignmentHasNotChanged."""
    ctx = Context()
    ctx.add("member-1", FOO_BAR, [("foo", (1, 2, 3)), ("bar", (1, 2, 3))])
    ctx.add("member-2", FOO_BAR, [("foo", (4, 5, 6)), ("bar", (4, 5, 6))])
    result = ctx.build({"member-1": [("foo", (1, 2, 3)), ("bar", (1, 2, 3))],
                        "member-2": [("foo", (4, 5, 6)), ("bar", (4, 5, 6))]})
    assert result.records == (EPOCH_RECORD,)
    assert result.members == {"member-1": assignment(("foo", (1, 2, 3)), ("bar", (1, 2, 3))),
                              "member-2": assignment(("foo", (4, 5, 6)), ("bar", (4, 5, 6)))}


def test_every_changed_target_is_written_then_the_epoch():
    """Kafka: testAssignmentSwapped."""
    ctx = Context()
    ctx.add("member-1", FOO_BAR, [("foo", (1, 2, 3)), ("bar", (1, 2, 3))])
    ctx.add("member-2", FOO_BAR, [("foo", (4, 5, 6)), ("bar", (4, 5, 6))])
    result = ctx.build({"member-2": [("foo", (1, 2, 3)), ("bar", (1, 2, 3))],
                        "member-1": [("foo", (4, 5, 6)), ("bar", (4, 5, 6))]})
    assert result.records == (
        records.target_assignment("my-group", "member-1", assignment(("foo", (4, 5, 6)), ("bar", (4, 5, 6)))),
        records.target_assignment("my-group", "member-2", assignment(("foo", (1, 2, 3)), ("bar", (1, 2, 3)))),
        EPOCH_RECORD)


def test_a_new_member_gets_a_target_record():
    """Kafka: testNewMember."""
    ctx = Context()
    ctx.add("member-1", FOO_BAR, [("foo", (1, 2, 3)), ("bar", (1, 2, 3))])
    ctx.add("member-2", FOO_BAR, [("foo", (4, 5, 6)), ("bar", (4, 5, 6))])
    ctx.update("member-3", FOO_BAR)
    prepared = {"member-1": [("foo", (1, 2)), ("bar", (1, 2))], "member-2": [("foo", (3, 4)), ("bar", (3, 4))],
                "member-3": [("foo", (5, 6)), ("bar", (5, 6))]}
    result = ctx.build(prepared)
    assert result.records == tuple(records.target_assignment("my-group", m, assignment(*a))
                                   for m, a in prepared.items()) + (EPOCH_RECORD,)
    assert [s.member_id for s in ctx.assignor.calls[0][1].members] == ["member-1", "member-2", "member-3"]


def test_an_updated_member_is_assigned_with_its_new_subscription():
    """Kafka: testUpdateMember."""
    ctx = Context()
    ctx.add("member-1", FOO_BAR, [("foo", (1, 2, 3)), ("bar", (1, 2))])
    ctx.add("member-2", FOO_BAR, [("foo", (4, 5, 6)), ("bar", (3, 4))])
    ctx.add("member-3", ("bar", "zar"), [("bar", (5, 6))])
    ctx.update("member-3", FOO_BAR, instance_id="instance-id-3", rack_id="rack-0")
    prepared = {"member-1": [("foo", (1, 2)), ("bar", (1, 2))], "member-2": [("foo", (3, 4)), ("bar", (3, 4))],
                "member-3": [("foo", (5, 6)), ("bar", (5, 6))]}
    result = ctx.build(prepared)
    assert result.records == tuple(records.target_assignment("my-group", m, assignment(*a))
                                   for m, a in prepared.items()) + (EPOCH_RECORD,)
    member_3 = ctx.assignor.calls[0][1].members[2]
    assert (member_3.topics, member_3.group_instance_id, member_3.rack_id) == (("bar", "foo"), "instance-id-3",
                                                                               "rack-0")


def test_members_whose_target_did_not_change_get_no_record():
    """Kafka: testPartialAssignmentUpdate."""
    ctx = Context()
    ctx.add("member-1", FOO_BAR, [("foo", (1, 2)), ("bar", (1, 2))])
    ctx.add("member-2", FOO_BAR, [("foo", (3, 4)), ("bar", (3, 4))])
    ctx.add("member-3", ("bar", "zar"), [("foo", (5, 6)), ("bar", (5, 6))])
    result = ctx.build({"member-1": [("foo", (1, 2)), ("bar", (1, 2))],
                        "member-2": [("foo", (3, 4, 5)), ("bar", (3, 4, 5))],
                        "member-3": [("foo", (6,)), ("bar", (6,))]})
    assert result.records == (
        records.target_assignment("my-group", "member-2", assignment(("foo", (3, 4, 5)), ("bar", (3, 4, 5)))),
        records.target_assignment("my-group", "member-3", assignment(("foo", (6,)), ("bar", (6,)))),
        EPOCH_RECORD)


def test_a_removed_member_is_left_out_and_gets_no_record_here():
    """Kafka: testDeleteMember (its target is tombstoned by its removal)."""
    ctx = Context()
    ctx.add("member-1", FOO_BAR, [("foo", (1, 2)), ("bar", (1, 2))])
    ctx.add("member-2", FOO_BAR, [("foo", (3, 4)), ("bar", (3, 4))])
    ctx.add("member-3", FOO_BAR, [("foo", (5, 6)), ("bar", (5, 6))])
    ctx.updated["member-3"] = None
    result = ctx.build({"member-1": [("foo", (1, 2, 3)), ("bar", (1, 2, 3))],
                        "member-2": [("foo", (4, 5, 6)), ("bar", (4, 5, 6))]})
    assert [s.member_id for s in ctx.assignor.calls[0][1].members] == ["member-1", "member-2"]
    assert result.records == (
        records.target_assignment("my-group", "member-1", assignment(("foo", (1, 2, 3)), ("bar", (1, 2, 3)))),
        records.target_assignment("my-group", "member-2", assignment(("foo", (4, 5, 6)), ("bar", (4, 5, 6)))),
        EPOCH_RECORD)
    assert set(result.members) == {"member-1", "member-2"}


def test_a_static_member_replacing_another_starts_from_its_target():
    """Kafka: testReplaceStaticMember."""
    ctx = Context()
    ctx.add("member-1", FOO_BAR, [("foo", (1, 2)), ("bar", (1, 2))], instance_id="instance-member-1")
    ctx.add("member-2", FOO_BAR, [("foo", (3, 4)), ("bar", (3, 4))], instance_id="instance-member-2")
    ctx.add("member-3", FOO_BAR, [("foo", (5, 6)), ("bar", (5, 6))], instance_id="instance-member-3")
    ctx.updated["member-3"] = None
    ctx.update("member-3-a", FOO_BAR, instance_id="instance-member-3")
    result = ctx.build({"member-1": [("foo", (1, 2)), ("bar", (1, 2))], "member-2": [("foo", (3, 4)), ("bar", (3, 4))],
                        "member-3-a": [("foo", (5, 6)), ("bar", (5, 6))]})
    replacing = ctx.assignor.calls[0][1].members[2]
    assert (replacing.member_id, replacing.owned_partitions) == ("member-3-a", (("bar", (5, 6)), ("foo", (5, 6))))
    assert result.records == (
        records.target_assignment("my-group", "member-3-a", assignment(("foo", (5, 6)), ("bar", (5, 6)))),
        EPOCH_RECORD)

"""Regular-expression subscriptions and topic metadata: a new expression is resolved after the heartbeat that
brings it (Kafka resolves on an executor; here a timer due at once), a resolved one counts at once, topics created
later are picked up, a changed partition count or a created topic changes the target assignment on the next
heartbeat (KIP-1101's metadata hash), and `TopicMetadata` requests feed the image. Kafka's cases are named where
a test ports one (GroupMetadataManagerTest, trunk)."""

from __future__ import annotations

from schemas.consumer_group import TopicMetadata, TopicMetadataTopic
from state.consumer import records
from state.consumer.group import MemberState
from state.topics.image import ResolvedRegularExpression, apply_topic_metadata, metadata_hash
from state.handling.timers import CONSUMER_REGEX_REFRESH
from tests.state.consumer.context import ConsumerContext, build_group, fields, ok
from tests.state.consumer.support import assignment, image, topic_id
from tests.state.consumer.test_heartbeat import G, IMAGE, M1, M2, member

TOPICS = image(("foo", 6), ("bar", 3), ("fab", 2))


def join_with_regex(ctx, member_id, regex):
    return ctx.heartbeat(member_id, 0, rebalance_timeout_ms=5000, subscribed_topic_regex=regex, owned=(),
                         server_assignor="range")


def test_a_member_joining_with_a_new_regex_gets_the_current_epoch_then_a_bump_once_resolved():
    """Kafka: testConsumerGroupMemberJoinsWithNewRegex (epoch 10 in the answer; the resolution then writes the
    regular-expression record and bumps to 11)."""
    ctx = ConsumerContext(image=TOPICS, now_ms=100_000)
    build_group(ctx, 10, [member(M1, assigned=[("foo", (0, 1, 2, 3, 4, 5))], topics=("foo",))])
    result = join_with_regex(ctx, M2, "ba.*")
    assert fields(result.response) == {**ok(M2, 10), "assignment": {"topic_partitions": []}}
    assert [r.key.__class__.__name__ for r in result.records] == ["ConsumerGroupMemberMetadataKey",
                                                                  "ConsumerGroupCurrentMemberAssignmentKey"]
    assert ctx.timers[CONSUMER_REGEX_REFRESH] == 100_000
    ((_, resolved),) = [f for f in ctx.sleep(0) if f[0] == CONSUMER_REGEX_REFRESH]
    assert tuple(resolved.records) == (
        records.regular_expression(G, "ba.*", ResolvedRegularExpression(frozenset({"bar"}), 1, 100_000)),
        records.group_epoch(G, 11, metadata_hash(["foo", "bar"], TOPICS)),
    )
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2, 3, 4, 5))), M2: assignment(("bar", (0, 1, 2)))})
    assert fields(ctx.heartbeat(M2, 10).response) == ok(M2, 11, assigned=[("bar", (0, 1, 2))])


def test_a_member_picks_up_a_regex_the_group_resolved_already():
    """Kafka: testConsumerGroupMemberPicksUpExistingResolvedRegularExpression."""
    ctx = ConsumerContext(image=TOPICS, now_ms=100_000)
    join_with_regex(ctx, M1, "ba.*")
    ctx.sleep(0)
    epoch = ctx.group.group_epoch
    ctx.assignor.prepare({M1: assignment(("bar", (0,))), M2: assignment(("bar", (1, 2)))})
    result = join_with_regex(ctx, M2, "ba.*")
    assert result.response.member_epoch == epoch + 1
    assert CONSUMER_REGEX_REFRESH not in ctx.timers  # resolved 0 s ago: no new resolution


def test_an_invalid_regex_changes_nothing():
    ctx = ConsumerContext(image=TOPICS)
    result = join_with_regex(ctx, M1, "(?<=a)b")
    assert result.response.error_code == 128 and result.records == [] and ctx.group is None


def test_the_last_member_of_a_regex_tombstones_it():
    """Kafka: testResolvedRegularExpressionsRemovedWhenMembersLeaveOrFenced."""
    ctx = ConsumerContext(image=TOPICS, now_ms=100_000)
    join_with_regex(ctx, M1, "ba.*")
    ctx.sleep(0)
    result = ctx.heartbeat(M1, -1)
    assert records.regular_expression_tombstone(G, "ba.*") in result.records
    assert ctx.group.resolved_regexes == {}


def test_a_member_switching_regexes_tombstones_the_old_one():
    """Kafka: testConsumerGroupMemberJoinsWithUpdatedRegex."""
    ctx = ConsumerContext(image=TOPICS, now_ms=100_000)
    join_with_regex(ctx, M1, "ba.*")
    ctx.sleep(0)
    ctx.now_ms += 20_000
    result = ctx.heartbeat(M1, ctx.member(M1).member_epoch, subscribed_topic_regex="fo.*")
    assert records.regular_expression_tombstone(G, "ba.*") in result.records
    assert ctx.timers.get(CONSUMER_REGEX_REFRESH) == ctx.now_ms


def test_a_topic_created_later_is_picked_up_by_a_regex():
    """Kafka: testConsumerGroupMemberJoinRefreshesExpiredRegexes: topics created since the last resolution resolve
    it again (no sooner than 10 s after it), and the next heartbeat assigns the new topic."""
    ctx = ConsumerContext(image=image(("foo", 6)), now_ms=100_000)
    join_with_regex(ctx, M1, "f.*")
    ctx.sleep(0)
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2, 3, 4, 5)))})
    epoch = ctx.heartbeat(M1, 1).response.member_epoch
    ctx.image = apply_topic_metadata(ctx.image, TopicMetadata(version=2, topics=(
        TopicMetadataTopic(topic_id("foo"), "foo", 6), TopicMetadataTopic(topic_id("fab"), "fab", 2))))
    assert ctx.image.new_topics_version == 2
    ctx.now_ms += 5_000
    ctx.heartbeat(M1, epoch)
    assert CONSUMER_REGEX_REFRESH not in ctx.timers  # 5 s after the last resolution: too soon
    ctx.now_ms += 6_000
    ctx.heartbeat(M1, epoch)
    ((_, resolved),) = ctx.sleep(0)
    assert resolved.records[0] == records.regular_expression(
        G, "f.*", ResolvedRegularExpression(frozenset({"foo", "fab"}), 2, ctx.now_ms))
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2, 3, 4, 5)), ("fab", (0, 1)))})
    assert fields(ctx.heartbeat(M1, epoch).response) == ok(M1, epoch + 1, assigned=[("foo", (0, 1, 2, 3, 4, 5)),
                                                                                    ("fab", (0, 1))])


def test_regexes_are_resolved_again_after_the_refresh_interval():
    """Kafka 4.2+: group.consumer.regex.refresh.interval.ms (10 minutes) resolves again without new topics."""
    ctx = ConsumerContext(image=TOPICS, now_ms=100_000)
    join_with_regex(ctx, M1, "ba.*")
    ctx.sleep(0)
    epoch = ctx.heartbeat(M1, ctx.member(M1).member_epoch).response.member_epoch
    ctx.now_ms += 600_000
    assert ctx.heartbeat(M1, epoch).response.error_code == 0
    assert CONSUMER_REGEX_REFRESH not in ctx.timers
    ctx.now_ms += 1
    assert ctx.heartbeat(M1, epoch).response.error_code == 0
    assert CONSUMER_REGEX_REFRESH in ctx.timers


def test_more_partitions_change_the_target_on_the_next_heartbeat():
    """Kafka: testSubscriptionMetadataRefreshedAfterGroupIsLoaded / testOnNewMetadataImage: a new partition count
    changes the subscribed topics' metadata hash, which bumps the epoch and computes a new target."""
    ctx = ConsumerContext(image=IMAGE)
    build_group(ctx, 10, [member(M1, assigned=[("foo", (0, 1, 2, 3, 4, 5)), ("bar", (0, 1, 2))])])
    assert ctx.heartbeat(M1, 10).records == []
    ctx.image = apply_topic_metadata(ctx.image, TopicMetadata(version=2, topics=(
        TopicMetadataTopic(topic_id("foo"), "foo", 8), TopicMetadataTopic(topic_id("bar"), "bar", 3))))
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2, 3, 4, 5, 6, 7)), ("bar", (0, 1, 2)))})
    result = ctx.heartbeat(M1, 10)
    assert result.records[0] == records.group_epoch(G, 11, metadata_hash(["foo", "bar"], ctx.image))
    assert fields(result.response) == ok(M1, 11, assigned=[("foo", (0, 1, 2, 3, 4, 5, 6, 7)), ("bar", (0, 1, 2))])


def test_a_deleted_topic_is_revoked_at_once():
    """KAFKA-19431: partitions of a topic that no longer exists are not the member's to keep."""
    ctx = ConsumerContext(image=IMAGE)
    build_group(ctx, 10, [member(M1, assigned=[("foo", (0, 1, 2, 3, 4, 5)), ("bar", (0, 1, 2))])])
    ctx.image = apply_topic_metadata(ctx.image, TopicMetadata(version=2, topics=(
        TopicMetadataTopic(topic_id("foo"), "foo", 6),)))
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2, 3, 4, 5)))})
    result = ctx.heartbeat(M1, 10, owned=[("foo", (0, 1, 2, 3, 4, 5)), ("bar", (0, 1, 2))])
    assert ctx.member(M1).state is MemberState.UNREVOKED_PARTITIONS
    assert fields(result.response) == ok(M1, 10, assigned=[("foo", (0, 1, 2, 3, 4, 5))])


def test_an_older_or_repeated_topic_metadata_request_changes_nothing():
    newer = apply_topic_metadata(IMAGE, TopicMetadata(version=5, topics=()))
    assert apply_topic_metadata(newer, TopicMetadata(version=5, topics=(
        TopicMetadataTopic(topic_id("foo"), "foo", 6),))) is newer
    assert apply_topic_metadata(newer, TopicMetadata(version=3, topics=())) is newer
    assert newer.by_name == {} and newer.new_topics_version == -1


def test_without_topic_metadata_the_group_keeps_its_hash():
    """A group rebuilt from the records before the cluster's topics arrive is not rebalanced for lack of them."""
    ctx = ConsumerContext(image=IMAGE)
    build_group(ctx, 10, [member(M1, assigned=[("foo", (0, 1, 2, 3, 4, 5)), ("bar", (0, 1, 2))])])
    from state.topics.image import EMPTY_IMAGE

    ctx.image = EMPTY_IMAGE
    result = ctx.heartbeat(M1, 10)
    assert result.records == [] and fields(result.response) == ok(M1, 10)

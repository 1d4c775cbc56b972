"""Byte compatibility of our ConsumerProtocol and StickyAssignor userData codecs with kafka-python 3.0.12's own
encoders (which follow Kafka's JSON message schemas), in both directions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from assignors.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    subscribed_topics,
)
from assignors.sticky import (
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)

SUBSCRIPTION = Subscription(
    topics=("orders", "payments"),
    user_data=b"\x00\x01xyz",
    owned_partitions=(("orders", (0, 2)), ("payments", (1,))),
    generation_id=7,
    rack_id="rack-a",
)


def theirs_subscription(sub: Subscription, version: int) -> bytes:
    owned = [ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=list(ps)) for t, ps in sub.owned_partitions]
    fields: dict[str, object] = {"topics": list(sub.topics), "user_data": sub.user_data}
    if version >= 1:
        fields["owned_partitions"] = owned
    if version >= 2:
        fields["generation_id"] = sub.generation_id
    if version >= 3:
        fields["rack_id"] = sub.rack_id
    return ConsumerProtocolSubscription(version=version, **fields).encode()


def theirs_assignment(a: Assignment, version: int) -> bytes:
    parts = [ConsumerProtocolAssignment.TopicPartition(topic=t, partitions=list(ps)) for t, ps in a.assigned_partitions]
    return ConsumerProtocolAssignment(version=version, assigned_partitions=parts, user_data=a.user_data).encode()


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_bytes_match_kafka_python(version: int) -> None:
    assert encode_subscription(SUBSCRIPTION, version) == theirs_subscription(SUBSCRIPTION, version)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_decodes_kafka_python_bytes(version: int) -> None:
    decoded = decode_subscription(theirs_subscription(SUBSCRIPTION, version))
    assert decoded.version == version
    assert decoded.topics == SUBSCRIPTION.topics
    assert decoded.user_data == SUBSCRIPTION.user_data
    assert decoded.owned_partitions == (SUBSCRIPTION.owned_partitions if version >= 1 else ())
    assert decoded.generation_id == (7 if version >= 2 else -1)
    assert decoded.rack_id == ("rack-a" if version >= 3 else None)
    assert subscribed_topics(theirs_subscription(SUBSCRIPTION, version)) == SUBSCRIPTION.topics


def test_null_user_data_and_rack() -> None:
    sub = Subscription(topics=("t",))
    assert encode_subscription(sub) == theirs_subscription(sub, 3)
    assert decode_subscription(encode_subscription(sub)) == sub


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_bytes_match_kafka_python(version: int) -> None:
    for a in (Assignment((("orders", (0, 1, 5)), ("x", ())), b"ud"), Assignment()):
        assert encode_assignment(a, version) == theirs_assignment(a, version)
        assert decode_assignment(theirs_assignment(a, version)) == a


def test_empty_assignment_bytes_decode_to_nothing() -> None:
    assert decode_assignment(b"") == Assignment()


def test_truncated_subscription_is_an_error() -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(encode_subscription(SUBSCRIPTION)[:-3])


def test_sticky_user_data_matches_java_schema_v1() -> None:
    """Java's StickyAssignor writes the v1 struct with no version prefix; kafka-python's encode(header=False) is
    that struct."""
    previous = (("t", (0, 1)), ("u", (3,)))
    theirs = StickyAssignorUserData([("t", [0, 1]), ("u", [3])], 4).encode(header=False)
    assert encode_sticky_user_data(previous, 4) == theirs
    assert decode_sticky_user_data(theirs) == (previous, 4)


def test_sticky_user_data_v0_has_no_generation() -> None:
    v0 = StickyAssignorUserData([("t", [2])], version=0).encode(header=False)
    assert decode_sticky_user_data(v0) == ((("t", (2,)),), None)


def test_sticky_user_data_in_kafka_python_framing_is_read() -> None:
    """kafka-python 3.0.12 embeds the userData with an int16 version prefix; a group mixing it with us still works."""
    framed = StickyAssignorUserData([("t", [0, 1])], 9).encode()
    assert decode_sticky_user_data(framed) == ((("t", (0, 1)),), 9)


def test_garbage_sticky_user_data_is_an_error() -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_sticky_user_data(b"\x01\x02\x03")


def test_cooperative_user_data_is_the_generation() -> None:
    assert encode_cooperative_user_data(10) == b"\x00\x00\x00\x0a"


topic_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
topic_partitions = st.lists(
    st.tuples(topic_names, st.lists(st.integers(0, 2**31 - 1), max_size=5).map(tuple)), max_size=4
).map(tuple)


@settings(max_examples=60, deadline=None)
@given(
    topics=st.lists(topic_names, max_size=4).map(tuple),
    user_data=st.none() | st.binary(max_size=16),
    owned=topic_partitions,
    generation=st.integers(-1, 2**31 - 1),
    rack=st.none() | topic_names,
)
def test_subscription_round_trip_and_compat(topics, user_data, owned, generation, rack) -> None:
    sub = Subscription(topics, user_data, owned, generation, rack)
    data = encode_subscription(sub)
    assert data == theirs_subscription(sub, 3)
    assert decode_subscription(data) == sub


@settings(max_examples=60, deadline=None)
@given(previous=topic_partitions, generation=st.integers(-(2**31), 2**31 - 1))
def test_sticky_user_data_round_trip_and_compat(previous, generation) -> None:
    data = encode_sticky_user_data(previous, generation)
    theirs = StickyAssignorUserData([(t, list(ps)) for t, ps in previous], generation).encode(header=False)
    assert data == theirs
    assert decode_sticky_user_data(data) == (previous, generation)

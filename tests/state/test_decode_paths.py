"""The two ways a request is decoded agree: msgspec straight into the class (`decode_request`, most requests) and
Python's JSON decoder plus the field-by-field checkers (`parse`, which says what is wrong). For any JSON object,
both give the same request, or refuse it with the same code and reason."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.messages import API_VERSIONS
from state.wire import BadRequest, decode_request, parse

VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**64), max_value=2**64), st.floats(allow_nan=False),
    st.sampled_from(["", "m", "AAEC", "AA==", "***", "g", "consumer", "\ud800"]),
)
FIELDS = ["member_id", "generation_id", "generation_id_or_member_epoch", "group_instance_id", "session_timeout_ms",
          "rebalance_timeout_ms", "protocol_type", "protocol_name", "principal", "require_stable", "reason",
          "retention_time_ms", "api_version", "group_id", "request_id"]
NESTED = {
    "protocols": st.lists(st.fixed_dictionaries({"name": VALUES, "metadata": VALUES}), max_size=2),
    "assignments": st.lists(st.fixed_dictionaries({"member_id": VALUES, "assignment": VALUES}), max_size=2),
    "members": st.lists(st.fixed_dictionaries({"member_id": VALUES}, optional={"group_instance_id": VALUES}),
                        max_size=2),
    "topics": st.one_of(st.none(), st.lists(st.fixed_dictionaries(
        {"name": VALUES}, optional={"partitions": st.lists(st.fixed_dictionaries(
            {"partition_index": VALUES, "committed_offset": VALUES}, optional={"committed_metadata": VALUES}),
            max_size=2), "partition_indexes": st.lists(VALUES, max_size=2)}), max_size=2)),
    "states_filter": st.lists(VALUES, max_size=2),
}
BODIES = st.builds(
    lambda api, plain, nested: {"api": api, **plain, **nested},
    st.sampled_from(sorted(API_VERSIONS) + ["Produce"]),
    st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=8),
    st.fixed_dictionaries({}, optional=NESTED),
)


def outcome(decode, *args):
    try:
        return decode(*args)
    except BadRequest as exc:
        return (exc.reason, exc.code)


@settings(max_examples=1500, deadline=None)
@given(BODIES)
def test_msgspec_and_the_checkers_agree(body):
    raw = json.dumps(body).encode()
    assert outcome(decode_request, raw) == outcome(lambda b: parse(json.loads(b)), raw)

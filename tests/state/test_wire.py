"""Bad input: malformed JSON, unknown APIs, missing or mistyped fields, oversized values, absurd timeouts.

A request that cannot be handled gets an error response when its request_id can be read, otherwise a dead
letter with the reason; either way the group state is untouched.
"""

from __future__ import annotations

import json

import pytest

from state.batch import StoredGroup, route, step_group
from state.config import CoordinatorConfig
from state.errors import Errors, append_error
from tests.state.context import GroupContext
from tests.state.schemas import validate_response

CONFIG = CoordinatorConfig()


def stable_state() -> tuple[GroupContext, StoredGroup]:
    ctx = GroupContext()
    ctx.stable_group(2)
    return ctx, ctx.state


@pytest.mark.parametrize(
    "name, raw, reason_part",
    [
        ("malformed_json", b"{not json", "malformed JSON"),
        ("not_an_object", b"[1,2]", "not a JSON object"),
        ("not_utf8", b"\xff\xfe\x00", "malformed JSON"),
        ("missing_request_id", b'{"api":"Heartbeat","group_id":"g"}', "request_id"),
        ("numeric_request_id", b'{"api":"Heartbeat","group_id":"g","request_id":5}', "request_id"),
        ("empty_bytes", b"", "malformed JSON"),
    ],
)
def test_unanswerable_requests_are_dead_lettered_and_change_nothing(name, raw, reason_part):
    ctx, state = stable_state()
    result = step_group("g", state, [raw], ctx.now_ms, CONFIG)
    assert result.responses == [] and result.records == []
    assert len(result.dead_letters) == 1 and reason_part in result.dead_letters[0][1]
    assert result.stored(state) == state


@pytest.mark.parametrize(
    "name, body, error",
    [
        ("unknown_api", {"api": "Produce"}, Errors.INVALID_REQUEST),
        ("unsupported_version", {"api": "Heartbeat", "api_version": 5, "generation_id": 1, "member_id": "m"},
         Errors.UNSUPPORTED_VERSION),
        ("missing_field", {"api": "Heartbeat", "member_id": "m"}, Errors.INVALID_REQUEST),
        ("mistyped_field", {"api": "Heartbeat", "generation_id": "1", "member_id": "m"}, Errors.INVALID_REQUEST),
        ("boolean_is_not_an_integer", {"api": "Heartbeat", "generation_id": True, "member_id": "m"},
         Errors.INVALID_REQUEST),
        ("int32_overflow", {"api": "Heartbeat", "generation_id": 2**31, "member_id": "m"}, Errors.INVALID_REQUEST),
        ("float_generation", {"api": "Heartbeat", "generation_id": 1.0, "member_id": "m"}, Errors.INVALID_REQUEST),
        ("bad_base64", {"api": "JoinGroup", "member_id": "", "session_timeout_ms": 10000,
                        "rebalance_timeout_ms": 1, "protocol_type": "consumer",
                        "protocols": [{"name": "range", "metadata": "***"}]}, Errors.INVALID_REQUEST),
        ("oversized_metadata", {"api": "JoinGroup", "member_id": "", "session_timeout_ms": 10000,
                                "rebalance_timeout_ms": 1, "protocol_type": "consumer",
                                "protocols": [{"name": "range", "metadata": "A" * 2_000_000}]}, Errors.INVALID_REQUEST),
        ("absurd_session_timeout", {"api": "JoinGroup", "member_id": "", "session_timeout_ms": -5,
                                    "rebalance_timeout_ms": 1, "protocol_type": "consumer", "protocols": []},
         Errors.INVALID_SESSION_TIMEOUT),
        ("negative_rebalance_timeout", {"api": "JoinGroup", "member_id": "", "session_timeout_ms": 10000,
                                        "rebalance_timeout_ms": -1, "protocol_type": "consumer",
                                        "protocols": []}, Errors.INVALID_REQUEST),
        ("huge_string", {"api": "Heartbeat", "generation_id": 1, "member_id": "m" * 40_000}, Errors.INVALID_REQUEST),
        ("lone_surrogate", {"api": "Heartbeat", "generation_id": 1, "member_id": "\ud800"}, Errors.INVALID_REQUEST),
        ("nested_garbage", {"api": "OffsetCommit", "topics": [{"name": "t", "partitions": [7]}]},
         Errors.INVALID_REQUEST),
        ("leave_v3_without_members", {"api": "LeaveGroup", "api_version": 3}, Errors.INVALID_REQUEST),
        ("fetch_v1_all_topics", {"api": "OffsetFetch", "api_version": 1, "topics": None}, Errors.INVALID_REQUEST),
        ("boolean_field_mistyped", {"api": "OffsetFetch", "require_stable": "yes"}, Errors.INVALID_REQUEST),
        ("bytes_field_not_a_string", {"api": "SyncGroup", "generation_id": 1, "member_id": "m",
                                      "assignments": [{"member_id": "m", "assignment": 5}]}, Errors.INVALID_REQUEST),
        ("api_version_not_an_integer", {"api": "Heartbeat", "api_version": "4"}, Errors.INVALID_REQUEST),
        ("leave_v0_without_member_id", {"api": "LeaveGroup", "api_version": 0}, Errors.INVALID_REQUEST),
    ],
)
def test_bad_requests_get_an_error_response_and_change_nothing(name, body, error):
    ctx, state = stable_state()
    raw = json.dumps({"request_id": "bad", "group_id": "g", **body}).encode()
    result = step_group("g", state, [raw], ctx.now_ms, CONFIG)
    (response,) = [json.loads(r) for r in result.responses]
    validate_response(response)
    assert response["error_code"] == error and response["request_id"] == "bad"
    assert result.records == [] and result.dead_letters == []
    assert result.stored(state) == state


def test_a_bad_request_does_not_stop_the_rest_of_the_batch():
    ctx, state = stable_state()
    a, b = list(ctx.group.members)
    good = json.dumps({"api": "Heartbeat", "request_id": "ok", "group_id": "g", "generation_id": 1,
                       "member_id": a}).encode()
    result = step_group("g", state, [b"{", good], ctx.now_ms, CONFIG)
    assert [json.loads(r)["request_id"] for r in result.responses] == ["ok"]
    assert result.dead_letters[0][0] == 0


def test_request_for_another_group_is_refused():
    ctx, state = stable_state()
    raw = json.dumps({"api": "DescribeGroups", "request_id": "x", "group_id": "other"}).encode()
    (response,) = step_group("g", state, [raw], ctx.now_ms, CONFIG).responses
    assert json.loads(response)["error_code"] == Errors.INVALID_REQUEST


def test_unreadable_stored_state_is_kept_and_requests_dead_lettered():
    garbage = StoredGroup(b"garbage", b"more garbage")
    result = step_group("g", garbage, [b'{"api":"DescribeGroups","request_id":"x","group_id":"g"}'], 0, CONFIG)
    assert result.stored(garbage) == garbage and len(result.dead_letters) == 1 and result.responses == []


def test_stored_state_from_a_future_schema_version_is_not_misread():
    future = StoredGroup(b'{"v":99,"group":{}}')
    result = step_group("g", future, [], 0, CONFIG)
    assert result.stored(future) == future


class TestRoute:
    def test_group_request_goes_to_its_group(self):
        r = route(b"g", b'{"api":"Heartbeat","request_id":"x","group_id":"g"}')
        assert r.kind == "group" and r.group_id == "g"

    def test_empty_group_id_still_goes_to_the_group_which_answers_24(self):
        assert route(b"", b'{"api":"JoinGroup","request_id":"x","group_id":""}').group_id == ""

    @pytest.mark.parametrize(
        "raw, has_response, code",
        [
            (b"{oops", False, None),
            (b'{"api":"Heartbeat","group_id":"g"}', False, None),
            (b'{"api":"Produce","request_id":"x","group_id":"g"}', True, Errors.INVALID_REQUEST),
            (b'{"api":"Heartbeat","request_id":"x"}', True, Errors.INVALID_GROUP_ID),
            (b'{"api":"Heartbeat","request_id":"x","group_id":7}', True, Errors.INVALID_GROUP_ID),
            (b'{"api":[1],"request_id":"x","group_id":"g"}', True, Errors.INVALID_REQUEST),
            (None, False, None),
        ],
    )
    def test_rejects(self, raw, has_response, code):
        r = route(b"k", raw)
        assert r.kind == "reject" and r.reason and r.reply_key == b"k"
        assert (r.response is not None) == has_response
        if has_response:
            response = json.loads(r.response)
            validate_response(response)
            assert response["error_code"] == code and response["request_id"] == "x"


def test_sync_error_response_keeps_the_sync_shape():
    ctx, state = stable_state()
    raw = json.dumps({"api": "SyncGroup", "request_id": "x", "group_id": "g", "member_id": "m"}).encode()
    (response,) = step_group("g", state, [raw], ctx.now_ms, CONFIG).responses
    response = json.loads(response)
    validate_response(response)
    assert response["assignment"] == "" and response["error_code"] == Errors.INVALID_REQUEST


def test_request_id_with_a_lone_surrogate_is_unreadable():
    ctx, state = stable_state()
    result = step_group("g", state, [b'{"api":"Heartbeat","group_id":"g","request_id":"\\ud800"}'], 0, CONFIG)
    assert result.responses == [] and len(result.dead_letters) == 1


def test_old_heartbeat_versions_ignore_the_instance_id():
    ctx = GroupContext()
    (a, b) = ctx.stable_group(2)
    (response,) = ctx.step({"api": "Heartbeat", "api_version": 2, "request_id": "x", "group_id": "g",
                            "generation_id": 1, "member_id": a, "group_instance_id": "not-mine"})
    assert response["error_code"] == Errors.NONE


def test_an_unexpected_failure_dead_letters_that_request_only_and_rolls_it_back(monkeypatch):
    """A handler bug must not leave half a change behind: the step is re-run without the failing request."""
    from state.runtime import coordinator

    ctx, state = stable_state()
    a, _ = list(ctx.group.members)
    real = coordinator._HANDLERS["OffsetCommit"]

    def commit_then_fail(group, req, env):
        real(group, req, env)
        raise RuntimeError("boom")

    monkeypatch.setitem(coordinator._HANDLERS, "OffsetCommit", commit_then_fail)
    commit = json.dumps({"api": "OffsetCommit", "request_id": "c", "group_id": "g", "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}]}).encode()
    heartbeat = json.dumps({"api": "Heartbeat", "request_id": "h", "group_id": "g", "generation_id": 1,
                            "member_id": a}).encode()
    result = step_group("g", state, [commit, heartbeat], ctx.now_ms, CONFIG)
    assert result.dead_letters == [(0, "internal error: RuntimeError: boom")]
    assert [json.loads(r)["request_id"] for r in result.responses] == ["h"]
    assert result.records == [] and result.stored(state).offsets is None


def test_unknown_timer_keys_in_a_stored_state_are_dropped():
    ctx, state = stable_state()
    doc = json.loads(state.metadata)
    doc["group"]["timers"].append(["from-the-future", 0])
    result = step_group("g", StoredGroup(json.dumps(doc).encode()), [], ctx.now_ms, CONFIG)
    assert b"from-the-future" not in result.metadata


@pytest.mark.parametrize("api,code,error", [
    ("OffsetCommit", Errors.MESSAGE_TOO_LARGE, Errors.INVALID_COMMIT_OFFSET_SIZE),
    ("TxnOffsetCommit", Errors.RECORD_LIST_TOO_LARGE, Errors.INVALID_COMMIT_OFFSET_SIZE),
    ("OffsetDelete", Errors.MESSAGE_TOO_LARGE, Errors.UNKNOWN_SERVER_ERROR),
    ("JoinGroup", Errors.INVALID_FETCH_SIZE, Errors.UNKNOWN_SERVER_ERROR),
    ("OffsetCommit", Errors.REQUEST_TIMED_OUT, Errors.COORDINATOR_NOT_AVAILABLE),
    ("Heartbeat", None, Errors.COORDINATOR_NOT_AVAILABLE),
])
def test_a_request_the_log_would_not_take_gets_kafka_s_error_for_that_failure(api, code, error):
    """A record too large fails on every retry: non-retriable errors; any other failure may pass: 15."""
    assert append_error(api, code) == error

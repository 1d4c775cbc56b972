"""DescribeGroups, DeleteGroups and ListGroups (the directory), after Kafka's describe/list/delete cases."""

from __future__ import annotations

import json

from state.batch import route
from state.views.directory import GroupDirectory
from state.errors import Errors
from tests.state.context import GroupContext, assignment, subscription
from tests.state.schemas import validate_response


class TestDescribeGroups:
    def test_missing_group_is_described_dead(self):
        response = GroupContext().describe()
        assert (response["error_code"], response["group_state"], response["protocol_type"],
                response["protocol_data"], response["members"]) == (Errors.NONE, "Dead", "", "", [])

    def test_stable_group_shows_protocol_metadata_and_assignments(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2)
        response = ctx.describe()
        assert response["group_state"] == "Stable" and response["protocol_data"] == "range"
        assert [m["member_id"] for m in response["members"]] == [a, b]
        assert response["members"][0]["member_metadata"] == subscription("t")
        assert response["members"][0]["member_assignment"] == assignment(("t", (0,)))

    def test_rebalancing_group_hides_metadata_and_protocol(self):
        ctx = GroupContext()
        a, b = ctx.stable_group(2)
        ctx.join(a)
        response = ctx.describe()
        assert response["group_state"] == "PreparingRebalance" and response["protocol_data"] == ""
        assert {m["member_metadata"] for m in response["members"]} == {""}
        assert {m["member_assignment"] for m in response["members"]} == {""}


class TestDeleteGroups:
    def test_only_empty_groups_can_be_deleted(self):
        ctx = GroupContext()
        a, = ctx.stable_group(1)
        (response,) = ctx.step({"api": "DeleteGroups", "request_id": "d", "group_id": "g"})
        assert response["error_code"] == Errors.NON_EMPTY_GROUP

    def test_missing_group_is_not_found(self):
        (response,) = GroupContext().step({"api": "DeleteGroups", "request_id": "d", "group_id": "g"})
        assert response["error_code"] == Errors.GROUP_ID_NOT_FOUND

    def test_delete_tombstones_offsets_and_group(self):
        ctx = GroupContext()
        ctx.commit({("t", 0): 1, ("t", 1): 2})
        (response,) = ctx.step({"api": "DeleteGroups", "request_id": "d", "group_id": "g"})
        assert response["error_code"] == Errors.NONE
        assert [v for _, v in ctx.last.records] == [None, None, None]
        assert ctx.last.metadata is None and ctx.last.next_deadline_ms is None
        assert ctx.describe()["group_state"] == "Dead"
        assert ctx.committed() == {}


def list_groups(directory: GroupDirectory, **filters) -> dict:
    response = json.loads(directory.answer(json.dumps({"api": "ListGroups", "request_id": "l", **filters}).encode()))
    validate_response(response)
    return response


class TestListGroups:
    def directory(self) -> GroupDirectory:
        directory = GroupDirectory()
        stable = GroupContext(group_id="stable")
        stable.stable_group(1)
        simple = GroupContext(group_id="simple")
        simple.commit({("t", 0): 1})
        rebalancing = GroupContext(group_id="rebalancing")
        a, b = rebalancing.stable_group(2)
        rebalancing.join(a)
        gone = GroupContext(group_id="gone")
        gone.commit({("t", 0): 1})
        gone.step({"api": "DeleteGroups", "request_id": "d", "group_id": "gone"})
        for ctx in (stable, simple, rebalancing, gone):
            for key, value in ctx.records:
                directory.apply(key, value)
        return directory

    def test_lists_every_live_group_with_state_and_type(self):
        response = list_groups(self.directory())
        assert [(g["group_id"], g["group_state"], g["protocol_type"]) for g in response["groups"]] == [
            ("rebalancing", "PreparingRebalance", "consumer"),
            ("simple", "Empty", ""),
            ("stable", "Stable", "consumer"),
        ]

    def test_counts_groups_by_state_for_the_metrics(self):
        assert self.directory().count_by_state() == {"Empty": 1, "PreparingRebalance": 1, "CompletingRebalance": 0,
                                                     "Stable": 1, "Dead": 0, "Assigning": 0, "Reconciling": 0}

    def test_states_filter_is_case_insensitive(self):
        response = list_groups(self.directory(), states_filter=["stable", "EMPTY"])
        assert [g["group_id"] for g in response["groups"]] == ["simple", "stable"]

    def test_types_filter_matches_classic_only(self):
        assert len(list_groups(self.directory(), types_filter=["Classic"])["groups"]) == 3
        assert list_groups(self.directory(), types_filter=["consumer"])["groups"] == []

    def test_route_sends_list_groups_to_the_directory_with_the_clients_key(self):
        r = route(b"my-reply-key", b'{"api":"ListGroups","request_id":"x"}')
        assert r.kind == "directory" and r.reply_key == b"my-reply-key"

    def test_directory_ignores_unreadable_records(self):
        directory = GroupDirectory()
        directory.apply(b"not json", b"{}")
        directory.apply(b'{"version":2,"group":"g"}', b"garbage")
        assert list_groups(directory)["groups"] == []

    def test_bad_list_groups_request_gets_an_error_response(self):
        response = json.loads(GroupDirectory().answer(b'{"api":"ListGroups","request_id":"x","states_filter":3}'))
        assert response["error_code"] == Errors.INVALID_REQUEST and response["request_id"] == "x"
        validate_response(response)


def test_malformed_list_groups_gets_an_error_response():
    response = json.loads(GroupDirectory().answer(b"{nope"))
    validate_response(response)
    assert response["error_code"] == Errors.INVALID_REQUEST and response["api"] == "ListGroups"

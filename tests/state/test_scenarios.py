"""Whole rebalances as tables of steps, in the manner of Kafka's GroupMetadataManagerTest.

Each step is (action, arguments, expected): the action runs through GroupContext, and `expected` lists the
(api, member alias, error code) of every response that step produced, in order, then optionally the group state
after it and the states named by the group metadata records it wrote. Aliases name members; a member's real id
is learnt from the MEMBER_ID_REQUIRED answer of its `new` step.
"""

from __future__ import annotations

import pytest

from state.errors import Errors
from tests.state.context import GroupContext, assignment, subscription

J, S, H, L, C = "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit"


class Scenario:
    def __init__(self, ctx: GroupContext) -> None:
        self.ctx = ctx
        self.ids: dict[str, str] = {}
        self.generation = 0

    def alias(self, member_id: str) -> str:
        return next((a for a, m in self.ids.items() if m == member_id), member_id)

    def run(self, action: str, args: dict) -> list[dict]:
        ctx = self.ctx
        member = self.ids.get(args.get("m", ""), "")
        instance = args.get("instance")
        if action == "new":
            (r,) = ctx.join(client_id=args["m"], session=args.get("session", 10_000))
            self.ids[args["m"]] = r["member_id"]
            return [r]
        if action == "static":
            responses = ctx.join(instance=instance, session=args.get("session", 10_000),
                                 protocols=args.get("protocols"))
            self.ids[args["m"]] = ctx.group.static_members[instance]
            return responses
        if action == "join":
            return ctx.join(member, instance=instance, session=args.get("session", 10_000),
                            protocols=args.get("protocols"))
        if action == "sync":
            plan = {self.ids[a]: assignment(("t", tuple(p))) for a, p in args.get("assign", {}).items()}
            return ctx.sync(member, args.get("gen", ctx.group.generation), plan, instance=instance)
        if action == "heartbeat":
            return ctx.heartbeat(member, args.get("gen", ctx.group.generation), instance=instance)
        if action == "leave":
            return ctx.leave((member, instance))
        if action == "commit":
            return ctx.commit({("t", 0): 1}, member_id=member, generation=args.get("gen", ctx.group.generation))
        if action == "sleep":
            return ctx.sleep(args["ms"])
        raise AssertionError(f"unknown action {action}")


SCENARIOS = {
    "two_members_join_sync_and_become_stable": [
        ("new", {"m": "a"}, [(J, "a", Errors.MEMBER_ID_REQUIRED)]),
        ("new", {"m": "b"}, [(J, "b", Errors.MEMBER_ID_REQUIRED)]),
        ("join", {"m": "a"}, [], "PreparingRebalance", ["PreparingRebalance"]),
        ("join", {"m": "b"}, []),
        ("sleep", {"ms": 3_000}, []),  # b joined during the delay: extended once
        ("sleep", {"ms": 3_000}, [(J, "a", Errors.NONE), (J, "b", Errors.NONE)], "CompletingRebalance",
         ["CompletingRebalance"]),
        ("sync", {"m": "b"}, []),
        ("sync", {"m": "a", "assign": {"a": [0], "b": [1]}}, [(S, "a", Errors.NONE), (S, "b", Errors.NONE)], "Stable",
         ["Stable"]),
        ("heartbeat", {"m": "b"}, [(H, "b", Errors.NONE)]),
    ],
    "leader_rejoin_rebalances_and_the_follower_completes_it": [
        ("new", {"m": "a"}, [(J, "a", Errors.MEMBER_ID_REQUIRED)]),
        ("join", {"m": "a"}, []),
        ("sleep", {"ms": 3_000}, [(J, "a", Errors.NONE)]),
        ("sync", {"m": "a", "assign": {"a": [0]}}, [(S, "a", Errors.NONE)], "Stable"),
        ("new", {"m": "b"}, [(J, "b", Errors.MEMBER_ID_REQUIRED)]),
        ("join", {"m": "b"}, [], "PreparingRebalance"),
        ("heartbeat", {"m": "a"}, [(H, "a", Errors.REBALANCE_IN_PROGRESS)]),
        ("join", {"m": "a"}, [(J, "a", Errors.NONE), (J, "b", Errors.NONE)], "CompletingRebalance"),
        ("commit", {"m": "a"}, [(C, "a", Errors.REBALANCE_IN_PROGRESS)]),
        ("sync", {"m": "a", "assign": {"a": [0], "b": [1]}}, [(S, "a", Errors.NONE)], "Stable"),
        ("sync", {"m": "b"}, [(S, "b", Errors.NONE)]),
    ],
    "silent_member_expires_and_the_rest_rebalance": [
        ("new", {"m": "a"}, [(J, "a", Errors.MEMBER_ID_REQUIRED)]),
        ("new", {"m": "b"}, [(J, "b", Errors.MEMBER_ID_REQUIRED)]),
        ("join", {"m": "a"}, []),
        ("join", {"m": "b"}, []),
        ("sleep", {"ms": 3_000}, []),
        ("sleep", {"ms": 3_000}, [(J, "a", Errors.NONE), (J, "b", Errors.NONE)]),
        ("sync", {"m": "b"}, []),
        ("sync", {"m": "a", "assign": {"a": [0], "b": [1]}}, [(S, "a", Errors.NONE), (S, "b", Errors.NONE)]),
        ("sleep", {"ms": 9_000}, []),
        ("heartbeat", {"m": "a"}, [(H, "a", Errors.NONE)]),
        ("sleep", {"ms": 1_000}, [], "PreparingRebalance", ["PreparingRebalance"]),  # b expired
        ("heartbeat", {"m": "a"}, [(H, "a", Errors.REBALANCE_IN_PROGRESS)]),
        ("join", {"m": "a"}, [(J, "a", Errors.NONE)], "CompletingRebalance"),
    ],
    "last_member_leaving_empties_the_group": [
        ("new", {"m": "a"}, [(J, "a", Errors.MEMBER_ID_REQUIRED)]),
        ("join", {"m": "a"}, []),
        ("sleep", {"ms": 3_000}, [(J, "a", Errors.NONE)]),
        ("sync", {"m": "a", "assign": {"a": [0]}}, [(S, "a", Errors.NONE)]),
        ("leave", {"m": "a"}, [(L, "", Errors.NONE)], "Empty", ["Empty"]),
        ("heartbeat", {"m": "a", "gen": 1}, [(H, "a", Errors.UNKNOWN_MEMBER_ID)]),
    ],
    "static_member_restart_keeps_its_assignment_without_rebalance": [
        ("static", {"m": "a", "instance": "i-a", "session": 30_000}, []),
        ("sleep", {"ms": 3_000}, [(J, "a", Errors.NONE)]),
        ("sync", {"m": "a", "instance": "i-a", "assign": {"a": [0, 1]}}, [(S, "a", Errors.NONE)], "Stable"),
        ("static", {"m": "a2", "instance": "i-a", "session": 30_000}, [(J, "a2", Errors.NONE)], "Stable", ["Stable"]),
        ("sync", {"m": "a2", "instance": "i-a", "gen": 1}, [(S, "a2", Errors.NONE)]),
        ("heartbeat", {"m": "a", "instance": "i-a", "gen": 1}, [(H, "a", Errors.FENCED_INSTANCE_ID)]),
    ],
    "follower_that_never_syncs_is_removed_by_the_pending_sync_timeout": [
        ("new", {"m": "a", "session": 60_000}, [(J, "a", Errors.MEMBER_ID_REQUIRED)]),
        ("new", {"m": "b", "session": 60_000}, [(J, "b", Errors.MEMBER_ID_REQUIRED)]),
        ("join", {"m": "a", "session": 60_000}, []),
        ("join", {"m": "b", "session": 60_000}, []),
        ("sleep", {"ms": 3_000}, []),
        ("sleep", {"ms": 3_000}, [(J, "a", Errors.NONE), (J, "b", Errors.NONE)]),
        ("sync", {"m": "a", "assign": {"a": [0], "b": [1]}}, [(S, "a", Errors.NONE)], "Stable"),
        ("sleep", {"ms": 30_000}, [], "PreparingRebalance"),  # rebalance timeout 30s: b removed
        ("heartbeat", {"m": "b", "gen": 1}, [(H, "b", Errors.UNKNOWN_MEMBER_ID)]),
    ],
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario(name, ctx):
    scenario = Scenario(ctx)
    for number, (action, args, expected, *after) in enumerate(SCENARIOS[name], 1):
        responses = scenario.run(action, args)
        got = [(r["api"], scenario.alias(r["member_id"]) if r["api"] == J else "", r["error_code"])
               for r in responses]
        want = [(api, alias if api == J else "", code) for api, alias, code in expected]
        assert got == want, f"step {number} {action} {args}"
        if after:
            assert ctx.group.state.value == after[0], f"step {number}: state"
        if len(after) > 1:
            assert [v["directory"]["group_state"] for v in ctx.record_values if v] == after[1], f"step {number}"

"""The retry rule of the gateway's own transaction calls (`gateway.upstream.routes`), as Kafka's Java client's
TransactionManager: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and a broken connection look the coordinator up
again and send again, COORDINATOR_LOAD_IN_PROGRESS and CONCURRENT_TRANSACTIONS send again, anything else is the
answer; a write's NOT_LEADER_OR_FOLLOWER looks the leader up again, a write's broken connection is not sent again.
The attempts are scripted answers (the broker side is tests/gateway/upstream/test_transactions.py on tansu)."""

from __future__ import annotations

import asyncio

import pytest

from gateway.upstream.routes import (COORDINATOR_RULE, LEADER_RULE, LookupFailed, Step, next_step, retried)
from state.api import Errors


class Script:
    """Answers in order: an int is the upstream's error code, an exception is raised."""

    def __init__(self, *answers) -> None:
        self.answers = list(answers)
        self.attempts = 0
        self.looked_up_again = 0

    async def attempt(self) -> int:
        self.attempts += 1
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def look_up_again(self) -> None:
        self.looked_up_again += 1


def run(rule, script: Script, budget_s: float = 20.0) -> int:
    return asyncio.run(retried(rule, script.attempt, script.look_up_again, budget_s))


def test_the_coordinator_rule_is_the_java_clients():
    assert next_step(COORDINATOR_RULE, Errors.NOT_COORDINATOR) is Step.LOOK_UP_AGAIN
    assert next_step(COORDINATOR_RULE, Errors.COORDINATOR_NOT_AVAILABLE) is Step.LOOK_UP_AGAIN
    assert next_step(COORDINATOR_RULE, Errors.COORDINATOR_LOAD_IN_PROGRESS) is Step.RETRY
    assert next_step(COORDINATOR_RULE, Errors.CONCURRENT_TRANSACTIONS) is Step.RETRY
    for code in (Errors.NONE, Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH,
                 Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Errors.INVALID_PRODUCER_ID_MAPPING):
        assert next_step(COORDINATOR_RULE, code) is Step.DONE


def test_a_moved_coordinator_is_looked_up_again_until_it_answers():
    script = Script(Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, ConnectionError("reset"),
                    LookupFailed("transaction coordinator of 'tx'", Errors.COORDINATOR_NOT_AVAILABLE),
                    Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.CONCURRENT_TRANSACTIONS, Errors.NONE)
    assert run(COORDINATOR_RULE, script) == Errors.NONE
    assert script.attempts == 7
    assert script.looked_up_again == 4  # not for the two that the same coordinator answers again


def test_a_refusal_is_the_answer_at_once():
    script = Script(Errors.PRODUCER_FENCED, Errors.NONE)
    assert run(COORDINATOR_RULE, script) == Errors.PRODUCER_FENCED
    assert (script.attempts, script.looked_up_again) == (1, 0)


def test_a_lookup_refused_for_good_is_the_answer():
    script = Script(LookupFailed("transaction coordinator of 'tx'", Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    assert run(COORDINATOR_RULE, script) == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert script.attempts == 1


def test_within_its_budget_the_last_answer_is_given():
    script = Script(*[Errors.NOT_COORDINATOR] * 100)
    assert run(COORDINATOR_RULE, script, budget_s=0.3) == Errors.NOT_COORDINATOR
    assert 1 <= script.attempts < 100


def test_within_its_budget_a_broken_connection_is_raised():
    script = Script(*[ConnectionError("refused")] * 100)
    with pytest.raises(ConnectionError):
        run(COORDINATOR_RULE, script, budget_s=0.3)
    assert script.looked_up_again == script.attempts


def test_a_write_goes_to_the_new_leader_but_is_not_sent_again_on_a_broken_connection():
    script = Script(Errors.NOT_LEADER_OR_FOLLOWER, Errors.LEADER_NOT_AVAILABLE, Errors.NONE)
    assert run(LEADER_RULE, script) == Errors.NONE
    assert (script.attempts, script.looked_up_again) == (3, 2)
    broken = Script(ConnectionError("reset"), Errors.NONE)
    with pytest.raises(ConnectionError):
        run(LEADER_RULE, broken)
    assert (broken.attempts, broken.looked_up_again) == (1, 1)  # looked up again next time
    assert run(LEADER_RULE, Script(Errors.INVALID_PRODUCER_EPOCH)) == Errors.INVALID_PRODUCER_EPOCH

"""The lease's lifecycle and its reading of the lease topic (`streaming.recovery.lease`), without a broker: which
moves the status may make, and when the lease is free, as plain functions of what was read and when. The lease on
a real broker, with real processes and the kill -9 drill, is tests/streaming/test_lease.py."""

from __future__ import annotations

import itertools

import pytest

from streaming.recovery.lease import (
    HELD,
    PASSED,
    RELEASED,
    TRANSITIONS,
    Deadline,
    LeaseError,
    LeaseLog,
    LeaseRecord,
    LeaseStatus,
    LeaseTransitionError,
    _once,
    check_transition,
)

WATCHING, TAKING, HOLDING, LOST, CLOSED = (LeaseStatus.WATCHING, LeaseStatus.TAKING, LeaseStatus.HOLDING,
                                           LeaseStatus.LOST, LeaseStatus.CLOSED)

# --- the lifecycle -------------------------------------------------------------------------------------------------

LEGAL = [
    (WATCHING, TAKING),  # the lease is free: fence the earlier holders
    (WATCHING, CLOSED),  # a standby told to stop
    (TAKING, HOLDING),  # this driver's record is written
    (TAKING, WATCHING),  # another driver got in first: stand by again
    (TAKING, LOST),  # the topic became unreadable while taking
    (TAKING, CLOSED),  # interrupted while taking
    (HOLDING, LOST),  # fenced, overtaken, not renewed in time, or the topic unreadable
    (HOLDING, CLOSED),  # the query stopped: released, or left to time out
    (LOST, CLOSED),  # the driver stops
]


def test_the_legal_moves_are_exactly_these():
    assert sorted((a.value, b.value) for a, targets in TRANSITIONS.items() for b in targets) == \
        sorted((a.value, b.value) for a, b in LEGAL)


@pytest.mark.parametrize("current, to", [pair for pair in itertools.product(LeaseStatus, repeat=2)
                                         if pair not in LEGAL], ids=lambda s: s.value)
def test_every_other_move_is_refused(current, to):
    with pytest.raises(LeaseTransitionError, match=f"that is {current.value} cannot become {to.value}"):
        check_transition(current, to)


def test_a_lost_lease_is_never_held_again_and_a_closed_one_goes_nowhere():
    assert TRANSITIONS[LOST] == {CLOSED} and TRANSITIONS[CLOSED] == set()
    assert issubclass(LeaseTransitionError, LeaseError)


# --- timing as deadlines -------------------------------------------------------------------------------------------


def test_a_deadline_is_a_moment_asked_whether_it_passed_and_how_long_is_left():
    deadline = Deadline.after(2.0, now=10.0)
    assert deadline.at == 12.0
    assert (deadline.remaining(now=11.5), deadline.expired(now=11.5)) == (0.5, False)
    assert (deadline.remaining(now=12.0), deadline.expired(now=12.0)) == (0.0, True)
    assert PASSED.expired(now=-1e9) and PASSED.remaining(now=0.0) == 0.0


# --- reading the lease topic ---------------------------------------------------------------------------------------

ME, OTHER = "host/1/me", "host/2/other"


def log_at(watching_since: float = 100.0, timeout_s: float = 2.0) -> LeaseLog:
    return LeaseLog(ME, timeout_s, heard_at=watching_since)


def test_with_nothing_read_the_lease_is_free_one_timeout_after_watching_began():
    """A holder that renews shows itself within that time."""
    assert log_at(100.0).free_at() == Deadline(102.0)


def test_a_holders_record_makes_the_lease_free_one_timeout_after_it_was_read_the_longer_timeout_winning():
    log = log_at(100.0, timeout_s=2.0)
    assert log.observe(LeaseRecord(OTHER, 3, HELD, timeout_ms=5_000), now=101.0) is True
    assert log.free_at() == log.silent_until() == Deadline(106.0)  # it promised 5 s: longer than this driver's 2 s
    log.observe(LeaseRecord(OTHER, 3, HELD, timeout_ms=1_000), now=103.0)
    assert log.free_at() == Deadline(105.0)  # its 1 s is shorter than this driver's 2 s


def test_a_release_frees_the_lease_at_once_but_only_as_the_latest_word():
    log = log_at()
    log.observe(LeaseRecord(OTHER, 3, RELEASED, 2_000), now=100.5)
    assert log.free_at() == Deadline(102.5)  # still reading the history: a later record may follow it
    log.caught_up = True
    assert log.free_at() is PASSED
    log.observe(LeaseRecord("host/3/third", 4, HELD, 2_000), now=101.0)
    assert log.free_at() == Deadline(103.0)


def test_another_driver_holds_the_lease_only_when_its_record_was_read_live():
    log = log_at()
    log.observe(LeaseRecord(OTHER, 3, HELD, 2_000), now=100.1)
    assert not log.held_elsewhere()  # from the history: maybe a holder long gone
    log.caught_up = True
    log.observe(LeaseRecord(OTHER, 3, HELD, 2_000), now=100.9)
    assert log.held_elsewhere()
    log.observe(LeaseRecord(OTHER, 3, RELEASED, 2_000), now=101.0)
    assert not log.held_elsewhere()


def test_this_drivers_own_records_count_for_its_epoch_not_as_anothers():
    log = log_at(100.0)
    assert log.observe(LeaseRecord(ME, 7, HELD, 2_000), now=100.5) is False
    assert (log.own_epoch, log.epoch_seen, log.latest, log.heard_at) == (7, 7, None, 100.0)
    log.observe(LeaseRecord(OTHER, 9, HELD, 2_000), now=101.0)
    assert (log.own_epoch, log.epoch_seen) == (7, 9)


def test_an_unreadable_topic_is_an_error_to_whoever_asks():
    log = log_at()
    log.check_readable("lease-topic")
    log.read_error = OSError("broker gone")
    with pytest.raises(LeaseError, match="cannot read the lease topic lease-topic"):
        log.check_readable("lease-topic")


def test_the_driver_hears_of_its_loss_once_whichever_thread_tells_it_first():
    heard = []
    tell = _once(heard.append)
    tell("fenced")
    tell("not renewed")
    assert heard == ["fenced"]

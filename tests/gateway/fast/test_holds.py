"""The hold as every process of a gateway sees it (`gateway.fast.holds`): what one process forwards holds the group on the
others, until a follower round begun after the answer; a restarted process holds nothing it held before."""

from __future__ import annotations

from gateway.fast.holds import Holds, table_bytes


def test_a_group_held_by_one_process_is_held_on_every_process_until_a_round_begun_after_the_answer(tmp_path):
    path = tmp_path / "holds"
    path.write_bytes(bytes(table_bytes(2)))
    first, second = Holds(path, rows=2, row=0), Holds(path, rows=2, row=1)
    assert not second.holds("g", read_as_of=float("-inf"))
    first.forwarding("g")
    first.forwarding("g")
    assert second.holds("g", read_as_of=100.0) and first.holds("g", read_as_of=100.0)
    assert not second.holds("another group", read_as_of=float("-inf"))
    first.answered("g", now=10.0)
    assert second.holds("g", read_as_of=100.0)  # one of the two is still forwarded
    first.answered("g", now=12.0)
    assert second.holds("g", read_as_of=11.0)  # the round that began at 11 may not hold the answering step's view
    assert not second.holds("g", read_as_of=12.5)
    first.forwarding("g")
    restarted = Holds(path, rows=2, row=0)  # a killed process, started again: what it held is gone
    assert not second.holds("g", read_as_of=12.5) and not restarted.holds("g", read_as_of=12.5)


def test_one_process_alone_holds_in_its_own_memory():
    holds = Holds()
    holds.forwarding("g")
    assert holds.holds("g", read_as_of=1.0)
    holds.answered("g", now=2.0)
    assert holds.holds("g", read_as_of=1.5) and not holds.holds("g", read_as_of=2.5)

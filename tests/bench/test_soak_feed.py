"""bench.soak's producer feed (`bench.soak.top_up`): how many records it adds for a committer, and when."""

from bench.soak import AHEAD, top_up


def test_the_chunks_feed_waits_until_half_is_taken_then_refills_in_one_go():
    produced = AHEAD
    assert top_up("chunks", 0, produced) == 0
    assert top_up("chunks", AHEAD // 2 - 1, produced) == 0
    assert top_up("chunks", AHEAD // 2, produced) == AHEAD // 2
    assert top_up("chunks", AHEAD, produced) == AHEAD


def test_the_trickle_feed_adds_whatever_was_taken():
    assert top_up("trickle", 0, AHEAD) == 0
    assert top_up("trickle", 1, AHEAD) == 1
    assert top_up("trickle", 2, AHEAD) == 2


def test_a_partition_is_never_fed_beyond_ahead():
    for feed in ("chunks", "trickle"):
        assert top_up(feed, 0, 0) == AHEAD
        assert top_up(feed, 10, AHEAD + 10) == 0

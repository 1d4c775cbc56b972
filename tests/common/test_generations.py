"""The requests topic's generations (`common.generations`): names, stream partitions, a group's log end."""

from __future__ import annotations

from common.generations import STRIDE, generation_of, generations, group_log_end, split, stream_partition, topic_of


def test_generation_zero_is_the_topic_itself_and_the_others_are_numbered_after_it():
    assert topic_of("requests", 0) == "requests"
    assert topic_of("requests", 3) == "requests.3"
    assert [generation_of("requests", t) for t in ("requests", "requests.3", "requests.03", "requests.x",
                                                   "requests2", "other.1")] == [0, 3, None, None, None, None]
    assert generations("requests", ["requests.2", "views", "requests", "requests.10"]) == [0, 2, 10]


def test_generation_zero_keeps_the_partition_numbers_and_later_ones_sort_after():
    assert stream_partition(0, 1) == 1
    assert split(stream_partition(4, 1)) == (4, 1)
    assert sorted([stream_partition(1, 0), stream_partition(0, 1), stream_partition(0, 0)]) == [0, 1, STRIDE]


def test_a_groups_log_end_is_unknown_while_a_later_generation_of_its_partition_holds_records():
    ends = {0: 10, 1: 7, stream_partition(1, 0): 0, stream_partition(1, 1): 3}
    assert group_log_end(ends, 0) == 10  # the later generation's partition 0 is empty
    assert group_log_end(ends, 1) is None  # its partition 1 has records: perhaps the group's
    assert group_log_end(ends, stream_partition(1, 1)) == 3

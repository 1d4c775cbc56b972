"""`admin.reset`'s parsers, which need nothing running: ISO-8601 durations as Java's `Duration.parse` reads them,
and the CSV reset plans of `--export` / `--from-file` in Kafka's two layouts."""

import pytest

from admin.reset import ResetError, duration_ms, read_plan, write_plan


@pytest.mark.parametrize("text, ms", [
    ("PT15M", 900_000),
    ("P1DT12H", 129_600_000),
    ("pt1h", 3_600_000),
    ("PT0.5S", 500),
    ("PT1,25S", 1_250),
    ("-PT6H", -21_600_000),
    ("PT-6H3M", -21_420_000),
    ("PT-0.5S", -500),
    ("P2D", 172_800_000),
])
def test_durations_read_as_java_reads_them(text, ms):
    assert duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "P", "PT", "P1DT", "15M", "PT1.5M", "P1W", "PT1H2"])
def test_a_malformed_duration_is_refused_with_its_text(text):
    with pytest.raises(ResetError, match="is not an ISO-8601 duration"):
        duration_ms(text)


def test_a_one_group_plan_has_three_columns_and_reads_back():
    rows = [("g", "orders", 0, 5), ("g", "orders", 1, 7)]
    text = write_plan(rows, single_group=True)
    assert text == "orders,0,5\norders,1,7\n"
    assert read_plan(text, ["g"]) == {"g": {("orders", 0): 5, ("orders", 1): 7}}


def test_a_many_group_plan_names_each_row_s_group():
    rows = [("a", "orders", 0, 5), ("b", "orders", 0, 9)]
    text = write_plan(rows, single_group=False)
    assert text == "a,orders,0,5\nb,orders,0,9\n"
    assert read_plan(text, []) == {"a": {("orders", 0): 5}, "b": {("orders", 0): 9}}
    assert read_plan(text + "\n", ["a", "b"]) == read_plan(text, [])  # blank lines are skipped


@pytest.mark.parametrize("text, groups, message", [
    ("orders,0,5\n", [], r"line 1: 'orders,0,5' is not group,topic,partition,offset"),
    ("orders,0,5\norders,1\n", ["g"], r"line 2: 'orders,1' is not topic,partition,offset"),
    ("g,orders,x,5\n", [], "partition and offset must be integers"),
])
def test_a_malformed_plan_names_its_line(text, groups, message):
    with pytest.raises(ResetError, match=message):
        read_plan(text, groups)

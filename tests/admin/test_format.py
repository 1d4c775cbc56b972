"""The admin CLI's rows and layout, from described groups: Kafka's columns, `-` for missing values, LAG."""

import base64
import io
import json

from admin import history as hist
from admin.cli import Output, member_rows, offset_rows
from admin.groups import GroupDescription, Member
from assignors import consumer_protocol as cp


def _group(*members: Member, state: str = "Stable") -> GroupDescription:
    return GroupDescription("g", state, "consumer", "range", members)


def test_offsets_rows_join_commits_owners_and_log_ends():
    desc = _group(Member("c1-1", None, "c1", "/10.0.0.1", (("t", 0),)), Member("c2-1", None, "c2", "/10.0.0.2", ()))
    rows = offset_rows(desc, committed={("t", 0): 5, ("t", 1): 7}, log_end={("t", 0): 9, ("t", 1): 7})
    assert rows == [
        ("g", "t", 0, 5, 9, 4, "c1-1", "/10.0.0.1", "c1"),
        ("g", "t", 1, 7, 7, 0, None, None, None),
        ("g", None, None, None, None, None, "c2-1", "/10.0.0.2", "c2"),
    ]


def test_lag_is_missing_without_a_committed_offset():
    desc = _group(Member("c1-1", None, "c1", "/h", (("t", 0),)))
    assert offset_rows(desc, {}, {("t", 0): 3}) == [("g", "t", 0, None, 3, None, "c1-1", "/h", "c1")]


def test_members_show_instance_ids_only_when_some_member_is_static():
    dynamic = _group(Member("c1-1", None, "c1", "/h", (("t", 0), ("t", 1), ("u", 0))))
    columns, rows = member_rows(dynamic, verbose=True)
    assert columns == ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT")
    assert rows == [("g", "c1-1", "/h", "c1", 3, "t(0,1), u(0)")]
    static = _group(Member("i1-1", "i1", "c1", "/h", ()), Member("c2-1", None, "c2", "/h", ()))
    columns, rows = member_rows(static, verbose=False)
    assert columns == ("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
    assert rows[1] == ("g", "c2-1", None, "/h", "c2", 0)


def test_table_layout_is_kafkas():
    out = io.StringIO()
    Output(out, io.StringIO(), json=False).table(("GROUP", "PARTITION", "LAG"), [("g", 0, None)], {"PARTITION": 10})
    assert out.getvalue() == "\nGROUP PARTITION  LAG\ng     0          -\n"


def test_json_output_uses_snake_case_keys():
    out = io.StringIO()
    Output(out, io.StringIO(), json=True).records(("GROUP", "CURRENT-OFFSET", "#MEMBERS"), [("g", None, 2)])
    assert json.loads(out.getvalue()) == [{"group": "g", "current_offset": None, "num_members": 2}]


def _value(generation, members, state="Stable"):
    return json.dumps({
        "protocol_type": "consumer", "generation": generation, "protocol": "range", "leader": "m1",
        "current_state_timestamp": 0,
        "members": [{"member_id": m, "group_instance_id": None, "client_id": "c", "client_host": "/h", "rebalance_timeout": 300000, "session_timeout": 45000,
                     "subscription": "", "assignment": base64.b64encode(cp.encode_assignment(
                         cp.Assignment(cp.group_partitions(parts)))).decode()} for m, parts in members],
        "directory": {"group_state": state, "protocol_type": "consumer", "member_count": len(members)},
    }).encode()


def test_history_keeps_distinct_snapshots_of_one_group():
    key = json.dumps({"version": 2, "group": "g"}).encode()
    other = json.dumps({"version": 2, "group": "h"}).encode()
    offset = json.dumps({"version": 1, "group": "g", "topic": "t", "partition": 0}).encode()
    records = [
        (key, _value(1, [("m1", [("t", 0), ("t", 1)])]), 1000),
        (offset, b"{}", 1100),
        (key, _value(1, [("m1", [("t", 0), ("t", 1)])]), 1200),  # unchanged: dropped
        (other, _value(5, []), 1300),
        (key, _value(2, [("m1", [("t", 0)]), ("m2", [("t", 1)])]), 2000),
        (key, None, 3000),
    ]
    snaps = hist.history(records, "g")
    assert [(s.timestamp_ms, s.generation, s.state) for s in snaps] == [(1000, 1, "Stable"), (2000, 2, "Stable"),
                                                                        (3000, 2, "Dead")]
    assert snaps[1].members[1].assignment == (("t", 1),)


def test_pictures_are_written(tmp_path):
    key = json.dumps({"version": 2, "group": "g"}).encode()
    snaps = hist.history([(key, _value(1, [("m1", [("t", 0)])]), 1000),
                          (key, _value(2, [("m1", [("t", 0)]), ("m2", [("t", 1)])]), 4000)], "g")
    hist.render_png(snaps, "g", str(tmp_path / "g.png"))
    hist.render_html(snaps, "g", str(tmp_path / "g.html"))
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"
    assert "m2" in (tmp_path / "g.html").read_text()


def test_a_member_holding_the_same_partitions_over_several_snapshots_is_one_span():
    key = json.dumps({"version": 2, "group": "g"}).encode()
    snaps = hist.history([(key, _value(1, [("m1", [("t", 0)])]), 1000),
                          (key, _value(1, [("m1", [("t", 0)])], state="PreparingRebalance"), 2000),
                          (key, _value(2, [("m1", [("t", 0)]), ("m2", [("t", 1)])]), 4000)], "g")
    assert hist.segments(snaps, 5000) == [
        ("m1", 1000, 4000, 1, (("t", 0),)),
        ("m1", 4000, 5000, 2, (("t", 0),)),
        ("m2", 4000, 5000, 2, (("t", 1),)),
    ]

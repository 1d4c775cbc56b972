"""The order in which a state call's output reaches Kafka (`streaming.stateful.produce`). Pure: no Spark, no broker."""

from __future__ import annotations

from streaming.kafka_io.sink import OutputRow
from streaming.stateful import produce


class Recorded:
    """What the producer was asked to do, in order: the sinks of each send, and each flush."""

    def __init__(self) -> None:
        self.calls: list = []

    def send(self, rows) -> None:
        self.calls.append([row.sink for row in rows])

    def flush(self) -> None:
        self.calls.append("flush")


def row(sink: str) -> OutputRow:
    return OutputRow(sink, b"g", b"{}")


def test_a_view_is_acknowledged_before_the_answers_of_its_step_are_sent():
    output = Recorded()
    produce(output, [row("view"), row("response"), row("record"), row("view"), row("response")], flush=False)
    assert output.calls == [["view", "view"], "flush", ["response", "record", "response"]]


def test_output_without_a_view_or_without_an_answer_is_sent_at_once():
    for out in ([row("response"), row("record")], [row("view"), row("record"), row("deadline")]):
        output = Recorded()
        produce(output, out, flush=True)
        assert output.calls == [[r.sink for r in out], "flush"]


def test_a_call_that_is_not_flushed_leaves_its_answers_to_the_tasks_flush():
    output = Recorded()
    produce(output, [row("view"), row("response")], flush=False)
    assert output.calls[-1] == ["response"]

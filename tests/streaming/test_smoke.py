import pytest

from state.errors import Errors

pytestmark = [pytest.mark.spark, pytest.mark.broker]


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_a_request_gets_a_response_and_a_poison_record_a_dead_letter_with_either_kafka_client(coordinator, client):
    """`kafka.client`: the source reads and the state task produces with librdkafka or kafka-python."""
    run = coordinator({"kafka.client": client})
    response = run.request({"api": "Heartbeat", "group_id": "g1", "member_id": "m", "generation_id": 1})
    # Kafka's answer to a heartbeat for a group it does not know: the member is unknown.
    assert (response["group_id"], response["error_code"]) == ("g1", Errors.UNKNOWN_MEMBER_ID)
    run.send_raw(b"not json", key=b"g1")
    [letter] = run.wait(lambda: run.read(run.topics.dead_letters) or None)
    assert letter.value == b"not json" and dict(letter.headers)["reason"]

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def test_a_request_gets_a_response(coordinator):
    run = coordinator()
    response = run.request({"api": "Heartbeat", "group_id": "g1", "member_id": "m", "generation_id": 1})
    assert response["group_id"] == "g1"

"""kafka-python message classes for the APIs it has none of: KIP-848's ConsumerGroupHeartbeat and
ConsumerGroupDescribe, KIP-932's share-group APIs, built by kafka-python's own loader from Kafka's definitions
(`gateway.upstream.kafka_messages`), so they encode, decode and convert exactly as kafka-python's classes for the
classic group APIs do."""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from gateway.upstream import kafka_messages


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=kafka_messages):
    pass


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=kafka_messages):
    pass


class ConsumerGroupDescribeRequest(ApiMessage, load_json=kafka_messages):
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=kafka_messages):
    pass


class ShareGroupHeartbeatRequest(ApiMessage, load_json=kafka_messages):
    pass


class ShareGroupHeartbeatResponse(ApiMessage, load_json=kafka_messages):
    pass


class ShareGroupDescribeRequest(ApiMessage, load_json=kafka_messages):
    pass


class ShareGroupDescribeResponse(ApiMessage, load_json=kafka_messages):
    pass


class ShareFetchRequest(ApiMessage, load_json=kafka_messages):
    pass


class ShareFetchResponse(ApiMessage, load_json=kafka_messages):
    pass


class ShareAcknowledgeRequest(ApiMessage, load_json=kafka_messages):
    pass


class ShareAcknowledgeResponse(ApiMessage, load_json=kafka_messages):
    pass


class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=kafka_messages):
    pass


class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=kafka_messages):
    pass


class AlterShareGroupOffsetsRequest(ApiMessage, load_json=kafka_messages):
    pass


class AlterShareGroupOffsetsResponse(ApiMessage, load_json=kafka_messages):
    pass


class DeleteShareGroupOffsetsRequest(ApiMessage, load_json=kafka_messages):
    pass


class DeleteShareGroupOffsetsResponse(ApiMessage, load_json=kafka_messages):
    pass

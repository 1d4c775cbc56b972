"""Kafka's message definitions (its `clients/src/main/resources/common/message/*.json` format) for the APIs
kafka-python 3.0.12 ships none of: KIP-848's ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69), v0-1;
KIP-932's ShareGroupHeartbeat (76), ShareGroupDescribe (77), ShareFetch (78), ShareAcknowledge (79) and
Describe/Alter/DeleteShareGroupOffsets (90-92), at Kafka 4.2's versions.

They are data: `gateway.upstream.kafka_apis` builds kafka-python message classes from them (kafka-python's own loader,
the `load_json` class keyword), so the gateway encodes and decodes these APIs with the same schema-driven code as the
classic ones, and `tests/schemas/test_kafka_definitions.py` checks `schemas.consumer_group` against them. Field
names, types, versions, nullability and defaults are Kafka's; the descriptions are ours.
"""

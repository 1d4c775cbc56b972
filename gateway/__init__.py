"""The Kafka wire-protocol gateway: unmodified Kafka clients use the coordinator through it (docs/gateway.md)."""

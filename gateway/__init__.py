"""The Kafka wire-protocol gateway: unmodified Kafka clients use the coordinator through it (docs/gateway.md).

By wing: `front` (the listeners, one client connection, the command), `protocol` (Kafka's framing and strict
decoding, below every other wing), `fast` (what is answered from the groups' views), `security` (SASL, SCRAM, ACLs),
`upstream` (the Kafka cluster and the coordinator's control topic) and `share` (share groups' fetches and the
share-partitions held here)."""

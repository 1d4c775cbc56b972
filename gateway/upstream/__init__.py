"""The upstream: the gateway's two peers behind it. The Kafka cluster (one connection per broker, requests forwarded
byte for byte, Produce and Fetch peeked at for their topics) and the coordinator (group requests as control JSON,
written to the requests topic, answers awaited)."""

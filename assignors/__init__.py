"""Partition assignors (client-side and KIP-848 server-side), pure functions, and Kafka's ConsumerProtocol codec."""

"""KIP-848's server-side assignors, which the coordinator runs for consumer groups: `uniform` (Kafka 4.x's
UniformAssignor, its homogeneous and heterogeneous builders) and the topic orders they depend on."""

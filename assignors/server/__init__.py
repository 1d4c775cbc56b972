"""The server-side assignors, which the coordinator runs: KIP-848's `uniform` for consumer groups (Kafka 4.x's
UniformAssignor, its homogeneous and heterogeneous builders, and the topic orders they depend on) and KIP-932's
`simple` for share groups."""

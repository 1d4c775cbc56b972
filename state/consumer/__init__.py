"""KIP-848 consumer groups: Kafka 4.x's `consumer` group protocol, as a pure core beside the classic groups.

What is where (each module says why in its own docstring):

- `topics`: the cluster's topics as the group sees them (the `TopicMetadata` request), the metadata hash;
- `member`: a member, its epochs and reconciliation state (Kafka's ConsumerGroupMember, MemberState);
- `reconciliation`: one member's next assignment (Kafka's CurrentAssignmentBuilder);
- `target`: the group's target assignment from a server-side assignor (Kafka's TargetAssignmentBuilder);
- `group`: the group as its records leave it, and the rules read from it (Kafka's ConsumerGroup);
- `replay`: the only way a group changes, live and when loading (Kafka's GroupMetadataManager.replay);
- `regex`: regular-expression subscriptions, compiled and matched as RE2 does;
- `heartbeat`: ConsumerGroupHeartbeat, its timers (session, revocation, regex refresh) and their expiry;
- `describe`: ConsumerGroupDescribe;
- `offsets`: what OffsetCommit and OffsetFetch must check for a consumer group (member epochs).

Handlers validate and return a `state.context.CoordinatorResult` (records, a response, timer operations); they never
change a group. Replaying the records is what changes it, as in Kafka's group coordinator. Nothing here reads a
clock. What the consumer group shares with the classic one is the core's: its records' constructors and the one
`RecordKey` union (`state.records`, `schemas.messages`), its settings (`state.config.CoordinatorConfig`, Kafka's
`group.consumer.*`), its timer keys and operations (`state.timers`).
"""

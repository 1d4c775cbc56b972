"""KIP-848 consumer groups: Kafka 4.x's `consumer` group protocol, as a pure core beside the classic groups.

What is where (each module says why in its own docstring):

- `group`: the group and its members as their records leave them, and the rules read from them (Kafka's
  ConsumerGroup; a member, its epochs and reconciliation state: ConsumerGroupMember, MemberState);
- `replay`: the only way a group changes, live and when loading (Kafka's GroupMetadataManager.replay), and
  `then`, how its handlers compose;
- `records`: the records it writes (Kafka's record types 3-8 and 16) and their constructors;
- `stored`: the group as the shell stores it (its records as compaction leaves them);
- `handlers`: the consumer group's requests, timers and load in the core's runtime;
- `heartbeat`: ConsumerGroupHeartbeat, its timers (session, revocation, regex refresh) and their expiry, and the
  heartbeat interval a heartbeat is told;
- `describe`: ConsumerGroupDescribe;
- `view`: the view a gateway answers steady heartbeats, commits and fetches from (`state.views`);
- `offsets`: what OffsetCommit and OffsetFetch must check for a consumer group (member epochs);
- `assignment/`: the group's target assignment and each member's reconciliation towards it;
- `migration/`: members of the classic protocol in a consumer group, and the conversions between the protocols.

The cluster's topics and regular-expression subscriptions are shared (`state.topics`).

Handlers validate and return a `state.handling.step.CoordinatorResult` (records, a response, timer operations); they never
change a group. Replaying the records is what changes it, as in Kafka's group coordinator. Nothing here reads a
clock. What the consumer group shares with the classic one is the core's: its records' constructors and the one
`RecordKey` union (`state.records`, `schemas.messages`), its settings (`state.config.CoordinatorConfig`, Kafka's
`group.consumer.*`), its timer keys and operations (`state.handling.timers`).
"""

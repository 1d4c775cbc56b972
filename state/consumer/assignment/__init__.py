"""A consumer group's assignments: the group's target (Kafka's TargetAssignmentBuilder, `target`) and one member's
next assignment towards it (Kafka's CurrentAssignmentBuilder, `reconciliation`)."""

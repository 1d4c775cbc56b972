"""The classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, as Kafka's classic group tests."""

"""The fast answers: what the gateway answers itself from the groups' views (heartbeats, commits, fetches) and
JoinGroup's member-id round, always by the core's rules (docs/gateway.md, "Fast answers")."""

"""Client library: group members and consumers that talk to the coordinator over the control topic."""

"""Security: SASL (PLAIN, SCRAM) on the listeners, Kafka's ACLs and the checks of every request against them, the
ACL and credential management APIs, the compacted topics that hold both, and the security options of the command."""

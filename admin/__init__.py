"""Admin CLI: the kafka-consumer-groups.sh of this system."""

"""The front door: the listeners, one client connection read and answered in order, Kafka's framing, the versions
told in ApiVersions, and the command that starts it all (`coordinator gateway`, `python -m gateway`)."""

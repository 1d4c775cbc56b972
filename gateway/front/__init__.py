"""The front door: the listeners, one client connection read and answered in order, the versions told in
ApiVersions, and the command that starts it all (`coordinator gateway`, `python -m gateway`); Kafka's framing is
`gateway.protocol`'s, shared with the other wings."""

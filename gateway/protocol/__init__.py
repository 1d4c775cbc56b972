"""Kafka's protocol bytes, as every wing of the gateway reads and writes them: the framing (`frames`: a size, then
the message) and the strict decoding that refuses what Kafka's request parser refuses (`strict`). Below the front
door, the upstream, security and share groups alike."""

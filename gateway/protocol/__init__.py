"""Kafka's protocol bytes, as every wing of the gateway reads and writes them: the framing (`frames`: a size, then
the message), the strict decoding that refuses what Kafka's request parser refuses (`strict`), and the record
batches of a fetched log (`batches`). Below the front
door, the upstream, security and share groups alike."""

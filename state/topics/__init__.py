"""The cluster's topics as the groups' server-side assignors see them.

- `image`: the topics of a state bucket (`TopicMetadata` requests), their ids and the metadata hash (KIP-1101);
- `regex`: regular-expression subscriptions, compiled and matched as RE2 does.
"""

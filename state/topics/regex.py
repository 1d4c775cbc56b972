"""Regular-expression subscriptions (ConsumerGroupHeartbeat v1's `SubscribedTopicRegex`), as Kafka runs them.

Kafka compiles a member's expression with Google's RE2/J and matches it against whole topic names
(`Pattern.matcher(name).matches()`). Python's `re` accepts patterns RE2 refuses (lookarounds, backreferences) and
matches others differently, so the same expression is compiled here with RE2's own bindings (`google-re2`): the
same syntax and linear-time, full matches. A compiled expression is cached: a group resolves the same few again
and again.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a bad expression is the member's error (INVALID_REGULAR_EXPRESSION), not ours to log


class InvalidRegularExpression(ValueError):
    """RE2 cannot compile the expression; `description` is RE2's reason."""

    def __init__(self, regex: str, description: str) -> None:
        super().__init__(f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {description}.")
        self.description = description


@lru_cache(maxsize=1024)
def compile_regex(regex: str) -> re2._Regexp:
    try:
        return re2.compile(regex, options=_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid"
        raise InvalidRegularExpression(regex, reason.decode() if isinstance(reason, bytes) else str(reason)) from None


def matching_topics(regex: str, topic_names: Iterable[str]) -> frozenset[str]:
    """The topic names the expression matches whole (an expression that does not compile matches nothing)."""
    try:
        pattern = compile_regex(regex)
    except InvalidRegularExpression:
        return frozenset()
    return frozenset(name for name in topic_names if pattern.fullmatch(name) is not None)

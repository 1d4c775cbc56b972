"""The cluster's topics as a consumer group sees them: Kafka's metadata image, fed by `TopicMetadata` requests.

KIP-848 names topics by id (the cluster's own `Uuid`s) and the server-side assignors need every subscribed topic's
partition count. Kafka's coordinator reads them from the broker's metadata image; ours has no broker inside, so the
image comes through the control topic as `TopicMetadata` requests (schemas.consumer_group): each carries every topic
of the cluster at a metadata `version`, and `apply_topic_metadata` keeps the newest. Replaying the control topic
therefore gives the assignors the same topics, byte for byte.

As in Kafka (GroupMetadataManager.onNewMetadataImage), a new image changes no group by itself: a group's next
heartbeat finds that the hash of its subscribed topics' metadata changed (a new target assignment, KIP-1101), and
regular expressions are resolved again when topics were created since their last resolution.
"""

from __future__ import annotations

import base64
import hashlib
import struct
import uuid
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Mapping

import msgspec

from schemas.consumer_group import TopicMetadata


@dataclass(frozen=True, slots=True)
class TopicImage:
    topic_id: str
    name: str
    partitions: int


@dataclass(frozen=True, slots=True)
class ResolvedRegularExpression:
    """The topics a regular expression matched, at which metadata version, resolved when."""

    topics: frozenset[str]
    version: int
    timestamp_ms: int


@dataclass(frozen=True)
class MetadataImage:
    """Every topic of the cluster at one metadata version. `version` -1: no image received yet."""

    version: int = -1
    by_id: Mapping[str, TopicImage] = field(default_factory=dict)
    by_name: Mapping[str, TopicImage] = field(default_factory=dict)
    new_topics_version: int = -1
    """The version of the newest image that created a topic (Kafka's lastMetadataImageWithNewTopics): regular
    expressions resolved before it are resolved again."""

    @classmethod
    def of(cls, version: int, topics: Iterable[TopicImage], new_topics_version: int = -1) -> MetadataImage:
        listed = sorted(topics, key=lambda t: t.name)
        return cls(version, {t.topic_id: t for t in listed}, {t.name: t for t in listed}, new_topics_version)

    @property
    def known(self) -> bool:
        return self.version >= 0

    def name_of(self, topic_id: str) -> str | None:
        topic = self.by_id.get(topic_id)
        return None if topic is None else topic.name

    @cached_property
    def topic_hashes(self) -> dict[str, bytes]:
        """topic name -> its 8-byte hash, computed once per image (every heartbeat checks the group's hash)."""
        return {name: _topic_hash(topic) for name, topic in self.by_name.items()}


EMPTY_IMAGE = MetadataImage()


class ImageDoc(msgspec.Struct, array_like=True):
    """An image as stored (`state.batch`, a state bucket's topic-metadata row): topics as (id, name, partitions)."""

    version: int
    new_topics_version: int
    topics: list[tuple[str, str, int]]


def image_doc(image: MetadataImage) -> ImageDoc:
    return ImageDoc(image.version, image.new_topics_version,
                    [(t.topic_id, t.name, t.partitions) for t in image.by_name.values()])


def image_of(doc: ImageDoc) -> MetadataImage:
    return MetadataImage.of(doc.version, [TopicImage(*t) for t in doc.topics], doc.new_topics_version)


class ImageRow(msgspec.Struct):
    """A state bucket's topic metadata as the shell stores it, beside its groups (`state.batch`)."""

    v: int
    topics: ImageDoc


_IMAGE_ROW = msgspec.json.Decoder(ImageRow)
_decoded: list = [None, EMPTY_IMAGE]
"""The last row decoded and its image: every consumer group of a bucket call reads the same row."""


def decode_image_row(raw: bytes | None) -> MetadataImage:
    """The image of a stored row; one this release cannot read counts as none (the next `TopicMetadata`, which the
    driver publishes at every start, replaces it)."""
    if raw is None:
        return EMPTY_IMAGE
    last, image = _decoded
    if raw is last or raw == last:
        return image
    try:
        image = image_of(_IMAGE_ROW.decode(raw).topics)
    except (msgspec.DecodeError, TypeError, ValueError):
        image = EMPTY_IMAGE
    _decoded[:] = [raw, image]
    return image


def apply_topic_metadata(image: MetadataImage, request: TopicMetadata) -> MetadataImage:
    """The image after a `TopicMetadata` request: the request's topics if its version is newer, else `image`
    unchanged (a duplicate or reordered copy changes nothing, so applying is idempotent)."""
    if request.version <= image.version:
        return image
    topics = [TopicImage(t.topic_id, t.name, t.partitions) for t in request.topics]
    created = any(t.topic_id not in image.by_id for t in topics)
    return MetadataImage.of(request.version, topics, request.version if created else image.new_topics_version)


def topic_ids(names: Iterable[str], image: MetadataImage) -> frozenset[str]:
    """Kafka's TopicIds: the ids of the named topics the image has (a name it lacks is left out, not an error)."""
    by_name = image.by_name
    return frozenset(by_name[n].topic_id for n in names if n in by_name)


def metadata_hash(topic_names: Iterable[str], image: MetadataImage) -> int:
    """KIP-1101's group metadata hash: one signed 64-bit number that changes when any of the topics' id, name or
    partition count changes (0 when none of them exists). Kafka combines xxh3 hashes of its own binary encoding;
    this combines BLAKE2b hashes of ours: only equality matters, and only to this coordinator."""
    hashes = image.topic_hashes
    present = sorted(name for name in set(topic_names) if name in hashes)
    if not present:
        return 0
    digest = hashlib.blake2b(b"".join(hashes[name] for name in present), digest_size=8).digest()
    return struct.unpack(">q", digest)[0]


def _topic_hash(topic: TopicImage) -> bytes:
    parts = [struct.pack(">I", len(raw)) + raw for raw in (topic.topic_id.encode(), topic.name.encode())]
    return hashlib.blake2b(b"".join(parts) + struct.pack(">i", topic.partitions), digest_size=8).digest()


def kafka_uuid(name: str) -> str:
    """A Kafka `Uuid` string (URL-safe base64 of 16 bytes, no padding) derived from `name`: the same name gives the
    same id, so a replay hands out the same member ids (Kafka draws them at random)."""
    raw = uuid.uuid5(uuid.NAMESPACE_URL, name).bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")

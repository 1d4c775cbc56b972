"""Share groups through the core's entry point (`state.batch.step_group`), as the query runs them: one kind per
group id with Kafka's errors for the others, the group's configs kept whatever its kind, a step of many holder
updates writing one snapshot per share-partition and no view, leases restarted by a new driver, ListGroups, and a
rebuild from the records topic giving back every share-partition as it was."""

from __future__ import annotations

import json

from state.batch import TOPIC_METADATA_GROUP, StoredGroup, decode_configs, decode_state, load_group, step_group
from state.config import CoordinatorConfig
from state.views.directory import GroupDirectory
from state.errors import Errors
from state.share.group import ShareGroup
from state.share.partitions.holding import share_lease_key

T = 1_700_000_000_000
FOO = "AAAAAAAAAAAAAAAAAAAAAQ"
CONFIG = CoordinatorConfig()


def _topics() -> bytes:
    body = {"api": "TopicMetadata", "version": 1, "topics": [{"topic_id": FOO, "name": "foo", "partitions": 2}]}
    return step_group(TOPIC_METADATA_GROUP, None, [json.dumps(body).encode()], T, CONFIG).metadata  # type: ignore


class Query:
    """One group stepped as the query steps it, every record kept as the records topic would hold them."""

    def __init__(self, group_id: str = "g") -> None:
        self.group_id = group_id
        self.topics = _topics()
        self.stored: StoredGroup | None = None
        self.records: list[tuple[bytes, bytes | None]] = []
        self.last = None
        self._ids = 0

    def step(self, *bodies: dict, now: int = T, resumed: bool = False) -> list[dict]:
        raw = []
        for body in bodies:
            self._ids += 1
            raw.append(json.dumps({"request_id": f"r{self._ids}", "group_id": self.group_id, **body}).encode())
        self.last = step_group(self.group_id, self.stored, raw, now, CONFIG, topics=self.topics, resumed=resumed)
        self.stored = self.last.stored(self.stored)
        self.records += self.last.records
        return [json.loads(r) for r in self.last.responses]

    @property
    def group(self):
        return decode_state(self.stored)


def join(q: Query, member: str = "m1", epoch: int = 0, **extra) -> dict:
    (answer,) = q.step({"api": "ShareGroupHeartbeat", "api_version": 1, "member_id": member, "member_epoch": epoch,
                        "subscribed_topic_names": ["foo"], **extra})
    return answer


def take(q: Query, holder: str = "gw1", epoch: int = -1, partition: int = 0, now: int = T) -> dict:
    (answer,) = q.step({"api": "ShareGrant", "holder": holder, "partitions": [
        {"topic_id": FOO, "partition": partition, "operation": "take", "epoch": epoch}]}, now=now)
    return answer["partitions"][0]


def update(holder: str, epoch: int, start: int, *batches: tuple[int, int, int, int]) -> dict:
    return {"api": "ShareUpdate", "holder": holder, "partitions": [{
        "topic_id": FOO, "partition": 0, "grant_epoch": epoch, "state_epoch": 1, "start_offset": start,
        "state_batches": [{"first_offset": f, "last_offset": l, "delivery_state": s, "delivery_count": c}
                          for f, l, s, c in batches]}]}


def test_a_share_group_forms_and_is_listed_as_share():
    q = Query()
    answer = join(q)
    assert (answer["error_code"], answer["member_epoch"]) == (0, 1)
    assert answer["assignment"]["topic_partitions"] == [{"topic_id": FOO, "partitions": [0, 1]}]
    assert q.last.publish_view and json.loads(q.last.view)["kind"] == "share"
    directory = GroupDirectory()
    for key, value in q.records:
        directory.apply(key, value)
    listed = json.loads(directory.answer(json.dumps({"api": "ListGroups", "request_id": "l",
                                                     "types_filter": ["share"]}).encode()))
    assert listed["groups"] == [{"group_id": "g", "protocol_type": "share", "group_state": "Stable",
                                 "group_type": "share"}]


def test_one_kind_per_group_id_with_kafkas_errors():
    q = Query()
    join(q)
    (r,) = q.step({"api": "ConsumerGroupHeartbeat", "member_id": "c1", "member_epoch": 0, "rebalance_timeout_ms": 1,
                   "subscribed_topic_names": ["foo"], "topic_partitions": []})
    assert (r["error_code"], r["error_message"]) == (Errors.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")
    (r,) = q.step({"api": "JoinGroup", "api_version": 5, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                   "member_id": "", "protocol_type": "consumer", "protocols": []})
    assert r["error_code"] == Errors.INCONSISTENT_GROUP_PROTOCOL
    (r,) = q.step({"api": "OffsetCommit", "topics": []})
    assert r["error_code"] == Errors.GROUP_ID_NOT_FOUND
    classic = Query("c")
    classic.step({"api": "JoinGroup", "api_version": 3, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                  "member_id": "", "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": ""}]})
    assert classic.group is not None and classic.group.members
    r = join(classic)
    assert (r["error_code"], r["error_message"]) == (Errors.GROUP_ID_NOT_FOUND, "Group c is not a share group.")
    (r,) = classic.step({"api": "ShareGroupDescribe"})
    assert r["error_code"] == Errors.GROUP_ID_NOT_FOUND


def test_configs_are_kept_before_the_group_exists_and_used_by_it():
    q = Query()
    (r,) = q.step({"api": "IncrementalAlterGroupConfigs", "configs": [
        {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]})
    assert r["error_code"] == 0 and decode_state(q.stored) is None
    assert decode_configs(q.stored) == {"share.auto.offset.reset": "earliest"}
    join(q)
    assert json.loads(q.last.view)["config"]["auto_offset_reset"] == "earliest"
    (r,) = q.step({"api": "DescribeGroupConfigs", "configuration_keys": ["share.auto.offset.reset"]})
    assert [(c["name"], c["value"], c["config_source"]) for c in r["configs"]] == [
        ("share.auto.offset.reset", "earliest", 8)]
    (r,) = q.step({"api": "IncrementalAlterGroupConfigs", "configs": [
        {"name": "share.delivery.count.limit", "config_operation": 0, "value": "99"}]})
    assert r["error_code"] == Errors.INVALID_CONFIG


def test_a_step_of_updates_writes_one_snapshot_and_no_view():
    q = Query()
    join(q)
    granted = take(q)
    assert granted["error_code"] == 0 and q.last.publish_view
    q.step(update("gw1", granted["epoch"], 0), update("gw1", granted["epoch"], 0, (0, 4, 2, 1)),
           update("gw1", granted["epoch"], 5, (5, 9, 0, 1)))
    assert [json.loads(k)["version"] for k, _ in q.last.records] == [100]
    assert not q.last.publish_view and not q.last.dead_letters
    assert json.loads(q.last.records[0][1])["start_offset"] == 5


def test_a_fenced_holders_update_is_a_dead_letter_and_changes_nothing():
    q = Query()
    join(q)
    granted = take(q)
    q.step(update("gw1", granted["epoch"], 0))
    q.step(update("gw2", granted["epoch"], 0, (0, 0, 2, 1)))
    assert len(q.last.dead_letters) == 1 and "fenced" in q.last.dead_letters[0][1]
    assert q.last.records == []


def test_lease_expires_on_its_timer_and_a_new_driver_restarts_it():
    q = Query()
    join(q)
    granted = take(q)
    q.step(now=T + 20_000, resumed=True)  # a new driver: the lease counts from its first batch
    assert q.group.timers[share_lease_key(FOO, 0)] == T + 20_000 + CONFIG.share_partition_lease_ms
    q.step(now=T + 20_000 + CONFIG.share_partition_lease_ms)
    grant = q.group.partitions[(FOO, 0)].grant
    assert (grant.holder, grant.epoch, grant.last_holder) == (None, granted["epoch"] + 1, "gw1")
    assert q.last.publish_view


def test_share_heartbeat_answered_from_the_view_is_checked_by_the_coordinator():
    """The member joined with a client id and host (the gateway names them); the Liveness request names neither,
    and the coordinator checks it as the member's heartbeat with the ones it has."""
    q = Query()
    join(q, client_id="rdkafka", client_host="/127.0.0.1")
    q.step({"api": "Liveness", "members": [{"member_id": "m1", "generation_id": 1, "heard_ms": T + 100,
                                            "answered": 0}]}, now=T + 200)
    assert [(a.api, a.mispredicted) for a in q.last.fast_answers] == [("Heartbeat", False)]
    assert q.group.timers["share-session-timeout:m1"] == T + 100 + 45_000


def test_rebuild_from_records_gives_every_share_partition_back():
    """A lost checkpoint: the records topic alone rebuilds the group, its configs, its share-partitions' durable
    states and grants (epochs included), and the leases restart at the load."""
    q = Query()
    q.step({"api": "IncrementalAlterGroupConfigs", "configs": [
        {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]})
    join(q)
    first = take(q)
    q.step(update("gw1", first["epoch"], 0, (0, 2, 2, 1), (3, 3, 0, 1), (5, 5, 4, 1)))
    take(q, partition=1)
    live: ShareGroup = q.group
    rebuilt = load_group("g", q.records, T + 99_000, CONFIG)
    group: ShareGroup = decode_state(rebuilt)  # type: ignore[assignment]
    assert decode_configs(rebuilt) == {"share.auto.offset.reset": "earliest"}
    assert group.partitions == live.partitions
    assert group.members.keys() == live.members.keys() and group.initialized == live.initialized
    assert group.timers[share_lease_key(FOO, 1)] == T + 99_000 + CONFIG.share_partition_lease_ms
    assert group.partitions[(FOO, 0)].persisted.start_offset == 3

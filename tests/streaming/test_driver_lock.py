"""One driver per checkpoint: the second process on a checkpoint waits (a standby) until the first one's process
ends, however it ends; checkpoints on filesystems without flock run unlocked."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from streaming.driver_lock import LOCK_FILE, hold, lock_path

# A second driver, as its own process: it reports when it starts waiting and when it holds the lock.
SECOND = textwrap.dedent("""
    import sys
    from streaming.driver_lock import hold
    handle = hold(sys.argv[1], on_standby=lambda: print("standby", flush=True))
    print("holding", flush=True)
    sys.stdin.read()
""")


def test_local_checkpoints_have_a_lock_file_and_remote_ones_none(tmp_path):
    assert lock_path(str(tmp_path)) == tmp_path / LOCK_FILE
    assert lock_path(f"file://{tmp_path}") == tmp_path / LOCK_FILE
    assert lock_path("hdfs://namenode:8020/checkpoints/coordinator") is None
    assert lock_path("s3a://bucket/checkpoint") is None
    assert hold("s3a://bucket/checkpoint") is None


def test_a_free_lock_is_taken_at_once_and_names_its_holder(tmp_path):
    standby = []
    handle = hold(str(tmp_path / "checkpoint"), on_standby=lambda: standby.append(True))
    try:
        assert standby == []
        assert (tmp_path / "checkpoint" / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    finally:
        handle.close()


def test_the_second_driver_stands_by_until_the_first_one_dies(tmp_path):
    checkpoint = str(tmp_path / "checkpoint")
    first = hold(checkpoint)
    second = subprocess.Popen([sys.executable, "-c", SECOND, checkpoint], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert second.stdout.readline().strip() == "standby"
        time.sleep(0.5)
        assert second.poll() is None
        first.close()  # the kernel releases the lock when the holder's process ends, kill -9 included
        assert second.stdout.readline().strip() == "holding"
        assert (tmp_path / "checkpoint" / LOCK_FILE).read_text() == f"{second.pid}\n"
    finally:
        second.kill()
        second.wait()


def test_a_killed_holder_releases_the_lock(tmp_path):
    checkpoint = str(tmp_path / "checkpoint")
    holder = subprocess.Popen([sys.executable, "-c", SECOND, checkpoint], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        holder.kill()
        holder.wait()
        standby = []
        handle = hold(checkpoint, on_standby=lambda: standby.append(True))
        handle.close()
        assert standby == []
    finally:
        holder.kill()
        holder.wait()

"""Which GroupStateTimeout a checkpoint runs with (no Spark): Spark keeps it in the state schema, so it is fixed."""

from __future__ import annotations

import pytest

from streaming.query import uses_spark_timeouts


def test_a_new_checkpoint_records_its_choice_and_keeps_it(tmp_path):
    with_ticks, without = str(tmp_path / "a"), str(tmp_path / "b")
    assert uses_spark_timeouts(with_ticks, ticks=True) is False
    assert uses_spark_timeouts(without, ticks=False) is True
    # later starts follow the checkpoint, not the setting
    assert uses_spark_timeouts(without, ticks=True) is True
    assert uses_spark_timeouts(with_ticks, ticks=True) is False


def test_a_checkpoint_without_spark_timeouts_refuses_to_run_without_ticks(tmp_path):
    checkpoint = str(tmp_path / "c")
    uses_spark_timeouts(checkpoint, ticks=True)
    with pytest.raises(ValueError, match="timer.ticks.enabled=true"):
        uses_spark_timeouts(checkpoint, ticks=False)


def test_a_checkpoint_from_before_the_record_used_spark_timeouts(tmp_path):
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / "0").write_text("v1")
    assert uses_spark_timeouts(str(tmp_path), ticks=True) is True


def test_a_checkpoint_url_runs_spark_timeouts_and_needs_ticks_off():
    assert uses_spark_timeouts("s3a://bucket/coordinator", ticks=False) is True
    with pytest.raises(ValueError, match="timer.ticks.enabled=false"):
        uses_spark_timeouts("hdfs://nn/coordinator", ticks=True)

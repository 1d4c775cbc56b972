"""The driver JVM's class archive: found by JVM and Spark jars, added to the driver's options only when it exists,
and (made by deploy/local/bootstrap) actually usable by the JVM Spark runs, on Spark's own class path."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from streaming.spark_runtime import class_archive
from streaming.spark_runtime.class_archive import DRIVER_OPTIONS, archive_path, with_class_archive


@pytest.fixture
def fake_install(tmp_path, monkeypatch) -> Path:
    """A JAVA_HOME with a `java`, a SPARK_HOME with two jars, and an empty archive directory."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    for name in ("spark-core.jar", "spark-sql.jar"):
        (jars / name).write_bytes(b"PK")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "spark"))
    monkeypatch.setenv("COORDINATOR_CLASS_ARCHIVE_DIR", str(tmp_path / "archives"))
    return tmp_path


def test_the_archive_is_named_after_the_jvm_and_the_spark_jars(fake_install):
    first = archive_path()
    assert first.parent == fake_install / "archives" and first.suffix == ".jsa"
    assert archive_path() == first
    (fake_install / "spark" / "jars" / "extra.jar").write_bytes(b"PK")
    assert archive_path() != first, "other Spark jars need another archive"


def test_no_archive_leaves_the_driver_options_alone(fake_install):
    conf = {DRIVER_OPTIONS: "-XX:TieredStopAtLevel=1", "spark.master": "local[2]"}
    assert with_class_archive(conf) == conf


def test_an_archive_is_added_to_the_driver_options(fake_install):
    path = archive_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    conf = with_class_archive({DRIVER_OPTIONS: "-XX:TieredStopAtLevel=1"})
    assert conf[DRIVER_OPTIONS] == f"-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile={path}"
    assert with_class_archive({})[DRIVER_OPTIONS] == f"-XX:SharedArchiveFile={path}"
    for own in (f"-XX:SharedArchiveFile={fake_install}/mine.jsa", f"-XX:ArchiveClassesAtExit={path}"):
        assert with_class_archive({DRIVER_OPTIONS: own}) == {DRIVER_OPTIONS: own}, "an operator's or a training's"


def test_without_java_there_is_no_archive(fake_install, monkeypatch):
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(fake_install / "empty"))
    assert archive_path() is None
    assert with_class_archive({"spark.master": "local[2]"}) == {"spark.master": "local[2]"}


def test_the_java_option_for_spark_submit(fake_install, capsys):
    assert class_archive.main(["--java-option"]) == 0
    assert capsys.readouterr().out == "", "no archive: no option"
    path = archive_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    class_archive.main(["--java-option"])
    assert capsys.readouterr().out.strip() == f"-XX:SharedArchiveFile={path}"


@pytest.mark.spark
def test_the_driver_jvm_maps_the_archive_bootstrap_made(spark):
    """The archive must fit the JVM and the class path Spark launches with: `-Xshare:on` refuses to start on any
    mismatch, where the driver would only warn and start the slow way."""
    path = archive_path()
    assert path is not None and path.is_file(), "no class archive: run deploy/local/bootstrap (it makes one)"
    jvm = spark.sparkContext._jvm
    assert f"-XX:SharedArchiveFile={path}" in list(
        jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    java = Path(jvm.java.lang.System.getProperty("java.home")) / "bin" / "java"
    class_path = jvm.java.lang.System.getProperty("java.class.path")
    run = subprocess.run([str(java), "-Xshare:on", f"-XX:SharedArchiveFile={path}", "-cp", class_path, "-version"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr

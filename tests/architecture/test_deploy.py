"""deploy/ says what the rest of the project says: the image holds what the wheel ships, the Helm values serve the
code location that workspace.yaml names with pipeline/defs/dagster.yaml's pools, name only settings that exist, and
keep the secrets out of the values file. (The image and the chart themselves need a registry and a cluster; the wheel is
tested by test_wheel_install.py, the PostgreSQL storage section by tests/defs/automation/test_daemon.py.)"""

from __future__ import annotations

import re

import yaml

from tests.support.paths import REPO_ROOT, SHIPPED

DEPLOY = REPO_ROOT / "deploy"
SECRET_SETTINGS = {"PMW_API_KEY", "PMW_BUDGET_URL"}


def _values() -> dict:
    return yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())


def test_the_image_copies_what_the_wheel_ships_and_nothing_else() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    copied = {source for line in re.findall(r"^COPY (.+) \S+$", dockerfile, re.MULTILINE) for source in line.split()}
    assert copied == set(SHIPPED)
    allowed = {line.removeprefix("!").rstrip("/") for line in (DEPLOY / "Dockerfile.dockerignore").read_text()
               .splitlines() if line.startswith("!")}
    assert allowed == set(SHIPPED)
    assert "'.[shared,s3]'" in dockerfile  # the shared stores' drivers, and s3fs for a lake in a bucket


def test_the_helm_values_serve_the_code_location_with_the_projects_pools() -> None:
    values = _values()
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    workspace = yaml.safe_load((REPO_ROOT / "workspace.yaml").read_text())
    assert deployment["dagsterApiGrpcArgs"] == ["-m", workspace["load_from"][0]["python_module"]["module_name"]]
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    assert values["dagsterDaemon"]["runCoordinator"]["type"] == "QueuedRunCoordinator"
    pools = yaml.safe_load((REPO_ROOT / "pipeline" / "defs" / "dagster.yaml").read_text())["concurrency"]["pools"]
    assert values["concurrency"]["pools"] == {"granularity": pools["granularity"],
                                              "defaultLimit": pools["default_limit"]}
    storage = yaml.safe_load((DEPLOY / "dagster-storage.yaml").read_text())["storage"]["postgres"]["postgres_db"]
    assert values["postgresql"]["postgresqlScheme"] == storage["scheme"] == "postgresql+psycopg2"


def test_the_helm_values_name_real_settings_and_keep_the_secrets_out() -> None:
    (deployment,) = _values()["dagster-user-deployments"]["deployments"]
    named = {variable["name"] for variable in deployment["env"]}
    documented = set(re.findall(r"`(PMW_[A-Z_]+)`", (REPO_ROOT / "docs" / "configuration.md").read_text()))
    assert named <= documented, named - documented
    assert not named & SECRET_SETTINGS, "the API key and the budget's URL (a password) belong in a Secret"
    assert deployment["envSecrets"] and deployment["includeConfigInLaunchedRuns"] == {"enabled": True}


def test_the_pods_that_write_the_shared_volume_get_the_image_users_group() -> None:
    """The image runs as a non-root user; a volume a cluster mounts belongs to root unless the pod's fsGroup gives
    it to that user's group: both the code location's pod and each run's pod write /data."""
    gid = re.search(r"useradd [^\n]*--gid (\d+) pmw", (DEPLOY / "Dockerfile").read_text())
    assert gid is not None
    values = _values()
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    run_pods = values["runLauncher"]["config"]["k8sRunLauncher"]["runK8sConfig"]["podSpecConfig"]
    assert deployment["podSecurityContext"]["fsGroup"] == run_pods["securityContext"]["fsGroup"] == int(gid[1])


def test_the_instance_settings_are_not_where_dagster_dev_warns_about_them() -> None:
    """`dagster dev` run from the repository's root (as `pmw demo` says to) warns about a dagster.yaml there that
    DAGSTER_HOME does not hold: the project's instance settings live in pipeline/defs/ (package data), copied into
    each home."""
    assert not (REPO_ROOT / "dagster.yaml").exists() and not (REPO_ROOT / "dagster.yml").exists()
    settings = yaml.safe_load((REPO_ROOT / "pipeline" / "defs" / "dagster.yaml").read_text())
    assert settings["telemetry"] == {"enabled": False}

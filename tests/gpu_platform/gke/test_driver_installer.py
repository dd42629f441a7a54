"""Google's COS driver installer: applied from its pinned manifest on COS, never on Ubuntu
(mocked program). `yaml/v2:ConfigFile` is a remote component: offline it is one resource whose
input is the manifest URL, so the pin is what is checked here."""

import re
from collections.abc import Callable
from typing import Any

from gpu_platform import versions
from gpu_platform.offline.program import Plan

from .plans import on_ubuntu

Config = dict[str, Any]
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"
UPSTREAM = re.compile(
    r"^https://raw\.githubusercontent\.com/GoogleCloudPlatform/container-engine-accelerators/"
    r"(?P<ref>[^/]+)/nvidia-driver-installer/cos/daemonset-preloaded\.yaml$"
)


def test_cos_stack_applies_the_installer_manifest_from_its_pin(gke_plan: Plan) -> None:
    (manifest,) = gke_plan.of_type(CONFIG_FILE)
    assert manifest.inputs["file"] == versions.GKE_COS_DRIVER_INSTALLER_MANIFEST


def test_installer_manifest_is_googles_preloaded_cos_daemonset_at_a_commit() -> None:
    pinned = UPSTREAM.match(versions.GKE_COS_DRIVER_INSTALLER_MANIFEST)
    assert pinned is not None, versions.GKE_COS_DRIVER_INSTALLER_MANIFEST
    assert re.fullmatch(r"[0-9a-f]{40}", pinned.group("ref"))


def test_installer_is_a_child_of_its_component(gke_plan: Plan) -> None:
    (manifest,) = gke_plan.of_type(CONFIG_FILE)
    component = gke_plan.named("nvidia-driver-installer", "gpu-platform:gke:CosDriverInstaller")
    assert manifest.parent == component.urn


def test_operator_waits_for_the_driver_installer(gke_plan: Plan) -> None:
    (manifest,) = gke_plan.of_type(CONFIG_FILE)
    operator = gke_plan.named("gpu-operator", "gpu-platform:kubernetes:GpuOperator")
    assert manifest.urn in operator.dependencies


def test_ubuntu_stack_has_no_installer(
    gke_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    plan = plan_for(on_ubuntu(gke_config))
    assert plan.of_type(CONFIG_FILE) == []
    assert plan.of_type("gpu-platform:gke:CosDriverInstaller") == []

"""The GPU Operator's custom resources (gpu_platform/policy_pack/gpu_operator_resources.py):
none beside the operator's release but the platform's own NVIDIADrivers."""

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.offline.program import Plan
from tests.conftest import Config, dev_stack_config, gke_stack_config
from tests.gpu_platform.policy_pack.builders import Analyze, messages, resource

POLICY = "gpu-operator-resources"
PROD = {"all": "mandatory"}
EVIL = {"driver": {"repository": "evil.example"}}


@pytest.mark.parametrize(
    ("type_", "spec"),
    [
        # gpu-operator v26.7.0 api/nvidia/v1 ClusterPolicy, api/nvidia/v1alpha1 GPUCluster and
        # NVIDIADriver; a patch is the SDK's CustomResourcePatch, `<apiVersion>:<kind>Patch`.
        ("kubernetes:nvidia.com/v1:ClusterPolicy", EVIL),
        ("kubernetes:nvidia.com/v1:ClusterPolicyPatch", EVIL),
        ("kubernetes:nvidia.com/v1alpha1:GPUCluster", EVIL),
        ("kubernetes:nvidia.com/v1alpha1:GPUClusterPatch", EVIL),
        ("kubernetes:nvidia.com/v1alpha1:NVIDIADriverPatch", {"repository": "evil.example"}),
        (
            "kubernetes:nvidia.com/v1alpha1:NVIDIADriver",
            {
                "default": False,
                "driverType": "gpu",
                "repository": "evil.example",
                "image": "driver",
                "version": "580.159.03",
                "nodeSelector": {"gpu-platform.io/pool": "cluster-policy"},
            },
        ),
    ],
)
def test_an_operator_resource_beside_its_release_is_refused(
    analyze: Analyze, type_: str, spec: dict[str, Any]
) -> None:
    declared = resource(
        type_, "cluster-policy", {"metadata": {"name": "cluster-policy"}, "spec": spec}
    )

    verdicts = [v for v in analyze(declared, config=PROD) if v.policy_name == POLICY]

    assert [v.enforcement_level for v in verdicts] == ["mandatory"]
    assert "cluster-policy" in verdicts[0].message


@pytest.mark.parametrize(
    "type_",
    [
        # The group is not the operator's alone: ai-dynamo/dynamo defines its kinds in it
        # (deploy/operator/config/crd/bases/nvidia.com_dynamographdeployments.yaml, `group:
        # nvidia.com`), and gpu-operator v26.7.0 defines no other kind there (api/nvidia/).
        "kubernetes:nvidia.com/v1alpha1:DynamoGraphDeployment",
        "kubernetes:nvidia.com/v1beta1:DynamoComponentDeployment",
        "kubernetes:nvidia.com/v1alpha1:DynamoModel",
        "kubernetes:nvidia.com/v1alpha1:GPUNodeProfile",
        # Other groups under nvidia.com: the chart's ComputeDomains (resource.nvidia.com),
        # NIM's kinds (apps.nvidia.com), and an operator kind's name in a group that only ends
        # in nvidia.com, or in Kyverno's (kyverno.io/v1 ClusterPolicy).
        "kubernetes:resource.nvidia.com/v1beta1:ComputeDomain",
        "kubernetes:apps.nvidia.com/v1alpha1:NIMService",
        "kubernetes:example.nvidia.com/v1:ClusterPolicy",
        "kubernetes:example.nvidia.com/v1alpha1:NVIDIADriverPatch",
        "kubernetes:kyverno.io/v1:ClusterPolicy",
    ],
)
def test_another_kind_or_group_is_not_the_operators(analyze: Analyze, type_: str) -> None:
    declared = resource(type_, "graph", {"metadata": {"name": "graph"}, "spec": EVIL})

    assert messages(analyze(declared, config=PROD), POLICY) == []


def _ubuntu_drivers(shared_plan_for: Callable[[Config], Plan]) -> list[Any]:
    ubuntu = gke_stack_config(copy.deepcopy(dev_stack_config()))
    ubuntu["gpu-platform:cluster"]["nodeImage"] = "ubuntu"
    ubuntu["gpu-platform:pools"][0]["sharing"] = {"mode": "exclusive"}
    plan = shared_plan_for(ubuntu)
    return [r for r in plan.resources if r.type == "kubernetes:nvidia.com/v1alpha1:NVIDIADriver"]


def test_the_platforms_nvidia_drivers_pass(
    analyze: Analyze, shared_plan_for: Callable[[Config], Plan]
) -> None:
    drivers = _ubuntu_drivers(shared_plan_for)

    assert drivers
    assert messages(analyze(*drivers, config=PROD), POLICY) == []


@pytest.mark.parametrize(
    ("change", "found"),
    [
        ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}, "nodeAffinity"),
        ({"manager": {"repository": "evil.example"}}, "spec.manager"),
        ({"default": True}, "spec.default"),
        ({"nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-l4"}}, "spec.nodeSelector"),
        ({"image": "evil"}, '"evil"'),
    ],
)
def test_a_changed_platform_nvidia_driver_is_refused(
    analyze: Analyze, shared_plan_for: Callable[[Config], Plan], change: dict[str, Any], found: str
) -> None:
    driver = _ubuntu_drivers(shared_plan_for)[0]
    driver.inputs["spec"].update(change)

    (message,) = messages(analyze(driver, config=PROD), POLICY)

    assert found in message


@pytest.mark.parametrize(
    "selector",
    [
        # Another pool's nodes, which its own NVIDIADriver selects: the operator refuses every
        # NVIDIADriver of the cluster while two select one node (gpu-operator v26.7.0
        # internal/validator/validator.go, ConflictingNodeSelector).
        {"gpu-platform.io/pool": "other"},
        # The pool's nodes narrowed by a second label: the pool's nodes without it are not
        # this driver's.
        {"gpu-platform.io/pool": "{pool}", "nvidia.com/gpu.product": "NVIDIA-L4"},
    ],
    ids=["another-pool", "a-second-key"],
)
def test_a_platform_nvidia_driver_selecting_other_nodes_is_refused(
    analyze: Analyze, shared_plan_for: Callable[[Config], Plan], selector: dict[str, str]
) -> None:
    driver = _ubuntu_drivers(shared_plan_for)[0]
    pool = driver.inputs["metadata"]["name"]
    driver.inputs["spec"]["nodeSelector"] = {k: v.format(pool=pool) for k, v in selector.items()}

    (message,) = messages(analyze(driver, config=PROD), POLICY)

    assert "spec.nodeSelector" in message


def test_a_declared_driver_mirror_passes(
    analyze: Analyze, shared_plan_for: Callable[[Config], Plan]
) -> None:
    driver = _ubuntu_drivers(shared_plan_for)[0]
    driver.inputs["spec"].update(repository="registry.example.com/nvidia", image="driver-fips")
    config = {**PROD, POLICY: {"driverImages": ["registry.example.com/nvidia/driver-fips"]}}

    assert messages(analyze(driver, config=PROD), POLICY) != []
    assert messages(analyze(driver, config=config), POLICY) == []

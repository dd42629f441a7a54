"""Every Kubernetes object the program creates is valid at every supported Kubernetes version.

Each built-in object is checked against the OpenAPI schema of each minor version in
`SUPPORTED_KUBERNETES_VERSIONS` with kubernetes-validate in strict mode, custom resources against
their pinned CRDs or, where the platform keeps none (the Prometheus Operator's), by their
apiVersion, kind and metadata (tests/kubernetes_schemas.py).
"""

import dataclasses
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest

from gpu_platform.offline.program import Plan
from gpu_platform.stack_files import stack_config
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS
from tests.gpu_platform.gke.plans import on_ubuntu
from tests.kubernetes_schemas import crd_chart, kubernetes_objects, manifest, problems, validate
from tests.repository import PROJECT
from tests.stack_variants import reachable_gke, with_gke_capacity_pools, with_mig_mixed_pool

Config = dict[str, Any]
STACKS: dict[str, Callable[[Config, Config], Config]] = {
    "dev": lambda dev, gke: dev,
    "gke": lambda dev, gke: reachable_gke(gke),
    "eks-mig-mixed": lambda dev, gke: with_mig_mixed_pool(dev),
    "karpenter-dev": lambda dev, gke: stack_config("karpenter-dev", PROJECT),
    "auto-dev": lambda dev, gke: stack_config("auto-dev", PROJECT),
    "gke-ubuntu": lambda dev, gke: on_ubuntu(reachable_gke(gke)),
    "gke-capacity": lambda dev, gke: with_gke_capacity_pools(reachable_gke(gke)),
}


@pytest.fixture(params=sorted(STACKS))
def plan(request, dev_config, gke_config, shared_plan_for) -> Plan:
    return shared_plan_for(STACKS[request.param](dev_config, gke_config))


@pytest.mark.parametrize("minor", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_kubernetes_object_validates_at_every_supported_version(plan, minor: str) -> None:
    assert problems(plan, minor) == []


def test_the_core_platform_objects_are_among_those_validated(plan) -> None:
    kinds = {manifest(r)["kind"] for r in kubernetes_objects(plan)}

    assert {"Namespace", "ResourceQuota", "Job"} <= kinds


KUEUE_PRIORITY = "WorkloadPriorityClass"


@pytest.mark.parametrize(
    ("stack", "kinds"),
    [
        ("karpenter-dev", {"NodePool", "EC2NodeClass"}),
        ("auto-dev", {"NodePool", "NodeClass"}),
        # dev and gke-dev queue their tenants' jobs through Kueue (`queues.enabled`).
        ("dev", {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", KUEUE_PRIORITY}),
        (
            "gke-ubuntu",
            {
                "NVIDIADriver",
                "ResourceFlavor",
                "Cohort",
                "ClusterQueue",
                "LocalQueue",
                KUEUE_PRIORITY,
            },
        ),
    ],
)
def test_custom_resources_are_validated_against_their_pinned_crds(
    stack: str, kinds: set[str], dev_config, gke_config, shared_plan_for
) -> None:
    plan = shared_plan_for(STACKS[stack](dev_config, gke_config))
    checked = {
        manifest(r)["kind"] for r in kubernetes_objects(plan) if crd_chart(manifest(r)) is not None
    }

    assert checked == kinds


# --- The checks can fail -------------------------------------------------------------------


@pytest.fixture
def smoke_test_job(dev_plan) -> dict[str, Any]:
    return manifest(dev_plan.named("ml-sandbox-gpu-smoke-test", "kubernetes:batch/v1:Job"))


def test_a_misspelt_field_is_rejected(smoke_test_job) -> None:
    container = smoke_test_job["spec"]["template"]["spec"]["containers"][0]
    container["securityContex"] = container.pop("securityContext")

    with pytest.raises(kubernetes_validate.ValidationError, match="securityContex"):
        validate(smoke_test_job)


def test_a_value_of_the_wrong_type_is_rejected(smoke_test_job) -> None:
    smoke_test_job["spec"]["backoffLimit"] = "none"

    with pytest.raises(kubernetes_validate.ValidationError):
        validate(smoke_test_job)


def test_a_kind_kubernetes_does_not_have_is_rejected(smoke_test_job) -> None:
    smoke_test_job["kind"] = "Jobs"

    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        validate(smoke_test_job)


def test_custom_resource_metadata_is_checked() -> None:
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "gpu-alerts", "labels": {"release": 1}},
    }

    with pytest.raises(kubernetes_validate.ValidationError):
        validate(rule)


def test_a_resource_whose_inputs_disagree_with_its_type_is_rejected(dev_plan) -> None:
    namespace = dev_plan.named("ml-sandbox", "kubernetes:core/v1:Namespace")
    mislabelled = dataclasses.replace(namespace, inputs={**namespace.inputs, "apiVersion": "v2"})

    with pytest.raises(AssertionError, match="do not match its type"):
        manifest(mislabelled)


def test_a_field_a_pinned_crd_does_not_have_is_rejected() -> None:
    node_pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "l4"},
        "spec": {"template": {"spec": {"nodeClassRef": {}}}, "limit": {"nvidia.com/gpu": "8"}},
    }

    with pytest.raises(ValueError, match="limit"):
        validate(node_pool)


def test_a_patch_is_checked_as_the_kind_it_patches(dev_plan) -> None:
    # pulumi-kubernetes' `ConfigMapPatch` applies part of a `v1` ConfigMap by server-side apply.
    namespace = dev_plan.named("ml-sandbox", "kubernetes:core/v1:Namespace")
    patch = dataclasses.replace(
        namespace,
        type="kubernetes:core/v1:ConfigMapPatch",
        inputs={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {}},
    )

    assert manifest(patch)["kind"] == "ConfigMap"

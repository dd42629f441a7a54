"""All-or-nothing scale-up through Kueue's ProvisioningRequest admission check: on GKE for
queued-provisioning pools, on EKS for `aws.atomicScaleUp` pools under the cluster autoscaler,
each check on the flavors of those pools alone, every object valid against the pinned CRDs."""

from typing import Any

import pytest

from gpu_platform.config import ConfigError
from gpu_platform.kubernetes.crd_schemas import validation_errors
from gpu_platform.kubernetes.provisioning_requests import provisioning_request_crd_manifest
from gpu_platform.offline.program import Plan
from tests.stack_variants import with_atomic_pool

KUEUE = "kueue.x-k8s.io/v1beta2"
CONFIG = f"kubernetes:{KUEUE}:ProvisioningRequestConfig"
CHECK = f"kubernetes:{KUEUE}:AdmissionCheck"
CLUSTER_QUEUE = f"kubernetes:{KUEUE}:ClusterQueue"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
RELEASE = "kubernetes:helm.sh/v3:Release"
# Kueue's provisioning controller (`ProvisioningRequestControllerName`,
# apis/kueue/v1beta2/provisioningrequestconfig_types.go at v0.19.2).
CONTROLLER = "kueue.x-k8s.io/provisioning-request"


def as_object(plan: Plan, kind: str, name: str) -> dict[str, Any]:
    inputs = plan.named(name, kind).inputs
    return {"apiVersion": KUEUE, "kind": kind.rpartition(":")[2], **inputs}


def only_kueue_objects(plan: Plan, kind: str) -> list[dict[str, Any]]:
    return [
        {"apiVersion": KUEUE, "kind": kind.rpartition(":")[2], **r.inputs}
        for r in plan.of_type(kind)
    ]


@pytest.fixture
def gke_queued_plan(gke_config, shared_plan_for) -> Plan:
    # On GKE every pool hands out `nvidia.com/gpu`, so the queued pool is the tenant's one pool
    # (gpu_platform/config/queue_rules.py), beside a flex-start canary of it, which has no
    # flavor of its own.
    queued = {
        "name": "h100-queued",
        "instanceTypes": ["a3-highgpu-8g"],
        "max": 4,
        "gcp": {"flexStart": True, "queuedProvisioning": True},
    }
    canary = {**queued, "name": "h100-canary", "max": 1, "canaryOf": "h100-queued"}
    gke_config["gpu-platform:pools"] = [queued, {**canary, "gcp": {"flexStart": True}}]
    gke_config["gpu-platform:namespaces"] = [{"name": "ml-sandbox", "gpuQuota": 8}]
    return shared_plan_for(gke_config)


@pytest.fixture
def eks_atomic_config(dev_config) -> dict[str, Any]:
    return with_atomic_pool(dev_config)


@pytest.fixture
def eks_atomic_plan(eks_atomic_config, shared_plan_for) -> Plan:
    return shared_plan_for(eks_atomic_config)


def test_a_gke_queued_pool_gets_gkes_class_through_kueues_provisioning_check(
    gke_queued_plan,
) -> None:
    (config,) = only_kueue_objects(gke_queued_plan, CONFIG)
    (check,) = only_kueue_objects(gke_queued_plan, CHECK)

    assert config["metadata"] == {"name": "gke-queued"}
    # GKE's class ("Deploy GPUs for batch and AI workloads with ProvisioningRequest").
    # Only the pod sets that ask for the queued pool's GPUs are in the request, as GKE's guide to
    # queued provisioning with Kueue writes its config.
    assert config["spec"] == {
        "provisioningClassName": "queued-provisioning.gke.io",
        "managedResources": ["nvidia.com/gpu"],
    }
    assert check["spec"] == {
        "controllerName": CONTROLLER,
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "ProvisioningRequestConfig",
            "name": "gke-queued",
        },
    }
    for obj in (config, check):
        assert validation_errors(obj, "kueue", "0.19.2") == []
    # GKE serves the ProvisioningRequest API itself.
    assert gke_queued_plan.of_type(CRD) == []


def test_the_check_is_on_the_queued_pools_flavor_alone(gke_queued_plan) -> None:
    queue = as_object(gke_queued_plan, CLUSTER_QUEUE, "ml-sandbox-cluster-queue")
    flavors = only_kueue_objects(gke_queued_plan, f"kubernetes:{KUEUE}:ResourceFlavor")

    assert queue["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "gke-queued", "onFlavors": ["h100-queued"]}]
    }
    # The canary has no flavor: no queued job is admitted on it.
    assert [f["metadata"]["name"] for f in flavors] == ["h100-queued"]
    assert queue["spec"]["resourceGroups"] == [
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [
                {
                    "name": "h100-queued",
                    "resources": [
                        {"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 0}
                    ],
                }
            ],
        }
    ]
    assert validation_errors(queue, "kueue", "0.19.2") == []


def test_an_eks_atomic_pool_gets_the_autoscalers_best_effort_atomic_class(
    eks_atomic_plan,
) -> None:
    (config,) = only_kueue_objects(eks_atomic_plan, CONFIG)
    (check,) = only_kueue_objects(eks_atomic_plan, CHECK)
    queue = as_object(eks_atomic_plan, CLUSTER_QUEUE, "ml-sandbox-cluster-queue")

    # `ProvisioningClassBestEffortAtomicScaleUp`, cluster-autoscaler/apis/provisioningrequest/
    # autoscaling.x-k8s.io/v1/types.go at cluster-autoscaler-1.33.6 to 1.36.1.
    assert config["spec"] == {
        "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
        "managedResources": ["nvidia.com/mig-1g.10gb"],
    }
    assert check["spec"]["controllerName"] == CONTROLLER
    assert check["spec"]["parameters"]["name"] == config["metadata"]["name"] == "atomic-scale-up"
    assert queue["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "atomic-scale-up", "onFlavors": ["a100-mig"]}]
    }
    for obj in (config, check, queue):
        assert validation_errors(obj, "kueue", "0.19.2") == []


def test_the_autoscaler_acts_on_provisioning_requests_for_an_atomic_pool(
    dev_plan, eks_atomic_plan
) -> None:
    def extra_args(plan: Plan) -> dict[str, Any]:
        args: dict[str, Any] = plan.named("cluster-autoscaler", RELEASE).inputs["values"][
            "extraArgs"
        ]
        return args

    # `enable-provisioning-requests`, false by default (config/flags/flags.go at
    # cluster-autoscaler-1.33.6, 1.34.5, 1.35.2 and 1.36.1).
    assert extra_args(eks_atomic_plan)["enable-provisioning-requests"] is True
    assert "enable-provisioning-requests" not in extra_args(dev_plan)


def test_the_provisioning_request_crd_is_installed_before_kueue_starts(eks_atomic_plan) -> None:
    # Kueue sets its provisioning controller up only where the API is served when it starts
    # (`ServerSupportsProvisioningRequest`, cmd/kueue/main.go at v0.19.2).
    (crd,) = eks_atomic_plan.of_type(CRD)
    release = eks_atomic_plan.named("kueue", RELEASE)

    assert crd.inputs["metadata"]["name"] == "provisioningrequests.autoscaling.x-k8s.io"
    assert crd.urn in release.dependencies
    # ...once the API server serves it: pulumi-kubernetes waits for no CRD unless told
    # (provider/pkg/metadata/overrides.go `ReadyCondition`, the `pulumi.com/waitFor`
    # annotation's `condition=` form).
    assert crd.inputs["metadata"]["annotations"]["pulumi.com/waitFor"] == "condition=Established"
    # Kueue's controller reads and writes `autoscaling.x-k8s.io/v1` ProvisioningRequests (its
    # client, pkg/controller/admissionchecks/provisioning/indexer.go at v0.19.2).
    served = {v["name"] for v in crd.inputs["spec"]["versions"] if v["served"]}
    assert "v1" in served


def test_kueue_restarts_where_the_stack_comes_to_need_provisioning_requests(
    dev_plan, eks_atomic_plan, gke_queued_plan
) -> None:
    # Kueue sets its provisioning controller up only if the API is served when its manager
    # starts (`ServerSupportsProvisioningRequest`, cmd/kueue/main.go at v0.19.2), and the chart
    # writes `controllerManager.manager.podAnnotations` into the manager's pod template
    # (charts/kueue/templates/manager/manager.yaml at v0.19.2): adding the first atomic pool
    # changes the template, so the manager rolls after the CRD its release waits for.
    def annotations(plan: Plan) -> Any:
        values = plan.named("kueue", RELEASE).inputs["values"]
        return values["controllerManager"]["manager"]["podAnnotations"]

    assert annotations(dev_plan) == {"gpu-platform.io/provisioning-requests": "disabled"}
    assert annotations(eks_atomic_plan) == {"gpu-platform.io/provisioning-requests": "enabled"}
    assert annotations(gke_queued_plan) == {"gpu-platform.io/provisioning-requests": "enabled"}


def test_the_committed_crd_is_the_autoscalers() -> None:
    # cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml at
    # cluster-autoscaler-1.36.1: v1 served and stored, v1beta1 served.
    crd = provisioning_request_crd_manifest()

    assert (crd["spec"]["group"], crd["spec"]["names"]["kind"], crd["spec"]["scope"]) == (
        "autoscaling.x-k8s.io",
        "ProvisioningRequest",
        "Namespaced",
    )
    assert [(v["name"], v["served"], v["storage"]) for v in crd["spec"]["versions"]] == [
        ("v1", True, True),
        ("v1beta1", True, False),
    ]


def test_atomic_scale_up_without_queues_is_refused_by_its_key(
    eks_atomic_config, failed_plan_for
) -> None:
    eks_atomic_config["gpu-platform:queues"]["enabled"] = False

    plan = failed_plan_for(eks_atomic_config)

    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == ("gpu-platform:pools[1].aws.atomicScaleUp", True)


def test_atomic_scale_up_under_karpenter_is_refused_by_its_key(
    eks_atomic_config, failed_plan_for
) -> None:
    eks_atomic_config["gpu-platform:provisioner"] = "karpenter"

    plan = failed_plan_for(eks_atomic_config)

    assert isinstance(plan.error, ConfigError), plan.error
    paths = {p.path: p.expected for p in plan.error.problems}
    assert paths["gpu-platform:pools[1].aws.atomicScaleUp"].startswith(
        "no value with provisioner karpenter: Karpenter has no ProvisioningRequests"
    )


def test_atomic_scale_up_over_zonal_node_groups_is_refused_naming_both_keys(
    eks_atomic_config, failed_plan_for
) -> None:
    # An atomic scale-up is split over the node groups similar to the one the autoscaler picked,
    # one per zone here, only their total room checked (`balanceScaleUps`,
    # core/scaleup/orchestrator/orchestrator.go at cluster-autoscaler-1.33.6).
    eks_atomic_config["gpu-platform:pools"][1]["aws"]["nodeGroupPerZone"] = True

    plan = failed_plan_for(eks_atomic_config)

    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == ("gpu-platform:pools[1].aws.atomicScaleUp", True)
    assert problem.expected.startswith(
        "false while gpu-platform:pools[1].aws.nodeGroupPerZone is true: the cluster autoscaler"
        " spreads one request's nodes over the pool's zonal node groups"
    )


@pytest.mark.parametrize(
    ("queues", "namespace_queue"),
    [(True, False), (False, True)],
    ids=["namespace out of the queues", "queues off"],
)
def test_a_smoke_test_out_of_the_queues_on_a_queued_pool_is_refused_by_its_key(
    gke_config, failed_plan_for, queues: bool, namespace_queue: bool
) -> None:
    # A queued pool's nodes come only for a ProvisioningRequest (GKE's provisioningrequest
    # page, docs/gke-capacity.md), which Kueue makes for queued jobs alone.
    gke_config["gpu-platform:pools"] = [
        {
            "name": "h100-queued",
            "instanceTypes": ["a3-highgpu-8g"],
            "max": 4,
            "gcp": {"flexStart": True, "queuedProvisioning": True},
        }
    ]
    gke_config["gpu-platform:queues"]["enabled"] = queues
    gke_config["gpu-platform:namespaces"] = [
        {
            "name": "ml-sandbox",
            "gpuQuota": 8,
            "smokeTestPool": "h100-queued",
            "queue": {"enabled": namespace_queue},
        }
    ]

    plan = failed_plan_for(gke_config)

    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == (
        "gpu-platform:namespaces[0].smokeTestPool",
        "h100-queued",
    )
    assert problem.expected.startswith(
        "a pool without gcp.queuedProvisioning unless queues.enabled and"
        " gpu-platform:namespaces[0].queue.enabled are true"
    )

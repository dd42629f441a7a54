"""NVIDIA's DRA driver on the DRA pools of a stack (`allocation: dra`, the shipped dra-dev stack):
installed only where a pool uses DRA, its kubelet plugin on those pools' nodes alone and
tolerating each of their taints, the GPU Operator's device plugin kept off them, the cluster
autoscaler simulating claims, and the DeviceClasses, claim templates and quotas tenants claim
GPUs through, each valid `resource.k8s.io/v1` at Kubernetes 1.34 to 1.36."""

import copy
import re
from dataclasses import replace
from typing import Any

import pytest

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.fit import admitted
from gpu_platform.kubernetes.chart_keys import chart_key_paths, key_paths
from gpu_platform.kubernetes.dra_devices import PRODUCT_NAMES
from gpu_platform.offline.program import Plan
from gpu_platform.stack_files import stack_config
from gpu_platform.taints import CLOUD_TAINT_EFFECTS, Taint, tolerates
from tests.gpu_platform.eks.plans import asg_tags
from tests.gpu_platform.kubernetes.dra_invariants import dra_problems
from tests.gpu_platform.kubernetes.exporter_invariants import RBAC, exporter_problems
from tests.kubernetes_schemas import kubernetes_objects, manifest, problems
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

Config = dict[str, Any]
RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
DRA_CHART = "nvidia-dra-driver-gpu"
EFFECTS = {cloud: kubernetes for kubernetes, cloud in CLOUD_TAINT_EFFECTS.items()}
AFFINITY = "kubeletPlugin.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


@pytest.fixture(scope="module")
def dra_plan() -> Plan:
    return shared_plan("dra-dev")


def release(plan: Plan, chart: str) -> dict[str, Any]:
    (found,) = [r for r in plan.of_type(RELEASE) if r.inputs["chart"] == chart]
    return found.inputs


def with_second_dra_pool(config: Config) -> Config:
    """dra-dev with a second DRA pool of other GPUs (A10G) and a taint of its own."""
    config = copy.deepcopy(config)
    (pool,) = config["gpu-platform:pools"]
    config["gpu-platform:pools"].append(
        {
            **pool,
            "name": "a10g",
            "instanceTypes": ["g5.xlarge"],
            "accelerator": "a10g",
            "taints": [{"key": "team", "value": "vision", "effect": "NoSchedule"}],
        }
    )
    return config


def test_the_driver_is_installed_only_where_a_pool_uses_dra(dra_plan: Plan, dev_plan: Plan) -> None:
    assert release(dra_plan, DRA_CHART)["version"] == "25.12.0"
    assert [r for r in dev_plan.of_type(RELEASE) if r.inputs["chart"] == DRA_CHART] == []


def test_the_driver_values_are_the_charts_keys(dra_plan: Plan) -> None:
    values = release(dra_plan, DRA_CHART)["values"]

    # deployments/helm/nvidia-dra-driver-gpu/values.yaml at v25.12.0: `nodeSelectorTerms` is a
    # list, replaced whole.
    assert set(key_paths(values)) <= chart_key_paths("25.12.0", DRA_CHART)


def test_the_kubelet_plugin_rolls_a_quarter_of_its_nodes_at_a_time(dra_plan: Plan) -> None:
    values = release(dra_plan, DRA_CHART)["values"]

    # The chart's default is every node at once (deployments/helm/nvidia-dra-driver-gpu/
    # values.yaml at v25.12.0, `kubeletPlugin.updateStrategy.rollingUpdate.maxUnavailable:
    # "100%"`, rendered as it is by templates/kubeletplugin.yaml); the platform's node agents
    # roll a quarter of their nodes at a time.
    assert values["kubeletPlugin"]["updateStrategy"] == {"rollingUpdate": {"maxUnavailable": "25%"}}


def test_the_driver_serves_gpus_beside_no_device_plugin_and_no_compute_domains(
    dra_plan: Plan,
) -> None:
    values = release(dra_plan, DRA_CHART)["values"]

    # templates/validation.yaml at v25.12.0 fails the render with `resources.gpus.enabled` and
    # no `gpuResourcesEnabledOverride`; templates/controller.yaml renders the controller only
    # with ComputeDomains.
    assert (values["gpuResourcesEnabledOverride"], values["resources"]) == (
        True,
        {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
    )


def test_the_kubelet_plugin_runs_on_the_dra_pools_and_tolerates_each_of_their_taints() -> None:
    plan = shared_plan("dra-dev", with_second_dra_pool(stack_config("dra-dev", PROJECT)))
    plugin = release(plan, DRA_CHART)["values"]["kubeletPlugin"]

    (term,) = plugin["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert term == {
        "matchExpressions": [
            {"key": "gpu-platform.io/pool", "operator": "In", "values": ["a10g", "l4"]}
        ]
    }
    assert plugin["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {
            "key": "gpu-platform.io/allocation",
            "operator": "Equal",
            "value": "dra",
            "effect": "NoSchedule",
        },
        {
            "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
            "operator": "Equal",
            "value": "pending",
            "effect": "NoSchedule",
        },
        {"key": "team", "operator": "Equal", "value": "vision", "effect": "NoSchedule"},
    ]


def test_the_drivers_namespace_is_privileged_for_its_host_access(dra_plan: Plan) -> None:
    # templates/kubeletplugin.yaml at v25.12.0: privileged containers and hostPath volumes.
    (namespace,) = [
        r
        for r in dra_plan.of_type("kubernetes:core/v1:Namespace")
        if r.inputs["metadata"]["name"] == "nvidia-dra-driver-gpu"
    ]

    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == (
        "privileged"
    )


def test_a_dra_pools_nodes_keep_the_device_plugin_off(dra_plan: Plan) -> None:
    group = dra_plan.named("l4-nodes", NODE_GROUP)

    # gpu-operator v26.7.0 assets/state-device-plugin/0500_daemonset.yaml selects "true".
    assert group.inputs["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert "k8s.amazonaws.com/accelerator" not in group.inputs["labels"]


def test_a_dra_pools_auto_scaling_group_hints_no_gpu_resource(dra_plan: Plan) -> None:
    # cluster-autoscaler-1.35.2 cloudprovider/aws/aws_manager.go, `buildNodeFromTemplate`: the
    # template node takes the instance type's GPUs as nvidia.com/gpu (line 285) unless a
    # `node-template/resources/` tag says otherwise (lines 290-294). A DRA node advertises none:
    # without the hint the autoscaler would start one for a pod counting nvidia.com/gpu.
    tags = asg_tags(dra_plan, "l4")

    assert tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "0"


def test_a_dra_pools_auto_scaling_group_hints_its_dra_taint(dra_plan: Plan) -> None:
    tags = asg_tags(dra_plan, "l4")

    # cluster-autoscaler-1.34.5, 1.35.2 and 1.36.1 cloudprovider/aws/aws_manager.go,
    # `extractTaintsFromAsg`: the key after `k8s.io/cluster-autoscaler/node-template/taint/`,
    # the value `<value>:<effect>`. A template node without it would take pods that do not
    # tolerate the taint.
    assert tags["k8s.io/cluster-autoscaler/node-template/taint/gpu-platform.io/allocation"] == (
        "dra:NoSchedule"
    )


def test_the_operators_device_plugin_is_off_where_every_pool_uses_dra(
    dra_plan: Plan, dev_plan: Plan
) -> None:
    # gpu-operator v26.7.0 controllers/object_controls.go: the validator leaves out its wait for
    # the device plugin's nvidia.com/gpu (cmd/nvidia-validator/main.go, validateGPUResource)
    # only with `devicePlugin.enabled` false, which a DRA node would otherwise fail forever. The
    # chart writes the value as it is into the ClusterPolicy the controller reads
    # (templates/clusterpolicy.yaml, `enabled: {{ .Values.devicePlugin.enabled }}`), and no
    # override can turn it back on beside a DRA pool (gpu_platform/config/dra_rules.py).
    assert release(dra_plan, "gpu-operator")["values"]["devicePlugin"]["enabled"] is False
    assert "enabled" not in release(dev_plan, "gpu-operator")["values"]["devicePlugin"]


def test_the_autoscaler_simulates_claims_only_where_a_pool_uses_dra(
    dra_plan: Plan, dev_plan: Plan
) -> None:
    # config/flags/flags.go at cluster-autoscaler-1.34.5: false by default.
    flag = "enable-dynamic-resource-allocation"

    assert release(dra_plan, "cluster-autoscaler")["values"]["extraArgs"][flag] is True
    assert flag not in release(dev_plan, "cluster-autoscaler")["values"]["extraArgs"]


def test_each_gpu_model_has_a_device_class_selecting_its_whole_gpus(dra_plan: Plan) -> None:
    (device_class,) = dra_plan.of_type("kubernetes:resource.k8s.io/v1:DeviceClass")

    assert manifest(device_class)["metadata"] == {"name": "l4.gpu-platform.io"}
    # cmd/gpu-kubelet-plugin/deviceinfo.go at v25.12.0: attributes `type` and `productName`.
    assert device_class.inputs["spec"]["selectors"] == [
        {
            "cel": {
                "expression": "device.driver == 'gpu.nvidia.com' &&"
                " device.attributes['gpu.nvidia.com'].type == 'gpu' &&"
                " device.attributes['gpu.nvidia.com'].productName.matches('^NVIDIA L4$')"
            }
        }
    ]


@pytest.mark.parametrize(
    ("accelerator", "product"),
    [
        ("t4", "Tesla T4"),
        # nvidia-smi on a g5g (Graviton) instance names its GPU "NVIDIA T4G".
        ("t4", "NVIDIA T4G"),
        ("l4", "NVIDIA L4"),
        ("l40s", "NVIDIA L40S"),
        ("a100-80gb", "NVIDIA A100-SXM4-80GB"),
        ("a100-80gb", "NVIDIA A100 80GB PCIe"),
        ("h100-80gb", "NVIDIA H100 80GB HBM3"),
    ],
)
def test_a_models_pattern_matches_what_nvml_names_it(accelerator: str, product: str) -> None:
    assert re.search(PRODUCT_NAMES[accelerator], product)


def test_no_pattern_takes_another_models_gpu() -> None:
    # L4 and L40S, A100 40GB and 80GB share a prefix.
    assert not re.search(PRODUCT_NAMES["l4"], "NVIDIA L40S")
    assert not re.search(PRODUCT_NAMES["a100-40gb"], "NVIDIA A100-SXM4-80GB")
    assert set(PRODUCT_NAMES) == set(ACCELERATORS)


def test_a_tenant_claims_a_gpu_of_each_model_through_its_template(dra_plan: Plan) -> None:
    (template,) = dra_plan.of_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")

    assert manifest(template)["metadata"] == {"name": "gpu-l4", "namespace": "ml-team"}
    assert template.inputs["spec"]["spec"]["devices"]["requests"] == [
        {
            "name": "gpu",
            "exactly": {
                "deviceClassName": "l4.gpu-platform.io",
                "allocationMode": "ExactCount",
                "count": 1,
            },
        }
    ]


# Kubernetes pkg/quota/v1/evaluator/core/resource_claims.go (v1.34 to v1.36): devices claimed
# per class, `<class>.deviceclass.resource.k8s.io/devices`. dra-dev's ml-team's gpuQuota is 2;
# the chart's classes, templates/deviceclass-*.yaml at nvidia-dra-driver-gpu v25.12.0, at 0.
DRA_DEV_DEVICE_CAPS = {
    "l4.gpu-platform.io.deviceclass.resource.k8s.io/devices": "2",
    "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
    "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
    "vfio.gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
}


def device_caps(plan: Plan) -> dict[str, str]:
    (quota,) = plan.of_type("kubernetes:core/v1:ResourceQuota")
    return {k: v for k, v in quota.inputs["spec"]["hard"].items() if "deviceclass" in k}


def test_a_tenants_quota_caps_its_claimed_gpus_per_model_and_none_through_the_charts_classes(
    dra_plan: Plan,
) -> None:
    assert device_caps(dra_plan) == DRA_DEV_DEVICE_CAPS


def test_a_stack_without_dra_pools_caps_no_class_of_a_model(dev_plan: Plan) -> None:
    (quota,) = dev_plan.of_type("kubernetes:core/v1:ResourceQuota")

    # The stand-in cluster is at 1.35: NVIDIA's driver's classes are capped at 0 all the same.
    assert sorted(k for k in quota.inputs["spec"]["hard"] if "deviceclass" in k) == [
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices",
        "mig.nvidia.com.deviceclass.resource.k8s.io/devices",
        "vfio.gpu.nvidia.com.deviceclass.resource.k8s.io/devices",
    ]


def test_gpu_models_tell_a_pod_how_to_claim_each_model(dra_plan: Plan) -> None:
    workload = dra_plan.outputs["gpuModels"]["l4-dra"]["workload"]

    assert (workload["deviceClass"], workload["resourceClaimTemplate"]) == (
        "l4.gpu-platform.io",
        "gpu-l4",
    )
    assert "resource" not in workload


@pytest.mark.parametrize("minor", ["1.34", "1.35", "1.36"])
def test_every_object_of_a_dra_stack_validates_at_each_version_serving_dra(
    dra_plan: Plan, minor: str
) -> None:
    kinds = {manifest(r)["kind"] for r in kubernetes_objects(dra_plan)}

    assert {"DeviceClass", "ResourceClaimTemplate", "ResourceQuota"} <= kinds
    assert problems(dra_plan, minor) == []


def test_the_dra_invariants_hold_of_the_dra_stack_and_catch_a_pool_the_plugin_misses(
    dra_plan: Plan,
) -> None:
    assert dra_problems(dra_plan) == []

    plan = copy.deepcopy(dra_plan)
    values = release(plan, DRA_CHART)["values"]
    (term,) = values["kubeletPlugin"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    term["matchExpressions"][0]["values"] = ["another"]

    assert dra_problems(plan) == ["l4-nodes: the DRA kubelet plugin is not allowed onto its nodes"]


def dra_dev_at_1_36() -> Plan:
    config = copy.deepcopy(stack_config("dra-dev", PROJECT))
    config["gpu-platform:cluster"]["create"]["kubernetesVersion"] = "1.36"
    config["gpu-platform:pools"][0]["aws"]["amiReleaseVersion"] = "1.36.2-20260714"
    return shared_plan("dra-dev", config)


def test_at_1_36_a_pod_counting_gpus_stays_off_dra_nodes_and_a_claiming_pod_lands() -> None:
    # From 1.36 (DRAExtendedResource Beta, on by default: kubernetes pkg/features/
    # kube_features.go) the scheduler serves `nvidia.com/gpu` from a DRA node through the
    # `gpu.nvidia.com` class's `extendedResourceName` (nvidia-dra-driver-gpu v25.12.0
    # templates/deviceclass-gpu.yaml), and ExtendedResourceToleration lets such a pod past the
    # GPU taint: only the DRA pool's own taint keeps it off.
    plan = dra_dev_at_1_36()
    node_taints = [
        Taint(t["key"], t.get("value", ""), EFFECTS[t["effect"]])
        for t in plan.named("l4-nodes", NODE_GROUP).inputs["taints"]
        if not t["key"].startswith("startup-taint.")
    ]
    counting = admitted({"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]})
    claiming = plan.outputs["gpuModels"]["l4-dra"]["workload"]["tolerations"]

    assert Taint("gpu-platform.io/allocation", "dra", "NoSchedule") in node_taints
    assert not all(
        any(tolerates(t, taint) for t in counting["tolerations"]) for taint in node_taints
    )
    assert all(any(tolerates(t, taint) for t in claiming) for taint in node_taints)


def test_at_1_36_a_dra_stack_keeps_the_charts_gpu_class_at_0() -> None:
    # A pod counting `nvidia.com/gpu` that tolerates the DRA taint would be served through
    # gpu.nvidia.com, any model: in a tenant namespace it gets GPUs of a DRA pool only through
    # a model's class, capped at gpuQuota.
    assert device_caps(dra_dev_at_1_36()) == DRA_DEV_DEVICE_CAPS


def test_the_dra_invariants_catch_a_dra_pool_without_its_taint(dra_plan: Plan) -> None:
    plan = copy.deepcopy(dra_plan)
    group = plan.named("l4-nodes", NODE_GROUP)
    group.inputs["taints"] = [
        t for t in group.inputs["taints"] if t["key"] != "gpu-platform.io/allocation"
    ]

    assert dra_problems(plan) == ["l4-nodes: its nodes lack the DRA taint"]


def test_the_dcgm_exporter_attributes_dra_gpus_to_the_pods_claiming_them(
    dra_plan: Plan, dev_plan: Plan
) -> None:
    values = release(dra_plan, "gpu-operator")["values"]
    role = dra_plan.named(
        "gpu-operator-exporter-resource-slices",
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
    )
    binding = dra_plan.named(
        "gpu-operator-exporter-resource-slices",
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
    )

    # dcgm-exporter pkg/cmd/app.go: `kubernetes-enable-dra` (env KUBERNETES_ENABLE_DRA), false
    # by default; internal/pkg/transformation/dra.go lists and watches ResourceSlices, which
    # gpu-operator v26.7.0 assets/state-dcgm-exporter/0210_clusterrole.yaml does not grant.
    assert {"name": "KUBERNETES_ENABLE_DRA", "value": "true"} in values["dcgmExporter"]["env"]
    assert role.inputs["rules"] == [
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceslices"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    assert binding.inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": "nvidia-dcgm-exporter", "namespace": "gpu-operator"}
    ]
    assert exporter_problems(dra_plan, {}) == []
    dev_env = release(dev_plan, "gpu-operator")["values"]["dcgmExporter"]["env"]
    assert "KUBERNETES_ENABLE_DRA" not in [e["name"] for e in dev_env]


def test_the_exporter_invariants_catch_an_exporter_blind_to_dra(dra_plan: Plan) -> None:
    plan = copy.deepcopy(dra_plan)
    exporter = release(plan, "gpu-operator")["values"]["dcgmExporter"]
    exporter["env"] = [e for e in exporter["env"] if e["name"] != "KUBERNETES_ENABLE_DRA"]

    assert exporter_problems(plan, {}) == [
        "pool l4: the GPU Operator's exporter cannot attribute DRA GPUs to pods"
    ]


def test_the_exporter_invariants_catch_an_exporter_bound_to_another_account(
    dra_plan: Plan,
) -> None:
    plan = copy.deepcopy(dra_plan)
    binding = plan.named(
        "gpu-operator-exporter-resource-slices",
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
    )
    binding.inputs["subjects"] = [{**binding.inputs["subjects"][0], "namespace": "default"}]

    assert exporter_problems(plan, {}) == [
        "pool l4: the GPU Operator's exporter cannot attribute DRA GPUs to pods"
    ]


def test_the_exporters_access_to_resource_slices_comes_before_the_operator(
    dra_plan: Plan,
) -> None:
    # The exporter builds its ResourceSlice informer once, at startup: at 4.6.0-4.8.3
    # (dcgm-exporter commit 7ad58324, hack/versions.env) internal/pkg/transformation/dra.go
    # `NewDRAResourceSliceManager` reads resource.k8s.io/v1 and gives up after 30 s when RBAC
    # refuses the list, and kubernetes.go `NewPodMapper` runs on without DRA pod labels. A DRA
    # pool's `min` nodes exist before the operator starts exporters. Another exporter image is
    # to be read again.
    assert (
        "dcgm-exporter:4.6.0-4.8.3-"
        in release(dra_plan, "gpu-operator")["values"]["dcgmExporter"]["image"]
    )
    (operator,) = [r for r in dra_plan.of_type(RELEASE) if r.name == "gpu-operator"]
    role, binding = (
        dra_plan.named("gpu-operator-exporter-resource-slices", f"{RBAC}:{kind}")
        for kind in ("ClusterRole", "ClusterRoleBinding")
    )
    assert binding.urn in operator.dependencies
    assert role.urn in binding.dependencies

    plan = copy.deepcopy(dra_plan)
    index = plan.resources.index(plan.named("gpu-operator", RELEASE))
    plan.resources[index] = replace(plan.resources[index], dependencies=())
    assert exporter_problems(plan, {}) == [
        "pool l4: the GPU Operator's exporter may start before its access to ResourceSlices"
    ]


def test_the_driver_and_its_classes_come_after_the_tenants_quotas(dra_plan: Plan) -> None:
    # A quota caps only the classes it names (pkg/quota/v1/evaluator/core/resource_claims.go):
    # until it holds the chart's classes at none, a claim through them goes uncounted.
    (driver,) = [r for r in dra_plan.resources if r.type == "gpu-platform:kubernetes:DraDriver"]
    (quota,) = dra_plan.of_type("kubernetes:core/v1:ResourceQuota")
    (template,) = dra_plan.of_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")

    assert quota.urn in driver.dependencies
    assert not [urn for urn in template.dependencies if "DraDriver" in urn]

"""The GpuOperator component in the real program: its namespace, GKE's quota for its critical
pods and the chart release, as the program declares them; and the operator's config rules."""

from typing import Any

import kubernetes_validate
import pytest

from gpu_platform.cloud import pools_as_declared
from gpu_platform.config import ConfigError, load_stack_config
from gpu_platform.kubernetes.operand_images import operand_image_values
from gpu_platform.kubernetes.operator_values import deep_merge, operator_values_for
from gpu_platform.offline.program import Plan, PlannedResource
from gpu_platform.versions import (
    GPU_OPERATOR_CHART,
    POD_SECURITY_VERSION,
    SUPPORTED_KUBERNETES_VERSIONS,
)
from tests.stack_variants import AL2023_RELEASE, BOTTLEROCKET_RELEASE

# Its tests plan the same configs again and again, and change the program only through the
# stand-ins' answers.
pytestmark = pytest.mark.shared_plans

Config = dict[str, Any]
COMPONENT = "gpu-platform:kubernetes:GpuOperator"
NAMESPACE = "kubernetes:core/v1:Namespace"
QUOTA = "kubernetes:core/v1:ResourceQuota"
RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.fixture
def gke_stack(gke_config: Config) -> Config:
    """The GKE stack, reaching its cluster through a kubeconfig context."""
    gke_config["gpu-platform:cluster"]["kubeconfigContext"] = "ml-dev"
    return gke_config


def release(plan: Plan) -> PlannedResource:
    return plan.named("gpu-operator", RELEASE)


def namespace(plan: Plan) -> PlannedResource:
    return plan.named("gpu-operator", NAMESPACE)


def critical_pod_quotas(plan: Plan) -> list[PlannedResource]:
    return [q for q in plan.of_type(QUOTA) if q.name == "gpu-operator-critical-pods"]


def operator_values(raw: Config) -> dict[str, Any]:
    """What the values builders make of a stack's config (the operand images under the
    platform's values), to compare the release against."""
    config = load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in raw.items() if k.startswith("gpu-")}
    )
    return deep_merge(
        operand_image_values(config.operator.chart_version),
        operator_values_for(
            config.operator, config.platform, pools_as_declared(config), config.monitoring
        ),
    )


# --- the release -----------------------------------------------------------------------------


def test_release_installs_the_pinned_chart_from_its_repository(dev_plan: Plan) -> None:
    inputs = release(dev_plan).inputs

    assert (inputs["chart"], inputs["version"], inputs["repositoryOpts"]) == (
        "gpu-operator",
        GPU_OPERATOR_CHART.version,
        {"repo": GPU_OPERATOR_CHART.repository},
    )


def test_release_takes_chart_version_and_repository_from_config(
    dev_config: Config, plan_for
) -> None:
    mirror = "https://charts.example.com/nvidia"
    dev_config["gpu-platform:operator"] = {"chartVersion": "v26.3.3", "repository": mirror}

    inputs = release(plan_for(dev_config)).inputs

    assert (inputs["version"], inputs["repositoryOpts"]["repo"]) == ("v26.3.3", mirror)


def test_release_has_a_fixed_name(dev_plan: Plan) -> None:
    assert release(dev_plan).inputs["name"] == "gpu-operator"


def test_release_is_atomic_and_cleans_up_a_failed_upgrade(dev_plan: Plan) -> None:
    inputs = release(dev_plan).inputs

    assert (inputs["atomic"], inputs["cleanupOnFail"]) == (True, True)


def test_release_waits_as_long_as_config_says(dev_config: Config, plan_for) -> None:
    dev_config["gpu-platform:operator"] = {"timeoutSeconds": 1800}

    assert release(plan_for(dev_config)).inputs["timeout"] == 1800


def test_release_waits_fifteen_minutes_and_five_seconds_a_gpu_node_by_default(
    dev_plan: Plan,
) -> None:
    # 900 s, and 5 s for each of the 3 nodes of the dev stack's pool at its max
    # (gpu_platform/kubernetes/helm_release.py).
    assert release(dev_plan).inputs["timeout"] == 915


def test_release_skips_openapi_validation_so_crd_upgrades_go_through(dev_plan: Plan) -> None:
    assert release(dev_plan).inputs["disableOpenapiValidation"] is True


def test_release_keeps_a_bounded_history(dev_plan: Plan) -> None:
    assert release(dev_plan).inputs["maxHistory"] == 10


def test_release_goes_into_the_operator_namespace_without_creating_it(dev_plan: Plan) -> None:
    inputs = release(dev_plan).inputs

    assert (inputs["namespace"], inputs["createNamespace"]) == ("gpu-operator", False)


def test_release_waits_for_its_namespace(dev_plan: Plan) -> None:
    assert namespace(dev_plan).urn in release(dev_plan).dependencies


def test_release_values_are_the_values_builders(dev_config: Config, plan_for) -> None:
    assert release(plan_for(dev_config)).inputs["values"] == operator_values(dev_config)


@pytest.mark.parametrize(
    ("node_image", "ami_release", "driver", "device_plugin_on"),
    [("al2023", AL2023_RELEASE, False, True), ("bottlerocket", BOTTLEROCKET_RELEASE, False, False)],
)
def test_release_values_follow_the_eks_node_image(
    dev_config: Config,
    plan_for,
    node_image: str,
    ami_release: str,
    driver: bool,
    device_plugin_on: bool,
) -> None:
    dev_config["gpu-platform:cluster"]["nodeImage"] = node_image
    dev_config["gpu-platform:pools"][0]["sharing"] = {"mode": "exclusive"}
    dev_config["gpu-platform:pools"][0]["aws"]["amiReleaseVersion"] = ami_release

    values = release(plan_for(dev_config)).inputs["values"]

    assert values["driver"]["enabled"] is driver
    assert values["devicePlugin"].get("enabled", True) is device_plugin_on


@pytest.mark.parametrize(("node_image", "driver"), [("cos", False), ("ubuntu", True)])
def test_release_values_follow_the_gke_node_image(
    gke_stack: Config, plan_for, node_image: str, driver: bool
) -> None:
    gke_stack["gpu-platform:cluster"]["nodeImage"] = node_image
    for pool in gke_stack["gpu-platform:pools"]:
        pool["sharing"] = {"mode": "exclusive"}  # GKE shares GPUs on COS only

    values = release(plan_for(gke_stack)).inputs["values"]

    assert values["driver"]["enabled"] is driver
    assert ("hostPaths" in values) is (node_image == "cos")


def test_release_values_carry_the_pools_sharing_config(dev_config: Config, plan_for) -> None:
    dev_config["gpu-platform:pools"][0]["sharing"] = {"mode": "mps", "replicas": 3}

    values = release(plan_for(dev_config)).inputs["values"]

    assert set(values["devicePlugin"]["config"]["data"]) == {"exclusive", "mps-3"}


def test_release_values_take_overrides_from_config(dev_config: Config, plan_for) -> None:
    dev_config["gpu-platform:operator"] = {"overrides": {"gfd": {"enabled": False}}}

    assert release(plan_for(dev_config)).inputs["values"]["gfd"]["enabled"] is False


# --- the namespace ---------------------------------------------------------------------------


def test_namespace_is_named_from_config(dev_config: Config, plan_for) -> None:
    dev_config["gpu-platform:operator"] = {"namespace": "nvidia-gpu"}

    plan = plan_for(dev_config)

    assert namespace(plan).inputs["metadata"]["name"] == "nvidia-gpu"
    assert release(plan).inputs["namespace"] == "nvidia-gpu"


def test_namespace_is_privileged_for_enforce_audit_and_warn_at_a_pinned_version(
    dev_plan: Plan,
) -> None:
    labels = namespace(dev_plan).inputs["metadata"]["labels"]

    assert labels == {
        **{
            f"pod-security.kubernetes.io/{mode}": "privileged"
            for mode in ("enforce", "audit", "warn")
        },
        **{
            f"pod-security.kubernetes.io/{mode}-version": POD_SECURITY_VERSION
            for mode in ("enforce", "audit", "warn")
        },
    }


# --- GKE's quota for critical pods ------------------------------------------------------------


def test_gke_quota_admits_the_operators_critical_pods(gke_stack: Config, plan_for) -> None:
    (quota,) = critical_pod_quotas(plan_for(gke_stack))

    assert quota.inputs["metadata"]["namespace"] == "gpu-operator"
    assert quota.inputs["spec"] == {
        "hard": {"pods": "1000"},
        "scopeSelector": {
            "matchExpressions": [
                {
                    "scopeName": "PriorityClass",
                    "operator": "In",
                    "values": ["system-node-critical", "system-cluster-critical"],
                }
            ]
        },
    }


def test_gke_quota_size_comes_from_config(gke_stack: Config, plan_for) -> None:
    gke_stack["gpu-platform:operator"] = {"criticalPodQuota": 250}

    (quota,) = critical_pod_quotas(plan_for(gke_stack))

    assert quota.inputs["spec"]["hard"] == {"pods": "250"}


def test_gke_release_waits_for_the_quota(gke_stack: Config, plan_for) -> None:
    plan = plan_for(gke_stack)
    (quota,) = critical_pod_quotas(plan)

    assert quota.urn in release(plan).dependencies


def test_eks_has_no_critical_pod_quota(dev_plan: Plan) -> None:
    assert critical_pod_quotas(dev_plan) == []


# --- the component ---------------------------------------------------------------------------


OPERATOR_CHILDREN = {(NAMESPACE, "gpu-operator"), (RELEASE, "gpu-operator")}


@pytest.mark.parametrize(
    ("stack", "children"),
    [
        ("dev_config", OPERATOR_CHILDREN),
        # The fixture's L4 pool is time-sliced by GKE's device plugin: its nodes' exporter too.
        (
            "gke_stack",
            {
                *OPERATOR_CHILDREN,
                (QUOTA, "gpu-operator-critical-pods"),
                ("kubernetes:apps/v1:DaemonSet", "gpu-operator-nvidia-dcgm-exporter-gke"),
                ("kubernetes:core/v1:Service", "gpu-operator-nvidia-dcgm-exporter-gke"),
            },
        ),
    ],
)
def test_every_resource_is_a_child_of_the_component(
    stack: str, children: set[tuple[str, str]], request: pytest.FixtureRequest, plan_for
) -> None:
    plan = plan_for(request.getfixturevalue(stack))
    (component,) = plan.of_type(COMPONENT)

    assert {(r.type, r.name) for r in plan.children_of(component)} == children


@pytest.mark.parametrize("minor", SUPPORTED_KUBERNETES_VERSIONS)
def test_namespace_and_quota_are_valid_kubernetes_objects(
    gke_stack: Config, plan_for, minor: str
) -> None:
    plan = plan_for(gke_stack)

    for resource in [namespace(plan), *critical_pod_quotas(plan)]:
        kubernetes_validate.validate(resource.inputs, f"{minor}.0", strict=True)


def test_stack_outputs_name_the_operator_namespace_and_chart_version(
    dev_config: Config, plan_for
) -> None:
    dev_config["gpu-platform:operator"] = {"namespace": "nvidia-gpu"}

    outputs = plan_for(dev_config).outputs

    assert (outputs["gpuOperatorNamespace"], outputs["gpuOperatorVersion"]) == (
        "nvidia-gpu",
        GPU_OPERATOR_CHART.version,
    )


# --- config rules ----------------------------------------------------------------------------


def test_override_of_a_component_the_chart_lacks_is_a_config_error(
    dev_config: Config, failed_plan_for
) -> None:
    dev_config["gpu-platform:operator"] = {"overrides": {"dcgmexporter": {"enabled": False}}}

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    (problem,) = plan.error.problems
    assert problem.path == "gpu-platform:operator.overrides.dcgmexporter"
    assert "did you mean dcgmExporter?" in problem.expected
    assert plan.resources == []


@pytest.mark.parametrize(
    "sharing", [{"mode": "time-slicing", "replicas": 4}, {"mode": "mps", "replicas": 2}]
)
def test_sharing_gpus_on_bottlerocket_is_a_config_error(
    dev_config: Config, failed_plan_for, sharing: dict[str, Any]
) -> None:
    dev_config["gpu-platform:cluster"]["nodeImage"] = "bottlerocket"
    dev_config["gpu-platform:pools"][0]["sharing"] = sharing

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    assert [p.path for p in plan.error.problems] == ["gpu-platform:pools[0].sharing.mode"]
    assert plan.resources == []


def test_mig_on_bottlerocket_is_a_config_error(dev_config: Config, failed_plan_for) -> None:
    dev_config["gpu-platform:cluster"]["nodeImage"] = "bottlerocket"
    dev_config["gpu-platform:pools"][0].update(
        instanceTypes=["p4de.24xlarge"],
        accelerator="a100-80gb",
        gpusPerNode=8,
        sharing={"mode": "mig", "profile": "all-1g.10gb"},
    )

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    assert [p.path for p in plan.error.problems] == ["gpu-platform:pools[0].sharing.mode"]

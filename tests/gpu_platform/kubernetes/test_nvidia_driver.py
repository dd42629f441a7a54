"""Each GKE Ubuntu pool's NVIDIADriver: its shape, its validity against the pinned GPU Operator's
CRD, which nodes it selects, and the config rules around per-pool drivers."""

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.config import ConfigError, load_stack_config
from gpu_platform.kubernetes.crd_schemas import SCHEMAS_DIR, chart_crds, validation_errors
from gpu_platform.offline.program import Plan, PlannedResource
from gpu_platform.stack_files import SECRET_STAND_IN
from gpu_platform.versions import GPU_OPERATOR_CHART
from tests.conftest import Config
from tests.gpu_platform.gke.plans import NODE_POOL, on_ubuntu
from tests.stack_variants import without_queues

# Its tests plan the same configs again and again, and change the program only through the
# stand-ins' answers.
pytestmark = pytest.mark.shared_plans

PlanFor = Callable[[Config], Plan]
NVIDIA_DRIVER = "kubernetes:nvidia.com/v1alpha1:NVIDIADriver"
RELEASE = "kubernetes:helm.sh/v3:Release"
CHART, PINNED = GPU_OPERATOR_CHART.name, GPU_OPERATOR_CHART.version
# The chart's default driver (values.yaml `driver.version` of v26.7.0), the platform's pin.
PINNED_DRIVER = "595.91.07"


@pytest.fixture
def ubuntu(gke_config: Config) -> Config:
    """The GKE stack on Ubuntu with two pools, the second tainted for one team."""
    on_ubuntu(gke_config)
    pool = gke_config["gpu-platform:pools"][0]
    gke_config["gpu-platform:pools"].append(
        {
            **copy.deepcopy(pool),
            "name": "l4-team",
            "taints": [{"key": "team", "value": "vision", "effect": "NoSchedule"}],
        }
    )
    return without_queues(gke_config)


def drivers(plan: Plan) -> dict[str, dict[str, Any]]:
    """The NVIDIADriver objects of a plan by name."""
    return {r.inputs["metadata"]["name"]: r.inputs for r in plan.of_type(NVIDIA_DRIVER)}


def problems(config: Config) -> dict[str, str]:
    raw = {k.removeprefix("gpu-platform:"): v for k, v in config.items() if k.startswith("gpu-")}
    with pytest.raises(ConfigError) as error:
        load_stack_config(raw)
    return {p.path: p.expected for p in error.value.problems}


def accepts(config: Config) -> bool:
    raw = {k.removeprefix("gpu-platform:"): v for k, v in config.items() if k.startswith("gpu-")}
    return load_stack_config(raw) is not None


# --- the resource ----------------------------------------------------------------------------

# Every validated pool's startup taint (docs/node-validation.md).
VALIDATION_TOLERATION = {
    "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
    "operator": "Equal",
    "value": "pending",
    "effect": "NoSchedule",
}


def test_each_ubuntu_pool_gets_an_nvidiadriver_of_its_own(
    ubuntu: Config, plan_for: PlanFor
) -> None:
    assert drivers(plan_for(ubuntu))["l4-team"] == {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "NVIDIADriver",
        "metadata": {"name": "l4-team"},
        "spec": {
            "default": False,
            "driverType": "gpu",
            "repository": "nvcr.io/nvidia",
            "image": "driver",
            "version": PINNED_DRIVER,
            "nodeSelector": {"gpu-platform.io/pool": "l4-team"},
            "tolerations": [
                {"key": "team", "operator": "Equal", "value": "vision", "effect": "NoSchedule"},
                VALIDATION_TOLERATION,
            ],
            "upgradePolicy": {
                "autoUpgrade": True,
                "maxParallelUpgrades": 1,
                "maxUnavailable": "25%",
                "waitForCompletion": {
                    "podSelector": "batch.kubernetes.io/job-name",
                    "timeoutSeconds": 86400,
                },
                "podDeletion": {"force": False, "timeoutSeconds": 300},
            },
        },
    }


def test_a_pool_without_extra_taints_adds_only_its_validation_taint(
    ubuntu: Config, plan_for: PlanFor
) -> None:
    # The driver's DaemonSet tolerates the GPU taint itself (gpu-operator v26.7.0
    # manifests/state-driver/0500_daemonset.yaml); a new node needs its driver before it can be
    # validated.
    assert drivers(plan_for(ubuntu))["l4-shared"]["spec"]["tolerations"] == [VALIDATION_TOLERATION]


def test_a_pool_without_validation_adds_no_toleration(ubuntu: Config, plan_for: PlanFor) -> None:
    for pool in ubuntu["gpu-platform:pools"]:
        pool["validation"] = {"enabled": False}

    assert drivers(plan_for(ubuntu))["l4-shared"]["spec"]["tolerations"] == []


def test_a_pool_builds_its_own_driver_version_and_the_others_the_operators(
    ubuntu: Config, plan_for: PlanFor
) -> None:
    ubuntu["gpu-platform:operator"] = {"driverVersion": "580.126.09"}
    ubuntu["gpu-platform:pools"][1]["gcp"] = {"driverVersion": "595.91.07"}

    versions = {name: d["spec"]["version"] for name, d in drivers(plan_for(ubuntu)).items()}

    assert versions == {"l4-shared": "580.126.09", "l4-team": "595.91.07"}


def test_the_upgrade_policy_rolls_a_share_of_a_pool_after_its_running_jobs(
    ubuntu: Config, plan_for: PlanFor
) -> None:
    ubuntu["gpu-platform:operator"] = {
        "driverUpgradeMaxUnavailablePercent": 10,
        "driverUpgradeJobWaitMinutes": 120,
    }

    policy = drivers(plan_for(ubuntu))["l4-shared"]["spec"]["upgradePolicy"]

    assert policy == {
        "autoUpgrade": True,
        "maxParallelUpgrades": 1,
        "maxUnavailable": "10%",
        "waitForCompletion": {
            "podSelector": "batch.kubernetes.io/job-name",
            "timeoutSeconds": 7200,
        },
        "podDeletion": {"force": False, "timeoutSeconds": 300},
    }


def test_a_driver_image_mirror_reaches_every_nvidiadriver(
    ubuntu: Config, plan_for: PlanFor
) -> None:
    ubuntu["gpu-platform:operator"] = {
        "overrides": {
            "driver": {"repository": "registry.example.com/nvidia", "imagePullSecrets": ["pull"]}
        }
    }

    specs = [d["spec"] for d in drivers(plan_for(ubuntu)).values()]

    assert [(s["repository"], s["image"], s["imagePullSecrets"]) for s in specs] == [
        ("registry.example.com/nvidia", "driver", ["pull"])
    ] * 2


def test_nvidiadrivers_wait_for_the_release_that_installs_their_crd(
    ubuntu: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(ubuntu)
    release = plan.named("gpu-operator", RELEASE)

    assert all(release.urn in d.dependencies for d in plan.of_type(NVIDIA_DRIVER))


def test_a_protected_stack_protects_its_nvidiadrivers(ubuntu: Config, plan_for: PlanFor) -> None:
    ubuntu["gpu-platform:protect"] = True

    assert [d.protect for d in plan_for(ubuntu).of_type(NVIDIA_DRIVER)] == [True, True]


def test_an_nvidiadriver_holding_a_secret_override_is_secret(
    ubuntu: Config, plan_for: PlanFor
) -> None:
    ubuntu["gpu-platform:operator"] = {
        "overrides": {"driver": {"repository": {"secure": "v1:ciphertext"}}}
    }

    for driver in plan_for(ubuntu).of_type(NVIDIA_DRIVER):
        assert SECRET_STAND_IN in json.dumps(driver.inputs["spec"])
        assert "spec" in driver.secret_inputs


@pytest.mark.parametrize("node_image", ["cos", "al2023"])
def test_no_nvidiadriver_where_the_node_image_carries_the_driver(
    gke_config: Config, dev_config: Config, plan_for: PlanFor, node_image: str
) -> None:
    config = gke_config if node_image == "cos" else dev_config

    assert plan_for(config).of_type(NVIDIA_DRIVER) == []


# --- which nodes each one selects --------------------------------------------------------------


def selects(driver: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether the operator routes a node with these labels to the NVIDIADriver: every label
    of its nodeSelector, and `nvidia.com/gpu.present=true` (gpu-operator v26.7.0
    internal/nvidiadriver/nvidiadriver.go, AssignOwners and nodeMatchesSelector)."""
    wanted = {**driver["spec"]["nodeSelector"], "nvidia.com/gpu.present": "true"}
    return wanted.items() <= labels.items()


def node_labels(node_pool: PlannedResource) -> dict[str, str]:
    return node_pool.inputs["nodeConfig"]["labels"]


def test_each_gpu_pool_is_selected_by_exactly_one_nvidiadriver(
    ubuntu: Config, plan_for: PlanFor
) -> None:
    ubuntu["gpu-platform:pools"].append(
        {**ubuntu["gpu-platform:pools"][0], "name": "l4-canary", "canaryOf": "l4-shared"}
    )
    plan = plan_for(ubuntu)
    found = drivers(plan)

    selected_by = {
        node_pool.name: [name for name, d in found.items() if selects(d, node_labels(node_pool))]
        for node_pool in plan.of_type(NODE_POOL)
    }

    assert selected_by == {
        "l4-shared": ["l4-shared"],
        "l4-team": ["l4-team"],
        "l4-canary": ["l4-canary"],
    }


# --- validity against the pinned chart's CRD ----------------------------------------------------


def test_every_nvidiadriver_is_valid_against_the_pinned_crd(
    ubuntu: Config, plan_for: PlanFor
) -> None:
    ubuntu["gpu-platform:operator"] = {
        "overrides": {"driver": {"repository": "registry.example.com/nvidia", "image": "driver"}}
    }

    found = drivers(plan_for(ubuntu))

    assert {name: validation_errors(d, CHART, PINNED) for name, d in found.items()} == {
        "l4-shared": [],
        "l4-team": [],
    }


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            lambda d: d["spec"].update(nodeSelecter={}),
            "spec: Additional properties are not allowed ('nodeSelecter' was unexpected)",
        ),
        (
            lambda d: d["spec"]["upgradePolicy"].update(gpuPodDeletion={}),
            "spec.upgradePolicy: Additional properties are not allowed ('gpuPodDeletion' was"
            " unexpected)",
        ),
        (
            lambda d: d["spec"].update(driverType="cuda"),
            "spec.driverType: 'cuda' is not one of ['gpu', 'vgpu', 'vgpu-host-manager']",
        ),
        (
            lambda d: d["metadata"].update(namespace="gpu-operator"),
            "metadata.namespace: the NVIDIADriver CRD's scope is Cluster",
        ),
    ],
    ids=["misspelt-field", "chart-values-spelling", "bad-enum", "namespaced"],
)
def test_the_crd_check_refuses_what_the_api_server_would_drop_or_refuse(
    ubuntu: Config, plan_for: PlanFor, change: Callable[[dict[str, Any]], None], error: str
) -> None:
    driver = copy.deepcopy(drivers(plan_for(ubuntu))["l4-shared"])
    change(driver)

    assert validation_errors(driver, CHART, PINNED) == [error]


def test_the_committed_crd_schemas_are_the_pinned_charts() -> None:
    names = sorted(p.name for p in SCHEMAS_DIR.glob(f"{CHART}-*.json"))

    assert names == [f"{CHART}-{PINNED}-nvidiadrivers.nvidia.com.json"]


def test_the_committed_crd_requires_what_the_resources_set() -> None:
    # api/nvidia/v1alpha1/nvidiadriver_types.go at v26.7.0: `default`, `driverType` and `image`
    # carry no omitempty (each has a kubebuilder default); the resource is cluster-scoped.
    (crd,) = chart_crds(CHART, PINNED)
    spec = crd["versions"]["v1alpha1"]["properties"]["spec"]

    assert (crd["kind"], crd["scope"], spec["required"]) == (
        "NVIDIADriver",
        "Cluster",
        ["default", "driverType", "image"],
    )


# --- config --------------------------------------------------------------------------------------


def test_a_pools_driver_version_is_refused_on_cos(gke_config: Config) -> None:
    gke_config["gpu-platform:pools"][0]["gcp"] = {"driverVersion": "595.91.07"}

    assert problems(gke_config) == {
        "gpu-platform:pools[0].gcp.driverVersion": "no value unless nodeImage is ubuntu, where"
        " the GPU Operator builds the driver; on cos the pool's GKE version decides it"
        " (gcp.nodeVersion, gcp.cosDriverBranch)"
    }


def test_a_pools_driver_version_is_refused_on_eks(dev_config: Config) -> None:
    dev_config["gpu-platform:pools"][0]["gcp"] = {"driverVersion": "595.91.07"}

    found = problems(dev_config)

    assert found == {
        "gpu-platform:pools[0].gcp": "no value when cloud is aws: it applies to gcp stacks only"
        " (GKE node pool settings)"
    }


def test_a_pools_driver_version_must_be_a_driver_version(ubuntu: Config) -> None:
    ubuntu["gpu-platform:pools"][0]["gcp"] = {"driverVersion": "latest"}

    assert problems(ubuntu) == {
        "gpu-platform:pools[0].gcp.driverVersion": "an NVIDIA driver version such as 595.91.07"
    }


def test_an_operator_older_than_per_pool_drivers_is_refused_on_ubuntu(ubuntu: Config) -> None:
    ubuntu["gpu-platform:operator"] = {"chartVersion": "v26.3.3"}

    assert problems(ubuntu) == {
        "gpu-platform:operator.chartVersion": "v26.7.0 or newer with nodeImage ubuntu, where each"
        " pool has an NVIDIADriver resource of its own: older operators neither hand nodes over"
        " to it nor roll it out with its own upgrade policy"
    }


def test_a_newer_operator_is_accepted_on_ubuntu(ubuntu: Config) -> None:
    ubuntu["gpu-platform:operator"] = {"chartVersion": "v26.10.0"}

    assert accepts(ubuntu)


def test_driver_overrides_the_nvidiadrivers_do_not_take_are_refused_on_ubuntu(
    ubuntu: Config,
) -> None:
    ubuntu["gpu-platform:operator"] = {
        "overrides": {"driver": {"kernelModuleType": "open", "repository": "r.example.com"}}
    }

    assert problems(ubuntu) == {
        "gpu-platform:operator.overrides.driver.kernelModuleType": "no value with nodeImage"
        " ubuntu, where only repository, image, imagePullSecrets, enabled, manager act on the"
        " driver: the platform's NVIDIADriver resources build it (per pool with"
        " gcp.driverVersion, rolled out within operator.driverUpgrade... settings)"
    }


def test_turning_the_driver_off_is_refused_on_ubuntu(ubuntu: Config) -> None:
    # gpu-operator v26.7.0 controllers/nvidiadriver_controller.go reconciles the NVIDIADriver
    # resources while ClusterPolicy's useNvidiaDriverCRD is on, driver.enabled or not.
    ubuntu["gpu-platform:operator"] = {"overrides": {"driver": {"enabled": False}}}

    assert problems(ubuntu) == {
        "gpu-platform:operator.overrides.driver.enabled": "true or no value with nodeImage"
        " ubuntu, where the platform's NVIDIADriver resources install each pool's driver"
        " whatever it says, and nothing else installs one; for a driver the GPU Operator does"
        " not build, use nodeImage cos (Google's installer loads COS's driver)"
    }


def test_driver_overrides_stay_the_charts_business_on_cos(gke_config: Config) -> None:
    gke_config["gpu-platform:operator"] = {"overrides": {"driver": {"kernelModuleType": "open"}}}

    assert accepts(gke_config)

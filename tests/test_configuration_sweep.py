"""A sweep over the configuration space: every stack configuration the loader accepts plans
clean, and its parts agree at their seams.

Stacks are drawn across the whole config model (tests/config_strategies.py). The loader may
refuse one, with a config error naming a `gpu-platform:` key and before any resource is
registered. Every stack it accepts is planned by the real program, and its plan must hold each
invariant of `invariants`: the policy pack, configured as prod is, finds no mandatory violation;
every resource validates against the official models the suite uses; every DaemonSet tolerates
the taints of every pool it must run on; a led pool, and its driver, wait for the canary's nodes,
driver and gate; no canary sits on capacity that never starts its node, and every canary ranks
below every pool that is not one; update timeouts outlast the longest rollout; each EFA node
gets its own instance type's EFA count, and each EFA placement stays in one zone; every GPU
node gets one DCGM exporter, matching pods by the device IDs its device plugin uses; every
tenant namespace's quota caps every MIG slice of every GPU the platform knows at its `migQuota`,
and no more whole GPUs than its `gpuQuota` (replicas than its `sharedGpuQuota` where no pool is
exclusive), and from Kubernetes 1.34 NVIDIA's DRA driver's DeviceClasses at 0, but from 1.36
`gpu.nvidia.com` at its cap of `nvidia.com/gpu` on a stack without DRA pools (from 1.34 on an
EKS Auto Mode stack); where a pool
validates its nodes, the pods' admission policy is deployed and admits every pod the platform
runs.

CI draws a fixed sequence of `EXAMPLES` stacks (`derandomize`, no example database), after the
few stacks of `CORNER_STACKS` that join the corners such a short run may miss. A deeper
run for a release draws more: `GPU_PLATFORM_SWEEP_EXAMPLES=500 pytest -n 0
tests/test_configuration_sweep.py` (README, Testing).
"""

import json
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings

from gpu_platform.config import load_stack_config
from gpu_platform.lock.images import locked_digest
from gpu_platform.lock.lockfile import LOCK_PATH_VARIABLE
from gpu_platform.node_identity import DEVICE_PLUGIN_DEPLOY_LABEL
from gpu_platform.offline.analyzer import PolicyPack
from gpu_platform.offline.exempt_namespaces import exemption_mismatches
from gpu_platform.offline.namespace_levels import POD_SECURITY, namespace_levels
from gpu_platform.offline.program import Plan, run_program
from gpu_platform.platform_images import platform_images
from gpu_platform.stack_files import gpu_platform_config, stack_config
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS
from tests.config_strategies import CORNER_STACKS, stack_configs
from tests.gpu_platform.canary_invariants import canary_capacity_problems, canary_rank_problems
from tests.gpu_platform.eks.efa_invariants import efa_problems
from tests.gpu_platform.gke.new_cluster.hardening_invariants import hardening_problems
from tests.gpu_platform.idle_billing_invariants import idle_billing_problems
from tests.gpu_platform.kubernetes.daemonset_tolerations import daemonset_toleration_problems
from tests.gpu_platform.kubernetes.dra_invariants import dra_problems
from tests.gpu_platform.kubernetes.exporter_invariants import exporter_problems
from tests.gpu_platform.kubernetes.gate_graph import (
    canary_ordering_problems,
    validation_ordering_problems,
)
from tests.gpu_platform.kubernetes.node_validation.pod_policy_invariants import (
    pod_policy_problems,
)
from tests.gpu_platform.kubernetes.node_validation.taint_invariants import (
    validation_taint_problems,
)
from tests.gpu_platform.kubernetes.provisioning_invariants import provisioning_check_problems
from tests.gpu_platform.kubernetes.quota_invariants import kueue_quota_problems, quota_problems
from tests.gpu_platform.rollout_invariants import timeout_problems
from tests.official_models import official_model_problems
from tests.refusals import assert_refused_by_key
from tests.repository import PROJECT
from tests.sweep_lock import write_sweep_lock

Config = dict[str, Any]
EXAMPLES = int(os.environ.get("GPU_PLATFORM_SWEEP_EXAMPLES", "10"))
PLATFORM_IMAGES = "platform-images-by-digest"
PROD_POLICY_CONFIG: Mapping[str, Any] = json.loads(
    (PROJECT.directory / "policy-config" / "prod.json").read_text()
)


def prod_policy_config(plan: Plan, config: Config) -> dict[str, Any]:
    """prod's policy config for a stack of other namespaces and settings: its levels and
    parameters, with what a stack's own policy config declares for them: its namespaces' Pod
    Security levels, the namespaces its settings move the platform's privileged and baseline
    ones to (exempt, given alike to both Pod Security policies and to the one that keeps the node
    validation taint to those namespaces), and the releases they move
    off the pins (`platformReleases`), and the driver image its operator overrides name for its
    NVIDIADrivers (`driverImages`)."""
    exempt = [
        *PROD_POLICY_CONFIG[POD_SECURITY]["exemptNamespaces"],
        *moved_namespaces(config),
        *dra_driver_namespaces(plan),
    ]
    pod_security = {
        **PROD_POLICY_CONFIG[POD_SECURITY],
        "namespaceLevels": namespace_levels(plan.resources),
        "exemptNamespaces": exempt,
    }
    # EKS Auto Mode chooses its nodes' driver, so no pool of a stack on it has a CUDA release
    # the pack could hold pods to: such a stack declares that check advisory
    # (docs/eks-auto-mode.md).
    auto_mode = config.get("gpu-platform:provisioner") == "eks-auto-mode"
    return {
        **PROD_POLICY_CONFIG,
        **({"gpu-pods-cuda-known": "advisory"} if auto_mode else {}),
        POD_SECURITY: pod_security,
        "namespace-pod-security": {"exemptNamespaces": exempt},
        "gpu-validation-taint-platform-only": {"exemptNamespaces": exempt},
        "gpu-pool-scaling": {
            **PROD_POLICY_CONFIG["gpu-pool-scaling"],
            "poolsAllowedMinAboveZero": dra_node_groups(plan),
        },
        "platform-release-rollback": {"platformReleases": declared_releases(config)},
        "gpu-operator-resources": {"driverImages": declared_driver_images(config)},
    }


def dra_driver_namespaces(plan: Plan) -> list[str]:
    """The DRA driver's namespace where the stack installs it: its kubelet plugin needs the host
    (gpu_platform/kubernetes/dra_driver.py), as a stack's policy config exempts it."""
    found = [r for r in plan.of_type("kubernetes:helm.sh/v3:Release") if r.name == "dra-driver"]
    return [r.inputs["namespace"] for r in found]


def dra_node_groups(plan: Plan) -> list[str]:
    """The node groups of DRA pools, each kept at one node at least (the cluster autoscaler
    plans none from zero with DRA devices: gpu_platform/config/dra_rules.py), as a stack's
    policy config allows them (`poolsAllowedMinAboveZero`)."""
    return [
        r.name
        for r in plan.of_type("aws:eks/nodeGroup:NodeGroup")
        if r.inputs.get("labels", {}).get(DEVICE_PLUGIN_DEPLOY_LABEL) == "false"
    ]


def declared_driver_images(config: Config) -> list[str]:
    """The driver image a stack's `operator.overrides.driver` names (a mirror), which its
    NVIDIADrivers run (gpu_platform/kubernetes/nvidia_driver.py), as its policy config declares
    it (`gpu-operator-resources`' `driverImages`, `<repository>/<image>`)."""
    driver = config.get("gpu-platform:operator", {}).get("overrides", {}).get("driver", {})
    if not {"repository", "image"} & set(driver):
        return []
    return [f"{driver.get('repository', 'nvcr.io/nvidia')}/{driver.get('image', 'driver')}"]


def moved_namespaces(config: Config) -> list[str]:
    """The operator's and the monitoring namespaces the stack moves, which need the host (the
    operator's, the Prometheus stack's node-exporter) or run baseline (the Prometheus stack)."""
    moved = []
    if namespace := config.get("gpu-platform:operator", {}).get("namespace"):
        moved.append(namespace)
    if namespace := config.get("gpu-platform:monitoring", {}).get("namespace"):
        moved += [namespace, f"{namespace}-node-exporter"]
    return moved


def declared_releases(config: Config) -> list[str]:
    """The platform's releases the stack's settings move off their pins, as its policy config
    declares them (`platform-release-rollback`'s `platformReleases`,
    `<repository>/<chart>@<version>`; gpu_platform/policy_pack/README.md)."""
    operator = config.get("gpu-platform:operator", {})
    declared = []
    if {"repository", "chartVersion"} & set(operator):
        repository = operator.get("repository", "https://helm.ngc.nvidia.com/nvidia")
        declared.append(f"{repository}/gpu-operator@{operator.get('chartVersion', 'v26.7.0')}")
    if version := config.get("gpu-platform:autoscaler", {}).get("chartVersion"):
        declared.append(f"https://kubernetes.github.io/autoscaler/cluster-autoscaler@{version}")
    if version := config.get("gpu-platform:karpenter", {}).get("chartVersion"):
        declared += [
            f"oci://public.ecr.aws/karpenter/{chart}@{version}"
            for chart in ("karpenter-crd", "karpenter")
        ]
    return declared


def kubernetes_minor(config: Config) -> str:
    """The Kubernetes minor version the stack's cluster runs: a created cluster's, else the
    newest supported (the stand-in EKS cluster's 1.35 and GKE cluster's 1.33 are both
    judged at the newest, whose schema the objects must fit to survive upgrades)."""
    create = config["gpu-platform:cluster"].get("create") or {}
    return create.get("kubernetesVersion", SUPPORTED_KUBERNETES_VERSIONS[-1])


Invariant = Callable[[Plan, Config], list[str]]


def awaited_digests(config: Config) -> dict[str, Any]:
    """prod's `platform-images-by-digest` settings for this stack: its images the lock has no
    digest for are awaited, as a stack's own policy config would list them (prod's lists
    prod's; a GKE Ubuntu stack deploys the driver manager, which prod does not)."""
    settings = PROD_POLICY_CONFIG[PLATFORM_IMAGES]
    loaded = load_stack_config(*gpu_platform_config(config))
    awaiting = {
        image.key
        for image in platform_images(loaded)
        if image.digest is None and locked_digest(image.repository, image.tag) is None
    }
    return {**settings, "awaitingDigests": sorted(awaiting | set(settings["awaitingDigests"]))}


def pack_problems(pack: PolicyPack) -> Invariant:
    def check(plan: Plan, config: Config) -> list[str]:
        pack.configure(
            {**prod_policy_config(plan, config), PLATFORM_IMAGES: awaited_digests(config)}
        )
        return [
            f"{v.policy_name} on {v.urn}: {v.message}"
            for v in pack.analyze(plan.resources)
            if v.mandatory
        ]

    return check


def exemption_problems(plan: Plan, config: Config) -> list[str]:
    """What `gpu-platform plan` warns of under the policy config the sweep gives the pack: a
    workload its exemptNamespaces lets tolerate the validation taint where the cluster's pods
    admission policy judges it."""
    return exemption_mismatches(plan, prod_policy_config(plan, config))


def cluster_switch_problems(plan: Plan, config: Config) -> list[str]:
    """Patches of the cluster's own objects (Auto Mode's `kube-system/amazon-vpc-cni`, whose
    NetworkPolicy switch is the whole cluster's) on a cluster the stack does not create."""
    if "create" in config["gpu-platform:cluster"]:
        return []
    return [
        f"{r.type} {r.name} on a cluster the stack attaches to"
        for r in plan.resources
        if r.type.startswith("kubernetes:") and r.type.endswith("Patch")
    ]


def drift_window_problems(plan: Plan, config: Config) -> list[str]:
    """An Auto Mode NodePool holds drift with one `nodes: "0"` budget: scheduled outside the
    pool's `aws.driftWindow`, always without one."""
    windows = {p["name"]: p.get("aws", {}).get("driftWindow") for p in config["gpu-platform:pools"]}
    problems = []
    for pool in plan.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        spec = pool.inputs.get("spec")
        if not isinstance(spec, dict) or (
            spec["template"]["spec"]["nodeClassRef"]["group"] != "eks.amazonaws.com"
        ):
            continue
        closed = [b for b in spec["disruption"]["budgets"] if b["nodes"] == "0"]
        scheduled = [("schedule" in b) for b in closed]
        if scheduled != [windows[pool.name] is not None]:
            problems.append(f"NodePool {pool.name}: drift held by {closed}")
    return problems


def model_problems(plan: Plan, config: Config) -> list[str]:
    return official_model_problems(plan, kubernetes_minor(config))


def invariants(pack: PolicyPack) -> dict[str, Invariant]:
    """Everything a plan of an accepted stack must hold, by name, each giving what breaks it:
    one entry per invariant, a function of the plan and the stack's config."""
    return {
        "the policy pack as prod": pack_problems(pack),
        "the official models": model_problems,
        "every DaemonSet tolerates the taints of the pools it runs on, validation's included": (
            daemonset_toleration_problems
        ),
        "a validated pool's nodes join with the validation taint, others without": (
            validation_taint_problems
        ),
        "the pods' admission policy where pools validate, admitting the platform's own pods": (
            pod_policy_problems
        ),
        "the pack's exemptNamespaces and the pods' admission policy agree where it matters": (
            exemption_problems
        ),
        "led pools wait for their canary's nodes, driver and gate": canary_ordering_problems,
        "every validating pool's nodes and driver wait for its validator": (
            validation_ordering_problems
        ),
        "no canary on capacity that never starts its node": canary_capacity_problems,
        "every canary ranks below every pool that is not a canary": canary_rank_problems,
        "update timeouts outlast the longest rollout": timeout_problems,
        "each EFA node its own EFA count, each EFA placement in one zone": efa_problems,
        "a cluster-wide setting patched only on a cluster the stack creates": (
            cluster_switch_problems
        ),
        "an Auto Mode pool's drift held outside its drift window, or always": (
            drift_window_problems
        ),
        "each DRA pool's nodes run the DRA driver's kubelet plugin, tolerating their taints": (
            dra_problems
        ),
        "every GPU node one DCGM exporter, which finds the pods on its GPUs": exporter_problems,
        "a created GKE cluster's endpoint, images and Secrets key held as the docs say": (
            hardening_problems
        ),
        "each tenant quota caps every MIG slice, whole GPUs at gpuQuota, DRA classes from 1.34": (
            quota_problems
        ),
        "every pool's idle billed time is what its planned scale-down settings make it": (
            idle_billing_problems
        ),
        "each queued tenant's ClusterQueue sums to its ResourceQuota per resource, at its split": (
            kueue_quota_problems
        ),
        "each ClusterQueue's provisioning check on its atomic pools' flavors, Kueue's pods told": (
            provisioning_check_problems
        ),
    }


@pytest.fixture(scope="module", autouse=True)
def sweep_lock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The sweep's plans read tests/sweep_lock.py's lock."""
    path = tmp_path_factory.mktemp("sweep-lock") / "gpu-platform.lock"
    write_sweep_lock(path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(LOCK_PATH_VARIABLE, str(path))
        yield


@pytest.fixture(scope="module")
def checks(policy_pack: PolicyPack) -> dict[str, Invariant]:
    return invariants(policy_pack)


MOVED_RELEASES = {
    "prod: the GPU Operator from a mirror, at a trial version, in a namespace of its own": (
        "prod",
        {
            "gpu-platform:operator": {
                "repository": "https://charts.example.com/nvidia",
                "chartVersion": "v26.3.0",
                "namespace": "nvidia-gpu",
            }
        },
        ["https://charts.example.com/nvidia/gpu-operator@v26.3.0"],
    ),
    "prod: the autoscaler back in kube-system (docs/upgrades.md) at another chart version, "
    "the Prometheus stack in another namespace": (
        "prod",
        {
            "gpu-platform:autoscaler": {"namespace": "kube-system", "chartVersion": "9.58.0"},
            "gpu-platform:monitoring": {
                "namespace": "observability",
                "installPrometheusStack": True,
            },
        },
        ["https://kubernetes.github.io/autoscaler/cluster-autoscaler@9.58.0"],
    ),
    "karpenter-dev: Karpenter at another chart version, in a namespace of its own": (
        "karpenter-dev",
        {"gpu-platform:karpenter": {"chartVersion": "1.13.0", "namespace": "karpenter"}},
        [
            "oci://public.ecr.aws/karpenter/karpenter-crd@1.13.0",
            "oci://public.ecr.aws/karpenter/karpenter@1.13.0",
        ],
    ),
}


@pytest.mark.parametrize(
    ("stack", "settings", "declared"), MOVED_RELEASES.values(), ids=list(MOVED_RELEASES)
)
def test_a_stack_that_moves_the_platforms_releases_and_declares_them_plans_clean_as_prod(
    policy_pack: PolicyPack, stack: str, settings: Config, declared: list[str]
) -> None:
    # Each setting is one the loader accepts; prod's policy config makes every policy
    # mandatory. The platform's releases are known by their pins and the policy config's
    # declarations, never by their name, namespace or parents.
    config = {**stack_config(stack, PROJECT), **settings}
    plan = run_program(stack, config=config, project=PROJECT)

    assert declared_releases(config) == declared
    assert pack_problems(policy_pack)(plan, config) == []


def with_corners(test: Callable[..., None]) -> Callable[..., None]:
    """`test` run on each of `CORNER_STACKS` too, before the drawn stacks."""
    for config in reversed(CORNER_STACKS.values()):
        test = example(config=config)(test)
    return test


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(config=stack_configs())
@with_corners
def test_every_accepted_stack_plans_clean_and_agrees_with_itself(
    checks: dict[str, Invariant], config: Config
) -> None:
    plan = run_program("dev", config=config, project=PROJECT, raise_errors=False)

    if plan.error is not None:
        assert_refused_by_key(plan)
        return
    problems = {name: check(plan, config) for name, check in checks.items()}
    assert problems == {name: [] for name in problems}

"""The config model: bad stack configs fail with the key, the value and what is allowed, before
any resource is registered; good ones get the documented defaults."""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.config import (
    ConfigError,
    ConfigProblem,
    ExclusiveSharing,
    MonitoringSpec,
    Platform,
    load_stack_config,
)
from gpu_platform.versions import GPU_OPERATOR_CHART
from tests.stack_variants import AL2023_RELEASE, BOTTLEROCKET_RELEASE, with_mig_mixed_pool

Config = dict[str, Any]
POOLS = "gpu-platform:pools"


def pool(config: Config, index: int = 0) -> dict[str, Any]:
    return config[POOLS][index]


def second_pool(config: Config, **fields: Any) -> None:
    config[POOLS].append({**pool(config), "name": "second", **fields})


def cluster(config: Config, **fields: Any) -> Config:
    config["gpu-platform:cluster"].update(fields)
    return config


def tenant(config: Config, **fields: Any) -> Config:
    config["gpu-platform:namespaces"][0].update(fields)
    return config


def section(config: Config, key: str, **fields: Any) -> Config:
    """The config with keys of a top-level object (`operator`, `autoscaler`...) set."""
    config.setdefault(f"gpu-platform:{key}", {}).update(fields)
    return config


def pool_options(config: Config, cloud: str, **options: Any) -> Config:
    """The config with `aws` or `gcp` options of its first pool set."""
    pool(config).setdefault(cloud, {}).update(options)
    return config


def mig_pool(**fields: Any) -> dict[str, Any]:
    return {
        "name": "a100-mig",
        "instanceTypes": ["p4de.24xlarge"],
        "accelerator": "a100-80gb",
        "gpusPerNode": 8,
        "max": 2,
        "sharing": {"mode": "mig", "strategy": "mixed", "profile": "all-1g.10gb"},
        **fields,
    }


# (what is wrong, how to break the dev config, the key path the error must name)
BAD_CONFIGS: list[tuple[str, Callable[[Config], Any], str]] = [
    ("unknown cloud", lambda c: c.update({"gpu-platform:cloud": "azure"}), "gpu-platform:cloud"),
    ("no cluster", lambda c: c.pop("gpu-platform:cluster"), "gpu-platform:cluster"),
    (
        "EKS cluster without region",
        lambda c: c["gpu-platform:cluster"].pop("region"),
        "gpu-platform:cluster.region",
    ),
    (
        "GKE node image on EKS",
        lambda c: c["gpu-platform:cluster"].update(nodeImage="cos"),
        "gpu-platform:cluster.nodeImage",
    ),
    ("no pools", lambda c: c.update({POOLS: []}), "gpu-platform:pools"),
    ("upper-case pool name", lambda c: pool(c).update(name="T4"), "gpu-platform:pools[0].name"),
    ("pool name too long", lambda c: pool(c).update(name="a" * 33), "gpu-platform:pools[0].name"),
    (
        "duplicate pool name",
        lambda c: second_pool(c, name=pool(c)["name"]),
        "gpu-platform:pools[1].name",
    ),
    ("min above max", lambda c: pool(c).update(min=5, max=2), "gpu-platform:pools[0].min"),
    ("max of zero", lambda c: pool(c).update(max=0), "gpu-platform:pools[0].max"),
    ("no max", lambda c: pool(c).pop("max"), "gpu-platform:pools[0].max"),
    ("negative min", lambda c: pool(c).update(min=-1), "gpu-platform:pools[0].min"),
    (
        "no instance types",
        lambda c: pool(c).update(instanceTypes=[]),
        "gpu-platform:pools[0].instanceTypes",
    ),
    (
        "unknown accelerator",
        lambda c: pool(c).update(accelerator="k80"),
        "gpu-platform:pools[0].accelerator",
    ),
    (
        "zero GPUs per node",
        lambda c: pool(c).update(gpusPerNode=0),
        "gpu-platform:pools[0].gpusPerNode",
    ),
    (
        "unknown capacity",
        lambda c: pool(c).update(capacity="preemptible"),
        "gpu-platform:pools[0].capacity",
    ),
    (
        "root disk too small for GPU images",
        lambda c: pool(c).update(diskSizeGib=20),
        "gpu-platform:pools[0].diskSizeGib",
    ),
    (
        "unknown sharing mode",
        lambda c: pool(c).update(sharing={"mode": "vgpu"}),
        "gpu-platform:pools[0].sharing",
    ),
    (
        "time-slicing with one replica",
        lambda c: pool(c).update(sharing={"mode": "time-slicing", "replicas": 1}),
        "gpu-platform:pools[0].sharing.replicas",
    ),
    (
        "MPS beyond its client limit",
        lambda c: pool(c).update(sharing={"mode": "mps", "replicas": 100}),
        "gpu-platform:pools[0].sharing.replicas",
    ),
    (
        "MIG on a T4",
        lambda c: pool(c).update(sharing={"mode": "mig", "profile": "all-1g.10gb"}),
        "gpu-platform:pools[0].sharing.mode",
    ),
    (
        "MIG profile the GPU does not have",
        lambda c: c.update({POOLS: [mig_pool(sharing={"mode": "mig", "profile": "all-1g.5gb"})]}),
        "gpu-platform:pools[0].sharing.profile",
    ),
    (
        "MIG with the single strategy",
        lambda c: c.update(
            {
                POOLS: [
                    mig_pool(
                        sharing={"mode": "mig", "strategy": "single", "profile": "all-3g.40gb"}
                    )
                ]
            }
        ),
        "gpu-platform:pools[0].sharing.strategy",
    ),
    (
        "capacity block over two instance types",
        lambda c: pool(c).update(
            capacity="capacity-block", instanceTypes=["g5g.16xlarge", "g5g.metal"]
        ),
        "gpu-platform:pools[0].instanceTypes",
    ),
    (
        "label the platform sets",
        lambda c: pool(c).update(labels={"nvidia.com/gpu.present": "false"}),
        "gpu-platform:pools[0].labels.nvidia.com/gpu.present",
    ),
    (
        "label the kubelet refuses to register (NodeRestriction's namespaces)",
        lambda c: pool(c).update(labels={"node-role.kubernetes.io/gpu": "true"}),
        "gpu-platform:pools[0].labels.node-role.kubernetes.io/gpu",
    ),
    (
        "label in the k8s.io namespace",
        lambda c: pool(c).update(labels={"k8s.io/team": "ml"}),
        "gpu-platform:pools[0].labels.k8s.io/team",
    ),
    (
        "extra taint keyed like the GPU taint",
        lambda c: pool(c).update(
            taints=[{"key": "nvidia.com/gpu", "value": "h100", "effect": "NoSchedule"}]
        ),
        "gpu-platform:pools[0].taints[0].key",
    ),
    (
        "label value with a space",
        lambda c: pool(c).update(labels={"team": "ml research"}),
        "gpu-platform:pools[0].labels.team",
    ),
    (
        "taint effect in EKS spelling",
        lambda c: pool(c).update(taints=[{"key": "team", "value": "ml", "effect": "NO_SCHEDULE"}]),
        "gpu-platform:pools[0].taints[0].effect",
    ),
    ("misspelt pool key", lambda c: pool(c).update(maxSize=4), "gpu-platform:pools[0].maxSize"),
    (
        "chart version latest",
        lambda c: c.update({"gpu-platform:operator": {"chartVersion": "latest"}}),
        "gpu-platform:operator.chartVersion",
    ),
    (
        "chart version range",
        lambda c: c.update({"gpu-platform:operator": {"chartVersion": "^26.7.0"}}),
        "gpu-platform:operator.chartVersion",
    ),
    (
        "chart repository over plain http",
        lambda c: c.update(
            {"gpu-platform:operator": {"repository": "http://helm.ngc.nvidia.com/nvidia"}}
        ),
        "gpu-platform:operator.repository",
    ),
    (
        "operator timeout too short for a driver build",
        lambda c: c.update({"gpu-platform:operator": {"timeoutSeconds": 10}}),
        "gpu-platform:operator.timeoutSeconds",
    ),
    (
        "tenant in the operator's namespace",
        lambda c: c["gpu-platform:namespaces"][0].update(name="gpu-operator"),
        "gpu-platform:namespaces[0].name",
    ),
    (
        "privileged tenant namespace",
        lambda c: c["gpu-platform:namespaces"][0].update(podSecurity="privileged"),
        "gpu-platform:namespaces[0].podSecurity",
    ),
    (
        "smoke test on a pool that does not exist",
        lambda c: c["gpu-platform:namespaces"][0].update(smokeTestPool="h100"),
        "gpu-platform:namespaces[0].smokeTestPool",
    ),
    (
        "smoke test in a namespace allowed no replica of its pool's GPUs",
        lambda c: c["gpu-platform:namespaces"][0].update(sharedGpuQuota=0),
        "gpu-platform:namespaces[0].sharedGpuQuota",
    ),
    (
        "a MIG slice that is no slice",
        lambda c: c["gpu-platform:namespaces"][0].update(migQuota={"big": 4}),
        "gpu-platform:namespaces[0].migQuota.big",
    ),
    (
        "negative GPU quota",
        lambda c: c["gpu-platform:namespaces"][0].update(gpuQuota=-1),
        "gpu-platform:namespaces[0].gpuQuota",
    ),
    (
        "framebuffer alert at 100 percent",
        lambda c: c.update({"gpu-platform:monitoring": {"framebufferFullPercent": 100}}),
        "gpu-platform:monitoring.framebufferFullPercent",
    ),
    ("misspelt top-level key", lambda c: c.update({"gpu-platform:pool": []}), "gpu-platform:pool"),
]


@pytest.mark.parametrize(
    ("breakage", "expected_path"),
    [pytest.param(b, p, id=name) for name, b, p in BAD_CONFIGS],
)
def test_bad_config_names_its_key_and_registers_nothing(
    dev_config: Config, failed_plan_for, breakage, expected_path: str
) -> None:
    breakage(dev_config)

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError), plan.error
    assert expected_path in [p.path for p in plan.error.problems], plan.error.report()
    assert plan.resources == []


def test_a_smoke_test_on_a_mig_pool_needs_a_quota_of_its_slice(
    dev_config: Config, failed_plan_for
) -> None:
    config = with_mig_mixed_pool(dev_config)
    del config["gpu-platform:namespaces"][0]["migQuota"]

    plan = failed_plan_for(config)

    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == ("gpu-platform:namespaces[0].migQuota.1g.10gb", 0)


DEV = "dev_config"
GKE = "gke_config"
DNS_LABEL = "lowercase letters, digits and '-'"
NOT_BLANK = "a value that is not empty or blank"
FOR_GCP = "no value when cloud is aws: it applies to gcp stacks only"
FOR_AWS = "no value when cloud is gcp: it applies to aws stacks only"
SYSTEM_NAMESPACE = "is a Kubernetes system namespace"

# (what is wrong, the stack fixture it breaks, how, the key path the error must name, words the
# expectation must contain)
BAD_VALUES: list[tuple[str, str, Callable[[Config], Any], str, str]] = [
    # Empty names: each would otherwise mean "none" or reach the cloud as a blank name.
    (
        "empty cluster name",
        DEV,
        lambda c: cluster(c, name=""),
        "gpu-platform:cluster.name",
        "letters, digits, '-' and '_'",
    ),
    (
        "empty region",
        DEV,
        lambda c: cluster(c, region=""),
        "gpu-platform:cluster.region",
        NOT_BLANK,
    ),
    (
        "empty kubeconfig context",
        DEV,
        lambda c: cluster(c, kubeconfigContext=""),
        "gpu-platform:cluster.kubeconfigContext",
        NOT_BLANK,
    ),
    (
        "blank kubeconfig context",
        DEV,
        lambda c: cluster(c, kubeconfigContext="  "),
        "gpu-platform:cluster.kubeconfigContext",
        NOT_BLANK,
    ),
    (
        "empty GCP project",
        GKE,
        lambda c: cluster(c, project=""),
        "gpu-platform:cluster.project",
        NOT_BLANK,
    ),
    (
        "empty pool name",
        DEV,
        lambda c: pool(c).update(name=""),
        "gpu-platform:pools[0].name",
        DNS_LABEL,
    ),
    (
        "empty tenant namespace",
        DEV,
        lambda c: tenant(c, name=""),
        "gpu-platform:namespaces[0].name",
        DNS_LABEL,
    ),
    (
        "empty node service account",
        GKE,
        lambda c: pool_options(c, "gcp", serviceAccount=""),
        "gpu-platform:pools[0].gcp.serviceAccount",
        "a service account e-mail",
    ),
    (
        "empty node role",
        DEV,
        lambda c: pool_options(c, "aws", nodeRoleArn=""),
        "gpu-platform:pools[0].aws.nodeRoleArn",
        "an IAM role ARN",
    ),
    (
        "empty capacity reservation",
        DEV,
        lambda c: pool_options(c, "aws", capacityReservationId=""),
        "gpu-platform:pools[0].aws.capacityReservationId",
        "'cr-' and 17 hex digits",
    ),
    (
        "empty AMI release",
        DEV,
        lambda c: pool_options(c, "aws", amiReleaseVersion=""),
        "gpu-platform:pools[0].aws.amiReleaseVersion",
        "an EKS-optimized AMI release",
    ),
    (
        "empty operator repository",
        DEV,
        lambda c: section(c, "operator", repository=""),
        "gpu-platform:operator.repository",
        "an https:// or oci:// URL",
    ),
    (
        "empty operator chart version",
        DEV,
        lambda c: section(c, "operator", chartVersion=""),
        "gpu-platform:operator.chartVersion",
        "such as v26.7.0",
    ),
    (
        "empty operator namespace",
        DEV,
        lambda c: section(c, "operator", namespace=""),
        "gpu-platform:operator.namespace",
        DNS_LABEL,
    ),
    (
        "empty autoscaler namespace",
        DEV,
        lambda c: section(c, "autoscaler", namespace=""),
        "gpu-platform:autoscaler.namespace",
        DNS_LABEL,
    ),
    (
        "empty autoscaler image tag",
        DEV,
        lambda c: section(c, "autoscaler", imageTag=""),
        "gpu-platform:autoscaler.imageTag",
        "an exact version",
    ),
    (
        "empty monitoring namespace",
        DEV,
        lambda c: section(c, "monitoring", namespace=""),
        "gpu-platform:monitoring.namespace",
        DNS_LABEL,
    ),
    # Namespaces declared twice, or a tenant's Pod Security and quota over pods already there.
    (
        "monitoring in the operator's namespace",
        DEV,
        lambda c: section(c, "monitoring", namespace="gpu-operator"),
        "gpu-platform:monitoring.namespace",
        "other than the GPU Operator's (gpu-operator, operator.namespace)",
    ),
    (
        "operator in the monitoring namespace",
        DEV,
        lambda c: section(c, "operator", namespace="monitoring"),
        "gpu-platform:monitoring.namespace",
        "other than the GPU Operator's (monitoring, operator.namespace)",
    ),
    (
        "tenant in kube-system",
        DEV,
        lambda c: tenant(c, name="kube-system"),
        "gpu-platform:namespaces[0].name",
        SYSTEM_NAMESPACE,
    ),
    (
        "tenant in kube-public",
        DEV,
        lambda c: tenant(c, name="kube-public"),
        "gpu-platform:namespaces[0].name",
        SYSTEM_NAMESPACE,
    ),
    (
        "tenant in kube-node-lease",
        DEV,
        lambda c: tenant(c, name="kube-node-lease"),
        "gpu-platform:namespaces[0].name",
        SYSTEM_NAMESPACE,
    ),
    (
        "tenant in default",
        DEV,
        lambda c: tenant(c, name="default"),
        "gpu-platform:namespaces[0].name",
        SYSTEM_NAMESPACE,
    ),
    (
        "tenant in the monitoring namespace",
        DEV,
        lambda c: tenant(c, name="monitoring"),
        "gpu-platform:namespaces[0].name",
        "monitoring is the monitoring namespace (monitoring.namespace)",
    ),
    (
        "tenant in the installed Prometheus stack's node-exporter namespace",
        DEV,
        lambda c: tenant(
            section(c, "monitoring", installPrometheusStack=True), name="monitoring-node-exporter"
        ),
        "gpu-platform:namespaces[0].name",
        "monitoring-node-exporter is the installed Prometheus stack's",
    ),
    (
        "tenant in the operator's namespace, named by the operator",
        DEV,
        lambda c: tenant(section(c, "operator", namespace="nvidia"), name="nvidia"),
        "gpu-platform:namespaces[0].name",
        "nvidia is the GPU Operator's (operator.namespace)",
    ),
    (
        "tenant in the autoscaler's namespace",
        DEV,
        lambda c: tenant(section(c, "autoscaler", namespace="scaling"), name="scaling"),
        "gpu-platform:namespaces[0].name",
        "scaling is the cluster autoscaler's (autoscaler.namespace)",
    ),
    (
        "autoscaler in a tenant's namespace",
        DEV,
        lambda c: section(c, "autoscaler", namespace="ml-sandbox"),
        "gpu-platform:autoscaler.namespace",
        "not a tenant's (namespaces[0] is ml-sandbox)",
    ),
    # Options of the other cloud, which this stack's components would silently ignore.
    (
        "GKE pool options on EKS",
        DEV,
        lambda c: pool_options(c, "gcp", maxSurge=2),
        "gpu-platform:pools[0].gcp",
        FOR_GCP,
    ),
    (
        "GCP project on EKS",
        DEV,
        lambda c: cluster(c, project="acme-ml"),
        "gpu-platform:cluster.project",
        FOR_GCP,
    ),
    (
        "GKE location on EKS",
        DEV,
        lambda c: cluster(c, location="us-central1"),
        "gpu-platform:cluster.location",
        FOR_GCP,
    ),
    (
        "critical pod quota on EKS",
        DEV,
        lambda c: section(c, "operator", criticalPodQuota=500),
        "gpu-platform:operator.criticalPodQuota",
        FOR_GCP,
    ),
    (
        "Managed Prometheus turned off on EKS",
        DEV,
        lambda c: section(c, "monitoring", googleManagedPrometheus=False),
        "gpu-platform:monitoring.googleManagedPrometheus",
        FOR_GCP,
    ),
    (
        "EKS pool options on GKE",
        GKE,
        lambda c: pool_options(c, "aws", metadataHopLimit=2),
        "gpu-platform:pools[0].aws",
        FOR_AWS,
    ),
    (
        "cluster autoscaler on GKE",
        GKE,
        lambda c: section(c, "autoscaler", expander="random"),
        "gpu-platform:autoscaler",
        FOR_AWS,
    ),
    (
        "AWS region on GKE",
        GKE,
        lambda c: cluster(c, region="us-east-1"),
        "gpu-platform:cluster.region",
        FOR_AWS,
    ),
    (
        "node subnets on GKE",
        GKE,
        lambda c: cluster(c, nodeSubnetIds=["subnet-0123456789abcdef0"]),
        "gpu-platform:cluster.nodeSubnetIds",
        FOR_AWS,
    ),
    (
        "CNI policy setting on GKE",
        GKE,
        lambda c: cluster(c, cniPolicyOnNodeRole=False),
        "gpu-platform:cluster.cniPolicyOnNodeRole",
        FOR_AWS,
    ),
    # Shapes of free strings, which would otherwise fail only at `pulumi up`.
    (
        "service account that is not an e-mail",
        GKE,
        lambda c: pool_options(c, "gcp", serviceAccount="gpu-nodes"),
        "gpu-platform:pools[0].gcp.serviceAccount",
        "a service account e-mail",
    ),
    (
        "chart version without its v",
        DEV,
        lambda c: section(c, "operator", chartVersion="26.7.0"),
        "gpu-platform:operator.chartVersion",
        "'v', then major.minor.patch",
    ),
    (
        "chart version without its patch",
        DEV,
        lambda c: section(c, "operator", chartVersion="v26.7"),
        "gpu-platform:operator.chartVersion",
        "'v', then major.minor.patch",
    ),
    (
        "chart version of a pre-release",
        DEV,
        lambda c: section(c, "operator", chartVersion="v26.7.0-rc.1"),
        "gpu-platform:operator.chartVersion",
        "'v', then major.minor.patch",
    ),
    # A sharing mode is what says how the other sharing keys are read.
    (
        "sharing without a mode",
        DEV,
        lambda c: pool(c).update(sharing={"replicas": 4}),
        "gpu-platform:pools[0].sharing.mode",
        "one of 'exclusive', 'time-slicing', 'mps', 'mig'",
    ),
    (
        "empty sharing",
        DEV,
        lambda c: pool(c).update(sharing={}),
        "gpu-platform:pools[0].sharing.mode",
        "one of 'exclusive', 'time-slicing', 'mps', 'mig'",
    ),
    # EC2 reservations: each setting only where it acts, and only on EC2.
    (
        "EC2 reservation capacity on GKE",
        GKE,
        lambda c: pool(c).update(capacity="reserved"),
        "gpu-platform:pools[0].capacity",
        "on-demand or spot on GKE (reserved and capacity-block buy EC2 capacity; a GKE pool"
        " consumes Compute Engine reservations through gcp.reservation)",
    ),
    (
        "Capacity Block on GKE",
        GKE,
        lambda c: pool(c).update(capacity="capacity-block"),
        "gpu-platform:pools[0].capacity",
        "on-demand or spot on GKE",
    ),
    (
        "resource group of reservations on a spot pool",
        DEV,
        lambda c: pool_options(
            c,
            "aws",
            capacityReservationResourceGroupArn="arn:aws:resource-groups:us-east-1:123456789012"
            ":group/gpu-reservations",
        ),
        "gpu-platform:pools[0].aws.capacityReservationResourceGroupArn",
        "no value unless capacity is reserved (this pool's is spot)",
    ),
    (
        "Capacity Block start on a spot pool",
        DEV,
        lambda c: pool_options(c, "aws", capacityBlockStart="2026-12-01T11:30:00Z"),
        "gpu-platform:pools[0].aws.capacityBlockStart",
        "no value unless capacity is capacity-block (this pool's is spot)",
    ),
    (
        "Capacity Block start without its offset",
        DEV,
        lambda c: pool_options(c, "aws", capacityBlockStart="2026-12-01T11:30:00"),
        "gpu-platform:pools[0].aws.capacityBlockStart",
        "timezone",
    ),
    (
        "on-demand fallback on an on-demand pool",
        DEV,
        lambda c: (
            pool(c).update(capacity="on-demand"),
            pool_options(c, "aws", onDemandFallback=True),
        ),
        "gpu-platform:pools[0].aws.onDemandFallback",
        "no value unless capacity is spot or reserved (this pool's is on-demand)",
    ),
    (
        "reserved pool with no reservation",
        DEV,
        lambda c: pool(c).update(capacity="reserved"),
        "gpu-platform:pools[0].aws.capacityReservationId",
        "the id (cr-...) of the capacity reservation the pool launches into",
    ),
]


@pytest.mark.parametrize(
    ("stack", "breakage", "expected_path", "words"),
    [pytest.param(s, b, p, w, id=name) for name, s, b, p, w in BAD_VALUES],
)
def test_bad_value_names_its_key_says_what_is_allowed_and_registers_nothing(
    request: pytest.FixtureRequest,
    failed_plan_for,
    stack: str,
    breakage: Callable[[Config], Any],
    expected_path: str,
    words: str,
) -> None:
    config = request.getfixturevalue(stack)
    breakage(config)

    plan = failed_plan_for(config)

    assert isinstance(plan.error, ConfigError), plan.error
    problems = {p.path: p.expected for p in plan.error.problems}
    assert expected_path in problems, plan.error.report()
    assert words in problems[expected_path]
    assert plan.resources == []


def test_sharing_without_a_mode_says_the_mode_is_required(
    dev_config: Config, failed_plan_for
) -> None:
    pool(dev_config).update(sharing={"replicas": 4})

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    assert plan.error.report().splitlines()[1:] == [
        "  gpu-platform:pools[0].sharing.mode: got nothing (the key is required); expected one"
        " of 'exclusive', 'time-slicing', 'mps', 'mig'"
    ]


def test_a_tenant_may_use_the_autoscaler_namespace_when_the_platform_installs_none(
    dev_config: Config, plan_for
) -> None:
    dev_config["gpu-platform:autoscaler"] = {"install": False, "namespace": "ml-sandbox"}

    plan = plan_for(dev_config)

    assert plan.error is None


def test_an_empty_block_for_the_other_cloud_sets_nothing(gke_config: Config, plan_for) -> None:
    pool(gke_config)["aws"] = {}

    plan = plan_for(gke_config)

    assert plan.error is None


def test_every_problem_is_reported_at_once(dev_config: Config, failed_plan_for) -> None:
    pool(dev_config).update(max=0, capacity="preemptible")
    dev_config["gpu-platform:operator"] = {"chartVersion": "latest"}

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    assert {p.path for p in plan.error.problems} == {
        "gpu-platform:pools[0].max",
        "gpu-platform:pools[0].capacity",
        "gpu-platform:operator.chartVersion",
    }


def test_report_names_the_value_found_and_what_is_allowed() -> None:
    error = ConfigError([ConfigProblem("gpu-platform:pools[1].max", 0, "at least 1")])

    assert (
        error.report().splitlines()[1] == "  gpu-platform:pools[1].max: got 0; expected at least 1"
    )


def test_pattern_errors_are_explained_in_words(dev_config: Config, failed_plan_for) -> None:
    pool(dev_config).update(name="T4")

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    assert plan.error.problems[0].expected.startswith("lowercase letters, digits and '-'")


def test_missing_key_says_it_is_required(dev_config: Config, failed_plan_for) -> None:
    pool(dev_config).pop("max")

    plan = failed_plan_for(dev_config)

    assert "the key is required" in plan.error.report()  # type: ignore[union-attr]


MINIMAL: Config = {
    "cloud": "aws",
    "cluster": {"name": "ml", "region": "us-east-1"},
    "pools": [
        {
            "name": "gpu",
            "instanceTypes": ["g5.xlarge"],
            "max": 2,
            "aws": {"amiReleaseVersion": AL2023_RELEASE},
        }
    ],
}


def test_pools_scale_to_zero_by_default() -> None:
    assert load_stack_config(MINIMAL).pools[0].min == 0


def test_pools_default_to_exclusive_on_demand_gpus() -> None:
    spec = load_stack_config(MINIMAL).pools[0]

    assert (spec.capacity, spec.sharing) == ("on-demand", ExclusiveSharing())


def test_root_disk_defaults_to_room_for_gpu_images() -> None:
    assert load_stack_config(MINIMAL).pools[0].disk_size_gib >= 100


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:iam::123456789012:role/gpu-nodes",
        "arn:aws-cn:iam::123456789012:role/gpu-nodes",
        "arn:aws-us-gov:iam::123456789012:role/platform/gpu/gpu-nodes",
    ],
    ids=["aws", "aws-cn", "aws-us-gov with a path"],
)
def test_node_roles_of_every_partition_are_accepted(arn: str) -> None:
    gpu_pool = MINIMAL["pools"][0]
    raw = {**MINIMAL, "pools": [{**gpu_pool, "aws": {**gpu_pool["aws"], "nodeRoleArn": arn}}]}

    assert load_stack_config(raw).pools[0].aws.node_role_arn == arn


@pytest.mark.parametrize("subnet", ["subnet-0a1b2c3d", "subnet-0123456789abcdef0"])
def test_subnet_ids_of_both_lengths_are_accepted(subnet: str) -> None:
    raw = {**MINIMAL, "cluster": {**MINIMAL["cluster"], "nodeSubnetIds": [subnet]}}

    assert load_stack_config(raw).cluster.node_subnet_ids == [subnet]


def test_bottlerocket_takes_its_own_ami_release_form() -> None:
    raw = {
        **MINIMAL,
        "cluster": {**MINIMAL["cluster"], "nodeImage": "bottlerocket"},
        "pools": [{**MINIMAL["pools"][0], "aws": {"amiReleaseVersion": "1.52.0-0d4a7f31"}}],
    }

    assert load_stack_config(raw).pools[0].aws.ami_release_version == "1.52.0-0d4a7f31"


def test_operator_defaults_to_the_pinned_chart() -> None:
    operator = load_stack_config(MINIMAL).operator

    assert (operator.chart_version, operator.repository) == (
        GPU_OPERATOR_CHART.version,
        GPU_OPERATOR_CHART.repository,
    )


@pytest.mark.parametrize(
    ("cloud", "cluster", "node_image", "pool_fields", "platform"),
    [
        (
            "aws",
            {"region": "us-east-1"},
            None,
            {"aws": {"amiReleaseVersion": AL2023_RELEASE}},
            Platform.EKS_AL2023,
        ),
        (
            "aws",
            {"region": "us-east-1"},
            "bottlerocket",
            {"aws": {"amiReleaseVersion": BOTTLEROCKET_RELEASE}},
            Platform.EKS_BOTTLEROCKET,
        ),
        ("gcp", {"project": "p", "location": "us-central1"}, None, {}, Platform.GKE_COS),
        ("gcp", {"project": "p", "location": "us-central1"}, "ubuntu", {}, Platform.GKE_UBUNTU),
    ],
)
def test_platform_follows_cloud_and_node_image(
    cloud, cluster, node_image, pool_fields, platform
) -> None:
    raw = {
        **MINIMAL,
        "cloud": cloud,
        "cluster": {"name": "ml", **cluster, **({"nodeImage": node_image} if node_image else {})},
        "pools": [{"name": "gpu", "instanceTypes": ["g2-standard-8"], "max": 2, **pool_fields}],
    }

    assert load_stack_config(raw).platform is platform


@pytest.mark.parametrize(
    "key", ["node.kubernetes.io/lifecycle", "kubelet.kubernetes.io/team", "example.com/team"]
)
def test_labels_the_kubelet_may_set_are_accepted(dev_config: Config, plan_for, key: str) -> None:
    # The kubelet's --node-labels accepts the kubelet.kubernetes.io/ and node.kubernetes.io/
    # namespaces, and any namespace outside kubernetes.io and k8s.io.
    dev_config["gpu-platform:pools"][0]["labels"] = {key: "x"}

    assert plan_for(dev_config).error is None


def test_a_cloud_google_com_label_is_refused_on_gke(gke_config: Config, failed_plan_for) -> None:
    gke_config["gpu-platform:pools"][0]["labels"] = {"cloud.google.com/gke-nodepool": "mine"}

    plan = failed_plan_for(gke_config)

    assert isinstance(plan.error, ConfigError)
    (problem,) = plan.error.problems
    assert (problem.path, problem.expected) == (
        "gpu-platform:pools[0].labels.cloud.google.com/gke-nodepool",
        "no label under cloud.google.com/ (GKE sets those)",
    )


# --- Ending idle GPU pods ------------------------------------------------------------------


@pytest.fixture
def idle_config(dev_config: Config) -> Callable[..., Config]:
    """The dev stack's keys, without their namespace, with its tenant ending idle GPU pods."""

    def build(minutes: int = 60, **monitoring: Any) -> Config:
        raw = {
            key.removeprefix("gpu-platform:"): value
            for key, value in dev_config.items()
            if key.startswith("gpu-platform:")
        }
        raw["namespaces"][0]["gpuIdleMinutes"] = minutes
        raw["monitoring"] = monitoring
        return raw

    return build


def problems_of(raw: Config) -> list[ConfigProblem]:
    with pytest.raises(ConfigError) as error:
        load_stack_config(raw)
    return error.value.problems


def test_ending_idle_gpu_pods_needs_a_prometheus_to_ask(idle_config) -> None:
    (problem,) = problems_of(idle_config())

    assert (problem.path, problem.expected) == (
        "gpu-platform:monitoring.prometheusUrl",
        "the URL of the cluster's Prometheus, which namespaces[0] (gpuIdleMinutes) need to tell"
        " idle GPUs, such as http://prometheus-operated.monitoring.svc:9090; or"
        " installPrometheusStack: true, whose Prometheus is then queried",
    )


def test_the_installed_prometheus_stack_is_asked_by_default(idle_config) -> None:
    config = load_stack_config(idle_config(installPrometheusStack=True))

    # kube-prometheus-stack names its Prometheus Service `<fullname>-prometheus`, the fullname
    # being the release name when it contains the chart's, on `prometheus.service.port` 9090
    # (templates/prometheus/service.yaml, values.yaml).
    assert config.monitoring.query_url == (
        "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
    )


def test_a_prometheus_url_given_is_the_one_asked() -> None:
    url = "http://prometheus-operated.observability.svc:9090"

    monitoring = MonitoringSpec.model_validate(
        {"prometheusUrl": url, "installPrometheusStack": True}
    )

    assert monitoring.query_url == url


def test_no_prometheus_is_asked_without_one_given_or_installed() -> None:
    assert MonitoringSpec().query_url is None


def test_an_idle_limit_under_fifteen_minutes_is_refused(idle_config) -> None:
    (problem,) = problems_of(idle_config(10, installPrometheusStack=True))

    assert (problem.path, problem.value, problem.expected) == (
        "gpu-platform:namespaces[0].gpuIdleMinutes",
        10,
        "greater than or equal to 15",
    )


def test_an_idle_limit_over_a_week_is_refused(idle_config) -> None:
    (problem,) = problems_of(idle_config(10081, installPrometheusStack=True))

    assert (problem.path, problem.expected) == (
        "gpu-platform:namespaces[0].gpuIdleMinutes",
        "less than or equal to 10080",
    )


@pytest.mark.parametrize(
    "url",
    [
        "prometheus-operated.monitoring.svc:9090",
        "ftp://prometheus.example.com",
        "http://prometheus.example.com/?tenant=ml",
        "http://prometheus.example.com/#graph",
        "http://",
    ],
)
def test_a_prometheus_url_other_than_an_http_one_without_query_is_refused(
    idle_config, url: str
) -> None:
    (problem,) = problems_of(idle_config(prometheusUrl=url))

    assert (problem.path, problem.value, problem.expected) == (
        "gpu-platform:monitoring.prometheusUrl",
        url,
        "an http:// or https:// URL with no query or fragment, such as"
        " http://prometheus-operated.monitoring.svc:9090",
    )


@pytest.mark.parametrize(
    "url", ["https://prometheus.example.com", "http://thanos-query.monitoring.svc:9090/prom/"]
)
def test_an_http_prometheus_url_with_a_path_is_accepted(url: str) -> None:
    assert MonitoringSpec.model_validate({"prometheusUrl": url}).prometheus_url == url

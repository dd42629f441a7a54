"""Every rule of the config model as the user meets it, field rules and rules across fields: a bad
stack config fails with the key, the value and what is allowed, before any resource is
registered."""

import importlib.metadata
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from gpu_platform.config import ConfigError, load_stack_config
from tests.gpu_platform.config.test_stack import MINIMAL
from tests.stack_variants import with_mig_mixed_pool

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
        "extra taint keyed like the DRA pools' taint",
        lambda c: pool(c).update(
            taints=[{"key": "gpu-platform.io/allocation", "value": "x", "effect": "NoSchedule"}]
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
        "a MIG slice no GPU the platform knows has",
        lambda c: c["gpu-platform:namespaces"][0].update(migQuota={"1g.11gb": 4}),
        "gpu-platform:namespaces[0].migQuota.1g.11gb",
    ),
    (
        # A stack file written when `gpuQuota` capped replicas and slices as well: on the dev
        # stack's time-sliced pool it would now allow no GPU at all.
        "a whole-GPU quota alone where no pool is exclusive",
        lambda c: _only_whole_gpus(c["gpu-platform:namespaces"][0]),
        "gpu-platform:namespaces[0].gpuQuota",
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


def _with_whole_gpus(config: Config, **quotas: int) -> None:
    config["gpu-platform:pools"].append(
        {
            "name": "t4-whole",
            "instanceTypes": ["g4dn.xlarge"],
            "max": 1,
            "aws": {"amiReleaseVersion": "1.35.6-20260714"},
        }
    )
    config["gpu-platform:namespaces"][0].update(quotas)
    # Two pools of `nvidia.com/gpu` under one quota, which queues refuse
    # (gpu_platform/config/queue_rules.py): these tests are about the quotas alone.
    config["gpu-platform:queues"] = {"enabled": False}


def _only_whole_gpus(namespace: dict[str, Any]) -> None:
    namespace.update(gpuQuota=8)
    for key in ("sharedGpuQuota", "migQuota", "smokeTestPool"):
        namespace.pop(key, None)


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


def test_a_replica_quota_beside_whole_gpus_is_refused_saying_the_cap_it_had(
    dev_config: Config, failed_plan_for
) -> None:
    # Whole GPUs and replicas are both nvidia.com/gpu, which gpuQuota alone caps: a
    # sharedGpuQuota below it, which once added to the cap, would cap nothing now.
    _with_whole_gpus(dev_config, gpuQuota=8, sharedGpuQuota=4)

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == ("gpu-platform:namespaces[0].sharedGpuQuota", 4)
    assert "gpuQuota + sharedGpuQuota = 12" in problem.expected
    assert "set gpuQuota to 12" in problem.expected
    assert "remove sharedGpuQuota" in problem.expected


def test_a_smoke_test_on_shared_gpus_beside_whole_ones_needs_a_gpu_quota(
    dev_config: Config, failed_plan_for
) -> None:
    _with_whole_gpus(dev_config, gpuQuota=0, sharedGpuQuota=0)

    plan = failed_plan_for(dev_config)

    # The dev stack's smoke test runs on its time-sliced pool, whose replicas gpuQuota caps
    # beside the exclusive pool's GPUs.
    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == ("gpu-platform:namespaces[0].gpuQuota", 0)


DEV = "dev_config"
GKE = "gke_config"
DNS_LABEL = "lowercase letters, digits and '-'"
NOT_BLANK = "a value that is not empty or blank"
FOR_GCP = "no value when cloud is aws: it applies to gcp stacks only"
FOR_AWS = "no value when cloud is gcp: it applies to aws stacks only"
SYSTEM_NAMESPACE = "is a Kubernetes system namespace"
SHARED_RESERVATION = "or projects/<project>/reservations/<name> for one another project shares"

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


def reservation_named(name: str, config: Config) -> Config:
    return pool_options(config, "gcp", reservationName=name)


# Compute Engine's project ids (6 to 30 characters, from a lowercase letter) and
# ReservationAffinity.values' `projects/<project>/reservations/<name>` (compute.v1.json).
BAD_VALUES += [
    (
        f"shared reservation {why}",
        GKE,
        partial(reservation_named, name),
        "gpu-platform:pools[0].gcp.reservationName",
        SHARED_RESERVATION,
    )
    for why, name in [
        ("of a project id too short", "projects/ab/reservations/r"),
        ("of a project id with capitals", "projects/My_Proj/reservations/r"),
        ("without a name", "projects/p-123456/reservations/"),
        ("path misspelt", "projects/p-123456/reservation/r"),
    ]
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


def test_a_misspelt_region_is_named_as_such() -> None:
    # Else the lookups run in a region EC2 does not have, and what fails first is a pool's
    # instance types, "not offered there". The aws partition's regions are botocore's
    # (botocore 1.44.5 data/endpoints.json, `partitions[0].regions`): us-east-1 is one,
    # us-east-9 is not.
    settings = {**MINIMAL, "cluster": {"name": "ml", "region": "us-east-9"}}

    with pytest.raises(ConfigError) as raised:
        load_stack_config(settings)

    ((path, value, expected),) = raised.value.problems
    assert (path, value) == ("gpu-platform:cluster.region", "us-east-9")
    assert expected.startswith("a region of the aws partition, one of af-south-1,")
    assert ", us-east-1, " in expected


def test_an_unknown_region_may_be_newer_than_botocore_and_says_how_to_proceed() -> None:
    # The list is the installed botocore's (data/endpoints.json), which knows no region AWS
    # opened after its release; pulumi-aws would accept such a region.
    settings = {**MINIMAL, "cluster": {"name": "ml", "region": "us-east-9"}}

    with pytest.raises(ConfigError) as raised:
        load_stack_config(settings)

    ((_, _, expected),) = raised.value.problems
    assert f"after the installed botocore {importlib.metadata.version('botocore')} " in expected
    assert "upgrade botocore where the program runs" in expected

"""Whether the cluster a stack of `provisioner: eks-auto-mode` attaches to runs EKS Auto Mode's
compute with a node role: DescribeCluster's `computeConfig` (botocore's eks model,
`ComputeConfigResponse`: `enabled`, `nodePools`, `nodeRoleArn`). Without it nothing would launch
the pools' NodePools; without the role their NodeClasses name none (EKS user guide,
automode/create-node-pool.adoc, "Cluster without built-in node pools").

And whether the stack can turn on Auto Mode's NetworkPolicy enforcement: Auto Mode has no
`vpc-cni` add-on or aws-node DaemonSet to read, only the ConfigMap `kube-system/amazon-vpc-cni`
(auto-net-pol.adoc)."""

from collections.abc import Mapping
from typing import Any

import requests
from botocore.exceptions import BotoCoreError

from gpu_platform.config import StackConfig, key_path
from gpu_platform.eks.auto_mode.network_policy import CONFIG_MAP, NAMESPACE, SETTING
from gpu_platform.eks.preflight.running_autoscaler import ConfigMaps
from gpu_platform.preflight.findings import Finding

AUTO_MODE_BUILT_IN_NODE_POOLS = ("general-purpose", "system")
"""The NodePools EKS makes of `computeConfig.nodePools` (set-builtin-node-pools.adoc, "Built-in
NodePool Reference"): `system` tainted `CriticalAddonsOnly`, `general-purpose` untainted, both
on-demand C, M and R instances of generation 5 or newer."""


def auto_mode_finding(config: StackConfig, subject: str, cluster: Mapping[str, Any]) -> Finding:
    compute = cluster.get("computeConfig") or {}
    if not compute.get("enabled"):
        return Finding(
            "blocking",
            subject,
            f"EKS Auto Mode's compute is off on the cluster, and {key_path('provisioner')} is"
            f" {config.provisioner}: nothing would launch the pools' NodePools.",
            "Turn Auto Mode on for the cluster (aws eks update-cluster-config --compute-config"
            " enabled=true with its storage and load balancing), or choose another provisioner.",
        )
    role = compute.get("nodeRoleArn")
    if not role:
        return Finding(
            "blocking",
            subject,
            "EKS Auto Mode's compute is on without a node role (computeConfig.nodeRoleArn), which"
            " the pools' NodeClasses run their nodes as.",
            "Give the cluster's Auto Mode a node role (with its built-in node pools, or"
            " update-cluster-config --compute-config nodeRoleArn=...).",
        )
    return Finding(
        "ok", subject, f"EKS Auto Mode's compute is on, its nodes running as {role}.", "Nothing."
    )


def network_policy_controller_finding(
    config: StackConfig, subject: str, config_maps: ConfigMaps | None
) -> Finding:
    """Whether `up` can turn Auto Mode's network policy controller on: the stack patches
    `enable-network-policy-controller` into `kube-system/amazon-vpc-cni` by server-side apply
    (gpu_platform/eks/auto_mode/network_policy.py), which fails with a conflict where another
    field manager set the key to something else."""
    where = f"{NAMESPACE}/{CONFIG_MAP}"
    if config_maps is None:
        return Finding(
            "ok", subject, f"The stack sets {SETTING} in {where} to true itself.", "Nothing."
        )
    try:
        found = config_maps(NAMESPACE, CONFIG_MAP)
    except (requests.RequestException, BotoCoreError) as error:
        return Finding(
            "warning",
            subject,
            f"{where} cannot be read ({error}), so whether `up` can set its {SETTING} to true"
            " without a conflict is unknown.",
            f"kubectl -n {NAMESPACE} get configmap {CONFIG_MAP} -o yaml: {SETTING} must be"
            ' absent or "true".',
        )
    value = ((found or {}).get("data") or {}).get(SETTING)
    if value is None or value == "true":
        return Finding(
            "ok",
            subject,
            f"The stack sets {SETTING} in {where} to true, keeping the ConfigMap's other keys;"
            " Auto Mode then enforces the platform's NetworkPolicies.",
            "Nothing.",
        )
    return Finding(
        "blocking",
        subject,
        f"{where} sets {SETTING} to {value!r}: Auto Mode enforces no NetworkPolicy, the"
        " platform's that keep tenants from Prometheus and Alertmanager included, and `up`'s"
        " server-side apply of the key would fail with a conflict rather than overwrite it.",
        f'Set {SETTING} to "true" in {where} (auto-net-pol.adoc, Step 1), or choose a cluster'
        " where NetworkPolicies may be enforced.",
    )


OPEN_RESERVATIONS = [
    {"Name": "instance-match-criteria", "Values": ["open"]},
    {"Name": "state", "Values": ["active"]},
]
"""DescribeCapacityReservations' filters (botocore's ec2 model) for the reservations any
matching on-demand launch may use."""


def open_reservation_finding(config: StackConfig, ec2: Any) -> Finding | None:
    """Where a pool selects a reservation, the region's active open ODCRs that no pool names:
    once any NodeClass of the cluster has `capacityReservationSelectorTerms`, Auto Mode stops
    launching into open ODCRs for every NodeClass of the cluster, other teams' included
    (awsdocs/amazon-eks-user-guide latest/ug/automode/auto-odcr.adoc, the WARNING). None
    where no pool selects a reservation."""
    ours = {p.aws.capacity_reservation_id for p in config.pools} - {None}
    if not ours:
        return None
    subject = f"cluster {config.cluster.name} open capacity reservations"
    pages = ec2.get_paginator("describe_capacity_reservations").paginate(Filters=OPEN_RESERVATIONS)
    others = sorted(
        f"{r['CapacityReservationId']} ({r.get('InstanceType')}, {r.get('AvailabilityZone')})"
        for page in pages
        for r in page.get("CapacityReservations", [])
        if r["CapacityReservationId"] not in ours
    )
    if not others:
        return Finding(
            "ok", subject, "The region has no other active open capacity reservation.", "Nothing."
        )
    return Finding(
        "warning",
        subject,
        "A pool's NodeClass selects a capacity reservation, after which EKS Auto Mode launches"
        " no node of the cluster, other NodePools' included, into an open reservation no"
        f" NodeClass names: {', '.join(others)} would stay unused by this cluster.",
        "Have the NodeClasses that should use them select them (capacityReservationSelectorTerms),"
        " or accept that the cluster's other nodes launch outside them.",
    )

"""Whether the cluster a stack of `provisioner: eks-auto-mode` attaches to runs EKS Auto Mode's
compute with a node role: DescribeCluster's `computeConfig` (botocore's eks model,
`ComputeConfigResponse`: `enabled`, `nodePools`, `nodeRoleArn`). Without it nothing would launch
the pools' NodePools; without the role their NodeClasses name none (EKS user guide,
automode/create-node-pool.adoc, "Cluster without built-in node pools").

And whether Auto Mode enforces the platform's NetworkPolicies: Auto Mode has no `vpc-cni` add-on
or aws-node DaemonSet to read, only the ConfigMap `kube-system/amazon-vpc-cni`
(auto-net-pol.adoc)."""

from collections.abc import Mapping
from typing import Any

import requests
from botocore.exceptions import BotoCoreError, ClientError

from gpu_platform.config import StackConfig, key_path
from gpu_platform.eks.auto_mode.names import CONFIG_MAP, NAMESPACE, SETTING
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
    if "general-purpose" not in (compute.get("nodePools") or []):
        # The platform's own pods (the GPU Operator's controllers, node validation's, the
        # Prometheus stack's) tolerate no GPU taint, nor `system`'s `CriticalAddonsOnly`.
        return Finding(
            "warning",
            subject,
            f"EKS Auto Mode's compute is on, its nodes running as {role}, without the built-in"
            " general-purpose NodePool (computeConfig.nodePools): the platform's own pods"
            " tolerate neither the GPU pools' taint nor the system NodePool's, and stay Pending"
            " unless another NodePool or node group gives them untainted nodes.",
            "Turn the built-in general-purpose NodePool on (aws eks update-cluster-config"
            " with computeConfig.nodePools including general-purpose: EKS user guide,"
            " set-builtin-node-pools.adoc), or make sure the cluster has untainted nodes.",
        )
    return Finding(
        "ok", subject, f"EKS Auto Mode's compute is on, its nodes running as {role}.", "Nothing."
    )


ADD_ON_MANAGER = "eks"
"""The field manager of what an EKS add-on writes (EKS user guide,
kubernetes-field-management.adoc): the `vpc-cni` add-on writes the key from its
`enableNetworkPolicy` value (aws/amazon-vpc-cni-k8s charts/aws-vpc-cni/templates/configmap.yaml)."""


def network_policy_controller_finding(
    config: StackConfig, subject: str, config_maps: ConfigMaps | None
) -> Finding | None:
    """Whether Auto Mode enforces the platform's NetworkPolicies: the key
    `enable-network-policy-controller` of `kube-system/amazon-vpc-cni`, a switch for the whole
    cluster (auto-net-pol.adoc). On a cluster the stack creates, `up` sets it by server-side
    apply (gpu_platform/eks/auto_mode/network_policy.py), which fails with a conflict where
    another field manager set it to something else. On a cluster it attaches to, the stack
    leaves the switch alone, so its NetworkPolicies (with the Prometheus stack it installs,
    `monitoring.installPrometheusStack`) need it `"true"` already. None where an attached stack
    declares no NetworkPolicy."""
    created = config.cluster.create is not None
    if not created and not config.monitoring.install_prometheus_stack:
        return None
    where = f"{NAMESPACE}/{CONFIG_MAP}"
    if config_maps is None and created:
        return Finding(
            "ok", subject, f"The stack sets {SETTING} in {where} to true itself.", "Nothing."
        )
    try:
        found = config_maps(NAMESPACE, CONFIG_MAP) if config_maps is not None else None
    except (requests.RequestException, BotoCoreError) as error:
        return Finding(
            "warning",
            subject,
            f"{where} cannot be read ({error}), so whether Auto Mode enforces the platform's"
            f" NetworkPolicies ({SETTING}) is unknown.",
            f"kubectl -n {NAMESPACE} get configmap {CONFIG_MAP} -o yaml: {SETTING} must be"
            f' {"absent or " if created else ""}"true".',
        )
    value = ((found or {}).get("data") or {}).get(SETTING)
    if value == "true" or (created and value is None):
        return Finding(
            "ok",
            subject,
            f"{where} sets {SETTING} to true{', by the stack' if created else ''}: Auto Mode"
            " enforces the platform's NetworkPolicies.",
            "Nothing.",
        )
    unenforced = (
        "Auto Mode enforces no NetworkPolicy, the platform's that keep tenants from Prometheus"
        " and Alertmanager included"
    )
    if created:
        message = (
            f"{where} sets {SETTING} to {value!r}: {unenforced}, and `up`'s server-side apply of"
            " the key would fail with a conflict rather than overwrite it."
        )
    else:
        now = "has no" if value is None else f"sets {value!r} for"
        message = (
            f"{where} {now} {SETTING}: {unenforced}. The stack does not turn the switch on for a"
            " cluster it did not create: every other NetworkPolicy of the cluster would be"
            " enforced from `up` on, and no longer from `destroy` on."
        )
    return Finding("blocking", subject, message, _turn_on(config, found))


def _turn_on(config: StackConfig, found: Mapping[str, Any] | None) -> str:
    """How to turn enforcement on: through the `vpc-cni` add-on where it writes the key, which
    would undo a change made by hand at its next update (kubernetes-field-management.adoc)."""
    managers = ((found or {}).get("metadata") or {}).get("managedFields") or []
    owned = any(
        entry.get("manager") == ADD_ON_MANAGER
        and f"f:{SETTING}" in ((entry.get("fieldsV1") or {}).get("f:data") or {})
        for entry in managers
    )
    everyone = "which enforces every NetworkPolicy of the cluster"
    if owned:
        return (
            f'Set the vpc-cni add-on\'s configurationValues enableNetworkPolicy: "true", which'
            f" writes {SETTING} (aws eks update-addon --cluster-name {config.cluster.name}"
            " --addon-name vpc-cni --configuration-values, keeping its other values), "
            f"{everyone}; or choose a cluster where NetworkPolicies are enforced."
        )
    return (
        f'Set {SETTING}: "true" in {NAMESPACE}/{CONFIG_MAP} (auto-net-pol.adoc, Step 1),'
        f" {everyone}; or choose a cluster where NetworkPolicies are enforced."
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
    try:
        others = sorted(
            f"{r['CapacityReservationId']} ({r.get('InstanceType')}, {r.get('AvailabilityZone')})"
            for page in pages
            for r in page.get("CapacityReservations", [])
            if r["CapacityReservationId"] not in ours
        )
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "an error")
        return Finding(
            "warning",
            subject,
            f"The region's open capacity reservations cannot be listed ({code}), so which of them"
            " EKS Auto Mode would stop using once a pool's NodeClass selects a reservation is"
            " unknown.",
            "Run the check with a role allowed ec2:DescribeCapacityReservations, or list them:"
            " aws ec2 describe-capacity-reservations --filters"
            " Name=instance-match-criteria,Values=open Name=state,Values=active",
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

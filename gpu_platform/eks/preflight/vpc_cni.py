"""Preflight of the Amazon VPC CNI of an existing EKS cluster.

Its network policy agent: the platform's NetworkPolicies keep tenants away from the installed
Prometheus, which serves every tenant's series without authentication, and from Alertmanager,
whose API takes silences; the VPC CNI enforces them only with `enableNetworkPolicy` on (EKS user
guide, cni-network-policy-configure.adoc), which EKS leaves off. The check reads the `vpc-cni`
add-on's configuration values; a CNI installed some other way, or another network plugin that
enforces them, cannot be read from AWS, which is a warning. So is a refused read: the EKS preview
role's policy (docs/iam/eks-preview-policy.json, the deploy policies' reads) allows
`eks:DescribeAddon` on the node monitoring agent's add-on only, which is all the deploy role
manages, and the rest of the check still runs under it; the pre-flight policy
(docs/iam/eks-preflight-policy.json) allows the read.

For EFA pools whose nodes get EFA-only interfaces, the CNI must be one that ignores them.

An EFA pool's nodes get one EFA per network card with no IP address, of type `efa-only`: on a
node group's node all but the first, card 0's `efa` (gpu_platform/eks/efa.py), so none on an
instance type of one EFA; on a Karpenter node every one, card 0's included, beside an ordinary
primary interface (`efa_network_interfaces`,
gpu_platform/eks/karpenter/network_interfaces.py), so a p5.4xlarge, g6.8xlarge or g6e.8xlarge
node has one too. The VPC CNI manages every interface of
the node, and releases before v1.18.5 fail on one that has no IP information; v1.18.5 is the
first to filter them out (aws/amazon-vpc-cni-k8s#3047, "Filter for interfaces with no ip info",
pkg/awsutils/awsutils.go, brought to the release-1.18 branch by #3049; every v1.19 has it).
The check reads the `vpc-cni` EKS add-on's version; a CNI installed some other way cannot be
read from AWS, which is a warning.
"""

import json
import re
from collections.abc import Mapping
from typing import Any

import yaml
from botocore.exceptions import ClientError

from gpu_platform.config import StackConfig
from gpu_platform.eks.instance_types import pool_sizes
from gpu_platform.preflight.findings import Finding
from gpu_platform.version_order import version_key

VPC_CNI = "vpc-cni"
FIRST_EFA_ONLY_RELEASE = "v1.18.5"
NETWORK_POLICY_SETTING = "enableNetworkPolicy"
# The aws-node DaemonSet's network policy agent and its flag (aws/amazon-vpc-cni-k8s
# charts/aws-vpc-cni/templates/daemonset.yaml, v1.21.1).
NODE_AGENT_CONTAINER = "aws-eks-nodeagent"
# EKS's answer to a caller not allowed the call (botocore's EKS service model, error shape
# `AccessDeniedException`).
ACCESS_DENIED = "AccessDeniedException"
_ADDON_VERSION = re.compile(r"^(v\d+\.\d+\.\d+)")


def efa_only_pools(config: StackConfig, described: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The EFA pools whose nodes get EFA-only interfaces: every one under Karpenter, else those
    of instance types of more than one EFA (`described`, from DescribeInstanceTypes)."""
    found = []
    for pool in config.pools:
        if not pool.aws.efa:
            continue
        if config.uses_karpenter:
            found.append(pool.name)
            continue
        counts = [
            (described[n].get("NetworkInfo") or {})
            .get("EfaInfo", {})
            .get("MaximumEfaInterfaces", 0)
            for n in pool_sizes(pool, described)
            if n in described
        ]
        if counts and min(counts) > 1:
            found.append(pool.name)
    return found


def _vpc_cni_addon(eks: Any, cluster: str) -> Mapping[str, Any] | None:
    """The cluster's `vpc-cni` EKS add-on; None where the CNI is installed some other way."""
    try:
        addon: Mapping[str, Any] = eks.describe_addon(clusterName=cluster, addonName=VPC_CNI)[
            "addon"
        ]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
        return None
    return addon


def network_policy_findings(config: StackConfig, eks: Any) -> list[Finding]:
    """Whether the NetworkPolicies the platform declares (with the Prometheus stack it
    installs, `monitoring.installPrometheusStack`) are enforced."""
    if not config.monitoring.install_prometheus_stack:
        return []
    name = config.cluster.name
    subject = f"cluster {name} network policies"
    unenforced = (
        "the NetworkPolicies that keep tenants' pods from Prometheus (every tenant's series,"
        " no authentication) and Alertmanager (silences, no authentication)"
    )
    try:
        addon = _vpc_cni_addon(eks, name)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != ACCESS_DENIED:
            raise
        return [
            Finding(
                "warning",
                subject,
                f"Whether the VPC CNI enforces {unenforced} cannot be read: eks:DescribeAddon on"
                f" the {VPC_CNI} add-on was refused.",
                f"Run the check with a role allowed eks:DescribeAddon on"
                f" arn:aws:eks:<region>:<account>:addon/{name}/{VPC_CNI}/*, or run aws eks"
                f" describe-addon --cluster-name {name} --addon-name {VPC_CNI} where it is, and"
                f" check its configurationValues set {NETWORK_POLICY_SETTING} to true.",
            )
        ]
    if addon is None:
        return [
            Finding(
                "warning",
                subject,
                f"The VPC CNI is not an EKS add-on, so whether it enforces {unenforced} cannot"
                " be read.",
                f"Check that the {NODE_AGENT_CONTAINER} container of the aws-node DaemonSet runs"
                " with --enable-network-policy=true (kubectl -n kube-system get daemonset"
                " aws-node -o yaml), or that another network plugin (Calico, Cilium) enforces"
                " NetworkPolicies.",
            )
        ]
    settings = yaml.safe_load(addon.get("configurationValues") or "{}") or {}
    if str(settings.get(NETWORK_POLICY_SETTING, "false")).lower() == "true":
        return [
            Finding(
                "ok",
                subject,
                f"The vpc-cni add-on enforces NetworkPolicies ({NETWORK_POLICY_SETTING}: true).",
                "Nothing.",
            )
        ]
    values = json.dumps({**settings, NETWORK_POLICY_SETTING: "true"})
    return [
        Finding(
            "warning",
            subject,
            f"The vpc-cni add-on's network policy agent is off ({NETWORK_POLICY_SETTING} not"
            f" true), so {unenforced} are accepted and not enforced, unless another network"
            " plugin enforces them.",
            f"aws eks update-addon --cluster-name {name} --addon-name {VPC_CNI}"
            f" --resolve-conflicts PRESERVE --configuration-values '{values}' (EKS user guide,"
            " cni-network-policy-configure.adoc; nodes need kernel 5.10 or later).",
        )
    ]


def vpc_cni_findings(
    config: StackConfig, eks: Any, described: Mapping[str, Mapping[str, Any]]
) -> list[Finding]:
    pools = efa_only_pools(config, described)
    if not pools:
        return []
    subject = f"cluster {config.cluster.name} {VPC_CNI}"
    needed = f"{FIRST_EFA_ONLY_RELEASE} or later"
    why = f"the nodes of {', '.join(pools)} get EFA-only interfaces, which it must ignore"
    addon = _vpc_cni_addon(eks, config.cluster.name)
    if addon is None:
        return [
            Finding(
                "warning",
                subject,
                f"The VPC CNI is not an EKS add-on, so its version cannot be read: {why}.",
                f"Check the aws-node DaemonSet's image is {needed} (kubectl -n kube-system get"
                " daemonset aws-node -o wide), or install the vpc-cni add-on.",
            )
        ]
    version = addon.get("addonVersion", "")
    found = _ADDON_VERSION.match(version)
    if found is None or version_key(found[1]) < version_key(FIRST_EFA_ONLY_RELEASE):
        return [
            Finding(
                "blocking",
                subject,
                f"The vpc-cni add-on is {version}: {why}, and releases before"
                f" {FIRST_EFA_ONLY_RELEASE} fail on them (aws/amazon-vpc-cni-k8s#3047).",
                f"Update the add-on to {needed}: aws eks update-addon --cluster-name"
                f" {config.cluster.name} --addon-name {VPC_CNI} --addon-version <version>"
                f" (aws eks describe-addon-versions --addon-name {VPC_CNI} lists them).",
            )
        ]
    return [
        Finding(
            "ok",
            subject,
            f"The vpc-cni add-on is {version}, which ignores the EFA-only interfaces of"
            f" {', '.join(pools)}.",
            "Nothing.",
        )
    ]

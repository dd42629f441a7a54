"""Preflight on an EKS stack with EFA pools whose nodes get EFA-only interfaces: the Amazon VPC
CNI must be one that ignores them.

An EFA pool's nodes get one EFA per network card, all but the first of type `efa-only`, with no
IP address (gpu_platform/eks/efa.py). The VPC CNI manages every interface of the node, and
releases before v1.18.5 fail on one that has no IP information; v1.18.5 is the first to filter
them out (aws/amazon-vpc-cni-k8s#3047, "Filter for interfaces with no ip info",
pkg/awsutils/awsutils.go, brought to the release-1.18 branch by #3049; every v1.19 has it).
The check reads the `vpc-cni` EKS add-on's version; a CNI installed some other way cannot be
read from AWS, which is a warning.
"""

import re
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from gpu_platform.cli.findings import Finding
from gpu_platform.config import StackConfig
from gpu_platform.eks.instance_types import pool_sizes
from gpu_platform.version_order import version_key

VPC_CNI = "vpc-cni"
FIRST_EFA_ONLY_RELEASE = "v1.18.5"
_ADDON_VERSION = re.compile(r"^(v\d+\.\d+\.\d+)")


def efa_only_pools(config: StackConfig, described: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The EFA pools whose nodes get EFA-only interfaces: instance types of more than one EFA
    (`described`, from DescribeInstanceTypes)."""
    found = []
    for pool in config.pools:
        if not pool.aws.efa:
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


def vpc_cni_findings(
    config: StackConfig, eks: Any, described: Mapping[str, Mapping[str, Any]]
) -> list[Finding]:
    pools = efa_only_pools(config, described)
    if not pools:
        return []
    subject = f"cluster {config.cluster.name} {VPC_CNI}"
    needed = f"{FIRST_EFA_ONLY_RELEASE} or later"
    why = f"the nodes of {', '.join(pools)} get EFA-only interfaces, which it must ignore"
    try:
        addon = eks.describe_addon(clusterName=config.cluster.name, addonName=VPC_CNI)["addon"]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
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

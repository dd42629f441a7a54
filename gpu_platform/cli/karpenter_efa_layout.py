"""Preflight on a Karpenter stack: an EFA pool's live EC2NodeClass whose `networkInterfaces`
`up` would rewrite, which replaces every running node of the pool.

Earlier releases of the platform put each `efa-only` interface of a network card above 0 at
device index 1; the platform now uses AWS's layout, device 0 (`efa_network_interfaces`). The
provider hashes an EC2NodeClass's whole spec, `networkInterfaces` included (no `hash:"ignore"`
tag; `EC2NodeClass.Hash`, aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go at v1.14.1),
and a NodeClaim whose recorded hash differs is drifted, so the first `up` after the change
replaces every node of the pool, within its Drifted budget, and drains running jobs: the
platform's `terminationGracePeriod` lets drift past their `do-not-disrupt` pods
(`EventualDisruptionClass`, kubernetes-sigs/karpenter pkg/controllers/disruption/types.go).
Preflight reads the live EC2NodeClasses and says so before `up`, with how to hold the
replacement: a `karpenter.sh/do-not-disrupt` annotation on the node itself, which blocks every
disruption of it (`ValidateNodeDisruptable`, kubernetes-sigs/karpenter
pkg/controllers/state/statenode.go), unlike the pods' which the grace period overrides.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import requests
from botocore.exceptions import BotoCoreError

from gpu_platform.cli.findings import Finding
from gpu_platform.config import StackConfig
from gpu_platform.eks.karpenter.network_interfaces import efa_network_interfaces
from gpu_platform.node_identity import POOL_LABEL

NodeClasses = Callable[[], Sequence[Mapping[str, Any]]]
"""Reads every EC2NodeClass of the cluster, as the Kubernetes API returns them."""
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


def efa_layout_findings(config: StackConfig, node_classes: NodeClasses) -> list[Finding]:
    """A warning for each EFA pool whose live EC2NodeClass lays out its `networkInterfaces`
    otherwise than the platform now does for the same number of EFA interfaces; one where the
    node classes cannot be read."""
    efa_pools = [pool for pool in config.pools if pool.aws.efa]
    if not efa_pools:
        return []
    try:
        live = {c.get("metadata", {}).get("name"): c for c in node_classes()}
    except (requests.RequestException, BotoCoreError) as error:
        return [
            Finding(
                "warning",
                f"cluster {config.cluster.name} EC2NodeClasses",
                f"Cannot read the cluster's EC2NodeClasses: {error}. Whether `up` rewrites an EFA"
                " pool's networkInterfaces, which replaces every node of the pool, is unchecked.",
                "Compare kubectl get ec2nodeclasses -o yaml with the plan's networkInterfaces"
                " (docs/karpenter.md, Upgrading a Karpenter stack to AWS's EFA layout).",
            )
        ]
    findings = []
    for pool in efa_pools:
        interfaces = (live.get(pool.name) or {}).get("spec", {}).get("networkInterfaces")
        if not interfaces:
            continue
        cards = sum(1 for i in interfaces if i.get("interfaceType") == "efa-only")
        if _layout(interfaces) == _layout(efa_network_interfaces(cards)):
            continue
        nodes = f"-l {POOL_LABEL}={pool.name}"
        findings.append(
            Finding(
                "warning",
                f"pool {pool.name}",
                f"EC2NodeClass {pool.name} lays out its EFA interfaces as an earlier release of"
                " the platform did (efa-only at device 1 of cards above 0); `up` writes AWS's"
                " layout (device 0), and Karpenter hashes the node class's whole spec"
                " (EC2NodeClass.Hash, aws/karpenter-provider-aws v1.14.1), so every running node"
                " of the pool drifts and is replaced within the pool's Drifted budget, its jobs"
                " drained (where its NodeClaim has a terminationGracePeriod, at its end even"
                " with do-not-disrupt pods).",
                f"Run `up` between jobs; or hold the replacement: kubectl annotate nodes {nodes}"
                f" {DO_NOT_DISRUPT}=true before `up`, and kubectl annotate nodes {nodes}"
                f" {DO_NOT_DISRUPT}- once the jobs end (docs/karpenter.md, Upgrading a Karpenter"
                " stack to AWS's EFA layout).",
            )
        )
    return findings


def _layout(interfaces: Sequence[Mapping[str, Any]]) -> set[tuple[Any, Any, Any]]:
    """The interfaces, whatever order the API server keeps them in."""
    return {
        (i.get("networkCardIndex"), i.get("deviceIndex"), i.get("interfaceType"))
        for i in interfaces
    }

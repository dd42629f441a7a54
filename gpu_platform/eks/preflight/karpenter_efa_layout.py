"""Preflight on a Karpenter stack: an EFA pool's live EC2NodeClass whose `networkInterfaces`
`up` would rewrite, which replaces every running node of the pool.

Earlier releases of the platform put each `efa-only` interface of a network card above 0 at
device index 1; the platform now uses AWS's layout, device 0 (`efa_network_interfaces`). A node
class may also differ by hand, so the warning names what differs rather than a cause. The
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

from gpu_platform.config import StackConfig
from gpu_platform.eks.karpenter.network_interfaces import efa_network_interfaces
from gpu_platform.node_identity import POOL_LABEL
from gpu_platform.preflight.findings import Finding

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
        live_layout, planned = _layout(interfaces), _layout(efa_network_interfaces(cards))
        if live_layout == planned:
            continue
        nodes = f"-l {POOL_LABEL}={pool.name}"
        findings.append(
            Finding(
                "warning",
                f"pool {pool.name}",
                f"EC2NodeClass {pool.name}'s network interfaces differ from AWS's EFA layout,"
                f" which `up` writes: it has {_described(live_layout - planned)} where `up`"
                f" writes {_described(planned - live_layout)}. Karpenter hashes the node"
                " class's whole spec (EC2NodeClass.Hash, aws/karpenter-provider-aws v1.14.1),"
                " so every running node of the pool drifts and is replaced within the pool's"
                " Drifted budget, its jobs drained (where its NodeClaim has a"
                " terminationGracePeriod, at its end even with do-not-disrupt pods).",
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


def _described(layout: set[tuple[Any, Any, Any]]) -> str:
    """`layout`'s interfaces by type and device index, each with its cards: "efa-only at device
    1 of cards 1-3"."""
    cards: dict[tuple[str, str], list[int]] = {}
    for card, device, kind in layout:
        cards.setdefault((str(kind), str(device)), []).append(int(card or 0))
    if not cards:
        return "nothing"
    return ", ".join(
        f"{kind} at device {device} of {_cards(sorted(numbers))}"
        for (kind, device), numbers in sorted(cards.items())
    )


def _cards(numbers: list[int]) -> str:
    """Sorted card indexes as runs: "card 0", "cards 1-3, 5"."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    text = ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
    return f"card {text}" if len(numbers) == 1 else f"cards {text}"

"""What `gpu-platform preflight` checks of an EKS stack under `provisioner: karpenter`, beside
the checks every EKS stack gets (`gpu_platform.eks.preflight.checks`):

- where the platform installs Karpenter, the cluster's authentication mode lets the node role's
  EKS access entry in: `API` or `API_AND_CONFIG_MAP`, not `CONFIG_MAP` alone;
- with `install: false`, that the existing Karpenter's node role has an access entry of type
  `EC2_LINUX` or an `aws-auth` mapping (`gpu_platform.eks.preflight.karpenter_node_access`);
- where a pool is `spot`, the account has EC2's Spot service-linked role, which Karpenter's
  CreateFleet needs and its role may not create;
- Karpenter's CRDs in the cluster, read through its Kubernetes API: where the platform installs
  Karpenter, none that another installation owns (Helm refuses to install `karpenter-crd` over
  them: "invalid ownership metadata", Karpenter's troubleshooting guide); with `install: false`,
  all of them, with every field the pools' objects set (an older Karpenter's API server drops
  the fields its CRDs lack, without an error), and none this stack installed (`up` would
  uninstall them with every NodePool of the cluster). The platform's own CRDs carry the
  stack's mark (`gpu_platform.eks.karpenter.labels.STACK_ANNOTATION`).
"""

import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

import boto3
import requests
from botocore.exceptions import BotoCoreError, ClientError

from gpu_platform.config import (
    CAPACITY_PREFERENCE,
    EC2_RESERVED_CAPACITIES,
    GPU_TAINT_KEY,
    StackConfig,
    key_path,
)
from gpu_platform.eks.auto_mode.names import NODE_CLASS_API_VERSION
from gpu_platform.eks.karpenter.labels import STACK_ANNOTATION
from gpu_platform.eks.preflight.auto_mode import AUTO_MODE_BUILT_IN_NODE_POOLS
from gpu_platform.eks.preflight.karpenter_efa_layout import NodeClasses, efa_layout_findings
from gpu_platform.eks.preflight.karpenter_node_access import node_role_access_finding
from gpu_platform.eks.preflight.karpenter_permissions import (
    DEFAULT_SERVICE_ACCOUNT,
    controller_permissions_finding,
)
from gpu_platform.eks.preflight.running_autoscaler import (
    ConfigMaps,
    Deployments,
    eks_get,
    image_tag,
)
from gpu_platform.node_identity import POOL_LABEL
from gpu_platform.preflight.findings import Finding
from gpu_platform.versions import KARPENTER_CRD_CHART

CustomResourceDefinitions = Callable[[str], Mapping[str, Any] | None]
"""Reads one CRD of the cluster by name; None where it has none."""
NodePools = Callable[[], Sequence[Mapping[str, Any]]]
"""Reads every NodePool of the cluster, as the Kubernetes API returns them."""
NODE_POOLS = "nodepools.karpenter.sh"
NODE_CLAIMS = "nodeclaims.karpenter.sh"
NODE_CLASSES = "ec2nodeclasses.karpenter.k8s.aws"
CORE_CRDS = (NODE_POOLS, NODE_CLAIMS, NODE_CLASSES)
"""What every Karpenter v1 installation has."""
CHART_CRDS = (
    *CORE_CRDS,
    "nodeoverlays.karpenter.sh",
    "capacitybuffers.autoscaling.x-k8s.io",
)
"""Every CRD the pinned `karpenter-crd` chart installs (aws/karpenter-provider-aws v1.14.1
charts/karpenter-crd/templates/): also NodeOverlay and, since v1.14.0, SIG Autoscaling's
CapacityBuffer, which another tool may have installed and which Helm would refuse to take
over."""
# Helm's ownership annotations (helm/pkg/action/validate.go, `checkOwnership`).
RELEASE_NAME = "meta.helm.sh/release-name"
RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"

# `AccessConfigResponse.authenticationMode` (botocore's EKS model): the modes in which EKS reads
# access entries; `CONFIG_MAP` reads only the `aws-auth` ConfigMap.
ACCESS_ENTRY_MODES = ("API", "API_AND_CONFIG_MAP")
SPOT_ROLE = "AWSServiceRoleForEC2Spot"
"""The role EC2 launches Spot Instances with (EC2 user guide, "Service-linked role for Spot
Instance requests")."""


def karpenter_findings(
    config: StackConfig,
    cluster: Mapping[str, Any] | None,
    iam: Any,
    crds: CustomResourceDefinitions | None = None,
    mark: str = "",
    deployments: Deployments | None = None,
    node_pools: NodePools | None = None,
    eks: Any = None,
    config_maps: ConfigMaps | None = None,
    node_classes: NodeClasses | None = None,
) -> list[Finding]:
    """The Karpenter stack's findings, in the order: authentication mode, the Spot role, the
    CRDs (unchecked where `crds` is None), which the platform's own carry `mark`, and with
    `install: false` the running controller (unchecked where `deployments` is None), its
    role's permissions and its node role's way into the cluster (unchecked where `eks` is
    None; its `aws-auth` mapping where `config_maps` is), and the cluster's other NodePools'
    weights (unchecked where `node_pools` is None), and the EFA pools' live EC2NodeClasses
    (unchecked where `node_classes` is None). On EKS Auto Mode, whose Karpenter is AWS's, only
    the NodePools' checks: its NodePools are `karpenter.sh/v1` ones too."""
    if not config.uses_node_pools:
        return []
    findings = []
    if config.uses_karpenter:
        findings += _controller_findings(config, cluster, iam, crds, mark, deployments, eks)
        if cluster is not None and eks is not None and not config.karpenter_installed:
            findings.append(node_role_access_finding(config, cluster, eks, config_maps))
    if node_pools is not None:
        node_pools = cache(node_pools)
        findings.append(weight_finding(config, node_pools))
        clash = name_clash_finding(config, node_pools)
        if clash is not None:
            findings.append(clash)
    if node_classes is not None:
        findings += efa_layout_findings(config, node_classes)
    return findings


def _controller_findings(
    config: StackConfig,
    cluster: Mapping[str, Any] | None,
    iam: Any,
    crds: CustomResourceDefinitions | None,
    mark: str,
    deployments: Deployments | None,
    eks: Any,
) -> list[Finding]:
    """The findings of the Karpenter the stack installs or relies on: what EKS Auto Mode runs
    itself."""
    findings = []
    if cluster is not None and config.karpenter_installed:
        findings.append(authentication_mode_finding(config, cluster))
    if any(pool.capacity == "spot" for pool in config.pools):
        findings.append(spot_role_finding(iam))
    if cluster is not None and crds is not None:
        findings.append(crd_finding(config, crds, mark))
    if deployments is not None and not config.karpenter_installed:
        # Read once for both findings: a read that fails is not kept, and fails again.
        deployments = cache(deployments)
        findings.append(controller_finding(config, deployments))
    if cluster is not None and eks is not None and not config.karpenter_installed:
        account = _service_account(config, deployments)
        findings.append(controller_permissions_finding(config, cluster, eks, iam, account))
    return findings


def name_clash_finding(config: StackConfig, node_pools: NodePools) -> Finding | None:
    """A NodePool of the cluster named like one of the pools but not the platform's (its
    template lacks the pool's `gpu-platform.io/pool` label): creating the pool's NodePool fails
    with AlreadyExists part-way through `up` (pulumi-kubernetes creates, it does not adopt), or,
    where upserts are turned on, takes the other NodePool over and deletes it on `destroy`. None
    where there is none, or the NodePools cannot be read (`weight_finding` says so)."""
    return _clash(config, node_pools, ("NodePool", "NodePools"), _named)


def node_class_clash_finding(config: StackConfig, node_classes: NodeClasses) -> Finding | None:
    """An EKS Auto Mode NodeClass of the cluster named like one of the pools but not the
    platform's (it lacks the pool's `gpu-platform.io/pool` label), as `name_clash_finding` for
    the NodeClass each pool gets. None where there is none; a warning where the NodeClasses
    cannot be read, as no other check reads them to say so."""
    try:
        found = node_classes()
    except (requests.RequestException, BotoCoreError) as error:
        return Finding(
            "warning",
            f"cluster {config.cluster.name} NodeClass names",
            f"Cannot read the cluster's NodeClasses: {_why(error)}.",
            "Check that no NodeClass of another installation is named like a pool:"
            f" {', '.join(p.name for p in config.pools)}"
            " (kubectl get nodeclasses.eks.amazonaws.com).",
        )
    return _clash(
        config,
        lambda: found,
        ("NodeClass", "NodeClasses"),
        lambda node_class: (
            (node_class.get("metadata") or {}).get("name", ""),
            (node_class.get("metadata") or {}).get("labels") or {},
        ),
    )


def _clash(
    config: StackConfig,
    read: Callable[[], Sequence[Mapping[str, Any]]],
    kind: tuple[str, str],
    named: Callable[[Mapping[str, Any]], tuple[str, Mapping[str, str]]],
) -> Finding | None:
    """The objects of `kind` (singular, plural) that `read` gives, named like a pool but without
    its label."""
    try:
        found = read()
    except (requests.RequestException, BotoCoreError):
        return None
    ours = {p.name for p in config.pools}
    foreign = sorted(
        name
        for name, labels in (named(obj) for obj in found)
        if name in ours and labels.get(POOL_LABEL) != name
    )
    if not foreign:
        return None
    return Finding(
        "blocking",
        f"cluster {config.cluster.name} {kind[0]} names",
        f"The cluster has {kind[1]} of another installation named like the pools:"
        f" {', '.join(foreign)}. pulumi up would fail creating the pools' own, or take those"
        " over.",
        f"Rename the pools ({key_path('pools')}[].name), or the other {kind[1]}.",
    )


def _named(node_pool: Mapping[str, Any]) -> tuple[str, Mapping[str, str]]:
    """A NodePool's name and its template's labels."""
    template = ((node_pool.get("spec") or {}).get("template") or {}).get("metadata") or {}
    return (node_pool.get("metadata") or {}).get("name", ""), template.get("labels") or {}


def weight_finding(config: StackConfig, node_pools: NodePools) -> Finding:
    """The cluster's NodePools that are not the stack's and carry no GPU taint, whose weight is
    not above the GPU pools'. Karpenter tries NodePools by descending weight, an unset weight
    counting as 0 (`OrderByWeight`, kubernetes-sigs/karpenter pkg/utils/nodepool/nodepool.go at
    v1.14.1): a CPU pod that tolerates the GPU taint (`operator: Exists`, common in ML and
    infrastructure charts) and fits both would start a GPU node. The cluster autoscaler's
    expander ranks the cluster's other node groups above the GPU pools for the same reason
    (`gpu_platform.eks.cluster_autoscaler.OTHER_GROUPS_PRIORITY`)."""
    subject = f"cluster {config.cluster.name} NodePools"
    highest = max(CAPACITY_PREFERENCE[p.capacity] for p in config.pools)
    ours = {p.name for p in config.pools}
    try:
        found = node_pools()
    except (requests.RequestException, BotoCoreError) as error:
        return Finding(
            "warning",
            subject,
            f"Cannot read the cluster's NodePools: {_why(error)}.",
            f"Check that every NodePool without the GPU taint has a weight above {highest}"
            " (kubectl get nodepools -o yaml).",
        )
    # Auto Mode's built-in NodePools are EKS's, made from `computeConfig.nodePools`, and their
    # weight is not published: the GPU taint is what keeps pods off the GPU pools there, and a
    # pod that tolerates every taint has chosen any node (docs/eks-auto-mode.md).
    theirs = set(AUTO_MODE_BUILT_IN_NODE_POOLS) if config.uses_auto_mode else set()
    outranked = sorted(
        f"{name} (weight {weight})"
        for name, weight, taints in (_weighed(pool) for pool in found)
        if name not in ours | theirs and GPU_TAINT_KEY not in taints and weight <= highest
    )
    if outranked:
        return Finding(
            "warning",
            subject,
            f"NodePools without the GPU taint rank at or below the GPU pools' weight {highest}:"
            f" {', '.join(outranked)}. A pod that tolerates the GPU taint and fits one of them"
            " would start a GPU node instead.",
            f"Give them a weight above {highest}, e.g. 50 (spec.weight; docs/karpenter.md, Which"
            " pool a pod starts in).",
        )
    return Finding(
        "ok",
        subject,
        f"Every other NodePool without the GPU taint outranks the GPU pools' weight {highest}.",
        "Nothing.",
    )


def _weighed(node_pool: Mapping[str, Any]) -> tuple[str, int, set[str]]:
    """A NodePool's name, weight (0 where unset, as Karpenter reads it) and taint keys."""
    spec = node_pool.get("spec") or {}
    template = (spec.get("template") or {}).get("spec") or {}
    taints = {t.get("key") for t in template.get("taints") or []}
    return (node_pool.get("metadata") or {}).get("name", ""), int(spec.get("weight") or 0), taints


def eks_crds(
    session: boto3.Session,
    region: str,
    cluster: Mapping[str, Any],
    http: requests.Session | None = None,
) -> CustomResourceDefinitions:
    """`apiextensions.k8s.io/v1` CustomResourceDefinitions of the EKS cluster, by name."""
    get = eks_get(session, region, cluster, http)
    return lambda name: get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")


def eks_node_pools(
    session: boto3.Session,
    region: str,
    cluster: Mapping[str, Any],
    http: requests.Session | None = None,
) -> NodePools:
    """Every `karpenter.sh/v1` NodePool of the EKS cluster; none where it has no such CRD."""
    return _eks_list(session, region, cluster, http, "/apis/karpenter.sh/v1/nodepools")


def eks_node_classes(
    session: boto3.Session,
    region: str,
    cluster: Mapping[str, Any],
    http: requests.Session | None = None,
) -> NodeClasses:
    """Every `karpenter.k8s.aws/v1` EC2NodeClass of the EKS cluster; none where it has no such
    CRD."""
    return _eks_list(session, region, cluster, http, "/apis/karpenter.k8s.aws/v1/ec2nodeclasses")


def eks_auto_mode_node_classes(
    session: boto3.Session,
    region: str,
    cluster: Mapping[str, Any],
    http: requests.Session | None = None,
) -> NodeClasses:
    """Every `eks.amazonaws.com/v1` NodeClass of the EKS cluster (EKS Auto Mode's); none where it
    has no such CRD."""
    return _eks_list(session, region, cluster, http, f"/apis/{NODE_CLASS_API_VERSION}/nodeclasses")


def _eks_list(
    session: boto3.Session,
    region: str,
    cluster: Mapping[str, Any],
    http: requests.Session | None,
    path: str,
) -> Callable[[], Sequence[Mapping[str, Any]]]:
    def read() -> Sequence[Mapping[str, Any]]:
        found = eks_get(session, region, cluster, http)(path)
        items: Sequence[Mapping[str, Any]] = (found or {}).get("items") or []
        return items

    return read


def fields_set(config: StackConfig) -> dict[str, list[tuple[str, ...]]]:
    """The fields of the EC2NodeClass CRD the stack's EC2NodeClasses set that older Karpenter
    v1 releases lack (`[]` steps into a list's items), by CRD. Every NodePool field the pools
    set (`weight`, `limits`, `terminationGracePeriod`, budgets' `reasons`) is in the NodePool
    CRD's `v1` from its first release, v1.0.0 (pkg/apis/crds/karpenter.sh_nodepools.yaml at that
    tag): a CRD serving `v1` has them, which `_existing_finding` checks."""
    node_class: list[tuple[str, ...]] = []
    if any(p.capacity in EC2_RESERVED_CAPACITIES for p in config.pools):
        node_class.append(("spec", "capacityReservationSelectorTerms"))
    efa = [p for p in config.pools if p.aws.efa]
    if efa:
        node_class.append(("spec", "networkInterfaces"))
    if any(p.capacity not in EC2_RESERVED_CAPACITIES for p in efa):
        node_class.append(("spec", "placementGroupSelector"))
    return {NODE_CLASSES: node_class}


def crd_finding(config: StackConfig, crds: CustomResourceDefinitions, mark: str) -> Finding:
    """`mark`: this stack's `stack_mark`, which the CRDs the platform installs carry."""
    subject = f"cluster {config.cluster.name}"
    names = CHART_CRDS if config.karpenter_installed else CORE_CRDS
    try:
        found = {name: crds(name) for name in names}
    except (requests.RequestException, BotoCoreError) as error:
        return Finding(
            "warning",
            subject,
            f"Cannot read the cluster's Karpenter CRDs: {_why(error)}.",
            f"Check them by hand (kubectl get crd {' '.join(names)} -o yaml).",
        )
    if config.karpenter_installed:
        return _owned_finding(config, subject, found, mark)
    return _existing_finding(config, subject, found, mark)


def _owned_finding(
    config: StackConfig, subject: str, found: Mapping[str, Mapping[str, Any] | None], mark: str
) -> Finding:
    """Where the platform installs Karpenter, any CRD without this stack's mark is another
    installation's: upstream's documented install uses the same release names and namespace, so
    Helm's ownership annotations cannot tell them apart (`STACK_ANNOTATION`)."""
    others = {
        name: _owner(crd) for name, crd in found.items() if crd is not None and _mark(crd) != mark
    }
    if not others:
        return Finding(
            "ok",
            subject,
            "No Karpenter CRDs of another installation: the platform's karpenter-crd release"
            " can own them.",
            "Nothing.",
        )
    held = "; ".join(
        f"{name}: " + (f"release {release} in {namespace}" if release else "no Helm release")
        for name, (release, namespace) in sorted(others.items())
    )
    return Finding(
        "blocking",
        subject,
        f"The cluster runs Karpenter already ({held}), without this stack's mark"
        f" ({STACK_ANNOTATION}: {mark}): installing the karpenter-crd release over its CRDs"
        " fails on Helm's ownership metadata or a name in use, and a second controller would"
        " launch nodes for the same pods.",
        f"Use it: set {key_path('karpenter', 'install')}: false and"
        f" {key_path('karpenter', 'nodeRoleArn')} to its node role (docs/karpenter.md, An"
        " existing Karpenter). If this stack installed them before it marked its CRDs: kubectl"
        f" annotate crd {' '.join(sorted(others))} {STACK_ANNOTATION}={mark}",
    )


def _installed_here_finding(subject: str, marked: Sequence[str], mark: str) -> Finding:
    return Finding(
        "blocking",
        subject,
        f"{key_path('karpenter', 'install')} is false, but this stack installed the cluster's"
        f" Karpenter ({', '.join(marked)} carry {STACK_ANNOTATION}: {mark}): pulumi up would"
        " uninstall its karpenter-crd release, whose CRDs Helm deletes with it, and with them"
        " every NodePool, NodeClaim and EC2NodeClass of the cluster.",
        f"Keep {key_path('karpenter', 'install')}: true; to hand Karpenter over to another"
        " installation, move its releases out of the stack first (pulumi state delete"
        " --target-dependents), docs/karpenter.md, An existing Karpenter.",
    )


def _existing_finding(
    config: StackConfig, subject: str, found: Mapping[str, Mapping[str, Any] | None], mark: str
) -> Finding:
    marked = sorted(name for name, crd in found.items() if crd is not None and _mark(crd) == mark)
    if marked:
        return _installed_here_finding(subject, marked, mark)
    missing = sorted(name for name, crd in found.items() if crd is None)
    if missing:
        return Finding(
            "blocking",
            subject,
            f"{key_path('karpenter', 'install')} is false, but the cluster has no"
            f" {', '.join(missing)}: no Karpenter runs there to launch the pools' nodes.",
            f"Install Karpenter, or set {key_path('karpenter', 'install')}: true.",
        )
    without_v1 = sorted(name for name in CORE_CRDS if not _serves_v1(found[name]))
    if without_v1:
        return Finding(
            "blocking",
            subject,
            f"The cluster's {', '.join(without_v1)} serve no v1 API, which the pools' NodePools"
            " and EC2NodeClasses are written in (Karpenter v1.0.0 and later).",
            f"Upgrade the cluster's Karpenter to {KARPENTER_CRD_CHART.version} (its CRDs"
            " included) before pulumi up.",
        )
    lacking = [
        f"{name} {'.'.join(p for p in path if p != '[]')}"
        for name, paths in fields_set(config).items()
        for path in paths
        if not _has_field(_served_schema(found[name]), path)
    ]
    if lacking:
        return Finding(
            "blocking",
            subject,
            "The cluster's Karpenter CRDs lack fields the pools set, which its API server would"
            f" drop without an error: {', '.join(lacking)}.",
            f"Upgrade the cluster's Karpenter to {KARPENTER_CRD_CHART.version} (its CRDs"
            " included) before pulumi up.",
        )
    return Finding(
        "ok",
        subject,
        "The cluster's Karpenter CRDs have every field the pools set.",
        "Nothing.",
    )


def _mark(crd: Mapping[str, Any]) -> str | None:
    annotations = crd.get("metadata", {}).get("annotations") or {}
    found: str | None = annotations.get(STACK_ANNOTATION)
    return found


def _owner(crd: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The Helm release (name, namespace) a CRD's annotations say owns it."""
    annotations = crd.get("metadata", {}).get("annotations") or {}
    return annotations.get(RELEASE_NAME), annotations.get(RELEASE_NAMESPACE)


def _serves_v1(crd: Mapping[str, Any] | None) -> bool:
    versions: Sequence[Mapping[str, Any]] = (crd or {}).get("spec", {}).get("versions", [])
    return any(v.get("name") == "v1" and v.get("served", True) for v in versions)


def _served_schema(crd: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The `v1` version's OpenAPI schema, as the NodePools and EC2NodeClasses are written."""
    versions: Sequence[Mapping[str, Any]] = (crd or {}).get("spec", {}).get("versions", [])
    v1 = next((v for v in versions if v.get("name") == "v1"), {})
    schema: Mapping[str, Any] = v1.get("schema", {}).get("openAPIV3Schema", {})
    return schema


def _has_field(schema: Mapping[str, Any], path: Sequence[str]) -> bool:
    node: Mapping[str, Any] | None = schema
    for step in path:
        if node is None:
            return False
        node = node.get("items") if step == "[]" else node.get("properties", {}).get(step)
    return node is not None


# The first release of each thing the pools need from a running controller, from
# aws/karpenter-provider-aws and the kubernetes-sigs/karpenter it pins, at these tags:
V1_API = (1, 0, 0)
"""v1.0.0: the `karpenter.sh/v1` API, with `weight`, budgets' `reasons` and
`terminationGracePeriod`."""
RESERVED_CAPACITY = (1, 3, 0)
"""v1.3.0: `capacityReservationSelectorTerms` and the `reserved` capacity type, behind the
`ReservedCapacity` feature gate, off by default (kubernetes-sigs pkg/operator/options/options.go
`FEATURE_GATES` default `ReservedCapacity=false`; chart values `reservedCapacity: false`)."""
RESERVED_CAPACITY_BY_DEFAULT = (1, 6, 0)
"""v1.6.0: the gate on by default (options.go `ReservedCapacity=true`; chart values
`reservedCapacity: true`), and `CapacityReservationTypeCapacityBlock`
(pkg/apis/v1/ec2nodeclass_status.go), which no earlier tag has."""
NODE_LIMITS_AND_EFA = (1, 11, 0)
"""v1.11.0: `limits.nodes` enforced (kubernetes-sigs 9f749d9f6, "support NodePool node
limits"), and the EC2NodeClass's `networkInterfaces` and `placementGroupSelector`
(pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml, in no earlier tag)."""
# The controller's image (charts/karpenter/values.yaml `controller.image.repository`,
# public.ecr.aws/karpenter/controller, or a mirror of it) and its tag, `1.14.1`.
_CONTROLLER_REPOSITORY = "karpenter/controller"
_RELEASE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


def controller_finding(config: StackConfig, deployments: Deployments) -> Finding:
    """With `install: false`, the controller Deployment in `karpenter.namespace`: its release,
    from the image tag, and its `FEATURE_GATES` and `INTERRUPTION_QUEUE` (the chart's
    templates/deployment.yaml sets both), against what the pools need. A CRD that has a field
    says nothing of the controller that must act on it: upstream upgrades the CRDs first
    (upgrading/upgrade-guide.md)."""
    namespace = config.karpenter.namespace
    subject = f"cluster {config.cluster.name} Karpenter controller"
    try:
        found = _controllers(deployments(), namespace)
    except requests.RequestException as error:
        return Finding(
            "warning",
            subject,
            f"Cannot read the cluster's Deployments: {_why(error)}.",
            f"Check the controller's image and FEATURE_GATES by hand (kubectl -n {namespace} get"
            " deployment karpenter -o yaml).",
        )
    if not found:
        return Finding(
            "warning",
            subject,
            f"No Karpenter controller Deployment in {namespace}"
            f" ({key_path('karpenter', 'namespace')}): the check cannot tell its release.",
            f"Set {key_path('karpenter', 'namespace')} to where it runs.",
        )
    where, image, env = found[0]
    release = _RELEASE.match(image_tag(image)[1])
    if release is None:
        return Finding(
            "warning",
            subject,
            f"{where} runs {image}, whose release the check cannot tell.",
            "Check that it is v1.11.0 or later, with the ReservedCapacity feature gate on.",
        )
    version = tuple(int(part) for part in release.groups())
    blocking, warnings = _controller_problems(config, version, env)
    if blocking or warnings:
        return Finding(
            "blocking" if blocking else "warning",
            subject,
            f"{where} runs {image}: " + "; ".join(blocking + warnings) + ".",
            "Upgrade the cluster's Karpenter to v1.14.1 (the pinned release), with the"
            " ReservedCapacity feature gate on.",
        )
    return Finding("ok", subject, f"{where} runs {image}.", "Nothing.")


def _controller_problems(
    config: StackConfig, version: tuple[int, ...], env: Mapping[str, str]
) -> tuple[list[str], list[str]]:
    """What blocks the pools, and what only weakens them, under this release and env."""
    capacities = {p.capacity for p in config.pools}
    blocking: list[str] = []
    warnings: list[str] = []
    if version < V1_API:
        blocking.append("it predates the karpenter.sh/v1 API (v1.0.0) the NodePools are written in")
    gates = _feature_gates(env.get("FEATURE_GATES", ""))
    reserved_on = gates.get("ReservedCapacity", version >= RESERVED_CAPACITY_BY_DEFAULT)
    reserved = capacities & set(EC2_RESERVED_CAPACITIES)
    if reserved and (version < RESERVED_CAPACITY or not reserved_on):
        blocking.append(
            "reserved capacity needs v1.3.0 and the ReservedCapacity feature gate on: the"
            " reserved and capacity-block pools' pods would stay Pending"
        )
    if "capacity-block" in capacities and version < RESERVED_CAPACITY_BY_DEFAULT:
        blocking.append(
            "Capacity Blocks need v1.6.0: the capacity-block pools' pods would stay Pending"
        )
    if version < NODE_LIMITS_AND_EFA:
        if any(p.aws.efa for p in config.pools):
            blocking.append(
                "networkInterfaces and placementGroupSelector need v1.11.0: the EFA pools' nodes"
                " would come up with one ENA interface"
            )
        warnings.append("limits.nodes is enforced from v1.11.0: only the GPU and CPU limits hold")
    # Only spot nodes need the queue: a Capacity Block's nodes are deleted 40 minutes before
    # its end by the `capacityreservation.expiration` controller, which runs queue or not
    # (aws/karpenter-provider-aws pkg/controllers/controllers.go at v1.14.1; only the
    # interruption controller needs `InterruptionQueue`).
    if "spot" in capacities and not env.get("INTERRUPTION_QUEUE"):
        warnings.append(
            "it has no INTERRUPTION_QUEUE: spot nodes are not drained within their two-minute"
            " notice before EC2 takes them back"
        )
    return blocking, warnings


def _controllers(
    deployments: Sequence[Mapping[str, Any]], namespace: str
) -> list[tuple[str, str, dict[str, str]]]:
    """`namespace/name`, image and literal env of each Karpenter controller container there."""
    found = []
    for deployment in deployments:
        metadata = deployment.get("metadata") or {}
        if metadata.get("namespace") != namespace:
            continue
        pod = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in pod.get("containers") or []:
            image = container.get("image") or ""
            if image_tag(image)[0].endswith(_CONTROLLER_REPOSITORY):
                env = {
                    e["name"]: e["value"]
                    for e in container.get("env") or []
                    if isinstance(e.get("value"), str)
                }
                found.append((f"{namespace}/{metadata.get('name')}", image, env))
    return found


def _service_account(config: StackConfig, deployments: Deployments | None) -> str:
    """The controller's service account, as its Deployment names it; the chart's where the
    Deployment cannot be read (the controller finding says why)."""
    try:
        found = deployments() if deployments is not None else []
    except requests.RequestException:
        found = []
    for deployment in found:
        if _controllers([deployment], config.karpenter.namespace):
            pod = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
            return str(pod.get("serviceAccountName") or DEFAULT_SERVICE_ACCOUNT)
    return DEFAULT_SERVICE_ACCOUNT


def _feature_gates(text: str) -> dict[str, bool]:
    """`ReservedCapacity=true,NodeRepair=false` (the chart's FEATURE_GATES) as a map."""
    gates = {}
    for item in text.split(","):
        name, equals, value = item.partition("=")
        if equals:
            gates[name.strip()] = value.strip().lower() == "true"
    return gates


def _why(error: Exception) -> str:
    if isinstance(error, requests.HTTPError) and error.response is not None:
        return f"the Kubernetes API answered {error.response.status_code}"
    return str(error) or type(error).__name__


def authentication_mode_finding(config: StackConfig, cluster: Mapping[str, Any]) -> Finding:
    """The node role reaches the cluster through an EKS access entry the stack creates, which EKS
    reads only in these modes (EKS user guide, "Grant IAM users access to Kubernetes with EKS
    access entries"): in `CONFIG_MAP` mode Karpenter's nodes would never join."""
    name = config.cluster.name
    subject = f"cluster {name}"
    mode = cluster.get("accessConfig", {}).get("authenticationMode")
    if mode in ACCESS_ENTRY_MODES:
        return Finding(
            "ok",
            subject,
            f"Authentication mode {mode}: the Karpenter node role's access entry lets its nodes"
            " join.",
            "Nothing.",
        )
    return Finding(
        "blocking",
        subject,
        f"Authentication mode {mode or 'unknown'}: EKS reads no access entry, so the nodes"
        " Karpenter launches, whose role the stack admits through one, would never join the"
        " cluster.",
        f"aws eks update-cluster-config --name {name} --access-config"
        " authenticationMode=API_AND_CONFIG_MAP (it cannot be changed back to CONFIG_MAP)",
    )


def spot_role_finding(iam: Any) -> Finding:
    """Karpenter launches spot nodes through EC2 Fleet, which needs the account's Spot
    service-linked role; EC2 would create it on first use, but Karpenter's role is not granted
    `iam:CreateServiceLinkedRole` (upstream's getting-started template does not grant it either,
    and has the role created once per account)."""
    subject = f"role {SPOT_ROLE}"
    try:
        iam.get_role(RoleName=SPOT_ROLE)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "NoSuchEntity":
            raise
        return Finding(
            "blocking",
            subject,
            "The account has no EC2 Spot service-linked role: Karpenter's launches of the spot"
            f" pools' nodes ({key_path('pools')} with capacity spot) would fail.",
            "aws iam create-service-linked-role --aws-service-name spot.amazonaws.com",
        )
    return Finding("ok", subject, "The account has EC2's Spot service-linked role.", "Nothing.")

"""Which GPU pools a pod fits, judged the way the cluster autoscaler judges a pool at zero.

With no node of a pool running, the autoscaler plans with a node template: the labels, taints
and allocatable resources it expects a new node to have. A pod that fits no template stays
Pending and no pool scales up for it. `NodeTemplate` is that template, cloud-neutral; each cloud
derives its own (`eks_node_template` from the hints on an EKS node group's Auto Scaling group,
`gke_node_template` from a GKE node pool's own configuration). Karpenter decides the same way
for each instance type a NodePool allows (`karpenter_node_templates`), and a pod fits the pool
where it fits one of them. Before a pod is tried, each template holds the pods its provisioner
places there first (`with_template_pods`: kube-proxy, DaemonSets), whose requests take their
share of its allocatable, and the deprecated labels the autoscaler copies (`DEPRECATED_LABELS`).
`fits` checks a pod spec, as the API server admits it (ExtendedResourceToleration), against
templates with the scheduler's rules that decide it, each reason named by its kube-scheduler
plugin: node selector and required node affinity (`NodeAffinity`), untolerated `NoSchedule`/
`NoExecute` taints (`TaintToleration`), resources as `PodRequests` adds them up
(`NodeResourcesFit`), and the device plugin's
own limit on shared GPUs. docs/fit.md says how each cloud's template is built and where `fit`
and the autoscaler cannot agree.
"""

import itertools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, TypeVar

from gpu_platform.accelerators import ACCELERATORS, mig_instances_per_gpu
from gpu_platform.eks.auto_mode.names import AUTO_MODE_LABEL_PREFIX
from gpu_platform.eks.autoscaler_tags import (
    LABEL_TAG_PREFIX,
    RESOURCE_TAG_PREFIX,
    TAINT_TAG_PREFIX,
)
from gpu_platform.eks.instance_types import INSTANCE_TYPE_SCHEME, InstanceType, kebab
from gpu_platform.eks.karpenter.labels import AWS_LABEL_PREFIX, CAPACITY_TYPE_LABEL, NODE_POOL_LABEL
from gpu_platform.eks.kubelet_allocatable import kube_reserved_cpu_millicores
from gpu_platform.eks.node_group_names import NODE_GROUP_SUFFIX, node_group_pattern
from gpu_platform.eks.node_labels import EFA_RESOURCE
from gpu_platform.gke.capacity_taints import GKE_QUEUED_TAINT
from gpu_platform.gke.locations import zone_region
from gpu_platform.gke.machine_types import machine_size
from gpu_platform.node_identity import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    POOL_LABEL,
    ZONE_LABEL,
    Taint,
)
from gpu_platform.taints import CLOUD_TAINT_EFFECTS, tolerates
from gpu_platform.template_pods import TemplatePod

PodSpec = Mapping[str, Any]

# Effects that keep a pod off a node; `PreferNoSchedule` only makes the scheduler reluctant.
_REPELLING_EFFECTS = ("NoSchedule", "NoExecute")
# Taints the autoscaler leaves out of every template, expecting them gone once the node is up
# (`SanitizeTaints`, utils/taints/taints.go, called from simulator/node_info_utils.go,
# cluster-autoscaler-1.35.2; its FAQ, "startup taints"): startup, deprecated ignore and status
# taints, by prefix.
_SANITIZED_TAINT_PREFIXES = (
    "startup-taint.cluster-autoscaler.kubernetes.io/",
    "ignore-taint.cluster-autoscaler.kubernetes.io/",
    "status-taint.cluster-autoscaler.kubernetes.io/",
)
# Resources a GKE template is not told offline (the machine type's allocatable); a pod's request
# for them is not held against a template that says it does not know them.
_BASE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")
# Kubernetes' architecture names for EC2's.
_KUBERNETES_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
GKE_FLEX_START_LABEL = "cloud.google.com/gke-flex-start"
KUBERNETES_EFFECTS = {cloud: kubernetes for kubernetes, cloud in CLOUD_TAINT_EFFECTS.items()}
"""A taint effect as Kubernetes spells it, by the EKS and GKE APIs' spelling."""


@dataclass(frozen=True)
class NodeTemplate:
    """A node of a pool as the autoscaler imagines it before one exists."""

    pool: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    resources: Mapping[str, Decimal] = field(default_factory=dict)
    """Allocatable quantities by resource name."""
    secret_labels: bool = False
    """The pool's labels came from config set as a secret: reasons name them, not their values."""
    complete: bool = True
    """Holds every resource the autoscaler's template would: one it lacks counts as none, as
    the autoscaler counts it. False where some of CPU, memory, ephemeral storage and pods are
    not known offline: those it lacks are not judged."""
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Labels whose value is chosen for each new node among these (a Karpenter NodePool's zones
    and capacity types, a GKE node pool's zones): a pod that selects any of them fits."""
    patterns: Mapping[str, str] = field(default_factory=dict)
    """Labels whose value is known offline only by its form, a regular expression (an EKS node
    group's name, which ends in a suffix the provider makes up): a pod that selects a value of
    that form fits."""
    per_container: Mapping[str, int] = field(default_factory=dict)
    """The most of a resource the node's device plugin hands one container (shared GPUs: 1)."""
    variant: str = ""
    """What tells this template from the pool's others in reasons (an instance type, a zone)."""
    template_only: frozenset[str] = frozenset()
    """Labels of the autoscaler's template that the node it starts does not carry: a pod that
    needs one has a node started for it that it is never scheduled on."""
    pods: tuple[TemplatePod, ...] = ()
    """The pods the provisioner puts on the template before it tries a pod there (its cloud
    provider's kube-proxy, the DaemonSets that would run on the node): their requests are held
    against its allocatable (`gpu_platform.template_pods`)."""
    unknown_labels: frozenset[str] = frozenset()
    """Labels its nodes carry whose value is not known offline (Auto Mode's instance labels the
    instance data here does not hold): the pod's node selector and affinity on them are not
    judged, and where it names one the check cannot say it fits (`unknown_labels_named`)."""
    capacity_only: frozenset[str] = frozenset()
    """Resources given as the node's capacity, not its allocatable: the provisioner reserves a
    share of them it does not publish (EKS Auto Mode), so a pod asking for more fits nowhere, and
    one asking for less may still not fit (`capacity_bound`)."""
    assumed_allocatable: Mapping[str, Decimal] = field(default_factory=dict)
    """Of `capacity_only` resources, what the node would offer pods if the provisioner reserved
    what Karpenter does by default: an assumption, below which a pod is taken to fit."""
    capacity_notes: Mapping[str, str] = field(default_factory=dict)
    """Of `capacity_only` resources, what the figure a reason gives is, where it is not plainly
    the node's capacity (Karpenter's pre-launch estimate)."""


@dataclass(frozen=True)
class Fit:
    """Whether a pod fits a pool, and if not, every reason why."""

    pool: str
    reasons: tuple[str, ...]

    @property
    def fits(self) -> bool:
        return not self.reasons


def fits(pod_spec: PodSpec, templates: Iterable[NodeTemplate]) -> list[Fit]:
    """The pod against each pool, in the order of the pools' first templates. A pool of several
    templates (a Karpenter NodePool's, one per instance type; a node group per zone) fits where
    one of them does.

    The pod is judged as the API server admits it: EKS and GKE run the ExtendedResourceToleration
    admission plugin, which adds a toleration `<resource> Exists NoSchedule` for each extended
    resource a container asks for (kubernetes plugin/pkg/admission/extendedresourcetoleration),
    so a pod asking for `nvidia.com/gpu` tolerates the GPU taint without saying so."""
    pod_spec = admitted(pod_spec)
    by_pool: dict[str, list[NodeTemplate]] = {}
    for template in templates:
        by_pool.setdefault(template.pool, []).append(template)
    return [_pool_fit(pod_spec, pool, found) for pool, found in by_pool.items()]


def unanswerable(pod_spec: PodSpec) -> str | None:
    """Why `fits` cannot judge the pod, or None. A pod that claims devices through Dynamic
    Resource Allocation (`spec.resourceClaims`) fits a node only where its claims can be
    allocated from the node's ResourceSlices, which no template here holds: the cluster
    autoscaler simulates claims against a running node of the pool, and plans a pool at zero
    with none (docs/dra.md)."""
    if pod_spec.get("resourceClaims"):
        return (
            "it claims devices through DRA (spec.resourceClaims), which fit cannot judge: a"
            " claim is allocated from a node's ResourceSlices, which no node template holds"
            " (docs/dra.md)"
        )
    return None


def admitted(pod_spec: PodSpec) -> PodSpec:
    """The pod with the tolerations ExtendedResourceToleration adds: one per extended resource
    any container or init container asks for, in requests or limits."""
    extended = sorted(
        {
            name
            for container in [
                *(pod_spec.get("initContainers") or []),
                *pod_spec.get("containers", []),
            ]
            for part in ("requests", "limits")
            for name in ((container.get("resources") or {}).get(part) or {})
            if is_extended_resource(name)
        }
    )
    if not extended:
        return pod_spec
    added = [{"key": name, "operator": "Exists", "effect": "NoSchedule"} for name in extended]
    return {**pod_spec, "tolerations": [*(pod_spec.get("tolerations") or []), *added]}


def is_extended_resource(name: str) -> bool:
    """Kubernetes' `IsExtendedResourceName`: a name with a domain outside `kubernetes.io/`, not
    a quota's `requests.` one."""
    domain, slash, _ = name.partition("/")
    return bool(slash) and not domain.endswith("kubernetes.io") and not name.startswith("requests.")


def _pool_fit(pod_spec: PodSpec, pool: str, templates: Sequence[NodeTemplate]) -> Fit:
    """Why the pod fits none of a pool's templates: what holds for all of them, then what holds
    for some, named by their instance type."""
    reasons = [tuple(_why_not(pod_spec, t)) for t in templates]
    if not all(reasons):
        return Fit(pool, ())
    common = [r for r in reasons[0] if all(r in others for others in reasons[1:])]
    own = [
        f"{template.variant or template.labels.get(INSTANCE_TYPE_LABEL, '?')}: {reason}"
        for template, found in zip(templates, reasons, strict=True)
        for reason in found
        if reason not in common
    ]
    return Fit(pool, (*common, *own))


def with_template_pods(
    template: NodeTemplate,
    provider_pods: Sequence[TemplatePod],
    daemonsets: Iterable[TemplatePod],
) -> NodeTemplate:
    """The template with the pods its provisioner puts there first: those of its cloud provider
    (`provider_pods`), then each DaemonSet's that would run on the node. A DaemonSet's pod runs
    where its node selector and required node affinity match the template's labels and it
    tolerates every `NoSchedule` and `NoExecute` taint but those the autoscaler sanitizes
    (`NodeShouldRunDaemonPod`, kubernetes pkg/controller/daemon, as utils/daemonset
    `GetDaemonSetPodsForNode` calls it, cluster-autoscaler-1.35.2). Resources are not judged:
    the autoscaler adds every such pod (`forceDaemonSets`)."""
    landing = [
        pod
        for pod in daemonsets
        if not any(_label_problems(pod.spec, template))
        and not any(_untolerated(pod.spec, template))
    ]
    return replace(template, pods=(*template.pods, *provider_pods, *landing))


TEMPLATE_NODE_LABEL = "cluster-autoscaler.kubernetes.io/template-node"


def with_autoscaler_label(template: NodeTemplate) -> NodeTemplate:
    """The template with the label the cluster autoscaler gives every template node once its
    pods are placed (`SanitizedTemplateNodeInfoFromNodeInfo`, simulator/node_info_utils.go,
    cluster-autoscaler-1.35.2: `cluster-autoscaler.kubernetes.io/template-node: "true"`), which
    the node it starts does not carry; assumed of GKE's autoscaler too, as the deprecated
    labels are."""
    return replace(
        template,
        labels={**template.labels, TEMPLATE_NODE_LABEL: "true"},
        template_only=template.template_only | {TEMPLATE_NODE_LABEL},
    )


def fitting_pools(pod_spec: PodSpec, templates: Iterable[NodeTemplate]) -> list[str]:
    return [f.pool for f in fits(pod_spec, templates) if f.fits]


@dataclass(frozen=True)
class EksNodeGroup:
    """What the autoscaler knows of an EKS managed node group besides its Auto Scaling group's
    hints: the group's first zone, the tags EKS puts on the group, and EKS's DescribeNodegroup
    answer (`getManagedNodegroupInfo`, cloudprovider/aws/aws_wrapper.go)."""

    pool: str
    cluster: str
    zone: str
    """The Auto Scaling group's first availability zone, the only one its template has."""
    capacity_type: str
    """`ON_DEMAND`, `SPOT` or `CAPACITY_BLOCK`, as EKS spells it."""
    ami_type: str
    kubernetes_version: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    """Those with a value: the autoscaler skips a node group taint without one."""
    name_prefix: str | None = None
    """The node group's `nodeGroupNamePrefix` (`<pool>-`, or `<pool>-<zone>-` for one of a
    pool's per-zone groups): its name is this and the provider's suffix. None: any name of the
    pool's groups."""


def eks_node_template(
    asg_tags: Mapping[str, str], instance_type: InstanceType, group: EksNodeGroup
) -> NodeTemplate:
    """The template the autoscaler builds for an EKS managed node group at zero
    (`buildNodeFromTemplate`, cloudprovider/aws/aws_manager.go, cluster-autoscaler-1.35.2, the
    same from 1.33.6 to 1.36.1), in its order:

    1. capacity from the instance type (its first: "always use first instance"): CPU, memory,
       the physical `nvidia.com/gpu`, and 110 pods; the hints' resources override them, which
       is how a MIG pool's `nvidia.com/gpu: 0` and the kubelet's real allocatable
       (`gpu_platform.eks.kubelet_allocatable`) reach it; allocatable is that capacity;
    2. `buildGenericLabels`: architecture, OS, instance type, region (the zone less its last
       letter), zone, `topology.ebs.csi.aws.com/zone` and a made-up hostname;
    3. the hints' labels, and every `eks:` tag of the group as a label: EKS's
       `eks:cluster-name` and `eks:nodegroup-name` become `cluster-name` and `nodegroup-name`
       (`extractLabelsFromAsg`);
    4. the hints' taints, then DescribeNodegroup's: `amiType`, `eks.amazonaws.com/capacityType`,
       `k8sVersion`, `eks.amazonaws.com/nodegroup` and the group's labels, which win over the
       hints, and its taints with a value, appended;
    5. `UpdateDeprecatedLabels` (utils/labels/labels.go), which `SanitizedTemplateNodeInfoFrom
       NodeGroup` calls on every template: the beta instance type, region and zone labels.

    The node group's name ends in a suffix the provider makes up, known here by its form: the
    group's own `nodeGroupNamePrefix` and a suffix, so that a per-zone group's template never
    takes a sibling's name. The pods the autoscaler places on it first are added by
    `with_template_pods`.
    """
    # A zonal group's own name only: a sibling's zone in its name is another group's template.
    name = (
        node_group_pattern(group.pool)
        if group.name_prefix is None
        else re.escape(group.name_prefix) + NODE_GROUP_SUFFIX
    )
    asg = f"eks-{name}-{_EKS_UUID}"
    labels = _ec2_node_labels(instance_type, group.zone[:-1])
    labels |= {ZONE_LABEL: group.zone, "topology.ebs.csi.aws.com/zone": group.zone}
    patterns = {
        "kubernetes.io/hostname": f"{asg}-asg-[0-9]+",
        "nodegroup-name": name,
        "eks.amazonaws.com/nodegroup": name,
    }
    taints = []
    resources = {
        "cpu": Decimal(instance_type.vcpus),
        "memory": Decimal(instance_type.memory_mib) * 2**20,
        GPU_RESOURCE: Decimal(instance_type.gpu_count),
        # The autoscaler's fixed guess at a node's pods (aws_manager.go, "TODO: get a real value").
        "pods": Decimal(110),
    }
    for key, value in asg_tags.items():
        if key.startswith(LABEL_TAG_PREFIX):
            labels[key.removeprefix(LABEL_TAG_PREFIX)] = value
        elif key.startswith(TAINT_TAG_PREFIX):
            taint_value, _, effect = value.partition(":")
            taints.append(Taint(key.removeprefix(TAINT_TAG_PREFIX), taint_value, effect))
        elif key.startswith(RESOURCE_TAG_PREFIX):
            resources[key.removeprefix(RESOURCE_TAG_PREFIX)] = quantity(value)
    labels |= {
        "cluster-name": group.cluster,
        "amiType": group.ami_type,
        "eks.amazonaws.com/capacityType": group.capacity_type,
        "k8sVersion": group.kubernetes_version,
        **group.labels,
    }
    unique = tuple(dict.fromkeys([*taints, *group.taints]))
    return NodeTemplate(
        labels.get(POOL_LABEL, group.pool),
        with_deprecated_labels(labels),
        unique,
        resources,
        patterns=patterns,
        per_container=_device_plugin_limits(labels),
        variant=group.zone,
        template_only=_EKS_TEMPLATE_ONLY_LABELS,
    )


# The labels `UpdateDeprecatedLabels` (utils/labels/labels.go, cluster-autoscaler-1.35.2) copies
# from their stable names onto every template (`SanitizedTemplateNodeInfoFromNodeGroup`): not
# `beta.kubernetes.io/os` or `beta.kubernetes.io/arch`, which a template therefore lacks.
DEPRECATED_LABELS = {
    INSTANCE_TYPE_LABEL: "beta.kubernetes.io/instance-type",
    "topology.kubernetes.io/region": "failure-domain.beta.kubernetes.io/region",
    ZONE_LABEL: "failure-domain.beta.kubernetes.io/zone",
}


DEPRECATED_NAMES = frozenset(
    {*DEPRECATED_LABELS.values(), "beta.kubernetes.io/os", "beta.kubernetes.io/arch"}
)
"""Every deprecated well-known label a provisioner may give a template."""


def with_deprecated_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """`labels` and the deprecated names the autoscaler gives three of them."""
    return {
        **labels,
        **{old: labels[new] for new, old in DEPRECATED_LABELS.items() if new in labels},
    }


# Labels the AWS template takes from the Auto Scaling group's `eks:` tags and from
# DescribeNodegroup's amiType and version (`extractLabelsFromAsg`, aws_manager.go;
# `getManagedNodegroupInfo`, aws_wrapper.go), which the kubelet of an EKS node does not register:
# EKS labels its nodes `eks.amazonaws.com/nodegroup` and `eks.amazonaws.com/capacityType`, and
# the ASG's tags reach no node (the autoscaler's own comment on `joinNodeLabelsChoosingUserValues
# OverAPIValues`: "EKS isn't sending the ASG Tags to Kubernetes itself").
_EKS_TEMPLATE_ONLY_LABELS = frozenset({"cluster-name", "nodegroup-name", "amiType", "k8sVersion"})


# EKS's managed node group id, which ends its Auto Scaling group's name.
_EKS_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def _device_plugin_limits(labels: Mapping[str, str]) -> dict[str, int]:
    """What the operator's device plugin hands one container on a node with these labels: one
    replica of a shared GPU, as it is configured with `failRequestsGreaterThanOne`
    (gpu_platform/kubernetes/operator_values.py; k8s-device-plugin v0.20.0 internal/rm/rm.go)."""
    config = labels.get(DEVICE_PLUGIN_CONFIG_LABEL, "")
    return {GPU_RESOURCE: 1} if config.startswith(("time-slicing-", "mps-")) else {}


def _ec2_node_labels(instance_type: InstanceType, region: str) -> dict[str, str]:
    """The well-known labels a node of an EC2 instance type has, from the instance type."""
    labels = {
        "kubernetes.io/os": "linux",
        INSTANCE_TYPE_LABEL: instance_type.name,
        "topology.kubernetes.io/region": region,
    }
    if instance_type.architecture is not None:
        labels["kubernetes.io/arch"] = _KUBERNETES_ARCH[instance_type.architecture]
    return labels


# Karpenter's sources: kubernetes-sigs/karpenter and aws/karpenter-provider-aws, both v1.14.1.
_TENANCY_LABEL = f"{AWS_LABEL_PREFIX}instance-tenancy"
# Labels Karpenter knows (its pkg/apis/v1/labels.go `WellKnownLabels`, and the provider's, all
# under karpenter.k8s.aws/ but for the zone ID): EC2's data or the offering Karpenter launches
# give their values. A NodePool's requirement on any other label becomes a label of its nodes.
_KARPENTER_WELL_KNOWN = frozenset(
    {
        NODE_POOL_LABEL,
        ZONE_LABEL,
        "topology.kubernetes.io/region",
        INSTANCE_TYPE_LABEL,
        "kubernetes.io/arch",
        "kubernetes.io/os",
        CAPACITY_TYPE_LABEL,
        "node.kubernetes.io/windows-build",
        "topology.k8s.aws/zone-id",
    }
)
_V = TypeVar("_V")
# Karpenter reads a pod's requirement on a deprecated label as one on its stable name
# (pkg/apis/v1/labels.go `NormalizedLabels`): the os and arch ones too.
_KARPENTER_NORMALIZED = {
    **DEPRECATED_LABELS,
    "kubernetes.io/os": "beta.kubernetes.io/os",
    "kubernetes.io/arch": "beta.kubernetes.io/arch",
}


def _normalized(labels: Mapping[str, _V]) -> dict[str, _V]:
    return {
        **labels,
        **{old: labels[new] for new, old in _KARPENTER_NORMALIZED.items() if new in labels},
    }


# kube-reserved CPU, by range of the node's millicores (types.go `kubeReservedResources`).
_KUBE_RESERVED_CPU = (
    (0, 1000, Decimal("0.06")),
    (1000, 2000, Decimal("0.01")),
    (2000, 4000, Decimal("0.005")),
    (4000, 2**31, Decimal("0.0025")),
)
# Where an AMI family keeps pods' data (amifamily/al2023.go, al2.go, bottlerocket.go
# `EphemeralBlockDevice`), and the size of the volume Karpenter maps there by default
# (amifamily/resolver.go `DefaultEBS`).
_EPHEMERAL_DEVICES = {"al2": "/dev/xvda", "al2023": "/dev/xvda", "bottlerocket": "/dev/xvdb"}
_DEFAULT_VOLUME = "20Gi"


def karpenter_node_templates(
    node_pool: Mapping[str, Any],
    node_class: Mapping[str, Any],
    instance_types: Mapping[str, InstanceType],
    region: str,
    label_prefix: str = AWS_LABEL_PREFIX,
) -> list[NodeTemplate]:
    """The nodes Karpenter may start for a NodePool (a `karpenter.sh/v1` NodePool and its
    `karpenter.k8s.aws/v1` EC2NodeClass, as objects) with none of them running: one template per
    instance type its `node.kubernetes.io/instance-type` requirement lists, or without one, per
    instance type of `instance_types` (which describes them) its requirements admit, each with

    - the NodePool's template labels, `karpenter.sh/nodepool` and `karpenter.k8s.aws/
      ec2nodeclass` (`NewNodeClaimTemplate`, scheduling/nodeclaimtemplate.go), and the labels
      EC2's data gives an instance type (`computeRequirements`, instancetype/types.go lines
      163-311) as far as the instance data here holds them: not the hypervisor, CPU
      manufacturer and clock speed, bandwidths, encryption in transit or zone ID;
    - as choices, the zones and capacity types the NodePool allows (capacity type `reserved`
      only where its EC2NodeClass selects capacity reservations, types.go lines 171-179; no zone
      label where it allows every zone), and a tenancy of `default` or `dedicated`;
    - its `taints`, and not its `startupTaints`: Karpenter holds only the first against a pod
      (scheduling/nodeclaim.go line 126, `CanAdd`), and expects the others gone once the node is
      up (the NodePool CRD's description of `startupTaints`). It holds `PreferNoSchedule` ones
      against a pod too, until nothing else fits it (scheduling/preferences.go), so, as here,
      they keep no pod out;
    - allocatable CPU, ephemeral storage, `nvidia.com/gpu` (the instance type's NVIDIA GPUs, one
      per physical GPU) and `vpc.amazonaws.com/efa`, as types.go computes them with the
      EC2NodeClass's default kubelet settings: capacity less kube-reserved and the eviction
      threshold. Memory and pods are left out, not judged: Karpenter reserves memory by the
      node's ENI-limited pod count, which the instance data here does not hold.

    Requirements on labels the instance data gives rule out the instance types that do not
    meet them. The pods Karpenter places first are added by `with_template_pods`.
    """
    template = node_pool["spec"]["template"]
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    # Karpenter adds the template's labels to its requirements, `In` their value.
    requirements = [
        *(template["spec"].get("requirements") or []),
        *({"key": key, "operator": "In", "values": [value]} for key, value in labels.items()),
    ]
    node_class_spec = node_class["spec"]
    chosen = _karpenter_choices(requirements, node_class_spec, label_prefix)
    own = {
        **{key: values[0] for key, values in chosen.items() if len(values) == 1},
        NODE_POOL_LABEL: node_pool["metadata"]["name"],
        f"{AWS_LABEL_PREFIX}ec2nodeclass": template["spec"]["nodeClassRef"]["name"],
    }
    taints = tuple(
        Taint(t["key"], t.get("value", ""), t["effect"])
        for t in template["spec"].get("taints") or []
    )
    templates = []
    for name in _karpenter_instance_type_names(requirements, instance_types):
        instance_type = instance_types[name]
        described = _karpenter_instance_labels(instance_type, region, label_prefix)
        if not all(
            _expression_matches(r, described) for r in requirements if r["key"] in described
        ):
            continue
        choices = {key: values for key, values in chosen.items() if len(values) != 1}
        templates.append(
            NodeTemplate(
                labels.get(POOL_LABEL, node_pool["metadata"]["name"]),
                _normalized({**described, **own}),
                taints,
                _karpenter_allocatable(instance_type, node_class_spec),
                complete=False,
                choices=_normalized(choices),
            )
        )
    return templates


# The instance labels Auto Mode gives its nodes, under `eks.amazonaws.com/` (create-node-pool.adoc,
# "EKS Auto Mode Supported Labels"), of those the instance data here holds: not Karpenter's
# tenancy, flex capability or EC2NodeClass labels, which the table does not list.
_AUTO_MODE_INSTANCE_LABELS = frozenset(
    {
        "instance-category",
        "instance-generation",
        "instance-family",
        "instance-size",
        "instance-cpu",
        "instance-memory",
        "instance-gpu-name",
        "instance-gpu-manufacturer",
        "instance-gpu-count",
        "instance-gpu-memory",
        "instance-local-nvme",
    }
)
# The labels of that table the instance data here does not hold: a pod may select them, and
# whether a node matches cannot be said offline.
_AUTO_MODE_UNKNOWN_LABELS = frozenset(
    {
        "instance-hypervisor",
        "instance-cpu-manufacturer",
        "instance-encryption-in-transit-supported",
        "instance-ebs-bandwidth",
        "instance-network-bandwidth",
    }
)
# EKS caps every Auto Mode node at 110 pods, after a max-pods calculation it does not publish
# (create-node-class.adoc, Considerations).
_AUTO_MODE_MOST_PODS = 110


def auto_mode_node_templates(
    node_pool: Mapping[str, Any],
    node_class: Mapping[str, Any],
    instance_types: Mapping[str, InstanceType],
    region: str,
) -> list[NodeTemplate]:
    """The nodes EKS Auto Mode may start for a NodePool on its `eks.amazonaws.com/v1` NodeClass:
    Karpenter's templates (`karpenter_node_templates`; Auto Mode runs Karpenter's NodePool API)
    with Auto Mode's labels, `eks.amazonaws.com/instance-*` and `eks.amazonaws.com/compute-type:
    auto` (create-node-pool.adoc), those of the table the instance data here lacks as
    `unknown_labels`, and the node's capacity: its vCPUs, its memory less Karpenter's VM
    overhead (`_karpenter_memory`), its ephemeral storage (its NVMe drives where they are larger
    than the NodeClass's `ephemeralStorage.size`, else that size, with the smaller of the two
    assumed where AWS's text leaves it open), and 110 pods, with its NVIDIA GPUs and no EFA
    interface. Auto Mode publishes neither its kube-reserved nor its eviction thresholds nor its
    max-pods formula, so those four are `capacity_only`."""
    prefix = AUTO_MODE_LABEL_PREFIX
    templates = []
    for template in karpenter_node_templates(node_pool, node_class, instance_types, region, prefix):
        labels = {
            key: value
            for key, value in template.labels.items()
            if not key.startswith((prefix, AWS_LABEL_PREFIX))
            or key.removeprefix(prefix) in _AUTO_MODE_INSTANCE_LABELS
        }
        instance_type = instance_types[template.labels[INSTANCE_TYPE_LABEL]]
        size = quantity(node_class["spec"].get("ephemeralStorage", {}).get("size", "80Gi"))
        nvme = Decimal(instance_type.instance_store_gb or 0) * 10**9
        # AWS's two cases (awsdocs/amazon-eks-user-guide latest/ug/automode/
        # automode-learn-instances.adoc, Considerations): where the NodeClass's
        # `ephemeralStorage.size` "is smaller than the NVMe local storage", Auto Mode "formats
        # and configures the NVMe local storage for ephemeral data use" beside a 20 GiB EBS data
        # volume, so pods' data is on the drives; where it "equals or exceeds the local NVMe
        # capacity", Auto Mode "skips the small EBS volume. The NVMe drive(s) are exposed
        # directly for your workload", which reads as the drives holding pods' data or as a
        # `size` volume holding it beside raw drives. Between the two figures fit cannot say:
        # the larger is the capacity, above which no reading lets the pod in, and the smaller
        # the assumed allocatable's basis. Without drives, the `size` volume (80Gi unset,
        # create-node-class.adoc).
        if 0 < nvme <= size:
            storage, storage_basis = size, nvme
        else:
            storage = storage_basis = max(size, nvme)
        capacity = {
            "cpu": Decimal(instance_type.vcpus),
            "memory": Decimal(_karpenter_memory_mib(instance_type)) * 2**20,
            "ephemeral-storage": storage,
            "pods": Decimal(_AUTO_MODE_MOST_PODS),
        }
        # What Karpenter v1.14.1 keeps back by default (aws/karpenter-provider-aws
        # pkg/providers/instancetype/types.go `kubeReservedResources`, `evictionThreshold`):
        # its CPU share (the template's own), 11 MiB a pod and 255 MiB of memory with a 100Mi
        # eviction threshold, and 1Gi of storage with a 10% one; here for 110 pods.
        assumed = {
            "cpu": template.resources["cpu"],
            "memory": capacity["memory"] - (11 * _AUTO_MODE_MOST_PODS + 255 + 100) * 2**20,
            "ephemeral-storage": storage_basis - 2**30 - math.ceil(storage_basis / 10),
            "pods": capacity["pods"],
        }
        notes = {"memory": "Karpenter's pre-launch estimate of its capacity"}
        if storage_basis < storage:
            notes["ephemeral-storage"] = (
                "its NodeClass's ephemeralStorage.size, which AWS's text leaves open to holding"
                f" pods' data in place of its {instance_type.instance_store_gb} GB of NVMe"
            )
        templates.append(
            replace(
                template,
                labels={**labels, f"{prefix}compute-type": "auto"},
                choices={k: v for k, v in template.choices.items() if k != _TENANCY_LABEL},
                # The platform gives Auto Mode pools no EFA and runs the EFA device plugin on no
                # Auto Mode node (`aws.efa` is refused there): the interfaces are not advertised.
                resources={**template.resources, **capacity, EFA_RESOURCE: Decimal(0)},
                complete=True,
                unknown_labels=frozenset(prefix + label for label in _AUTO_MODE_UNKNOWN_LABELS),
                capacity_only=frozenset(capacity),
                assumed_allocatable=assumed,
                capacity_notes=notes,
            )
        )
    return templates


# Karpenter's default `--vm-memory-overhead-percent` (aws/karpenter-provider-aws
# v1.14.1:pkg/operator/options/options.go line 58). Auto Mode runs Karpenter and publishes no
# figure of its own.
_KARPENTER_VM_MEMORY_OVERHEAD = 0.075
# The memory Graviton (arm64) instances reserve for the kernel's CMA (types.go line 358).
_GRAVITON_CMA_MIB = 64


def _karpenter_memory_mib(instance_type: InstanceType) -> int:
    """The memory, in MiB, Karpenter judges an instance type by before it launches a node
    (aws/karpenter-provider-aws v1.14.1:pkg/providers/instancetype/types.go lines 356-366,
    `memory`): EC2's figure less 64 MiB on arm64, less the ceiling of 7.5% of that. Once it has
    seen a node of the type it takes that node's capacity instead (instancetype.go lines
    228-230), which `fit`, judging before any node runs, cannot know."""
    mib = instance_type.memory_mib
    if instance_type.architecture == "arm64":
        mib -= _GRAVITON_CMA_MIB
    # In float64 and in bytes, as Go computes it, so that the ceiling rounds as Karpenter's does.
    overhead = math.ceil(float(mib * 2**20) * _KARPENTER_VM_MEMORY_OVERHEAD / 1024 / 1024)
    return mib - overhead


def capacity_bound(pod_spec: PodSpec, template: NodeTemplate) -> list[str]:
    """The `capacity_only` resources the pod, with the pods placed first, needs more of than the
    template's `assumed_allocatable`: it fits them by the node's capacity alone, and whether it
    fits once the provisioner's unpublished reservation is taken cannot be said."""
    wanted = {**template_requests(template)}
    _add(wanted, pod_requests(pod_spec))
    wanted["pods"] = Decimal(len(template.pods) + 1)
    return sorted(
        name
        for name in template.capacity_only
        if wanted.get(name, Decimal(0)) > template.assumed_allocatable.get(name, Decimal(0))
    )


def _karpenter_instance_type_names(
    requirements: Sequence[Mapping[str, Any]], instance_types: Mapping[str, InstanceType]
) -> list[str]:
    """The instance types the NodePool lists, else every one described: a NodePool of instance
    families or categories admits those its other requirements match."""
    listed = [
        r["values"]
        for r in requirements
        if r["key"] == INSTANCE_TYPE_LABEL and r["operator"] == "In"
    ]
    if not listed:
        return sorted(instance_types)
    return [name for name in listed[0] if all(name in values for values in listed[1:])]


def _karpenter_choices(
    requirements: Sequence[Mapping[str, Any]], node_class_spec: Mapping[str, Any], prefix: str
) -> dict[str, tuple[str, ...]]:
    """The values the NodePool's requirements allow for each label Karpenter chooses per node
    (zone, capacity type, tenancy) or copies from them (labels it does not know)."""
    reserved = ("reserved",) if node_class_spec.get("capacityReservationSelectorTerms") else ()
    found: dict[str, tuple[str, ...] | None] = {
        ZONE_LABEL: None,
        # In Karpenter's order of preference (concepts/nodepools.md, "Capacity Type").
        CAPACITY_TYPE_LABEL: (*reserved, "spot", "on-demand"),
        _TENANCY_LABEL: ("default", "dedicated"),
    }
    for requirement in requirements:
        key, operator = requirement["key"], requirement["operator"]
        if key not in found and (key in _KARPENTER_WELL_KNOWN or key.startswith(prefix)):
            continue
        values = tuple(requirement.get("values") or ())
        current = found.get(key)
        if operator == "In":
            found[key] = values if current is None else tuple(v for v in current if v in values)
        elif operator == "NotIn" and current is not None:
            found[key] = tuple(v for v in current if v not in values)
    return {key: values for key, values in found.items() if values is not None}


def _karpenter_instance_labels(
    instance_type: InstanceType, region: str, prefix: str
) -> dict[str, str]:
    name = instance_type.name
    family, _, size = name.partition(".")
    labels = _ec2_node_labels(instance_type, region) | {
        f"{prefix}instance-cpu": str(instance_type.vcpus),
        f"{prefix}instance-memory": str(instance_type.memory_mib),
        f"{prefix}instance-family": family,
        f"{prefix}instance-size": size,
        f"{prefix}instance-capability-flex": "true" if "-flex" in family else "false",
    }
    scheme = INSTANCE_TYPE_SCHEME.match(name)
    if scheme is not None:
        labels[f"{prefix}instance-category"] = scheme[1]
        labels[f"{prefix}instance-generation"] = scheme[3]
    if instance_type.instance_store_gb:
        labels[f"{prefix}instance-local-nvme"] = str(instance_type.instance_store_gb)
    if instance_type.gpu_name is not None:
        labels |= {
            f"{prefix}instance-gpu-name": kebab(instance_type.gpu_name),
            f"{prefix}instance-gpu-manufacturer": kebab(instance_type.gpu_manufacturer or ""),
            f"{prefix}instance-gpu-count": str(instance_type.gpu_count),
            f"{prefix}instance-gpu-memory": str(instance_type.gpu_memory_mib),
        }
    return labels


def _karpenter_allocatable(
    instance_type: InstanceType, node_class_spec: Mapping[str, Any]
) -> dict[str, Decimal]:
    millicores = instance_type.vcpus * 1000
    reserved_cpu = sum(
        int((min(millicores, end) - start) * share)
        for start, end, share in _KUBE_RESERVED_CPU
        if millicores >= start
    )
    storage = _karpenter_ephemeral_storage(instance_type, node_class_spec)
    interfaces = node_class_spec.get("networkInterfaces")
    efas = (
        instance_type.efa_interfaces
        if interfaces is None
        else sum(i.get("interfaceType") == "efa-only" for i in interfaces)
    )
    nvidia = instance_type.gpu_manufacturer == "NVIDIA"
    return {
        "cpu": Decimal(millicores - reserved_cpu) / 1000,
        # kube-reserved 1Gi, and the 10% hard eviction threshold (`evictionThreshold`).
        "ephemeral-storage": storage - 2**30 - math.ceil(storage / 10),
        GPU_RESOURCE: Decimal(instance_type.gpu_count if nvidia else 0),
        EFA_RESOURCE: Decimal(efas),
    }


def _karpenter_ephemeral_storage(
    instance_type: InstanceType, node_class_spec: Mapping[str, Any]
) -> Decimal:
    """Where the kubelet keeps pods' data (types.go `ephemeralStorage`): the instance's NVMe
    drives with `instanceStorePolicy: RAID0`, else the volume mapped as the root volume or at
    the AMI family's device, else Karpenter's default volume."""
    if node_class_spec.get("instanceStorePolicy") == "RAID0" and instance_type.instance_store_gb:
        return Decimal(instance_type.instance_store_gb) * 10**9
    mappings = node_class_spec.get("blockDeviceMappings") or []
    alias = (node_class_spec.get("amiSelectorTerms") or [{}])[0].get("alias") or ""
    family = (node_class_spec.get("amiFamily") or alias.partition("@")[0]).lower()
    root = _volume_size(next((m for m in mappings if m.get("rootVolume")), None))
    if root is not None:
        return quantity(root)
    if mappings and family == "custom":
        return quantity(_volume_size(mappings[-1]) or _DEFAULT_VOLUME)
    device = _EPHEMERAL_DEVICES.get(family)
    mapped = next((m for m in mappings if m.get("deviceName") == device), None)
    return quantity(_volume_size(mapped) or _DEFAULT_VOLUME)


def _volume_size(mapping: Mapping[str, Any] | None) -> str | None:
    return ((mapping or {}).get("ebs") or {}).get("volumeSize")


def gke_node_template(node_pool: Mapping[str, Any], name: str) -> NodeTemplate:
    """The template GKE's cluster autoscaler builds for a node pool at zero, from the pool's own
    configuration (a `gcp:container/nodePool:NodePool`'s inputs): its labels and taints, the
    labels GKE gives every node, and the `nvidia.com/gpu` that GKE's device plugin advertises.

    GKE's autoscaler is not open source; the count is what GKE's device plugin advertises for the
    accelerator's settings (container-engine-accelerators `pkg/gpu/nvidia/manager.go`): one per
    GPU, one per MIG partition with `gpuPartitionSize`, times `maxSharedClientsPerGpu` with
    `gpuSharingConfig`, which GKE's GPU-sharing page says its autoscaler scales pools by. The
    operator's own replicas and MIG slices are invisible to it, which is why the platform lets
    GKE share GPUs. A time-shared GPU, and an MPS-shared one on a node of several, is handed out
    one to a container (container-engine-accelerators pkg/gpu/nvidia/gpusharing/gpusharing.go).

    The labels are those the open-source GCE provider gives a template
    (`BuildNodeFromTemplate` in cloudprovider/gce/templates.go, cluster-autoscaler-1.35.2): the
    node labels of the pool's kube-env (`extractLabelsFromKubeEnv`), which on GKE carry
    `cloud.google.com/gke-nodepool` (the pool's name, which Pulumi makes of the resource's name
    and 7 random hex digits; templates_test.go's GKE kube-env fixtures), then
    `BuildGenericLabels`: architecture, OS, machine type, region, and the zone of the managed
    instance group, one per zone of the pool (`nodeLocations`), as `topology.kubernetes.io/zone`
    and Persistent Disk's `topology.gke.io/zone` (`gceCSITopologyKeyZone`). CPU, memory and
    pods are the machine type's less GKE's reservations (GKE's "Standard cluster architecture",
    node allocatable: CPU as on EKS, memory 25% of the first 4 GiB, 20% of the next 4, 10% of
    the next 8, 6% of the next 112 and 2% of the rest, and the 100 MiB eviction threshold; 110
    pods) where the platform knows the machine type's size (`machine_size`: N1, G2, A2 and A3);
    elsewhere they are not judged.

    The deprecated labels `UpdateDeprecatedLabels` copies are assumed of GKE's autoscaler too,
    which shares the open-source core's `SanitizedTemplateNodeInfoFromNodeGroup`.

    A queued-provisioning pool's nodes carry the `cloud.google.com/gke-queued` taint, which GKE
    adds to the pool itself, and flex-start nodes the `cloud.google.com/gke-flex-start: "true"`
    label that GKE's flex-start guides select them by (the provisioningrequest page and "Run a
    small batch workload with GPUs and Flex-start VMs").
    """
    config = node_pool["nodeConfig"]
    (accelerator,) = config["guestAccelerators"]
    location = node_pool["location"]
    zones = tuple(node_pool.get("nodeLocations") or ())
    labels = {
        **(
            {z: location for z in _gke_zone_labels()} if zone_region(location) and not zones else {}
        ),
        "kubernetes.io/os": "linux",
        # Every machine type that takes NVIDIA GPUs on GKE the platform knows is x86.
        "kubernetes.io/arch": "amd64",
        INSTANCE_TYPE_LABEL: config["machineType"],
        "topology.kubernetes.io/region": zone_region(location) or location,
        "cloud.google.com/gke-accelerator": accelerator["type"],
        **({"cloud.google.com/gke-spot": "true"} if config.get("spot") else {}),
        **({GKE_FLEX_START_LABEL: "true"} if config.get("flexStart") else {}),
        **_gke_gpu_sharing_labels(accelerator),
        **(config.get("labels") or {}),
    }
    taints = tuple(
        Taint(t["key"], t.get("value", ""), KUBERNETES_EFFECTS[t["effect"]])
        for t in config.get("taints") or []
    )
    if (node_pool.get("queuedProvisioning") or {}).get("enabled"):
        taints += (GKE_QUEUED_TAINT,)
    resources = {
        GPU_RESOURCE: Decimal(_gke_gpus_advertised(accelerator)),
        **_gke_allocatable(config["machineType"]),
    }
    return NodeTemplate(
        labels.get(POOL_LABEL, "?"),
        with_deprecated_labels(labels),
        taints,
        resources,
        complete="cpu" in resources,
        choices={z: zones for z in _gke_zone_labels()} if zones else {},
        patterns={"cloud.google.com/gke-nodepool": f"{re.escape(name)}-[0-9a-f]{{7}}"},
        per_container=_gke_sharing_limits(accelerator),
    )


# The zone labels of a GCE template (`BuildGenericLabels`, cloudprovider/gce/templates.go).
_GKE_ZONE_LABELS = (ZONE_LABEL, "topology.gke.io/zone")


def _gke_zone_labels() -> tuple[str, ...]:
    """The zone labels of a GKE template: the GCE provider's, and the deprecated one
    `UpdateDeprecatedLabels` copies from the first (assumed of GKE's autoscaler too)."""
    return (*_GKE_ZONE_LABELS, DEPRECATED_LABELS[ZONE_LABEL])


# GKE's memory reservation: (GiB of the machine's memory up to which, share reserved).
_GKE_MEMORY_RESERVED = ((4, Decimal("0.25")), (8, Decimal("0.2")), (16, Decimal("0.1")))
_GKE_MEMORY_RESERVED_ABOVE = ((128, Decimal("0.06")), (None, Decimal("0.02")))


def _gke_allocatable(machine_type: str) -> dict[str, Decimal]:
    size = machine_size(machine_type)
    if size is None:
        return {}
    vcpus, memory_mib = size
    gib = Decimal(memory_mib) / 1024
    reserved_gib, start = Decimal(0), Decimal(0)
    for end, share in (*_GKE_MEMORY_RESERVED, *_GKE_MEMORY_RESERVED_ABOVE):
        top = gib if end is None else min(gib, Decimal(end))
        if top > start:
            reserved_gib += (top - start) * share
        start = top if end is None else Decimal(end)
    millicores = vcpus * 1000
    return {
        "cpu": Decimal(millicores - kube_reserved_cpu_millicores(millicores)) / 1000,
        "memory": Decimal(int((gib - reserved_gib) * 1024) - 100) * 2**20,
        "pods": Decimal(110),
    }


def _gke_sharing_limits(accelerator: Mapping[str, Any]) -> dict[str, int]:
    """GKE's device plugin refuses more than one time-shared GPU to a container, and more than
    one MPS-shared GPU on a node of several GPUs (gpusharing.go, `ValidateRequest`)."""
    strategy = (accelerator.get("gpuSharingConfig") or {}).get("gpuSharingStrategy")
    several = int(accelerator["count"]) > 1
    if strategy == "TIME_SHARING" or (strategy == "MPS" and several):
        return {GPU_RESOURCE: 1}
    return {}


def _gke_gpus_advertised(accelerator: Mapping[str, Any]) -> int:
    devices = int(accelerator["count"])
    partition = accelerator.get("gpuPartitionSize")
    if partition:
        (model,) = (a for a in ACCELERATORS.values() if a.gke_type == accelerator["type"])
        devices *= mig_instances_per_gpu(model.name, partition)
    clients = (accelerator.get("gpuSharingConfig") or {}).get("maxSharedClientsPerGpu")
    return devices * int(clients or 1)


def _gke_gpu_sharing_labels(accelerator: Mapping[str, Any]) -> dict[str, str]:
    # The node labels GKE sets for its GPU sharing (GKE's "About GPU sharing strategies" page).
    labels = {}
    if accelerator.get("gpuPartitionSize"):
        labels["cloud.google.com/gke-gpu-partition-size"] = accelerator["gpuPartitionSize"]
    sharing = accelerator.get("gpuSharingConfig")
    if sharing:
        strategy = {"TIME_SHARING": "time-sharing", "MPS": "mps"}[sharing["gpuSharingStrategy"]]
        labels["cloud.google.com/gke-gpu-sharing-strategy"] = strategy
        clients = str(int(sharing["maxSharedClientsPerGpu"]))
        labels["cloud.google.com/gke-max-shared-clients-per-gpu"] = clients
    return labels


# --- The scheduler's rules -------------------------------------------------------------------


def _why_not(pod: PodSpec, template: NodeTemplate) -> Iterable[str]:
    """Each scheduler rule the pod fails on the template, named by the kube-scheduler plugin
    that applies it (or the device plugin, which refuses a pod at admission on the node)."""
    template = replace(template, labels={**template.labels, **_named_by_pod(pod, template)})
    pod = _without_labels(pod, template.unknown_labels)
    yield from (f"NodeAffinity: {problem}" for problem in _label_problems(pod, template))
    for key in sorted(_needed_labels(pod) & template.template_only):
        yield (
            f"NodeAffinity: needs the label {key}, which the autoscaler's template has and the"
            " nodes it starts do not: a node would start, and the pod never be scheduled there"
        )
    for taint in _untolerated(pod, template):
        spelt = f"{taint.key}={taint.value}:{taint.effect}"
        yield f"TaintToleration: taint {spelt} is not tolerated"
    taken = template_requests(template)
    for name, wanted in pod_requests(pod).items():
        available = template.resources.get(name)
        asks = f"NodeResourcesFit: asks for {format_quantity(name, wanted)} {name}"
        if available is None:
            unknown = not template.complete and (
                name in _BASE_RESOURCES or name.startswith("hugepages-")
            )
            if not unknown and wanted > 0:
                yield f"{asks}; its nodes advertise none"
        elif wanted + taken.get(name, Decimal(0)) > available:
            has = f"{asks}; a node has {format_quantity(name, available)}"
            if taken.get(name):
                has += f", {format_quantity(name, taken[name])} of it for the template's own pods"
            if name in template.capacity_only:
                note = template.capacity_notes.get(name, "its capacity")
                has += f" ({note}, before what the provisioner reserves and does not publish)"
            yield has
    # The scheduler's NodeResourcesFit counts pods against the node's `pods` too.
    most_pods = template.resources.get("pods")
    if most_pods is not None and len(template.pods) + 1 > most_pods:
        yield (
            f"NodeResourcesFit: a node runs at most {most_pods} pods, and"
            f" {len(template.pods)} are {_pod_names(template)}"
        )
    # The kubelet asks the device plugin for an init container's devices too (its device
    # manager allocates each container of the pod), so the limit holds for those as well.
    for name, most in template.per_container.items():
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            wanted = _container_requests(container).get(name, Decimal(0))
            if wanted > most:
                yield (
                    f"device plugin: container {container.get('name')} asks for {wanted} {name};"
                    f" the pool's device plugin hands shared GPUs out {most} a container: a node"
                    " would start, and the kubelet then refuse the pod (UnexpectedAdmissionError)"
                )


def _untolerated(pod: PodSpec, template: NodeTemplate) -> Iterable[Taint]:
    tolerations = pod.get("tolerations") or []
    for taint in template.taints:
        if taint.key.startswith(_SANITIZED_TAINT_PREFIXES):
            continue
        if taint.effect in _REPELLING_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            yield taint


# What a label known only by its form reads as when the pod names no value of that form.
_MADE_UP = "<made up when the node starts>"


def _named_by_pod(pod: PodSpec, template: NodeTemplate) -> dict[str, str]:
    """A value for each label the template knows only by its form (`patterns`): the first one
    the pod's node selector or node affinity names that has that form, else one it names
    nowhere."""
    named: dict[str, list[str]] = {}
    for key, value in (pod.get("nodeSelector") or {}).items():
        named.setdefault(key, []).append(value)
    for term in _required_terms(pod):
        for expression in term.get("matchExpressions") or []:
            named.setdefault(expression["key"], []).extend(expression.get("values") or [])
    return {
        key: next((v for v in named.get(key, []) if re.fullmatch(form, v)), _MADE_UP)
        for key, form in template.patterns.items()
    }


def unknown_labels_named(pod: PodSpec, template: NodeTemplate) -> list[str]:
    """The labels of `unknown_labels` the pod's node selector or required node affinity names."""
    named = set(pod.get("nodeSelector") or {}) | {
        e["key"] for term in _required_terms(pod) for e in term.get("matchExpressions") or []
    }
    return sorted(named & template.unknown_labels)


def _without_labels(pod: PodSpec, keys: frozenset[str]) -> PodSpec:
    """The pod with no node selector or required node affinity on `keys`: a term that named
    only them matches any node, and so does the whole affinity."""
    if not keys:
        return pod
    selector = {k: v for k, v in (pod.get("nodeSelector") or {}).items() if k not in keys}
    terms = [
        [e for e in term.get("matchExpressions") or [] if e["key"] not in keys]
        for term in _required_terms(pod)
    ]
    affinity = dict(pod.get("affinity") or {})
    if terms and all(terms):
        node_affinity = dict(affinity.get("nodeAffinity") or {})
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
        }
        affinity["nodeAffinity"] = node_affinity
    elif terms:
        affinity.pop("nodeAffinity", None)
    return {**pod, "nodeSelector": selector, "affinity": affinity}


def _needed_labels(pod: PodSpec) -> set[str]:
    """Labels a node must have for the pod: those of its node selector, and those every term of
    its required node affinity asks to exist or to have some value."""
    needed = set(pod.get("nodeSelector") or {})
    terms = [
        {
            e["key"]
            for e in term.get("matchExpressions") or []
            if e.get("operator") in ("In", "Exists", "Gt", "Lt")
        }
        for term in _required_terms(pod)
    ]
    return needed | set.intersection(*terms) if terms else needed


def _required_terms(pod: PodSpec) -> list[Mapping[str, Any]]:
    terms: list[Mapping[str, Any]] = (
        ((pod.get("affinity") or {}).get("nodeAffinity") or {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {})
        .get("nodeSelectorTerms")
    ) or []
    return terms


def _label_problems(pod: PodSpec, template: NodeTemplate) -> Iterable[str]:
    """Node selector and required node affinity against the labels a new node may have: one
    choice of value for each label with choices, the same for both."""
    for key, values in template.choices.items():
        if not values:
            yield f"the pool allows its nodes no {key}, so it starts none"
    selector = pod.get("nodeSelector") or {}
    for key, value in selector.items():
        if value not in _label_values(template, key):
            yield f"nodeSelector {key}={value}: its nodes have {_label(template, key)}"
    terms = _required_terms(pod)
    if terms:
        nodes = list(_label_sets(template))
        selected = [n for n in nodes if all(n.get(k) == v for k, v in selector.items())]
        if not any(_term_matches(term, n) for n in selected or nodes for term in terms):
            yield "required node affinity: no term matches its nodes' labels"


def _label_values(template: NodeTemplate, key: str) -> tuple[str | None, ...]:
    return template.choices.get(key, (template.labels.get(key),))


def _label_sets(template: NodeTemplate) -> Iterable[dict[str, str]]:
    """The labels of each node the template may become, one per combination of choices."""
    keys = list(template.choices)
    for values in itertools.product(*template.choices.values()):
        yield {**template.labels, **dict(zip(keys, values, strict=True))}


def _label(template: NodeTemplate, key: str) -> str:
    values = _label_values(template, key)
    if values == (None,):
        return "no such label"
    return f"{key}=[secret]" if template.secret_labels else f"{key}={' or '.join(map(str, values))}"


def _term_matches(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    expressions = term.get("matchExpressions") or []
    return bool(expressions) and all(_expression_matches(e, labels) for e in expressions)


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression["key"], expression["operator"]
    values = expression.get("values") or []
    value = labels.get(key)
    match operator:
        case "In":
            return value in values
        case "NotIn":
            return value not in values
        case "Exists":
            return value is not None
        case "DoesNotExist":
            return value is None
        # Gte and Lte: in a Karpenter NodePool's requirements only (its CRD).
        case "Gt" | "Lt" | "Gte" | "Lte":
            if value is None or not value.lstrip("-").isdigit():
                return False
            number, bound = int(value), int(values[0])
            return {
                "Gt": number > bound,
                "Lt": number < bound,
                "Gte": number >= bound,
                "Lte": number <= bound,
            }[operator]
    raise ValueError(f"unknown node selector operator {operator!r}")


def pod_requests(pod: PodSpec) -> dict[str, Decimal]:
    """What the scheduler reserves for the pod, as `PodRequests` computes it
    (k8s.io/component-helpers resource/helpers.go at v0.35.6, cluster-autoscaler-1.35.2's):

    - the containers' requests summed; a limit without a request counts as the request (the
      API server's defaulting);
    - init containers run one after the other, so the pod needs the largest of them at any
      time; a restartable one (`restartPolicy: Always`, a sidecar) keeps running, so its
      requests add to the steady sum and to every init container after it;
    - pod-level `resources.requests`, for CPU, memory and hugepages (`IsSupportedPodLevelResource`),
      replace what the containers add up to for the resources they name; without pod-level
      requests, pod-level limits stand for them (`defaultPodRequests`, pkg/apis/core/v1/
      defaults.go, where no container asks for the resource);
    - `overhead` (a RuntimeClass's, which admission copies into the pod) adds to all of it."""
    total: dict[str, Decimal] = {}
    for container in pod.get("containers") or []:
        _add(total, _container_requests(container))
    sidecars: dict[str, Decimal] = {}
    largest_init: dict[str, Decimal] = {}
    for container in pod.get("initContainers") or []:
        requests = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            running = dict(sidecars)
        else:
            running = dict(requests)
            _add(running, sidecars)
        for name, amount in running.items():
            largest_init[name] = max(largest_init.get(name, Decimal(0)), amount)
    for name, amount in largest_init.items():
        total[name] = max(total.get(name, Decimal(0)), amount)
    pod_level = pod.get("resources") or {}
    requested = {**(pod_level.get("limits") or {}), **(pod_level.get("requests") or {})}
    for name, amount in requested.items():
        if name in ("cpu", "memory") or name.startswith("hugepages-"):
            explicit = name in (pod_level.get("requests") or {})
            if explicit or name not in total:
                total[name] = quantity(amount)
    _add(total, {name: quantity(amount) for name, amount in (pod.get("overhead") or {}).items()})
    return total


def _add(total: dict[str, Decimal], more: Mapping[str, Decimal]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, Decimal(0)) + amount


def template_requests(template: NodeTemplate) -> dict[str, Decimal]:
    """What the template's own pods reserve of its allocatable, summed."""
    taken: dict[str, Decimal] = {}
    for pod in template.pods:
        _add(taken, pod_requests(pod.spec))
    return taken


def _pod_names(template: NodeTemplate) -> str:
    return ", ".join(pod.name for pod in template.pods)


def _container_requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: quantity(value) for name, value in merged.items()}


_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
_MULTIPLIERS: Mapping[str, Decimal] = {
    **{s: Decimal(2) ** (10 * (i + 1)) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{s: Decimal(10) ** (3 * (i + 1)) for i, s in enumerate(("k", "M", "G", "T", "P", "E"))},
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
}


_BYTES = ("memory", "ephemeral-storage")
_BINARY_SUFFIXES = (
    ("Ei", 2**60),
    ("Pi", 2**50),
    ("Ti", 2**40),
    ("Gi", 2**30),
    ("Mi", 2**20),
    ("Ki", 2**10),
)


def format_quantity(name: str, value: Decimal) -> str:
    """A quantity of resource `name` as Kubernetes writes it: CPU in cores or millicores, bytes
    in the largest binary unit that holds them whole (`178Gi`), anything else as a number."""
    if name == "cpu":
        if value == value.to_integral():
            return f"{value.to_integral()}"
        return f"{(value * 1000).to_integral()}m"
    if name in _BYTES or name.startswith("hugepages-"):
        for suffix, size in _BINARY_SUFFIXES:
            if value >= size and value % size == 0:
                return f"{value // size}{suffix}"
        return f"{value:f}"
    return f"{value.normalize():f}"


def quantity(value: str | int | float) -> Decimal:
    """A Kubernetes resource quantity (`500m`, `16Gi`, `4`) as a number."""
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    number, exponent, suffix = match.groups()
    return Decimal(number + (exponent or "")) * _MULTIPLIERS[suffix or ""]

"""Which of a stack's GPU pools a pod would land on, before anything is deployed.

`fit_pods` plans the stack offline (`gpu_platform.offline.plan.program_plan`), builds each pool's
node template as the cluster autoscaler would see it at zero (from what the plan declares: an EKS
node group's Auto Scaling group hints and instance type), or Karpenter would (a NodePool's, one
per instance type; an EKS Auto Mode NodePool's likewise, on Auto Mode's labels and the node's
capacity), and checks every pod spec in a YAML file (Pods, Deployments, Jobs, ...)
against them (`gpu_platform.fit`).
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from gpu_platform import yaml_documents
from gpu_platform.eks.instance_types import Gpus, InstanceType, instance_type
from gpu_platform.fit import (
    KUBERNETES_EFFECTS,
    EksNodeGroup,
    Fit,
    NodeTemplate,
    PodSpec,
    auto_mode_node_templates,
    capacity_bound,
    eks_node_template,
    fits,
    gke_node_template,
    karpenter_node_templates,
    pod_requests,
    unanswerable,
    unknown_labels_named,
    with_autoscaler_label,
    with_template_pods,
)
from gpu_platform.node_identity import DRA_TAINT, Taint
from gpu_platform.offline.plan import program_plan
from gpu_platform.offline.program import Plan, PlannedResource
from gpu_platform.pod_specs import pod_spec_of
from gpu_platform.project import Project
from gpu_platform.template_pods import (
    KUBE_PROXY,
    NODE_MONITORING_AGENT,
    TemplatePod,
    cos_driver_installer,
    efa_device_plugin,
    eks_addon_pods,
    nfd_worker,
    pinned_addon_release,
)
from gpu_platform.versions import EFA_DEVICE_PLUGIN_CHART, GPU_OPERATOR_CHART

_YAML_KINDS = {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}
_SUBNET = "aws:ec2/subnet:Subnet"
_CLUSTER = "aws:eks/cluster:Cluster"


@dataclass(frozen=True)
class PodFit:
    """One pod of the pod file against every pool's templates."""

    title: str
    """The object's kind and name, as the pod file has them."""
    fits: tuple[Fit, ...]
    """Per template, whether the pod fits it and, if not, why; none where it cannot say."""
    unanswered: str | None = None
    """Why the check cannot say where the pod fits (`gpu_platform.fit.unanswerable`)."""
    unsure: tuple[str, ...] = ()
    """For each pool it fits only by the node's capacity, why the check cannot say it fits once
    the provisioner's unpublished reservation is taken (`gpu_platform.fit.capacity_bound`), and
    where it names labels the check does not know."""
    by_capacity: tuple[str, ...] = ()
    """The pools it fits by the node's capacity alone, not under the reservation assumed."""

    @property
    def lands(self) -> bool:
        """Whether some pool takes the pod; a pod the check cannot judge is not counted out."""
        return self.unanswered is not None or any(f.fits for f in self.fits)


@dataclass(frozen=True)
class FitReport:
    """What `fit_pods` found: the pools' node templates, what the check assumes of the
    cluster, and each pod against the templates."""

    templates: tuple[NodeTemplate, ...]
    assumptions: tuple[str, ...]
    pods: tuple[PodFit, ...]

    @property
    def homeless(self) -> tuple[PodFit, ...]:
        """The pods no pool takes."""
        return tuple(p for p in self.pods if not p.lands)


def fit_pods(stack: str, pod_file: Path, project: Project | None = None) -> FitReport:
    """Which of `stack`'s GPU pools each pod in `pod_file` fits from zero nodes, and why not the
    others. Raises ValueError for a pod file it cannot read (naming the file, the document and
    what is wrong), and what `gpu_platform.offline.plan.program_plan` raises for the stack."""
    specs = pods_in(pod_file)
    plan = program_plan(stack, project)
    templates = node_templates(plan)
    return FitReport(
        tuple(templates),
        tuple(assumptions(plan)),
        tuple(_pod_fit(title, spec, templates) for title, spec in specs),
    )


def _pod_fit(title: str, spec: PodSpec, templates: Sequence[NodeTemplate]) -> PodFit:
    reason = unanswerable(spec)
    if reason is None:
        found = tuple(fits(spec, templates))
        by_capacity = _by_capacity(spec, found, templates)
        return PodFit(
            title,
            found,
            unsure=tuple(_unsure(spec, found, templates, by_capacity)),
            by_capacity=tuple(by_capacity),
        )
    if any(DRA_TAINT in template.taints for template in templates):
        return PodFit(title, (), reason)
    # No pool of the stack hands out GPUs through DRA: the pod's claims fit none of them.
    why = "it claims devices through DRA (spec.resourceClaims), and the pool's GPUs are counted"
    pools = dict.fromkeys(template.pool for template in templates)
    return PodFit(title, tuple(Fit(pool, (why,)) for pool in pools))


def _fitting(spec: PodSpec, fit: Fit, templates: Sequence[NodeTemplate]) -> list[NodeTemplate]:
    return [t for t in templates if t.pool == fit.pool and not any(fits(spec, [t])[0].reasons)]


def _by_capacity(
    spec: PodSpec, found: Sequence[Fit], templates: Sequence[NodeTemplate]
) -> dict[str, list[str]]:
    """The pools the pod fits by capacity alone, each with the resources it needs more of than
    every template it fits would offer under the reservation assumed."""
    bound = {}
    for fit in (f for f in found if f.fits):
        needs = [capacity_bound(spec, t) for t in _fitting(spec, fit, templates)]
        if all(needs):
            bound[fit.pool] = sorted(set().union(*needs))
    return bound


def _unsure(
    spec: PodSpec,
    found: Sequence[Fit],
    templates: Sequence[NodeTemplate],
    by_capacity: Mapping[str, list[str]],
) -> list[str]:
    """Why the check cannot say the pod fits a pool: it names labels the check does not know, or
    it fits by capacity alone (`_by_capacity`)."""
    unsure = []
    for fit in (f for f in found if f.fits):
        pool = _fitting(spec, fit, templates)
        unknown = [unknown_labels_named(spec, t) for t in pool]
        if all(unknown):
            unsure.append(
                f"{fit.pool}: cannot say its nodes match the pod's"
                f" {', '.join(sorted(set().union(*unknown)))}: fit's instance data does not hold"
                " those labels, so it does not judge them"
            )
        if fit.pool in by_capacity:
            storage = (
                "; of ephemeral storage, where the NodeClass's ephemeralStorage.size is at least"
                " the instance's NVMe, the smaller of the two (AWS leaves open which holds pods'"
                " data)"
                if "ephemeral-storage" in by_capacity[fit.pool]
                else ""
            )
            unsure.append(
                f"{fit.pool}: cannot say it fits once EKS Auto Mode has reserved its share of"
                f" the node's {', '.join(by_capacity[fit.pool])}: it fits the node's capacity,"
                " not what the node would offer under Karpenter v1.14.1's default kube-reserved"
                " and eviction thresholds (assumed: Auto Mode publishes no kube-reserved,"
                f" eviction threshold or max-pods{storage})"
            )
    return unsure


def pods_in(pod_file: Path) -> list[tuple[str, PodSpec]]:
    """Each object's title and pod spec; a ValueError naming the file, the document and what is
    wrong where one is not a workload the check can read."""
    try:
        text = pod_file.read_text()
    except UnicodeDecodeError:
        raise ValueError(f"{pod_file}: not UTF-8 text, as YAML must be") from None
    except OSError as error:
        raise ValueError(f"cannot read the pod file {pod_file}: {error.strerror}") from None
    try:
        documents = [d for d in yaml_documents.load_all(text) if d is not None]
    except yaml.YAMLError as error:
        raise ValueError(f"{pod_file}: not valid YAML: {yaml_problem(error)}") from None
    if not documents:
        raise ValueError(f"{pod_file}: no Kubernetes objects in it")
    specs = []
    for number, document in enumerate(documents, start=1):
        where = f"{pod_file}, document {number}"
        if not isinstance(document, Mapping):
            kind = _YAML_KINDS.get(type(document), type(document).__name__)
            raise ValueError(f"{where}: a YAML {kind}, not a Kubernetes object")
        title = _title(document)
        where += f" ({title})"
        try:
            spec = pod_spec_of(document)
            requests = pod_requests(spec)
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{where}: no pod spec where its kind has one ({error})") from None
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
        negative = sorted(name for name, amount in requests.items() if amount < 0)
        if negative:
            raise ValueError(f"{where}: negative requests for {', '.join(negative)}")
        specs.append((title, spec))
    return specs


def yaml_problem(error: yaml.YAMLError) -> str:
    """PyYAML's complaint, placed by line and column of the file (its own message names the
    text it parsed, not the file)."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"{error.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(error)


def node_templates(plan: Plan) -> list[NodeTemplate]:
    """Every GPU pool's node templates, from what the plan declares for it, in the order the
    program declares the pools."""
    looked_up = [i for i in plan.invokes if i.token == "aws:ec2/getInstanceType:getInstanceType"]
    instance_types = {
        i.args["instanceType"]: _instance_type(i.args["instanceType"], i.result) for i in looked_up
    }
    daemonsets = platform_daemonsets(plan)
    eks_daemonsets = [*eks_addon_daemonsets(plan)[0], *daemonsets]
    templates = []
    for pool in plan.resources:
        if pool.type == "gpu-platform:eks:GpuNodeGroup":
            templates += [
                with_autoscaler_label(with_template_pods(t, [KUBE_PROXY], eks_daemonsets))
                for t in _node_group_templates(plan, pool, instance_types)
            ]
        elif pool.type == "gpu-platform:eks:KarpenterGpuNodePool":
            templates += [
                with_template_pods(t, [], eks_daemonsets)
                for t in _node_pool_templates(plan, pool, instance_types, _region(looked_up))
            ]
        elif pool.type == _AUTO_MODE_POOL:
            # Auto Mode builds pod networking and EBS CSI storage into its nodes, not as the
            # EKS add-ons' DaemonSets (automode.adoc: "built-in support for Pod IP address
            # assignments, ... and EBS CSI storage"): only the stack's own are placed first.
            templates += [
                with_template_pods(t, [], daemonsets)
                for t in _node_pool_templates(plan, pool, instance_types, _region(looked_up))
            ]
    # GKE's autoscaler is Google's own: assumed to place kube-proxy as the open-source GCE
    # provider does (gce_cloud_provider.go `TemplateNodeInfo`), except on a cluster the platform
    # creates, which runs GKE Dataplane V2: its nodes run anetd and no kube-proxy (GKE's "GKE
    # Dataplane V2" page: "implemented without kube-proxy").
    gke_provider_pods = [] if _gke_dataplane_v2(plan) else [KUBE_PROXY]
    templates += [
        with_autoscaler_label(
            with_template_pods(
                replace(
                    gke_node_template(pool.inputs, pool.name),
                    secret_labels="nodeConfig" in pool.secret_inputs,
                ),
                gke_provider_pods,
                daemonsets,
            )
        )
        for pool in _gke_gpu_node_pools(plan)
    ]
    return templates


def _region(looked_up: Sequence[Any]) -> str:
    # One cluster, so one region: every lookup's.
    (region,) = {i.args["region"] for i in looked_up}
    return str(region)


_AUTO_MODE_POOL = "gpu-platform:eks:AutoModeGpuNodePool"
# The EKS add-ons every EKS cluster the platform creates runs on each node, and an existing
# cluster is assumed to (`eks_addon_daemonsets`); coredns runs as a Deployment.
_ASSUMED_EKS_ADDONS = ("vpc-cni", "kube-proxy", "aws-ebs-csi-driver", "eks-pod-identity-agent")
_GKE_CLUSTER = "gcp:container/cluster:Cluster"


def _gke_gpu_node_pools(plan: Plan) -> list[PlannedResource]:
    """The GKE node pools with GPUs: not the system node pool of a cluster the platform
    creates."""
    return [
        pool
        for pool in plan.of_type("gcp:container/nodePool:NodePool")
        if pool.inputs["nodeConfig"].get("guestAccelerators")
    ]


def _gke_dataplane_v2(plan: Plan) -> bool:
    return any(
        c.inputs.get("datapathProvider") == "ADVANCED_DATAPATH" for c in plan.of_type(_GKE_CLUSTER)
    )


def eks_addon_daemonsets(plan: Plan) -> tuple[list[TemplatePod], list[str]]:
    """The pods of the EKS add-ons' DaemonSets (`gpu_platform.template_pods`), and what was
    assumed or left out. A cluster the platform creates runs the add-ons the plan declares, at
    their versions; an existing cluster is assumed to run the core add-ons at the platform's
    pins, as EKS clusters commonly do: counting an add-on a cluster lacks makes `fit` say no to a
    pod the autoscaler would start a node for, a warning; leaving out one it runs makes `fit` say
    yes to a pod that then stays Pending. Either runs the node monitoring agent where the plan
    declares it."""
    if not any(
        r.type.startswith("gpu-platform:eks:") and r.type != _AUTO_MODE_POOL for r in plan.resources
    ):
        return [], []
    declared = {
        str(r.inputs["addonName"]): r for r in plan.resources if r.type == "aws:eks/addon:Addon"
    }
    notes = []
    if any(addon in declared for addon in _ASSUMED_EKS_ADDONS):
        versions = {a: str(r.inputs.get("addonVersion")) for a, r in declared.items()}
    else:
        versions = {
            addon: ""
            if addon in ("kube-proxy", "eks-pod-identity-agent")
            else pinned_addon_release(addon)
            for addon in _ASSUMED_EKS_ADDONS
        }
        if NODE_MONITORING_AGENT in declared:
            versions[NODE_MONITORING_AGENT] = str(
                declared[NODE_MONITORING_AGENT].inputs.get("addonVersion")
            )
        notes.append(
            "EKS add-ons: the cluster is not the platform's, so fit assumes it runs "
            + ", ".join(_ASSUMED_EKS_ADDONS)
            + " at the platform's pinned versions and counts their DaemonSets' pods"
        )
    pods = []
    for addon, version in versions.items():
        resource = declared.get(addon)
        configuration = (
            json.loads(str(resource.inputs.get("configurationValues") or "{}")) if resource else {}
        )
        found = eks_addon_pods(addon, version, configuration)
        if found is None:
            notes.append(
                f"not counted: the EKS add-on {addon} {version}, whose pods fit does not know"
            )
        else:
            pods += found
    return pods, notes


def assumptions(plan: Plan) -> list[str]:
    """What `fit` assumed of the cluster, and what it could not count."""
    notes = eks_addon_daemonsets(plan)[1]
    if _gke_gpu_node_pools(plan):
        if _gke_dataplane_v2(plan):
            notes.append(
                "GKE: the platform's cluster runs GKE Dataplane V2, so no kube-proxy is counted"
            )
        else:
            notes.append(
                "GKE: the cluster is not the platform's and its datapath unknown: fit counts"
                " kube-proxy's 100m CPU, which a cluster with GKE Dataplane V2 does not run"
            )
        notes.append(
            "not counted: GKE's own system DaemonSets (such as fluentbit-gke,"
            " gke-metadata-server, pdcsi-node, anetd or netd, GKE's GPU device plugin), whose"
            " requests GKE does not publish: a pod at a GKE node's edge may be told yes"
        )
    notes.append("not counted: DaemonSets installed outside this stack")
    return notes


def platform_daemonsets(plan: Plan) -> list[TemplatePod]:
    """A pod of each DaemonSet the plan installs that requests anything: the GPU Operator
    release's node-feature-discovery worker (the operator's own DaemonSets request nothing, and
    select `nvidia.com/gpu.deploy.*` labels the operator sets on a running node), the EFA device
    plugin, Google's COS driver installer and the DaemonSets the program declares itself. A
    chart's requests come from its pinned values (`gpu_platform.template_pods`), where it runs
    from the release's values."""
    pods = []
    for resource in plan.resources:
        inputs = resource.inputs
        values: Mapping[str, Any] = inputs.get("values") or {}
        chart = inputs.get("chart")
        if chart == GPU_OPERATOR_CHART.name and (values.get("nfd") or {}).get("enabled", True):
            pods.append(nfd_worker((values.get("node-feature-discovery") or {}).get("worker", {})))
        elif chart == EFA_DEVICE_PLUGIN_CHART.name:
            pods.append(efa_device_plugin(values))
        elif resource.type == "gpu-platform:gke:CosDriverInstaller":
            pods.append(cos_driver_installer())
        elif resource.type == "kubernetes:apps/v1:DaemonSet":
            spec = inputs["spec"]["template"]["spec"]
            pods.append(TemplatePod(inputs["metadata"]["name"], spec))
    return pods


def _node_group_templates(
    plan: Plan, group: PlannedResource, instance_types: Mapping[str, InstanceType]
) -> list[NodeTemplate]:
    """One template per node group of the pool (one, or one per zone), as the autoscaler builds
    it from the group's hints, its first zone and DescribeNodegroup's answer."""
    # A cluster the stack creates is not looked up: its subnets and version are the plan's own.
    zones = {
        i.args["id"]: i.result["availabilityZone"]
        for i in plan.invokes
        if i.token == "aws:ec2/getSubnet:getSubnet"
    } | {r.id: r.inputs["availabilityZone"] for r in plan.resources if r.type == _SUBNET and r.id}
    (version,) = {
        i.result["version"] for i in plan.invokes if i.token == "aws:eks/getCluster:getCluster"
    } | {r.inputs["version"] for r in plan.resources if r.type == _CLUSTER}
    children = plan.children_of(group)
    tags_by_group: dict[str, dict[str, str]] = {}
    for tag in (c for c in children if c.type == "aws:autoscaling/tag:Tag"):
        group_name = str(tag.inputs["autoscalingGroupName"])
        tags_by_group.setdefault(group_name, {})[tag.inputs["tag"]["key"]] = tag.inputs["tag"][
            "value"
        ]
    node_groups = [c for c in children if c.type == "aws:eks/nodeGroup:NodeGroup"]
    templates = []
    for node_group, tags in zip(node_groups, tags_by_group.values(), strict=True):
        inputs = node_group.inputs
        first_zone = sorted(zones[subnet] for subnet in inputs["subnetIds"])[0]
        described = EksNodeGroup(
            pool=group.name,
            cluster=inputs["clusterName"],
            zone=first_zone,
            capacity_type=inputs["capacityType"],
            ami_type=inputs["amiType"],
            kubernetes_version=version,
            name_prefix=inputs.get("nodeGroupNamePrefix"),
            labels=inputs.get("labels") or {},
            taints=tuple(
                Taint(t["key"], t["value"], KUBERNETES_EFFECTS[t["effect"]])
                for t in inputs.get("taints") or []
                if t.get("value")
            ),
        )
        template = eks_node_template(tags, instance_types[inputs["instanceTypes"][0]], described)
        templates.append(replace(template, secret_labels="labels" in node_group.secret_inputs))
    return templates


def _node_pool_templates(
    plan: Plan,
    pool: PlannedResource,
    instance_types: Mapping[str, InstanceType],
    region: str,
) -> list[NodeTemplate]:
    children = {c.type: c for c in plan.children_of(pool)}
    node_pool = children["kubernetes:karpenter.sh/v1:NodePool"]
    if pool.type == _AUTO_MODE_POOL:
        node_class = children["kubernetes:eks.amazonaws.com/v1:NodeClass"]
        templates = auto_mode_node_templates(
            node_pool.inputs, node_class.inputs, instance_types, region
        )
    else:
        node_class = children["kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"]
        templates = karpenter_node_templates(
            node_pool.inputs, node_class.inputs, instance_types, region
        )
    # With secret labels Pulumi holds the NodePool's whole `spec` secret.
    return [replace(t, secret_labels="spec" in node_pool.secret_inputs) for t in templates]


def _instance_type(name: str, described: Mapping[str, Any]) -> InstanceType:
    """An instance type from the plan's record of `aws:ec2/getInstanceType`."""
    return instance_type(
        name,
        int(described["defaultVcpus"]),
        int(described["memorySize"]),
        described.get("supportedArchitectures") or [],
        [
            Gpus(g["manufacturer"], g["name"], int(g["count"]), int(g["memorySize"]))
            for g in described.get("gpuses") or []
        ],
        # As `look_up_instance_type` reads them.
        sum(
            int(d["count"]) * int(d["size"])
            for d in described.get("instanceDisks") or []
            if d["type"] == "ssd"
        ),
        int(described.get("efaMaximumInterfaces") or 0) if described.get("efaSupported") else 0,
    )


def _title(document: Mapping[str, Any]) -> str:
    metadata = document.get("metadata") or {}
    return f"{document.get('kind')} {metadata.get('name', '(unnamed)')}"

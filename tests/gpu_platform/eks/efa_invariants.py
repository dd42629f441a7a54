"""What any plan must hold of EFA, whatever its cloud, provisioner and pools: `efa_problems`.

1. Every EFA node gets its own instance type's EFA count. A node launches with exactly the
   interfaces its launch template (managed node groups) or EC2NodeClass (Karpenter) lists:
   Karpenter v1.14.1 copies the node class's `networkInterfaces` into every launch
   (aws/karpenter-provider-aws pkg/providers/launchtemplate/launchtemplate.go
   `generateNetworkInterfaces`) and advertises their `efa-only` count as the node's
   `vpc.amazonaws.com/efa`, whatever the instance type could take
   (pkg/providers/instancetype/types.go `efas`); an EKS node group launches from its launch
   template as it is. So every instance type a pool admits must take exactly as many EFAs as
   are listed: EC2's `NetworkInfo.EfaInfo.MaximumEfaInterfaces`, from EC2's own instance data as
   the offline plan's stand-ins hold it (gpu_platform/offline/stand_ins/ec2_data, from moto). The
   cluster autoscaler's scale-from-zero template must offer the same count.
2. Every `gpuModels` placement of EFA pools stays in one zone: EFA traffic does not cross
   Availability Zones (EC2 user guide, "Elastic Fabric Adapter", limitations: "EFA traffic
   can't cross Availability Zones or VPCs"), so a placement whose pools are in two zones lets
   one job's pods land in both.

A plan without EFA pools (every GKE plan) has nothing to break: `[]`.
"""

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gpu_platform.eks.instance_types import instance_category, instance_family, kebab
from gpu_platform.offline.program import Plan, PlannedResource
from gpu_platform.offline.stand_ins.aws import ec2_instance_types, ec2_zone_offerings

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ASG_TAG = "aws:autoscaling/tag:Tag"
EC2_NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
EFA_HINT = "k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa"
ZONE = "topology.kubernetes.io/zone"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
# aws/karpenter-provider-aws pkg/apis/v1/labels.go at v1.14.1.
FAMILY = "karpenter.k8s.aws/instance-family"
CATEGORY = "karpenter.k8s.aws/instance-category"
GPU_NAME = "karpenter.k8s.aws/instance-gpu-name"


def efa_problems(plan: Plan, config: Mapping[str, Any]) -> list[str]:
    """What breaks either invariant in `plan`, planned from the stack `config` (`gpu-platform:`
    keys, as `run_program` takes them); empty when nothing does."""
    pools = {pool["name"]: pool for pool in _value(config, "gpu-platform:pools", [])}
    region = _value(config, "gpu-platform:cluster", {}).get("region")
    return [
        *_node_group_problems(plan, pools),
        *_node_class_problems(plan, pools, region),
        *_placement_problems(plan, pools),
    ]


def _value(config: Mapping[str, Any], key: str, default: Any) -> Any:
    value = config.get(key, default)
    return json.loads(value) if isinstance(value, str) else value


def _is_efa(pool: Mapping[str, Any] | None) -> bool:
    return bool(pool and (pool.get("aws") or {}).get("efa"))


def efa_count(instance_type: str) -> int:
    """EC2's `MaximumEfaInterfaces` for the instance type; 0 without EFA."""
    described = ec2_instance_types().get(instance_type) or {}
    efa = (described.get("NetworkInfo") or {}).get("EfaInfo") or {}
    return int(efa.get("MaximumEfaInterfaces", 0))


def _mismatches(owner: str, listed: int, instance_types: Sequence[str]) -> Iterator[str]:
    for name in instance_types:
        if efa_count(name) != listed:
            yield (
                f"{owner}: a {name} node gets {listed} EFA interface(s), but {name} takes"
                f" {efa_count(name)}"
            )


def _node_group_problems(plan: Plan, pools: Mapping[str, Any]) -> Iterator[str]:
    for group in plan.of_type(NODE_GROUP):
        component = next(r for r in plan.resources if r.urn == group.parent)
        siblings = plan.children_of(component)
        template = next((r for r in siblings if r.type == LAUNCH_TEMPLATE), None)
        interfaces = (template.inputs.get("networkInterfaces") if template else None) or []
        listed = sum(i.get("interfaceType") in ("efa", "efa-only") for i in interfaces)
        if not listed and not _is_efa(pools.get(component.name)):
            continue
        owner = f"node group {group.name}"
        yield from _mismatches(owner, listed, group.inputs["instanceTypes"])
        hints = {
            r.inputs["tag"]["value"]
            for r in siblings
            if r.type == ASG_TAG and r.inputs["tag"]["key"] == EFA_HINT
        }
        if hints != {str(listed)}:
            yield f"{owner}: the autoscaler's template offers {sorted(hints)} EFAs, not {listed}"


def _node_class_problems(plan: Plan, pools: Mapping[str, Any], region: str | None) -> Iterator[str]:
    node_pools = plan.of_type(NODE_POOL)
    for node_class in plan.of_type(EC2_NODE_CLASS):
        name = node_class.inputs["metadata"]["name"]
        interfaces = node_class.inputs["spec"].get("networkInterfaces") or []
        listed = sum(i.get("interfaceType") == "efa-only" for i in interfaces)
        if not listed and not _is_efa(pools.get(name)):
            continue
        for node_pool in node_pools:
            template = node_pool.inputs["spec"]["template"]["spec"]
            if template["nodeClassRef"]["name"] == name:
                owner = f"NodePool {node_pool.inputs['metadata']['name']}"
                sizes = admitted_sizes(node_pool, region)
                if not sizes:
                    # Nothing to compare would pass any count: the NodePool admits no instance
                    # type EC2 describes (in its zones), so it never starts a node.
                    yield f"{owner}: admits no instance type EC2 offers in its zones"
                yield from _mismatches(owner, listed, sizes)


def admitted_sizes(node_pool: PlannedResource, region: str | None) -> list[str]:
    """The instance types a NodePool admits by its requirements, of EC2's instance data, and
    offered in one of its zones where it names them and the region is known."""
    requirements = {
        r["key"]: set(r["values"])
        for r in node_pool.inputs["spec"]["template"]["spec"]["requirements"]
        if r["operator"] == "In"
    }
    described = ec2_instance_types()
    if INSTANCE_TYPE in requirements:
        return sorted(requirements[INSTANCE_TYPE])
    zones = requirements.get(ZONE)
    offered = (
        {name for name, zone in ec2_zone_offerings(region) if zone in zones}
        if zones and region
        else set(described)
    )
    return sorted(
        name
        for name, entry in described.items()
        if name in offered
        and instance_family(name) in requirements.get(FAMILY, {instance_family(name)})
        and instance_category(name) in requirements.get(CATEGORY, {instance_category(name)})
        and _gpu_name(entry) in requirements.get(GPU_NAME, {_gpu_name(entry)})
    )


def _gpu_name(entry: Mapping[str, Any]) -> str | None:
    gpus = (entry.get("GpuInfo") or {}).get("Gpus") or []
    return kebab(gpus[0]["Name"]) if gpus else None


def _placement_problems(plan: Plan, pools: Mapping[str, Any]) -> Iterator[str]:
    for model, placement in (plan.outputs.get("gpuModels") or {}).items():
        members = [pools.get(name) or {} for name in placement["pools"]]
        efa = [pool for pool in members if _is_efa(pool)]
        if not efa:
            continue
        if len(efa) != len(members):
            yield f"gpuModels {model}: mixes EFA pools with others"
        zones = {zone for pool in efa for zone in pool.get("zones", [])}
        if len(zones) != 1:
            yield f"gpuModels {model}: EFA pools in {len(zones)} zones ({', '.join(sorted(zones))})"
        for pinned in _pinned_zones(placement["workload"]["affinity"]):
            if pinned != zones:
                yield f"gpuModels {model}: pins zones {sorted(pinned)}, its pools are in {zones}"


def _pinned_zones(affinity: Mapping[str, Any]) -> Iterator[set[str]]:
    required = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    for term in required["nodeSelectorTerms"]:
        for expression in term.get("matchExpressions", []):
            if expression["key"] == ZONE and expression["operator"] == "In":
                yield set(expression["values"])

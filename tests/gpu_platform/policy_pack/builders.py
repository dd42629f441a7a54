"""Builders for the resources policy tests hand the pack, shaped as the recording mock runner
records them (`gpu_platform.offline.program.PlannedResource`: engine, camelCase input names)."""

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from gpu_platform.offline.analyzer import Verdict
from gpu_platform.offline.program import PlannedResource

Analyze = Callable[..., list[Verdict]]
Notes = Callable[[], list[str]]
"""The `new_notes` fixture: the notes the pack logged since the test began."""

STACK_URN_PREFIX = "urn:pulumi:dev::gpu-platform::"
NAMESPACE = "kubernetes:core/v1:Namespace"
KIND_TYPES = {
    "Pod": "kubernetes:core/v1:Pod",
    "PodTemplate": "kubernetes:core/v1:PodTemplate",
    "ReplicationController": "kubernetes:core/v1:ReplicationController",
    "Deployment": "kubernetes:apps/v1:Deployment",
    "ReplicaSet": "kubernetes:apps/v1:ReplicaSet",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "DaemonSet": "kubernetes:apps/v1:DaemonSet",
    "Job": "kubernetes:batch/v1:Job",
    "CronJob": "kubernetes:batch/v1:CronJob",
}
# Where each kind keeps its pod spec, as messages name it.
SPEC_PATHS = {
    "Pod": "spec",
    "PodTemplate": "template.spec",
    "CronJob": "spec.jobTemplate.spec.template.spec",
    **{
        kind: "spec.template.spec"
        for kind in (
            "ReplicationController",
            "Deployment",
            "ReplicaSet",
            "StatefulSet",
            "DaemonSet",
            "Job",
        )
    },
}


# What the engine sends for an output not known yet, whatever its type.
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


FieldPath = tuple[str | int, ...]


def fields(value: Any, path: FieldPath) -> Iterator[FieldPath]:
    """Every field under `path`: the mappings and lists, and the values in them."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from fields(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from fields(item, (*path, index))


def with_unknown(value: dict[str, Any], path: FieldPath) -> dict[str, Any]:
    """A copy of `value` with the unknown value at `path`."""
    variant = copy.deepcopy(value)
    *parents, last = path
    holder: Any = variant
    for step in parents:
        holder = holder[step]
    holder[last] = UNKNOWN
    return variant


def messages(verdicts: Sequence[Verdict], policy: str) -> list[str]:
    return [v.message for v in verdicts if v.policy_name == policy]


def violations(verdicts: Sequence[Verdict]) -> list[Verdict]:
    return [v for v in verdicts if v.enforcement_level in ("advisory", "mandatory")]


def resource(
    type_: str,
    name: str,
    inputs: Mapping[str, Any],
    *,
    provider: str | None = None,
    parent: str | None = None,
    parents: Sequence[str] = (),
    dependencies: Sequence[str] = (),
    property_dependencies: Mapping[str, Sequence[str]] | None = None,
) -> PlannedResource:
    return PlannedResource(
        urn=urn(type_, name, parents),
        type=type_,
        name=name,
        inputs=copy.deepcopy(dict(inputs)),
        parent=parent,
        custom=True,
        provider=provider,
        dependencies=tuple(dependencies),
        property_dependencies={k: tuple(v) for k, v in (property_dependencies or {}).items()},
        protect=False,
        ignore_changes=(),
    )


def urn(type_: str, name: str, parents: Sequence[str] = ()) -> str:
    """The resource's URN, its parents' types (outermost first) before its own, joined by `$`,
    as the Pulumi engine writes it (pulumi sdk/go/common/resource/urn.go, NewURN: the parent's
    qualified type, then `$`, then its own)."""
    return f"{STACK_URN_PREFIX}{'$'.join([*parents, type_])}::{name}"


PLATFORM = "gpu-platform:index:GpuPlatform"
OPERATOR_PARENTS = (PLATFORM, "gpu-platform:kubernetes:GpuOperator")
"""The parents of the GPU Operator's release: the platform's component, then the operator's."""


def pod_security_labels(level: str = "restricted", version: str = "v1.35") -> dict[str, str]:
    labels = {}
    for mode in ("enforce", "audit", "warn"):
        labels[f"pod-security.kubernetes.io/{mode}"] = level
        labels[f"pod-security.kubernetes.io/{mode}-version"] = version
    return labels


def namespace(
    name: str = "team-a", level: str = "restricted", version: str = "v1.35"
) -> PlannedResource:
    return resource(
        NAMESPACE,
        name,
        {"metadata": {"name": name, "labels": pod_security_labels(level, version)}},
    )


def restricted_pod_spec() -> dict[str, Any]:
    """A pod spec that meets `restricted`, with one container named `app`."""
    return {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "app",
                "image": "registry.example.com/app:1.4.2",
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
    }


def gpu_pod_spec(gpus: str = "1") -> dict[str, Any]:
    """A restricted pod spec for a GPU workload done right."""
    spec = restricted_pod_spec()
    spec["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    spec["nodeSelector"] = {"gpu-platform.io/accelerator": "l4"}
    return spec


def select_pools(spec: dict[str, Any], *pools: str, by_affinity: bool = False) -> None:
    """Have the pod spec select pools by their `gpu-platform.io/pool` label: one by node
    selector, or (several, or `by_affinity`) by a required node affinity term."""
    spec.pop("nodeSelector", None)
    if len(pools) == 1 and not by_affinity:
        spec["nodeSelector"] = {"gpu-platform.io/pool": pools[0]}
        return
    expression = {"key": "gpu-platform.io/pool", "operator": "In", "values": list(pools)}
    spec["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expression]}]
            }
        }
    }


def workload(
    kind: str,
    spec: Mapping[str, Any],
    *,
    name: str = "app",
    namespace: str | None = "team-a",
    pod_metadata: Mapping[str, Any] | None = None,
    provider: str | None = None,
    property_dependencies: Mapping[str, Sequence[str]] | None = None,
) -> PlannedResource:
    """A resource of `kind` whose pod has `spec`."""
    template = {"metadata": dict(pod_metadata or {}), "spec": copy.deepcopy(dict(spec))}
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    if kind == "Pod":
        inputs: dict[str, Any] = {**template, "metadata": {**template["metadata"], **metadata}}
    elif kind == "PodTemplate":
        inputs = {"metadata": metadata, "template": template}
    elif kind == "CronJob":
        job = {"spec": {"template": template}}
        inputs = {"metadata": metadata, "spec": {"schedule": "0 * * * *", "jobTemplate": job}}
    else:
        inputs = {"metadata": metadata, "spec": {"template": template}}
    return resource(
        KIND_TYPES[kind],
        name,
        inputs,
        provider=provider,
        property_dependencies=property_dependencies,
    )


NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_POOL = "gcp:container/nodePool:NodePool"


def launch_template(name: str = "l4-launch-template") -> PlannedResource:
    """A GPU node group's launch template: IMDSv2 only, encrypted gp3 root volume."""
    return resource(
        LAUNCH_TEMPLATE,
        name,
        {
            "metadataOptions": {
                "httpEndpoint": "enabled",
                "httpTokens": "required",
                "httpPutResponseHopLimit": 1,
            },
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "ebs": {
                        "volumeType": "gp3",
                        "volumeSize": 200,
                        "encrypted": "true",
                        "deleteOnTermination": "true",
                    },
                }
            ],
        },
    )


def eks_node_group(
    template: PlannedResource | None = None, name: str = "l4-nodes"
) -> PlannedResource:
    """A GPU node group as the platform declares one, using `template` (linked as the engine
    links it: the node group's `launchTemplate` is computed from the template's outputs).
    Tests change its `inputs` in place."""
    inputs: dict[str, Any] = {
        "clusterName": "ml-dev",
        "nodeGroupNamePrefix": "l4-",
        "nodeRoleArn": "arn:aws:iam::123456789012:role/l4-nodes",
        "subnetIds": ["subnet-0a", "subnet-0b"],
        "amiType": "AL2023_x86_64_NVIDIA",
        "instanceTypes": ["g6.xlarge"],
        "capacityType": "SPOT",
        "scalingConfig": {"minSize": 0, "desiredSize": 0, "maxSize": 8},
        "labels": {
            "gpu-platform.io/pool": "l4",
            "gpu-platform.io/accelerator": "l4",
            "nvidia.com/gpu.present": "true",
        },
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
        "launchTemplate": {"id": "lt-0123456789abcdef0", "version": "1"},
    }
    links = {"launchTemplate": [template.urn]} if template is not None else {}
    return resource(NODE_GROUP, name, inputs, property_dependencies=links)


def gke_node_pool(name: str = "l4-shared") -> PlannedResource:
    """A GKE GPU node pool as the platform declares one, on COS. Tests change its `inputs` in
    place."""
    config: dict[str, Any] = {
        "machineType": "g2-standard-8",
        "imageType": "COS_CONTAINERD",
        "guestAccelerators": [
            {
                "type": "nvidia-l4",
                "count": 1,
                "gpuDriverInstallationConfig": {"gpuDriverVersion": "INSTALLATION_DISABLED"},
            }
        ],
        "labels": {
            "gpu-platform.io/pool": "l4-shared",
            "gpu-platform.io/accelerator": "l4",
            "gke-no-default-nvidia-gpu-device-plugin": "true",
        },
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
        "spot": True,
        "metadata": {"disable-legacy-endpoints": "true"},
        "workloadMetadataConfig": {"mode": "GKE_METADATA"},
        "shieldedInstanceConfig": {"enableSecureBoot": True, "enableIntegrityMonitoring": True},
        "serviceAccount": "gpu-l4-shared-3f2a1b@ml-platform-dev.iam.gserviceaccount.com",
    }
    inputs = {
        "project": "ml-platform-dev",
        "location": "us-central1",
        "cluster": "ml-dev",
        "nodeLocations": ["us-central1-a", "us-central1-b"],
        "initialNodeCount": 0,
        "autoscaling": {"totalMinNodeCount": 0, "totalMaxNodeCount": 3, "locationPolicy": "ANY"},
        "nodeConfig": config,
    }
    return resource(NODE_POOL, name, inputs)


GKE_CLUSTER = "gcp:container/cluster:Cluster"


def gke_cluster(name: str = "cluster") -> PlannedResource:
    """A GKE cluster as the platform creates one (`gpu_platform.gke.new_cluster.cluster`), with
    a private endpoint. Tests change its `inputs` in place."""
    inputs = {
        "name": "ml-dev",
        "project": "ml-platform-dev",
        "location": "us-central1",
        "networkingMode": "VPC_NATIVE",
        "datapathProvider": "ADVANCED_DATAPATH",
        "privateClusterConfig": {"enablePrivateNodes": True, "enablePrivateEndpoint": True},
        "masterAuthorizedNetworksConfig": {
            "cidrBlocks": [{"cidrBlock": "10.0.0.0/20", "displayName": "cluster nodes"}],
            "gcpPublicCidrsAccessEnabled": False,
        },
        "workloadIdentityConfig": {"workloadPool": "ml-platform-dev.svc.id.goog"},
        "enableShieldedNodes": True,
        "enableLegacyAbac": False,
        "databaseEncryption": {
            "state": "ENCRYPTED",
            "keyName": "projects/ml-platform-dev/locations/us-central1/keyRings/"
            "cluster-secrets-1a2b3c4/cryptoKeys/gke-secrets",
        },
        "releaseChannel": {"channel": "STABLE"},
        "removeDefaultNodePool": True,
        "initialNodeCount": 1,
        "nodeConfig": {
            "serviceAccount": "sys-nodes-e23448@ml-platform-dev.iam.gserviceaccount.com",
            "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
        },
    }
    return resource(GKE_CLUSTER, name, inputs)


RELEASE = "kubernetes:helm.sh/v3:Release"
CHART = "kubernetes:helm.sh/v4:Chart"
PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"


ROLLS_BACK: dict[str, Any] = {
    "atomic": True,
    "cleanupOnFail": True,
    "timeout": 900,
    "maxHistory": 10,
}
"""A release that undoes a failed install or upgrade by itself, as the platform's do."""


def gpu_operator_release(name: str = "gpu-operator") -> PlannedResource:
    """The GPU Operator as the platform installs it: a pinned chart in its own namespace,
    rolled back when an upgrade fails."""
    return resource(
        RELEASE,
        name,
        {
            "name": "gpu-operator",
            "chart": "gpu-operator",
            "version": "v26.7.0",
            "repositoryOpts": {"repo": "https://helm.ngc.nvidia.com/nvidia"},
            "namespace": "gpu-operator",
            **ROLLS_BACK,
            "values": {
                "operator": {"upgradeCRD": True},
                "driver": {"enabled": False},
                "dcgmExporter": {"serviceMonitor": {"enabled": True}},
            },
        },
        parents=OPERATOR_PARENTS,
    )


def gpu_alert_rules(name: str = "gpu-alerts") -> PlannedResource:
    """A PrometheusRule alerting on DCGM metrics."""
    rule = {
        "alert": "GpuXidErrors",
        "expr": "increase(DCGM_FI_DEV_XID_ERRORS[5m]) > 0",
        "for": "1m",
        "labels": {"severity": "critical"},
    }
    return resource(
        PROMETHEUS_RULE,
        name,
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": {"name": name, "namespace": "monitoring"},
            "spec": {"groups": [{"name": "gpu", "rules": [rule]}]},
        },
    )


KARPENTER_NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
EC2_NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"


def karpenter_node_pool(name: str = "l4") -> PlannedResource:
    """A Karpenter GPU NodePool as the platform declares one, for a spot pool of L4s that may
    fall back to on-demand. Tests change its `inputs` in place."""
    spec = {
        "template": {
            "metadata": {
                "labels": {
                    "gpu-platform.io/pool": name,
                    "gpu-platform.io/accelerator": "l4",
                    "nvidia.com/gpu.present": "true",
                }
            },
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": name,
                },
                "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                "requirements": [
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": ["g6.xlarge", "g6.2xlarge"],
                    },
                    {
                        "key": "topology.kubernetes.io/zone",
                        "operator": "In",
                        "values": ["us-east-1a", "us-east-1b"],
                    },
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["spot", "on-demand"],
                    },
                ],
                "expireAfter": "Never",
                "terminationGracePeriod": "24h",
            },
        },
        "weight": 10,
        "limits": {"nvidia.com/gpu": "8", "cpu": "32", "nodes": "8"},
        "disruption": {
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": "10m",
            "budgets": [
                {"nodes": "100%", "reasons": ["Empty"]},
                {"nodes": "10%", "reasons": ["Drifted", "Underutilized"]},
            ],
        },
    }
    metadata = {"name": name, "annotations": {"gpu-platform.io/on-demand-fallback": "true"}}
    inputs = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": metadata,
        "spec": spec,
    }
    return resource(KARPENTER_NODE_POOL, name, inputs)


def ec2_node_class(name: str = "l4") -> PlannedResource:
    """The EC2NodeClass of `karpenter_node_pool(name)`: a pinned AL2023 release, IMDSv2 only,
    an encrypted gp3 root volume. Tests change its `inputs` in place."""
    spec = {
        "role": "ml-dev-karpenter-node",
        "amiSelectorTerms": [{"alias": "al2023@v20260714"}],
        "subnetSelectorTerms": [{"id": "subnet-0a"}, {"id": "subnet-0b"}],
        "securityGroupSelectorTerms": [{"id": "sg-0123456789abcdef0"}],
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpTokens": "required",
            "httpPutResponseHopLimit": 1,
            "httpProtocolIPv6": "disabled",
        },
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "ebs": {
                    "volumeSize": "200Gi",
                    "volumeType": "gp3",
                    "iops": 6000,
                    "throughput": 500,
                    "encrypted": True,
                    "deleteOnTermination": True,
                },
            }
        ],
        "tags": {"Name": f"ml-dev-{name}", "gpu-platform.io/pool": name},
    }
    inputs = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": spec,
    }
    return resource(EC2_NODE_CLASS, name, inputs)

"""A GPU pool under Karpenter: its NodePool and EC2NodeClass, checked against the pinned
Karpenter CRDs and against the managed node group the same pool gets.

The CRDs' OpenAPI schemas (`gpu_platform/kubernetes/crd_schemas/`) are checked with jsonschema,
strictly: a field the schema does not name fails, where the API server would drop it. What
jsonschema cannot run are the CRDs' CEL rules (`x-kubernetes-validations`); every rule the
rendered objects reach is checked by a Python reading of it (`CEL_READINGS`), which is the rule
itself or a stricter condition that implies it. A rule comparing with the previous object
(`oldSelf`) is read as: every rendering has the same value.

The last test runs the real program for pools on managed node groups and compares what it
gives each node group with the NodePool the same pool gets.
"""

import copy
import dataclasses
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from google.protobuf import json_format
from pulumi.runtime import mocks
from pulumi.runtime.sync_await import _sync_await

from gpu_platform.config import CAPACITY_PREFERENCE, GpuPoolSpec, pool_preference
from gpu_platform.drivers import eks_driver
from gpu_platform.eks import cloud as eks_cloud
from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.efa import EfaNetwork
from gpu_platform.eks.instance_types import InstanceType
from gpu_platform.eks.karpenter.network_interfaces import efa_network_interfaces
from gpu_platform.eks.karpenter.node_pool import (
    DRIFT_BUDGET_PERCENT,
    KarpenterGpuNodePool,
    KarpenterGpuNodePoolArgs,
    ec2_node_class_for,
    node_pool_for,
)
from gpu_platform.eks.node_group import EksGpuNodeGroupArgs
from gpu_platform.eks.node_labels import eks_node_identity
from gpu_platform.eks.placement import AMI_TYPES, NodeGroupPlacement
from gpu_platform.kubernetes.canary_gate import RELEASE_NODE_LABEL, canary_release_id
from gpu_platform.kubernetes.crd_schemas import SCHEMAS_DIR, chart_crds, validation_errors
from gpu_platform.node_identity import resolve_pool
from gpu_platform.offline.program import Plan, run_program
from gpu_platform.stack_files import stack_config
from gpu_platform.taints import CLOUD_TAINT_EFFECTS
from gpu_platform.versions import KARPENTER_CHART
from tests.repository import PROJECT, ROOT
from tests.shared_plans import shared_plan
from tests.stack_variants import AL2023_RELEASE, BOTTLEROCKET_RELEASE

from .plans import asg_tags, node_group

Config = dict[str, Any]
# kubernetes/autoscaler cluster-autoscaler-1.35.2 utils/taints/taints.go, `StartupTaintPrefix`.
STARTUP_TAINT_PREFIX = "startup-taint.cluster-autoscaler.kubernetes.io/"
CHART, PINNED = KARPENTER_CHART.name, KARPENTER_CHART.version
KINDS = ("NodePool", "EC2NodeClass")
RESERVATION = "cr-0123456789abcdef0"
ROLE = "KarpenterNodeRole-ml-dev"
CLUSTER = EksCluster(
    name="ml-dev",
    region="us-east-1",
    arn="arn:aws:eks:us-east-1:123456789012:cluster/ml-dev",
    endpoint="https://0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com",
    certificate_authority="",
    version="1.35",
    status="ACTIVE",
    subnet_ids=(),
    vpc_id="vpc-0123456789abcdef0",
    security_group_id="sg-0123456789abcdef0",
)
SUBNETS = {"us-east-1a": "subnet-0a0000000000000a1", "us-east-1b": "subnet-0b0000000000000b1"}

# EC2's description of the instance types (DescribeInstanceTypes, as the offline stand-ins hold it).
G4DN_XLARGE = InstanceType("g4dn.xlarge", 4, 16384, "x86_64", "NVIDIA", "T4", 1, 16384, 125)
G5G_XLARGE = InstanceType("g5g.xlarge", 4, 8192, "arm64", "NVIDIA", "T4g", 1, 16384)
P4D_24XLARGE = InstanceType(
    "p4d.24xlarge", 96, 1179648, "x86_64", "NVIDIA", "A100", 8, 40960, 8000, efa_interfaces=4
)
G6_12XLARGE = InstanceType("g6.12xlarge", 48, 196608, "x86_64", "NVIDIA", "L4", 4, 22888, 3760)
G6_16XLARGE = InstanceType("g6.16xlarge", 64, 262144, "x86_64", "NVIDIA", "L4", 1, 22888, 1880)


def karpenter_args(
    node_image: str = "al2023",
    instance_type: InstanceType = G4DN_XLARGE,
    secret_labels: bool = False,
    more_instance_types: tuple[InstanceType, ...] = (),
    name: str = "gpus",
    **fields: Any,
) -> KarpenterGpuNodePoolArgs:
    """A pool named `name` of `instance_type` (and `more_instance_types`, smaller) with
    `fields` (keys as in the stack file), pinned to AL2023_RELEASE or BOTTLEROCKET_RELEASE,
    placed as placement would place it."""
    release = AL2023_RELEASE if node_image == "al2023" else BOTTLEROCKET_RELEASE
    aws = {"amiReleaseVersion": release, **fields.pop("aws", {})}
    types = (instance_type, *more_instance_types)
    spec = GpuPoolSpec.model_validate(
        {"name": name, "instanceTypes": [t.name for t in types], "max": 3, "aws": aws, **fields}
    )
    assert instance_type.gpu is not None and instance_type.architecture is not None
    driver = eks_driver(node_image, release, instance_type.architecture, CLUSTER.version)
    zones = tuple(spec.zones) or tuple(SUBNETS)
    placement = NodeGroupPlacement(
        instance_types=types,
        zones=zones,
        subnet_ids=tuple(SUBNETS[z] for z in zones),
        ami_type=AMI_TYPES[(node_image, instance_type.architecture)],
        release_version=release,
        efa_interfaces=instance_type.efa_interfaces if spec.aws.efa else 0,
    )
    return KarpenterGpuNodePoolArgs(
        pool=resolve_pool(spec, 0, instance_type.gpu, driver=driver),
        placement=placement,
        cluster=CLUSTER,
        node_image=node_image,
        node_role_name=ROLE,
        consolidate_after_minutes=10,
        termination_grace_period_hours=24,
        # As the stack ranks a pool (`pool_preference`), which the plan-level tests below check.
        weight=pool_preference(spec),
        secret_labels=secret_labels,
    )


def node_pool_spec(args: KarpenterGpuNodePoolArgs) -> dict[str, Any]:
    spec: dict[str, Any] = node_pool_for(args)["spec"]
    return spec


def node_class_spec(args: KarpenterGpuNodePoolArgs) -> dict[str, Any]:
    spec: dict[str, Any] = ec2_node_class_for(args)["spec"]
    return spec


def requirement(args: KarpenterGpuNodePoolArgs, key: str) -> dict[str, Any]:
    (found,) = [
        r for r in node_pool_spec(args)["template"]["spec"]["requirements"] if r["key"] == key
    ]
    return found


# The pools every rendered object is checked for: each capacity, each node image, both CPU
# architectures, local NVMe, and the settings that reach the objects.
REPRESENTATIVE: dict[str, Callable[[], KarpenterGpuNodePoolArgs]] = {
    "on-demand": lambda: karpenter_args(),
    "spot": lambda: karpenter_args(capacity="spot"),
    "spot-falling-back": lambda: karpenter_args(capacity="spot", aws={"onDemandFallback": True}),
    "reserved": lambda: karpenter_args(
        capacity="reserved", zones=["us-east-1a"], aws={"capacityReservationId": RESERVATION}
    ),
    "reserved-falling-back": lambda: karpenter_args(
        capacity="reserved",
        zones=["us-east-1a"],
        aws={"capacityReservationId": RESERVATION, "onDemandFallback": True},
    ),
    "capacity-block": lambda: karpenter_args(
        instance_type=P4D_24XLARGE,
        capacity="capacity-block",
        zones=["us-east-1a"],
        aws={"capacityReservationId": RESERVATION},
    ),
    "arm64": lambda: karpenter_args(instance_type=G5G_XLARGE),
    "local-nvme": lambda: karpenter_args(instance_type=P4D_24XLARGE),
    "bottlerocket": lambda: karpenter_args("bottlerocket"),
    "bottlerocket-local-nvme": lambda: karpenter_args("bottlerocket", P4D_24XLARGE),
    "taints-and-labels": lambda: karpenter_args(
        labels={"team": "vision", "node.kubernetes.io/lifecycle": "gpu"},
        taints=[
            {"key": "team", "value": "vision", "effect": "NoSchedule"},
            {"key": "example.com/preemptible", "effect": "PreferNoSchedule"},
        ],
    ),
    "two-hops-quarter-at-once": lambda: karpenter_args(
        aws={"metadataHopLimit": 2, "maxUnavailablePercent": 25, "emptyNodesBudgetPercent": 50}
    ),
    "efa": lambda: karpenter_args(
        instance_type=P4D_24XLARGE, zones=["us-east-1a"], aws={"efa": True}
    ),
    "efa-capacity-block": lambda: karpenter_args(
        instance_type=P4D_24XLARGE,
        capacity="capacity-block",
        zones=["us-east-1a"],
        aws={"efa": True, "capacityReservationId": RESERVATION},
    ),
    "never-consolidated": lambda: karpenter_args(aws={"consolidateAfterMinutes": "never"}),
}
EFA_GROUP = "sg-0efa0000000000001"
PLACEMENT_GROUP = "gpus-placement-4f0c2a1"


def efa_network(args: KarpenterGpuNodePoolArgs) -> EfaNetwork | None:
    """What `efa_network` creates for the pool, as ids and names; None without EFA."""
    if not args.placement.efa_interfaces:
        return None
    reserved = args.pool.spec.capacity in ("reserved", "capacity-block")
    return EfaNetwork(EFA_GROUP, None if reserved else PLACEMENT_GROUP)


@pytest.fixture(params=sorted(REPRESENTATIVE))
def rendered(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    """One representative pool's objects, by kind."""
    args = REPRESENTATIVE[request.param]()
    return {
        "NodePool": node_pool_for(args),
        "EC2NodeClass": ec2_node_class_for(args, efa_network(args)),
    }


# --- The objects against the pinned CRDs' schemas ---------------------------------------------


def crd_schema(kind: str) -> dict[str, Any]:
    """The `v1` schema of the pinned Karpenter's CRD of `kind`."""
    (crd,) = [c for c in chart_crds(CHART, PINNED) if c["kind"] == kind]
    schema: dict[str, Any] = crd["versions"]["v1"]
    return schema


@pytest.mark.parametrize("kind", KINDS)
def test_every_rendered_object_validates_against_the_pinned_crd_schema(
    rendered: dict[str, dict[str, Any]], kind: str
) -> None:
    assert validation_errors(rendered[kind], CHART, PINNED) == []


def test_the_schema_check_refuses_a_field_the_crd_does_not_name() -> None:
    pool = node_pool_for(karpenter_args())
    pool["spec"]["disruption"]["consolidateAfterMinutes"] = 10

    assert validation_errors(pool, CHART, PINNED) == [
        "spec.disruption: Additional properties are not allowed ('consolidateAfterMinutes' was"
        " unexpected)"
    ]


def test_the_schema_check_refuses_a_value_the_crd_does_not_allow() -> None:
    node_class = ec2_node_class_for(karpenter_args())
    node_class["spec"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] = "200"

    (error,) = validation_errors(node_class, CHART, PINNED)
    assert error.startswith("spec.blockDeviceMappings.0.ebs.volumeSize: '200' does not match")


# --- The CRDs' CEL rules, read in Python -------------------------------------------------------


FLEXIBLE_POOL_LABELS = (
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-gpu-name",
)


def _keys(value: Any) -> list[str]:
    """A label map's keys, or the one key of a requirement."""
    return [value] if isinstance(value, str) else list(value)


def _domain(key: str) -> str:
    """What CEL's `key.find("^([^/]+)")` gives: the key's prefix, or the key without one."""
    return key.split("/", 1)[0]


def _has_any(term: dict[str, Any], *fields: str) -> bool:
    return any(f in term for f in fields)


def _card_and_device(interface: dict[str, Any]) -> tuple[int, int]:
    return interface["networkCardIndex"], interface["deviceIndex"]


_STATIC_POOL = "replicas"
_WINDOWS = ("windows2019", "windows2022", "windows2025")
CEL_READINGS: dict[str, Callable[[Any], bool]] = {
    # NodePool: the platform's NodePools are dynamic, never static (`replicas`).
    "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset)"
    " provisioning modes": lambda s: _STATIC_POOL not in s,
    "only 'limits.nodes' is supported on static NodePools": lambda s: _STATIC_POOL not in s,
    "'weight' is not supported on static NodePools": lambda s: _STATIC_POOL not in s,
    "'schedule' must be set with 'duration'": lambda s: all(
        ("schedule" in b) == ("duration" in b) for b in s
    ),
    # On the template's labels and on each requirement's key.
    'label domain "karpenter.sh" is restricted': lambda s: all(
        k in ("karpenter.sh/capacity-type", "karpenter.sh/nodepool")
        or not _domain(k).endswith("karpenter.sh")
        for k in _keys(s)
    ),
    'label "karpenter.sh/nodepool" is restricted': lambda s: (
        "karpenter.sh/nodepool" not in _keys(s)
    ),
    'label "kubernetes.io/hostname" is restricted': lambda s: (
        "kubernetes.io/hostname" not in _keys(s)
    ),
    # Stricter than the rule, which lets all the provider's well-known labels through: only the
    # three a pool of instance families or categories requires, each in the rule's list.
    'label domain "karpenter.k8s.aws" is restricted': lambda s: all(
        k in FLEXIBLE_POOL_LABELS or not _domain(k).endswith("karpenter.k8s.aws") for k in _keys(s)
    ),
    "nodeClassRef.group is immutable": lambda s: s["group"] == "karpenter.k8s.aws",
    "nodeClassRef.kind is immutable": lambda s: s["kind"] == "EC2NodeClass",
    "group may not be empty": lambda s: s != "",
    "kind may not be empty": lambda s: s != "",
    "name may not be empty": lambda s: s != "",
    "requirements with operator 'In' must have a value defined": lambda s: all(
        r["values"] for r in s if r["operator"] == "In"
    ),
    "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer"
    " value": lambda s: not any(r["operator"] in ("Gt", "Lt", "Gte", "Lte") for r in s),
    "requirements with 'minValues' must have at least that many values specified in the"
    " 'values' field": lambda s: not any("minValues" in r for r in s),
    # EC2NodeClass
    "must specify exactly one of ['role', 'instanceProfile']": lambda s: (
        ("role" in s) != ("instanceProfile" in s)
    ),
    # The platform sets no amiFamily: the alias's family is the node image's.
    **dict.fromkeys(
        (
            f"if set, amiFamily must be '{family}' or 'Custom' when using {article} {family} alias"
            for article, family in (
                ("an", "AL2"),
                ("an", "AL2023"),
                ("a", "Bottlerocket"),
                ("a", "Windows2019"),
                ("a", "Windows2022"),
                ("a", "Windows2025"),
            )
        ),
        lambda s: "amiFamily" not in s,
    ),
    "must specify amiFamily if amiSelectorTerms does not contain an alias": lambda s: (
        any("alias" in t for t in s["amiSelectorTerms"]) or "amiFamily" in s
    ),
    "role cannot be empty": lambda s: s != "",
    "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']": lambda s: (
        all(_has_any(t, "tags", "id", "name", "alias", "ssmParameter") for t in s)
    ),
    "'id' is mutually exclusive, cannot be set with a combination of other fields in"
    " amiSelectorTerms": lambda s: (
        not any("id" in t and _has_any(t, "alias", "tags", "name", "owner") for t in s)
    ),
    "'alias' is mutually exclusive, cannot be set with a combination of other fields in"
    " amiSelectorTerms": lambda s: (
        not any("alias" in t and _has_any(t, "id", "tags", "name", "owner") for t in s)
    ),
    "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms": (
        lambda s: not (any("alias" in t for t in s) and len(s) != 1)
    ),
    "'alias' is improperly formatted, must match the format 'family@version'": lambda s: bool(
        re.search(r"^[a-zA-Z0-9]+@.+$", s)
    ),
    "family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket',"
    " 'windows2019', 'windows2022', 'windows2025'": lambda s: (
        s.split("@")[0] in ("al2", "al2023", "bottlerocket", *_WINDOWS)
    ),
    "windows families may only specify version 'latest'": lambda s: (
        s.split("@")[0] not in _WINDOWS or s.split("@")[1] == "latest"
    ),
    "subnetSelectorTerms cannot be empty": lambda s: len(s) != 0,
    "expected at least one, got none, ['tags', 'id']": lambda s: all(
        _has_any(t, "tags", "id") for t in s
    ),
    "'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet"
    " selector term": lambda s: not all("id" in t and "tags" in t for t in s),
    "securityGroupSelectorTerms cannot be empty": lambda s: len(s) != 0,
    "expected at least one, got none, ['tags', 'id', 'name']": lambda s: all(
        _has_any(t, "tags", "id", "name") for t in s
    ),
    "'id' is mutually exclusive, cannot be set with a combination of other fields in a security"
    " group selector term": lambda s: not all("id" in t and _has_any(t, "tags", "name") for t in s),
    "'name' is mutually exclusive, cannot be set with a combination of other fields in a security"
    " group selector term": lambda s: not all("name" in t and _has_any(t, "tags", "id") for t in s),
    "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']": lambda s: all(
        _has_any(t, "tags", "id", "instanceMatchCriteria") for t in s
    ),
    "'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation"
    " selector term": lambda s: (
        not all("id" in t and _has_any(t, "tags", "ownerID", "instanceMatchCriteria") for t in s)
    ),
    "networkInterfaces must include a primary interface with interfaceType='interface'": (
        lambda s: (
            len(s) == 0
            or any(
                (x["deviceIndex"], x["networkCardIndex"], x["interfaceType"]) == (0, 0, "interface")
                for x in s
            )
        )
    ),
    "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can"
    " have at most one efa device per network card": lambda s: all(
        sum(1 for y in s if _card_and_device(y) == _card_and_device(x)) == 1
        and (
            x["interfaceType"] != "efa-only"
            or sum(
                1
                for y in s
                if y["networkCardIndex"] == x["networkCardIndex"]
                and y["interfaceType"] == "efa-only"
            )
            == 1
        )
        for x in s
    ),
    "expected at least one, got none, ['name', 'id']": lambda s: _has_any(s, "name", "id"),
    "'name' and 'id' are mutually exclusive": lambda s: not ("name" in s and "id" in s),
    "must have only one blockDeviceMappings with rootVolume": lambda s: (
        sum(1 for m in s if m.get("rootVolume") is True) <= 1
    ),
    "snapshotID or volumeSize must be defined": lambda s: _has_any(s, "snapshotID", "volumeSize"),
    "snapshotID must be set when volumeInitializationRate is set": lambda s: (
        "volumeInitializationRate" not in s or s.get("snapshotID", "") != ""
    ),
    "empty tag keys aren't supported": lambda s: "" not in s,
    "tag contains a restricted tag matching eks:eks-cluster-name": lambda s: (
        "eks:eks-cluster-name" not in s
    ),
    "tag contains a restricted tag matching kubernetes.io/cluster/": lambda s: (
        not any(k.startswith("kubernetes.io/cluster") for k in s)
    ),
    "tag contains a restricted tag matching karpenter.sh/nodepool": lambda s: (
        "karpenter.sh/nodepool" not in s
    ),
    "tag contains a restricted tag matching karpenter.sh/nodeclaim": lambda s: (
        "karpenter.sh/nodeclaim" not in s
    ),
    "tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass": lambda s: (
        "karpenter.k8s.aws/ec2nodeclass" not in s
    ),
}


def cel_rules_reached(
    schema: dict[str, Any], value: Any, path: str = ""
) -> Iterator[tuple[str, str, Any]]:
    """`(path, message, self)` for each CEL rule on a schema node the object has a value at."""
    for rule in schema.get("x-kubernetes-validations", []):
        yield path, rule["message"], value
    if isinstance(value, dict):
        for key, sub in value.items():
            if key in schema.get("properties", {}):
                yield from cel_rules_reached(schema["properties"][key], sub, f"{path}.{key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                yield from cel_rules_reached(schema["additionalProperties"], sub, f"{path}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            yield from cel_rules_reached(schema["items"], item, f"{path}[{i}]")


def cel_failures(obj: dict[str, Any]) -> list[str]:
    failures = []
    for path, message, value in cel_rules_reached(crd_schema(obj["kind"]), obj):
        reading = CEL_READINGS.get(message)
        if reading is None:
            failures.append(f"{path}: no reading of the rule {message!r}")
        elif not reading(value):
            failures.append(f"{path}: {message}")
    return failures


@pytest.mark.parametrize("kind", KINDS)
def test_every_cel_rule_the_rendered_objects_reach_holds(
    rendered: dict[str, dict[str, Any]], kind: str
) -> None:
    assert cel_failures(rendered[kind]) == []


def test_every_cel_reading_is_of_a_rule_of_the_pinned_crds() -> None:
    def messages(schema: Any) -> Iterator[str]:
        if isinstance(schema, dict):
            yield from (r["message"] for r in schema.get("x-kubernetes-validations", []))
            for value in schema.values():
                yield from messages(value)
        elif isinstance(schema, list):
            for value in schema:
                yield from messages(value)

    in_crds = {m for kind in KINDS for m in messages(crd_schema(kind))}

    assert set(CEL_READINGS) - in_crds == set()


@pytest.mark.parametrize(
    ("kind", "change", "failure"),
    [
        (
            "EC2NodeClass",
            lambda o: o["spec"]["amiSelectorTerms"][0].update(alias="al2023"),
            ".spec.amiSelectorTerms[0].alias: 'alias' is improperly formatted, must match the"
            " format 'family@version'",
        ),
        (
            "NodePool",
            lambda o: o["spec"]["template"]["metadata"]["labels"].update(
                {"karpenter.sh/team": "vision"}
            ),
            '.spec.template.metadata.labels: label domain "karpenter.sh" is restricted',
        ),
        (
            "NodePool",
            lambda o: o["spec"]["template"]["spec"]["requirements"][0].update(
                key="karpenter.k8s.aws/team"
            ),
            '.spec.template.spec.requirements[0].key: label domain "karpenter.k8s.aws" is'
            " restricted",
        ),
        (
            "NodePool",
            lambda o: o["spec"]["template"]["spec"]["requirements"][1].update(values=[]),
            ".spec.template.spec.requirements: requirements with operator 'In' must have a value"
            " defined",
        ),
    ],
)
def test_the_cel_readings_refuse_what_the_rules_refuse(
    kind: str, change: Callable[[dict[str, Any]], None], failure: str
) -> None:
    args = karpenter_args()
    obj = node_pool_for(args) if kind == "NodePool" else ec2_node_class_for(args)
    change(obj)

    assert failure in cel_failures(obj)


# --- The committed schemas ----------------------------------------------------------------------


def test_the_committed_schemas_are_the_pinned_karpenter_versions() -> None:
    committed = sorted(p.name for p in SCHEMAS_DIR.glob(f"{CHART}-*.json"))

    assert committed == [
        f"karpenter-{PINNED}-ec2nodeclasses.karpenter.k8s.aws.json",
        f"karpenter-{PINNED}-nodepools.karpenter.sh.json",
    ]


@pytest.mark.parametrize(
    ("kind", "required"),
    [
        ("NodePool", ["template"]),
        ("EC2NodeClass", ["amiSelectorTerms", "securityGroupSelectorTerms", "subnetSelectorTerms"]),
    ],
)
def test_the_committed_schemas_are_of_the_whole_objects(kind: str, required: list[str]) -> None:
    schema = crd_schema(kind)

    assert set(schema["properties"]) == {"apiVersion", "kind", "metadata", "spec", "status"}
    assert schema["properties"]["spec"]["required"] == required


# --- The AMI: the pinned release, as the node group runs it -------------------------------------


def test_al2023_pools_run_the_pinned_releases_build() -> None:
    # Karpenter reads /aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/nvidia/
    # amazon-eks-node-al2023-x86_64-nvidia-1.35-v20260714/image_id for it (al2023.go:73-80 at
    # v1.14.1, with the cluster's Kubernetes version): the AMI of EKS release 1.35.6-20260714.
    args = karpenter_args()

    assert node_class_spec(args)["amiSelectorTerms"] == [{"alias": "al2023@v20260714"}]


def test_bottlerocket_pools_run_the_pinned_release() -> None:
    # Karpenter reads /aws/service/bottlerocket/aws-k8s-1.35-nvidia/x86_64/1.54.0/image_id for it
    # (bottlerocket.go:44-53 at v1.14.1, which drops the `v`): release 1.54.0, whose build EKS's
    # release version 1.54.0-0d4a7f31 names.
    args = karpenter_args("bottlerocket")

    assert node_class_spec(args)["amiSelectorTerms"] == [{"alias": "bottlerocket@v1.54.0"}]


def test_no_pool_follows_the_latest_ami(rendered: dict[str, dict[str, Any]]) -> None:
    (term,) = rendered["EC2NodeClass"]["spec"]["amiSelectorTerms"]

    assert re.fullmatch(r"(al2023@v\d{8}|bottlerocket@v\d+\.\d+\.\d+)", term["alias"])


def test_a_new_release_changes_the_alias_so_that_karpenter_replaces_the_nodes() -> None:
    args = karpenter_args()
    newer = dataclasses.replace(
        args, placement=dataclasses.replace(args.placement, release_version="1.35.6-20260801")
    )

    assert node_class_spec(newer)["amiSelectorTerms"] == [{"alias": "al2023@v20260801"}]


# --- Instance and volume settings ---------------------------------------------------------------


def test_nodes_take_imdsv2_with_one_hop_by_default() -> None:
    assert node_class_spec(karpenter_args())["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpTokens": "required",
        "httpPutResponseHopLimit": 1,
        "httpProtocolIPv6": "disabled",
    }


def test_nodes_take_a_second_hop_when_the_pool_asks() -> None:
    options = node_class_spec(karpenter_args(aws={"metadataHopLimit": 2}))["metadataOptions"]

    assert (options["httpPutResponseHopLimit"], options["httpTokens"]) == (2, "required")


def test_al2023_root_volume_is_encrypted_gp3_of_the_pools_disk() -> None:
    args = karpenter_args(diskSizeGib=300)

    assert node_class_spec(args)["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "ebs": {
                "volumeSize": "300Gi",
                "volumeType": "gp3",
                "iops": 6000,
                "throughput": 500,
                "encrypted": True,
                "deleteOnTermination": True,
            },
        }
    ]


def test_bottlerocket_volumes_are_both_encrypted_the_os_one_of_karpenters_size() -> None:
    # bottlerocket.go:183-195 at v1.14.1: Karpenter's own /dev/xvda for Bottlerocket is 4Gi.
    mappings = node_class_spec(karpenter_args("bottlerocket"))["blockDeviceMappings"]

    encrypted = {"volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}
    assert mappings == [
        {"deviceName": "/dev/xvda", "ebs": {**encrypted, "volumeSize": "4Gi"}},
        {
            "deviceName": "/dev/xvdb",
            "ebs": {**encrypted, "volumeSize": "200Gi", "iops": 6000, "throughput": 500},
        },
    ]


@pytest.mark.parametrize("node_image", ["al2023", "bottlerocket"])
def test_local_nvme_holds_images_as_one_raid0_array_where_it_is_large_enough(
    node_image: str,
) -> None:
    # A p4d.24xlarge has 8 x 1000 GB of NVMe, a g4dn.xlarge 125 GB, less than the 200 GiB volume.
    assert node_class_spec(karpenter_args(node_image, P4D_24XLARGE))["instanceStorePolicy"] == (
        "RAID0"
    )
    assert "instanceStorePolicy" not in node_class_spec(karpenter_args(node_image, G4DN_XLARGE))


def test_local_nvme_stays_unused_when_the_pool_turns_it_off() -> None:
    args = karpenter_args(instance_type=P4D_24XLARGE, aws={"localNvme": False})

    assert "instanceStorePolicy" not in node_class_spec(args)


def test_nodes_join_the_pools_subnets_with_the_cluster_security_group() -> None:
    spec = node_class_spec(karpenter_args(zones=["us-east-1b"]))

    assert spec["subnetSelectorTerms"] == [{"id": "subnet-0b0000000000000b1"}]
    assert spec["securityGroupSelectorTerms"] == [{"id": "sg-0123456789abcdef0"}]


def test_nodes_run_as_the_karpenter_node_role() -> None:
    spec = node_class_spec(karpenter_args())

    assert (spec["role"], "instanceProfile" in spec) == ("KarpenterNodeRole-ml-dev", False)


def test_instances_are_tagged_with_cluster_and_pool() -> None:
    assert node_class_spec(karpenter_args())["tags"] == {
        "Name": "ml-dev-gpus",
        "gpu-platform.io/pool": "gpus",
        "gpu-platform.io/cluster": "ml-dev",
    }


# --- Where and on what nodes start --------------------------------------------------------------


def test_the_node_pool_launches_with_the_pools_node_class() -> None:
    args = karpenter_args()

    assert node_pool_for(args)["metadata"]["name"] == "gpus"
    assert ec2_node_class_for(args)["metadata"] == {"name": "gpus"}
    assert node_pool_spec(args)["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "gpus",
    }


def test_nodes_are_of_the_pools_instance_types_in_its_zones() -> None:
    args = karpenter_args()

    assert requirement(args, "node.kubernetes.io/instance-type")["values"] == ["g4dn.xlarge"]
    assert requirement(args, "topology.kubernetes.io/zone") == {
        "key": "topology.kubernetes.io/zone",
        "operator": "In",
        "values": ["us-east-1a", "us-east-1b"],
    }


@pytest.mark.parametrize(
    ("capacity", "fallback", "capacity_types"),
    [
        ("on-demand", False, ["on-demand"]),
        ("spot", False, ["spot"]),
        ("spot", True, ["spot", "on-demand"]),
        ("reserved", False, ["reserved"]),
        ("reserved", True, ["reserved", "on-demand"]),
        ("capacity-block", False, ["reserved"]),
    ],
)
def test_capacity_maps_to_karpenters_capacity_types(
    capacity: str, fallback: bool, capacity_types: list[str]
) -> None:
    args = karpenter_args(capacity=capacity, aws={"onDemandFallback": fallback})

    assert requirement(args, "karpenter.sh/capacity-type")["values"] == capacity_types


@pytest.mark.parametrize("capacity", ["reserved", "capacity-block"])
def test_reserved_capacity_is_the_pools_reservation_only(capacity: str) -> None:
    args = karpenter_args(capacity=capacity, aws={"capacityReservationId": RESERVATION})

    assert node_class_spec(args)["capacityReservationSelectorTerms"] == [
        {"id": "cr-0123456789abcdef0"}
    ]


def test_pools_without_reserved_capacity_select_no_reservation() -> None:
    assert "capacityReservationSelectorTerms" not in node_class_spec(karpenter_args())


def test_a_pool_falling_back_to_on_demand_says_so_on_its_node_pool() -> None:
    falling_back = karpenter_args(capacity="spot", aws={"onDemandFallback": True})

    assert node_pool_for(falling_back)["metadata"]["annotations"] == {
        "gpu-platform.io/on-demand-fallback": "true"
    }
    assert "annotations" not in node_pool_for(karpenter_args(capacity="spot"))["metadata"]


def test_the_pool_is_capped_at_max_nodes_and_their_gpus_and_vcpus() -> None:
    args = karpenter_args(instance_type=P4D_24XLARGE, max=3)

    assert node_pool_spec(args)["limits"] == {"nvidia.com/gpu": "24", "cpu": "288", "nodes": "3"}


def test_a_pool_of_two_sizes_starts_no_more_nodes_or_vcpus_than_max_of_the_largest() -> None:
    # The case: [g6.16xlarge (1 L4, 64 vCPUs), g6.12xlarge (4 L4s, 48 vCPUs)], max 2.
    # With the GPU limit alone (8) Karpenter could start 8 g6.16xlarge, 512 vCPUs; `nodes` holds
    # across scheduling passes and `cpu` holds the vCPUs to the 128 preflight checks against the
    # quota (kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/scheduler.go at
    # v1.14.1; `karpenter_launches` below).
    args = karpenter_args(
        instance_type=G6_12XLARGE, more_instance_types=(G6_16XLARGE,), max=2, accelerator="l4"
    )

    assert node_pool_spec(args)["limits"] == {"nvidia.com/gpu": "8", "cpu": "128", "nodes": "2"}


def karpenter_launches(limits: dict[str, str], sizes: tuple[InstanceType, ...]) -> list[str]:
    """The nodes Karpenter starts for endless pending pods that fit any of `sizes`, as
    kubernetes-sigs/karpenter's scheduler.go at v1.14.1 counts limits, each NodeClaim launching
    its option with the most vCPUs (the worst case for the quota). Within a scheduling pass, a
    new NodeClaim's options are the sizes within every remaining limit
    (`filterByRemainingResources`), after a check that `nodes` is not zero, and it takes off the
    most of each resource any option has (`subtractMax`), which has no `nodes`: a pass does not
    count `nodes`. Between passes the nodes launched count with their real size and one node
    each (`updateRemainingResources` with `StateNode.Capacity()`, statenode.go)."""

    def capacity(size: InstanceType) -> dict[str, int]:
        return {"nvidia.com/gpu": size.gpu_count, "cpu": size.vcpus}

    running: list[InstanceType] = []
    while True:
        remaining = {name: int(value) for name, value in limits.items()}
        for node in running:
            for name in remaining:
                remaining[name] -= {**capacity(node), "nodes": 1}[name]
        claims = []
        while remaining.get("nodes") != 0:
            options = [
                t for t in sizes if all(capacity(t).get(k, 0) <= v for k, v in remaining.items())
            ]
            if not options:
                break
            claims.append(max(options, key=lambda t: t.vcpus))
            for name in remaining:
                remaining[name] -= max(capacity(t).get(name, 0) for t in options)
        if not claims:
            return [t.name for t in running]
        running += claims


@pytest.mark.parametrize(
    ("kept", "started"),
    [
        (("nvidia.com/gpu", "cpu", "nodes"), 2),
        (("nvidia.com/gpu", "cpu"), 2),
        (("nvidia.com/gpu", "nodes"), 2),
        (("nvidia.com/gpu",), 8),
    ],
    ids=["all", "without-nodes", "without-cpu", "gpu-only"],
)
def test_the_limits_hold_a_pool_of_two_sizes_to_max_nodes(
    kept: tuple[str, ...], started: int
) -> None:
    # The case, [g6.16xlarge (1 L4, 64 vCPUs), g6.12xlarge (4 L4s)], max 2: the GPU
    # limit alone lets later passes start g6.16xlarge until 8 GPUs, 8 nodes and 512 vCPUs;
    # `cpu` holds within a pass and after it, `nodes` across passes.
    limits = node_pool_spec(
        karpenter_args(
            instance_type=G6_12XLARGE, more_instance_types=(G6_16XLARGE,), max=2, accelerator="l4"
        )
    )["limits"]

    launched = karpenter_launches(
        {k: v for k, v in limits.items() if k in kept}, (G6_16XLARGE, G6_12XLARGE)
    )

    assert launched == ["g6.16xlarge"] * started


def test_empty_taint_values_are_left_out() -> None:
    args = karpenter_args(taints=[{"key": "example.com/preemptible", "effect": "NoExecute"}])

    assert node_pool_spec(args)["template"]["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "example.com/preemptible", "effect": "NoExecute"},
    ]


# --- Disruption ---------------------------------------------------------------------------------


def test_only_empty_nodes_go_after_consolidate_after() -> None:
    disruption = node_pool_spec(karpenter_args())["disruption"]

    assert (disruption["consolidationPolicy"], disruption["consolidateAfter"]) == (
        "WhenEmpty",
        "10m",
    )


def test_nodes_never_expire() -> None:
    assert node_pool_spec(karpenter_args())["template"]["spec"]["expireAfter"] == "Never"


def test_empty_nodes_all_go_and_a_tenth_of_the_drifted_ones_by_default() -> None:
    assert node_pool_spec(karpenter_args())["disruption"]["budgets"] == [
        {"nodes": "100%", "reasons": ["Empty"]},
        {"nodes": "10%", "reasons": ["Drifted", "Underutilized"]},
    ]


def test_the_docs_settings_table_gives_the_drift_budgets_default() -> None:
    (row,) = [
        line
        for line in (ROOT / "docs" / "karpenter.md").read_text().splitlines()
        if line.startswith("| `aws.emptyNodesBudgetPercent`, `aws.maxUnavailablePercent` |")
    ]

    assert f"`Drifted` and `Underutilized` (`{DRIFT_BUDGET_PERCENT}%` unless set)" in row


def test_a_share_of_the_nodes_drifts_at_once_when_the_pool_says() -> None:
    args = karpenter_args(aws={"maxUnavailablePercent": 25, "emptyNodesBudgetPercent": 50})

    assert node_pool_spec(args)["disruption"]["budgets"] == [
        {"nodes": "50%", "reasons": ["Empty"]},
        {"nodes": "25%", "reasons": ["Drifted", "Underutilized"]},
    ]


def allowed_disruptions(
    budgets: list[dict[str, Any]], reason: str, nodes: int, not_ready: int
) -> int:
    """kubernetes-sigs/karpenter at v1.14.1: the least of the budgets that name `reason` or no
    reason (`GetAllowedDisruptionsByReason`, pkg/apis/v1/nodepool.go), a percentage rounded up
    (`GetAllowedDisruptions`), less the pool's NotReady and deleting nodes, never below 0
    (`BuildDisruptionBudgetMapping`, pkg/controllers/disruption/helpers.go)."""
    allowed = 2**31 - 1
    for budget in budgets:
        if "reasons" in budget and reason not in budget["reasons"]:
            continue
        value = budget["nodes"]
        count = -(-nodes * int(value[:-1]) // 100) if value.endswith("%") else int(value)
        allowed = min(allowed, count)
    return max(allowed - not_ready, 0)


def test_one_notready_node_leaves_the_pools_empty_nodes_free_to_go() -> None:
    budgets = node_pool_spec(karpenter_args())["disruption"]["budgets"]

    # Ten nodes, one NotReady (nothing repairs it under Karpenter here): nine empty ones may go,
    # where one `nodes: "1"` budget for every reason would let none.
    assert allowed_disruptions(budgets, "Empty", nodes=10, not_ready=1) == 9
    assert allowed_disruptions([{"nodes": "1"}], "Empty", nodes=10, not_ready=1) == 0
    assert allowed_disruptions(budgets, "Drifted", nodes=10, not_ready=0) == 1


def test_a_node_being_drained_uses_up_a_budget_of_one() -> None:
    # A draining node has a deletionTimestamp (`MarkedForDeletion`, pkg/controllers/state/
    # statenode.go) and counts in `disrupting`, taken off every reason's budget (helpers.go).
    assert allowed_disruptions([{"nodes": "1"}], "Drifted", nodes=10, not_ready=1) == 0


@pytest.mark.parametrize(("nodes", "at_once", "rounds"), [(1, 1, 1), (10, 1, 10), (32, 4, 8)])
def test_the_default_drift_budget_rolls_a_pool_in_at_most_ten_rounds(
    nodes: int, at_once: int, rounds: int
) -> None:
    # Each round takes up to terminationGracePeriod where a replacement can launch: 32 nodes
    # drift in 8 rounds (8 x 24 h), not 32 as with a budget of "1".
    budgets = node_pool_spec(karpenter_args())["disruption"]["budgets"]

    allowed = allowed_disruptions(budgets, "Drifted", nodes=nodes, not_ready=0)

    assert (allowed, -(-nodes // allowed)) == (at_once, rounds)


@pytest.mark.parametrize(
    ("pool", "consolidate_after"),
    [
        ({}, "10m"),
        ({"capacity": "spot"}, "10m"),
        ({"capacity": "capacity-block", "aws": {"capacityReservationId": RESERVATION}}, "Never"),
        ({"capacity": "reserved", "aws": {"capacityReservationId": RESERVATION}}, "Never"),
        (
            {
                "capacity": "reserved",
                "aws": {"capacityReservationId": RESERVATION, "onDemandFallback": True},
            },
            "10m",
        ),
        ({"aws": {"consolidateAfterMinutes": 30}}, "30m"),
        ({"capacity": "spot", "aws": {"consolidateAfterMinutes": "never"}}, "Never"),
        (
            {
                "capacity": "reserved",
                "aws": {"capacityReservationId": RESERVATION, "consolidateAfterMinutes": 5},
            },
            "5m",
        ),
    ],
)
def test_prepaid_pools_keep_their_empty_nodes_and_the_others_release_them(
    pool: dict[str, Any], consolidate_after: str
) -> None:
    # The CRD's pattern for it: `^(([0-9]+(s|m|h))+|Never)$` (karpenter.sh_nodepools.yaml,
    # v1.14.1); a reserved pool falling back to on-demand would keep on-demand nodes too.
    args = karpenter_args(**pool)

    assert node_pool_spec(args)["disruption"]["consolidateAfter"] == consolidate_after


def test_drift_drains_a_node_for_at_most_the_termination_grace_period() -> None:
    args = dataclasses.replace(karpenter_args(), termination_grace_period_hours=48)

    assert node_pool_spec(args)["template"]["spec"]["terminationGracePeriod"] == "48h"


# --- Weight: which NodePool a pod that fits several starts in ----------------------------------


def order_by_weight(pools: list[dict[str, Any]]) -> list[str]:
    """kubernetes-sigs/karpenter `OrderByWeight` (pkg/utils/nodepool/nodepool.go at v1.14.1):
    the higher weight first (no weight is 0), and of equal weights the name later in the
    alphabet first; the scheduler launches from the first NodePool the pod fits
    (`addToNewNodeClaim`, pkg/controllers/provisioning/scheduling/scheduler.go)."""
    ordered = sorted(pools, key=lambda p: p["metadata"]["name"], reverse=True)
    ordered.sort(key=lambda p: p["spec"].get("weight", 0), reverse=True)
    return [p["metadata"]["name"] for p in ordered]


@pytest.mark.parametrize(
    ("capacity", "weight"),
    [("capacity-block", 40), ("reserved", 30), ("on-demand", 20), ("spot", 10)],
)
def test_node_pools_are_weighted_as_the_node_groups_are_ranked(capacity: str, weight: int) -> None:
    reserved = capacity in ("reserved", "capacity-block")
    aws = {"capacityReservationId": RESERVATION} if reserved else {}

    assert node_pool_spec(karpenter_args(capacity=capacity, aws=aws))["weight"] == weight


def test_a_pod_fitting_a_capacity_block_and_an_on_demand_pool_starts_in_the_block() -> None:
    # Unweighted, `h100-od` sorts after `h100-block` and would win.
    block = node_pool_for(
        karpenter_args(
            instance_type=P4D_24XLARGE,
            name="h100-block",
            capacity="capacity-block",
            aws={"capacityReservationId": RESERVATION},
        )
    )
    on_demand = node_pool_for(karpenter_args(instance_type=P4D_24XLARGE, name="h100-od"))
    unweighted = [copy.deepcopy(block), copy.deepcopy(on_demand)]
    for pool in unweighted:
        del pool["spec"]["weight"]

    assert order_by_weight([on_demand, block])[0] == "h100-block"
    assert order_by_weight(unweighted)[0] == "h100-od"


def test_a_pod_fitting_a_pool_and_its_canary_starts_in_the_pool() -> None:
    # Of equal weights, OrderByWeight takes the name sorting last: `h100-canary`.
    led = node_pool_for(karpenter_args(name="h100"))
    canary = node_pool_for(karpenter_args(name="h100-canary", canaryOf="h100"))

    assert canary["spec"]["weight"] == 5
    assert order_by_weight([canary, led]) == ["h100", "h100-canary"]


def test_an_on_demand_canary_of_a_spot_pool_is_weighted_below_that_pool() -> None:
    # Weighted from its own capacity (20), the canary would outrank the spot pool it leads (10),
    # and every pod fitting both would start on the release not proven yet.
    config = copy.deepcopy(dict(stack_config("karpenter-dev", PROJECT)))
    (spot,) = [p for p in config["gpu-platform:pools"] if p["name"] == "t4-spot"]
    canary = {**copy.deepcopy(spot), "name": "t4-canary", "canaryOf": "t4-spot", "max": 1}
    canary["capacity"] = "on-demand"
    config["gpu-platform:pools"].append(canary)

    plan = run_program("karpenter-dev", config=config, project=PROJECT)
    pools = [r.inputs for r in plan.of_type("kubernetes:karpenter.sh/v1:NodePool")]
    weights = {p["metadata"]["name"]: p["spec"]["weight"] for p in pools}

    assert (weights["t4-spot"], weights["t4-canary"]) == (10, 5)
    assert order_by_weight(pools).index("t4-spot") < order_by_weight(pools).index("t4-canary")


def test_a_pod_fitting_a_spot_and_an_on_demand_pool_starts_on_demand() -> None:
    spot = node_pool_for(karpenter_args(name="t4-spot", capacity="spot"))
    on_demand = node_pool_for(karpenter_args(name="t4-od"))

    assert order_by_weight([spot, on_demand])[0] == "t4-od"


def test_an_unweighted_general_pool_loses_to_every_gpu_pool_and_weight_50_wins() -> None:
    # A cluster's `default` NodePool as upstream's getting-started guide writes it has no
    # weight; `OrderByWeight` reads that as 0. A CPU pod tolerating the GPU taint fits both.
    spot = node_pool_for(karpenter_args(name="t4-spot", capacity="spot"))
    default: dict[str, Any] = {"metadata": {"name": "default"}, "spec": {}}
    weighted: dict[str, Any] = {"metadata": {"name": "default"}, "spec": {"weight": 50}}

    assert order_by_weight([default, spot]) == ["t4-spot", "default"]
    assert order_by_weight([weighted, spot]) == ["default", "t4-spot"]


def test_a_p5_efa_node_under_karpenter_takes_51_pods() -> None:
    # `ENILimitedPods` (aws/karpenter-provider-aws pkg/providers/instancetype/types.go at
    # v1.14.1): (card 0's interfaces - its efa-only ones) x (IPv4 per interface - 1) + 2;
    # p5.48xlarge card 0: MaximumNetworkInterfaces 2, IPv4PerInterface 50
    # (zz_generated.vpclimits.go). The node group's primary of type `efa` keeps both: 100.
    interfaces = efa_network_interfaces(32)
    efa_only_on_card_0 = sum(
        1 for i in interfaces if i["networkCardIndex"] == 0 and i["interfaceType"] == "efa-only"
    )

    assert (2 - efa_only_on_card_0) * (50 - 1) + 2 == 51


# --- The component ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Registered:
    type: str
    name: str
    urn: str
    parent: str
    dependencies: tuple[str, ...]
    inputs: dict[str, Any]
    """As the engine receives them: a secret is `SECRET_SIGNATURE` with its `value`."""


# How Pulumi's resource protocol marks a secret value (`sig.Secret` in the Pulumi SDKs).
SECRET_SIGNATURE = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}


def declare(args: KarpenterGpuNodePoolArgs) -> list[Registered]:
    """What the component registers, as the engine is asked to."""
    registered: list[Registered] = []

    class Answers(mocks.Mocks):
        def new_resource(self, a: mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
            # An auto-named resource's name, as the engine would make it.
            return f"{a.name}-id", {"name": f"{a.name}-4f0c2a1", **a.inputs}

        def call(self, a: mocks.MockCallArgs) -> tuple[dict[str, Any], list[Any]]:
            return {}, []

    class Monitor(mocks.MockMonitor):
        def RegisterResource(self, request: Any) -> Any:
            response = super().RegisterResource(request)
            registered.append(
                Registered(
                    request.type,
                    request.name,
                    response.urn,
                    request.parent,
                    tuple(request.dependencies),
                    json_format.MessageToDict(request.object),
                )
            )
            return response

    def program() -> None:
        KarpenterGpuNodePool("gpus", args)

    answers = Answers()
    mocks.set_mocks(answers, "gpu-platform", "test", preview=False, monitor=Monitor(answers))
    _sync_await(mocks.run_pulumi_func(program))
    return [r for r in registered if r.type != "pulumi:pulumi:Stack"]


def test_the_component_holds_the_pools_node_class_and_node_pool() -> None:
    args = karpenter_args()

    component, node_class, pool = declare(args)

    assert (component.type, component.name) == ("gpu-platform:eks:KarpenterGpuNodePool", "gpus")
    assert (node_class.type, pool.type) == (
        "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass",
        "kubernetes:karpenter.sh/v1:NodePool",
    )
    assert {node_class.parent, pool.parent} == {component.urn}
    assert node_class.inputs == ec2_node_class_for(args)
    assert pool.inputs == node_pool_for(args)


def test_the_node_pool_goes_before_its_node_class() -> None:
    _, node_class, pool = declare(karpenter_args())

    assert node_class.urn in pool.dependencies


def test_secret_labels_reach_the_engine_only_as_a_secret() -> None:
    plain = node_pool_spec(karpenter_args(labels={"team": "vision"}))["template"]["metadata"]

    _, node_class, pool = declare(karpenter_args(secret_labels=True, labels={"team": "vision"}))

    labels = pool.inputs["spec"]["template"]["metadata"]["labels"]
    assert labels == {**SECRET_SIGNATURE, "value": plain["labels"]}
    (signature,) = SECRET_SIGNATURE
    assert signature not in json.dumps(node_class.inputs)


# --- The same nodes as the managed node group ---------------------------------------------------


# Pools the managed node group and Karpenter both take (exclusive GPUs, min 0), by node image.
PARITY_POOLS: dict[str, list[dict[str, Any]]] = {
    "al2023": [
        {"name": "on-demand", "instanceTypes": ["g4dn.xlarge"], "max": 3},
        {"name": "spot", "instanceTypes": ["g4dn.xlarge"], "max": 3, "capacity": "spot"},
        {
            "name": "reserved",
            "instanceTypes": ["g4dn.xlarge"],
            "max": 2,
            "capacity": "reserved",
            "zones": ["us-east-1b"],
            "aws": {"capacityReservationId": "cr-0fedcba9876543210"},
        },
        {
            "name": "block",
            "instanceTypes": ["p4d.24xlarge"],
            "max": 2,
            "capacity": "capacity-block",
            "zones": ["us-east-1a"],
            "aws": {"capacityReservationId": RESERVATION},
        },
        {"name": "arm", "instanceTypes": ["g5g.xlarge"], "max": 4},
        {
            "name": "tainted",
            "instanceTypes": ["g6.xlarge"],
            "max": 2,
            "labels": {"team": "vision"},
            "taints": [
                {"key": "team", "value": "vision", "effect": "NoSchedule"},
                {"key": "example.com/preemptible", "effect": "PreferNoSchedule"},
            ],
        },
        {"name": "canary", "instanceTypes": ["g4dn.xlarge"], "max": 1, "canaryOf": "on-demand"},
    ],
    "bottlerocket": [
        {"name": "br-on-demand", "instanceTypes": ["g4dn.xlarge"], "max": 3},
        {
            "name": "br-tainted",
            "instanceTypes": ["p4d.24xlarge"],
            "max": 1,
            "labels": {"team": "vision"},
            "taints": [{"key": "team", "value": "vision", "effect": "NoExecute"}],
        },
    ],
}
RELEASES = {"al2023": AL2023_RELEASE, "bottlerocket": BOTTLEROCKET_RELEASE}
RESOURCE_HINT = "k8s.io/cluster-autoscaler/node-template/resources/"


@dataclasses.dataclass(frozen=True)
class BothWays:
    """A pool as the program gives it to its managed node group, and what the program planned."""

    node_group_args: EksGpuNodeGroupArgs
    plan: Plan


def plan_recording_node_group_args(config: Config) -> tuple[Plan, dict[str, EksGpuNodeGroupArgs]]:
    """The program's plan for `config`, and the args it gave each pool's node group."""
    given: dict[str, EksGpuNodeGroupArgs] = {}
    real = eks_cloud.EksGpuNodeGroup

    def recording(name: str, args: EksGpuNodeGroupArgs, *rest: Any, **kw: Any) -> Any:
        given[name] = args
        return real(name, args, *rest, **kw)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(eks_cloud, "EksGpuNodeGroup", recording)
        plan = run_program("dev", config=config, project=PROJECT)
    return plan, given


@pytest.fixture(scope="module")
def both_ways() -> dict[str, BothWays]:
    """Each parity pool, from the real program: its node group's args and the plan."""
    found: dict[str, BothWays] = {}
    for node_image, pools in PARITY_POOLS.items():
        config = copy.deepcopy(stack_config("dev", PROJECT))
        config["gpu-platform:cluster"]["nodeImage"] = node_image
        config["gpu-platform:pools"] = [
            {**pool, "aws": {"amiReleaseVersion": RELEASES[node_image], **pool.get("aws", {})}}
            for pool in pools
        ]
        config["gpu-platform:namespaces"] = []
        plan, given = plan_recording_node_group_args(config)
        found.update({name: BothWays(args, plan) for name, args in given.items()})
    return found


@pytest.mark.parametrize(
    "pool", [pool["name"] for pools in PARITY_POOLS.values() for pool in pools]
)
def test_karpenter_nodes_carry_the_node_groups_labels_taints_and_gpus(
    both_ways: dict[str, BothWays], pool: str
) -> None:
    given = both_ways[pool].node_group_args
    plan = both_ways[pool].plan
    karpenter = node_pool_spec(
        KarpenterGpuNodePoolArgs(
            pool=given.pool,
            placement=given.placement,
            cluster=given.cluster,
            node_image=given.node_image,
            node_role_name=ROLE,
            consolidate_after_minutes=10,
            termination_grace_period_hours=24,
            weight=CAPACITY_PREFERENCE[given.pool.spec.capacity],
            secret_labels=given.secret_labels,
        )
    )
    group = node_group(plan, pool).inputs
    kubernetes_effects = {eks: k8s for k8s, eks in CLOUD_TAINT_EFFECTS.items()}
    group_taints = [
        {**t, "effect": kubernetes_effects[t["effect"]]} for t in group.get("taints", [])
    ]
    # What the autoscaler plans a node of the group with, from zero.
    gpus_per_node = int(asg_tags(plan, pool)[f"{RESOURCE_HINT}nvidia.com/gpu"])

    # A canary's NodePool adds its release's id, which the canary gate asks for: an EKS node
    # group's update replaces its nodes before `pulumi up` moves on, Karpenter's drift after.
    labels = dict(karpenter["template"]["metadata"]["labels"])
    assert labels.pop(RELEASE_NODE_LABEL, None) == (
        canary_release_id(given.pool) if given.pool.spec.canary_of else None
    )
    assert labels == group["labels"]
    # The node group's startup taints are the NodePool's `startupTaints`, its others `taints`.
    startup = [t for t in group_taints if t["key"].startswith(STARTUP_TAINT_PREFIX)]
    assert startup
    assert karpenter["template"]["spec"]["taints"] == [t for t in group_taints if t not in startup]
    assert karpenter["template"]["spec"]["startupTaints"] == startup
    max_size = int(group["scalingConfig"]["maxSize"])
    assert karpenter["limits"]["nvidia.com/gpu"] == str(max_size * gpus_per_node)
    assert karpenter["limits"]["nodes"] == str(max_size)


# --- EFA: interfaces, security group and placement group -----------------------------------------


def test_an_efa_pools_nodes_get_the_primary_interface_and_one_efa_device_per_card() -> None:
    # A p4d.24xlarge has 4 network cards (EC2 `MaximumEfaInterfaces`). The CRD's enum has no
    # `efa` type for the primary (karpenter.k8s.aws_ec2nodeclasses.yaml at v1.14.1): card 0
    # carries an ordinary `interface` at device 0 and its EFA at device 1, as in Karpenter's
    # own example (concepts/nodeclasses.md, "spec.networkInterfaces"). Every further card's
    # `efa-only` is at device 0, as the EC2 user guide lays them out ("Maximize network
    # bandwidth on Amazon EC2 instances with multiple network cards": "For each additional
    # network interface, use the next unused network card index, device index 0, for EFA-only
    # network interface") and as Karpenter's own tests launch them
    # (pkg/providers/instancetype/compatibility/suite_test.go at v1.14.1: card 1, device 0).
    args = karpenter_args(instance_type=P4D_24XLARGE, zones=["us-east-1a"], aws={"efa": True})

    assert node_class_spec(args)["networkInterfaces"] == [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
        {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
        {"networkCardIndex": 2, "deviceIndex": 0, "interfaceType": "efa-only"},
        {"networkCardIndex": 3, "deviceIndex": 0, "interfaceType": "efa-only"},
    ]


def test_karpenter_plans_as_many_efa_devices_as_the_node_advertises() -> None:
    # `efas` (pkg/providers/instancetype/types.go at v1.14.1): with networkInterfaces set, a
    # node's `vpc.amazonaws.com/efa` is the number of `efa-only` entries; the pods' requests
    # are planned against it, and the EFA device plugin advertises one per device.
    args = karpenter_args(instance_type=P4D_24XLARGE, zones=["us-east-1a"], aws={"efa": True})
    interfaces = node_class_spec(args)["networkInterfaces"]

    planned = sum(1 for i in interfaces if i["interfaceType"] == "efa-only")
    assert planned == 4
    assert eks_node_identity(args.pool, 4).resources["vpc.amazonaws.com/efa"] == planned


def test_an_efa_pool_joins_the_efa_security_group_and_its_placement_group() -> None:
    args = karpenter_args(instance_type=P4D_24XLARGE, zones=["us-east-1a"], aws={"efa": True})

    spec = ec2_node_class_for(args, efa_network(args))["spec"]

    assert spec["securityGroupSelectorTerms"] == [
        {"id": "sg-0123456789abcdef0"},
        {"id": "sg-0efa0000000000001"},
    ]
    assert spec["placementGroupSelector"] == {"name": "gpus-placement-4f0c2a1"}


def test_an_efa_pool_on_a_reservation_has_no_placement_group() -> None:
    # EC2 matches a launch into a placement group only to reservations made in that group;
    # a Capacity Block's instances are placed together already (gpu_platform/eks/efa.py).
    args = REPRESENTATIVE["efa-capacity-block"]()

    spec = ec2_node_class_for(args, efa_network(args))["spec"]

    assert "placementGroupSelector" not in spec
    assert len(spec["networkInterfaces"]) == 5


def test_pools_without_efa_list_no_interfaces() -> None:
    spec = node_class_spec(karpenter_args(instance_type=P4D_24XLARGE))

    assert ("networkInterfaces", "placementGroupSelector") & spec.keys() == set()
    assert spec["securityGroupSelectorTerms"] == [{"id": "sg-0123456789abcdef0"}]


def test_the_component_creates_an_efa_pools_security_group_and_placement_group() -> None:
    args = karpenter_args(instance_type=P4D_24XLARGE, zones=["us-east-1a"], aws={"efa": True})

    registered = declare(args)

    by_type = {r.type: r for r in registered}
    group, placement = (
        by_type["aws:ec2/securityGroup:SecurityGroup"],
        by_type["aws:ec2/placementGroup:PlacementGroup"],
    )
    assert placement.inputs["strategy"] == "cluster"
    assert group.inputs["ingress"][0]["self"] is True
    node_class = by_type["kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"].inputs["spec"]
    assert node_class["securityGroupSelectorTerms"][1] == {"id": "gpus-efa-id"}
    assert node_class["placementGroupSelector"] == {"name": "gpus-placement-4f0c2a1"}


def test_deleting_a_node_pool_waits_no_longer_than_pulumi_kubernetes_default() -> None:
    # A NodeClaim draining GPU work holds its NodePool up to terminationGracePeriod (a day by
    # default): a delete timeout that long would outlast the deploy workflow's job
    # (.github/workflows/pulumi-stack.yml, timeout-minutes: 180) and leave the stack locked,
    # where a delete failing at the default timeout is only run again (docs/karpenter.md).
    for stack in ("karpenter-dev", "auto-dev"):
        node_pools = shared_plan(stack).of_type("kubernetes:karpenter.sh/v1:NodePool")
        assert node_pools, stack
        for node_pool in node_pools:
            assert "delete" not in node_pool.custom_timeouts, node_pool.name

"""A pool on EKS Auto Mode: a `karpenter.sh/v1` NodePool, Karpenter's in everything but what Auto
Mode names its own (its NodeClass, its labels, its nodes' longest lifetime), and an
`eks.amazonaws.com/v1` NodeClass of the pool's subnets, disk and reservation. The NodePool is
checked against the NodePool CRD of the pinned Karpenter (Auto Mode publishes neither its
Karpenter's version nor its CRDs), the NodeClass against the fields the EKS user guide lists
(awsdocs/amazon-eks-user-guide latest/ug/automode/create-node-class.adoc, auto-odcr.adoc), the
schema committed in gpu_platform/kubernetes/crd_schemas/."""

import dataclasses
import fnmatch
from typing import Any

import pytest

from gpu_platform.eks.auto_mode.node_pool import (
    NODE_CLASS_SCHEMA,
    auto_mode_node_pool_for,
    node_class_for,
)
from gpu_platform.eks.karpenter.node_pool import KarpenterGpuNodePoolArgs, node_pool_for
from gpu_platform.kubernetes.crd_schemas import validation_errors
from gpu_platform.versions import KARPENTER_CHART
from tests.gpu_platform.eks.test_karpenter_node_pool import (
    CLUSTER,
    G6_12XLARGE,
    RESERVATION,
    SUBNETS,
    cel_failures,
    karpenter_args,
)

ROLE = "ml-dev-auto-mode-node"


def auto_mode_args(**fields: Any) -> KarpenterGpuNodePoolArgs:
    args = karpenter_args("bottlerocket", G6_12XLARGE, name="l4", **fields)
    return dataclasses.replace(
        args,
        placement=dataclasses.replace(args.placement, release_version=None),
        node_role_name=ROLE,
    )


def requirements(node_pool: dict[str, Any]) -> dict[str, list[str]]:
    found = node_pool["spec"]["template"]["spec"]["requirements"]
    return {r["key"]: r["values"] for r in found}


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {
            "capacity": "reserved",
            "zones": ["us-east-1a"],
            "aws": {"capacityReservationId": RESERVATION},
        },
    ],
    ids=["on-demand", "reserved"],
)
def test_the_objects_validate_against_the_schemas(fields: dict[str, Any]) -> None:
    args = auto_mode_args(**fields)
    assert (
        validation_errors(auto_mode_node_pool_for(args), "karpenter", KARPENTER_CHART.version) == []
    )
    assert validation_errors(node_class_for(args), *NODE_CLASS_SCHEMA) == []


def test_the_node_class_schema_refuses_what_the_docs_do_not_list() -> None:
    node_class = node_class_for(auto_mode_args())
    node_class["spec"]["amiSelectorTerms"] = [{"alias": "bottlerocket@latest"}]
    node_class["spec"]["ephemeralStorage"]["iops"] = 20000
    errors = validation_errors(node_class, *NODE_CLASS_SCHEMA)
    assert any(e.startswith("spec: Additional properties") for e in errors), errors
    assert any(e.startswith("spec.ephemeralStorage.iops:") for e in errors), errors


def test_the_node_class_carries_the_pools_label_preflight_knows_it_by() -> None:
    assert node_class_for(auto_mode_args())["metadata"] == {
        "name": "l4",
        "labels": {"gpu-platform.io/pool": "l4"},
    }


def test_the_node_pool_launches_with_the_pools_auto_mode_node_class() -> None:
    spec = auto_mode_node_pool_for(auto_mode_args())["spec"]["template"]["spec"]
    # create-node-pool.adoc, "Sample NodePool": `group: eks.amazonaws.com, kind: NodeClass`.
    assert spec["nodeClassRef"] == {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "l4"}


def test_sizes_are_chosen_by_auto_modes_labels_and_nvidia_gpus_only() -> None:
    args = auto_mode_args(instanceTypes=[], accelerator="l4", aws={"instanceFamilies": ["g6"]})
    found = requirements(auto_mode_node_pool_for(args))
    # create-node-pool.adoc, "EKS Auto Mode Supported Labels".
    assert found["eks.amazonaws.com/instance-family"] == ["g6"]
    assert found["eks.amazonaws.com/instance-gpu-name"] == ["l4"]
    assert found["eks.amazonaws.com/instance-gpu-manufacturer"] == ["nvidia"]
    assert not [key for key in found if key.startswith("karpenter.k8s.aws/")]


def test_the_node_pool_is_karpenters_in_all_else() -> None:
    args = auto_mode_args()
    auto_mode = auto_mode_node_pool_for(args)["spec"]
    karpenter = node_pool_for(args)["spec"]
    for key in ("weight", "limits"):
        assert auto_mode[key] == karpenter[key]
    karpenter_budgets = karpenter["disruption"].pop("budgets")
    assert auto_mode["disruption"].pop("budgets")[:-1] == karpenter_budgets
    assert auto_mode["disruption"] == karpenter["disruption"]
    for key in ("taints", "terminationGracePeriod"):
        assert auto_mode["template"]["spec"][key] == karpenter["template"]["spec"][key]
    assert auto_mode["template"]["metadata"] == karpenter["template"]["metadata"]


def test_nodes_live_as_long_as_auto_mode_lets_them() -> None:
    # automode.adoc: "a maximum lifetime of 21 days (which you can reduce)".
    spec = auto_mode_node_pool_for(auto_mode_args())["spec"]["template"]["spec"]
    assert spec["expireAfter"] == "504h"


def test_the_node_class_runs_the_auto_mode_role_in_the_pools_subnets() -> None:
    spec = node_class_for(auto_mode_args(zones=["us-east-1b"]))["spec"]
    assert spec["role"] == ROLE
    assert spec["subnetSelectorTerms"] == [{"id": SUBNETS["us-east-1b"]}]
    assert spec["securityGroupSelectorTerms"] == [{"id": CLUSTER.security_group_id}]


def test_the_nodes_ephemeral_storage_is_the_pools_disk() -> None:
    spec = node_class_for(
        auto_mode_args(diskSizeGib=500, aws={"volumeIops": 8000, "volumeThroughputMibps": 600})
    )["spec"]
    assert spec["ephemeralStorage"] == {"size": "500Gi", "iops": 8000, "throughput": 600}


def test_a_reserved_pool_selects_its_reservation_and_others_none() -> None:
    # auto-odcr.adoc: a NodeClass selects reservations and Capacity Blocks by id.
    reserved = auto_mode_args(
        capacity="capacity-block", zones=["us-east-1a"], aws={"capacityReservationId": RESERVATION}
    )
    assert node_class_for(reserved)["spec"]["capacityReservationSelectorTerms"] == [
        {"id": RESERVATION}
    ]
    assert requirements(auto_mode_node_pool_for(reserved))["karpenter.sh/capacity-type"] == [
        "reserved"
    ]
    assert "capacityReservationSelectorTerms" not in node_class_for(auto_mode_args())["spec"]


# AmazonEKSComputePolicy's `ec2:RunInstances`/`CreateFleet`/`CreateLaunchTemplate` statements
# allow only these request tag keys (`ForAllValues:StringLike aws:TagKeys`); the EKS user guide
# says the Auto Mode managed policies permit no user-defined tag (awsdocs/amazon-eks-user-guide
# latest/ug/automode/auto-learn-iam.adoc, "Custom AWS tags for EKS Auto resources").
COMPUTE_POLICY_TAG_KEYS = (
    "eks:eks-cluster-name",
    "eks:kubernetes-node-class-name",
    "eks:kubernetes-node-pool-name",
    "kubernetes.io/cluster/*",
)


@pytest.mark.parametrize("fields", [{}, {"aws": {"capacityReservationId": RESERVATION}}])
def test_the_node_class_tags_nothing_the_compute_policy_refuses(fields: dict[str, Any]) -> None:
    tags = node_class_for(auto_mode_args(**fields))["spec"].get("tags", {})
    refused = [
        k for k in tags if not any(fnmatch.fnmatchcase(k, p) for p in COMPUTE_POLICY_TAG_KEYS)
    ]
    assert refused == []


# Karpenter takes, for a reason, the least of the budgets active now, and a budget with a
# schedule is active for `duration` after each hit of its cron schedule, in UTC (`IsActive`,
# `GetAllowedDisruptionsByReason`, kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go at v1.14.1):
# drift is held outside a window by a `nodes: "0"` budget over the rest of the period.
@pytest.mark.parametrize(
    ("window", "closed"),
    [
        (None, {"nodes": "0", "reasons": ["Drifted"]}),
        # Saturday 02:00-06:00: closed from Saturday 06:00 for 168h - 4h.
        (
            {"schedule": "0 2 * * 6", "duration": "4h"},
            {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 6 * * 6", "duration": "164h0m"},
        ),
        # Saturday 22:30 past midnight: closed from Sunday 01:00.
        (
            {"schedule": "30 22 * * 6", "duration": "2h30m"},
            {
                "nodes": "0",
                "reasons": ["Drifted"],
                "schedule": "0 1 * * 0",
                "duration": "165h30m",
            },
        ),
        # Each day 23:00-00:30.
        (
            {"schedule": "0 23 * * *", "duration": "90m"},
            {"nodes": "0", "reasons": ["Drifted"], "schedule": "30 0 * * *", "duration": "22h30m"},
        ),
    ],
    ids=["no-window", "weekly", "weekly-past-midnight", "daily"],
)
def test_drift_is_held_to_the_pools_window(
    window: dict[str, str] | None, closed: dict[str, Any]
) -> None:
    args = auto_mode_args(aws={} if window is None else {"driftWindow": window})
    node_pool = auto_mode_node_pool_for(args)
    assert node_pool["spec"]["disruption"]["budgets"] == [
        {"nodes": "100%", "reasons": ["Empty"]},
        {"nodes": "10%", "reasons": ["Drifted", "Underutilized"]},
        closed,
    ]
    assert validation_errors(node_pool, "karpenter", KARPENTER_CHART.version) == []
    # The CRD's rule on budgets: "'schedule' must be set with 'duration'".
    assert [f for f in cel_failures(node_pool) if f.startswith(".spec.disruption")] == []


def test_a_karpenter_pool_drifts_only_when_its_settings_change() -> None:
    budgets = node_pool_for(auto_mode_args())["spec"]["disruption"]["budgets"]
    assert [b for b in budgets if b["nodes"] == "0"] == []

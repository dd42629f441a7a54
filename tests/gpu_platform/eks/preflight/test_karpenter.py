"""The pre-flight checks of a Karpenter stack: the cluster's authentication mode, against
botocore's EKS model, and the Spot service-linked role, against moto's IAM."""

import copy
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import botocore.session
import pytest
import requests
from botocore.model import StringShape, StructureShape
from botocore.stub import Stubber
from moto import mock_aws
from typer.testing import CliRunner

from gpu_platform.cli.app import app
from gpu_platform.cli.preflight_exit_codes import EXIT_BLOCKED, EXIT_CANNOT_CHECK
from gpu_platform.config import KarpenterSpec, StackConfig, load_stack_config
from gpu_platform.eks.preflight import checks as preflight_eks
from gpu_platform.eks.preflight.checks import AwsClients
from gpu_platform.eks.preflight.karpenter import karpenter_findings
from gpu_platform.kubernetes.crd_schemas import chart_crds
from gpu_platform.preflight.findings import Finding
from gpu_platform.stack_files import stack_config
from gpu_platform.versions import KARPENTER_CHART

ROLE = "arn:aws:iam::123456789012:role/KarpenterNodeRole-ml"
SPOT_ROLE_OK = Finding(
    "ok",
    "role AWSServiceRoleForEC2Spot",
    "The account has EC2's Spot service-linked role.",
    "Nothing.",
)


def karpenter_stack(**karpenter: Any) -> StackConfig:
    """The karpenter-dev stack (one of its pools spot), with `karpenter` settings."""
    values = stack_config("karpenter-dev")
    if karpenter:
        values["gpu-platform:karpenter"] = karpenter
    return load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )


def described_cluster(mode: str) -> dict[str, Any]:
    """A DescribeCluster `cluster`, as much of it as the check reads."""
    return {"name": "ml-karpenter-dev", "accessConfig": {"authenticationMode": mode}}


@pytest.fixture
def iam() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("iam", region_name="us-east-1")


def with_spot_role(iam: Any) -> Any:
    iam.create_role(
        RoleName="AWSServiceRoleForEC2Spot",
        Path="/aws-service-role/spot.amazonaws.com/",
        AssumeRolePolicyDocument="{}",
    )
    return iam


def test_the_modes_are_the_ones_eks_describes() -> None:
    model = botocore.session.get_session().get_service_model("eks")
    cluster = model.shape_for("Cluster")
    assert isinstance(cluster, StructureShape)
    access = cluster.members["accessConfig"]
    assert isinstance(access, StructureShape)

    mode = access.members["authenticationMode"]
    assert isinstance(mode, StringShape)

    assert mode.enum == ["API", "API_AND_CONFIG_MAP", "CONFIG_MAP"]


@pytest.mark.parametrize("mode", ["API", "API_AND_CONFIG_MAP"])
def test_a_cluster_reading_access_entries_lets_karpenters_nodes_join(iam: Any, mode: str) -> None:
    found = karpenter_findings(karpenter_stack(), described_cluster(mode), with_spot_role(iam))

    assert found == [
        Finding(
            "ok",
            "cluster ml-karpenter-dev",
            f"Authentication mode {mode}: the Karpenter node role's access entry lets its nodes"
            " join.",
            "Nothing.",
        ),
        SPOT_ROLE_OK,
    ]


def test_a_config_map_only_cluster_blocks(iam: Any) -> None:
    found = karpenter_findings(
        karpenter_stack(), described_cluster("CONFIG_MAP"), with_spot_role(iam)
    )

    assert found[0] == Finding(
        "blocking",
        "cluster ml-karpenter-dev",
        "Authentication mode CONFIG_MAP: EKS reads no access entry, so the nodes Karpenter"
        " launches, whose role the stack admits through one, would never join the cluster.",
        "aws eks update-cluster-config --name ml-karpenter-dev --access-config"
        " authenticationMode=API_AND_CONFIG_MAP (it cannot be changed back to CONFIG_MAP)",
    )


def test_an_existing_karpenters_access_is_its_own(iam: Any) -> None:
    # With `install: false` the stack creates no access entry: the mode is not its concern.
    stack = karpenter_stack(install=False, nodeRoleArn=ROLE)

    found = karpenter_findings(stack, described_cluster("CONFIG_MAP"), with_spot_role(iam))

    assert found == [SPOT_ROLE_OK]


def test_without_the_spot_role_the_spot_pools_launches_fail(iam: Any) -> None:
    found = karpenter_findings(karpenter_stack(), described_cluster("API"), iam)

    assert found[1] == Finding(
        "blocking",
        "role AWSServiceRoleForEC2Spot",
        "The account has no EC2 Spot service-linked role: Karpenter's launches of the spot"
        " pools' nodes (gpu-platform:pools with capacity spot) would fail.",
        "aws iam create-service-linked-role --aws-service-name spot.amazonaws.com",
    )


def test_a_stack_without_spot_pools_does_not_ask_for_the_role(iam: Any) -> None:
    values = stack_config("karpenter-dev")
    values["gpu-platform:pools"] = [
        p for p in values["gpu-platform:pools"] if p.get("capacity") != "spot"
    ]
    values["gpu-platform:namespaces"] = []
    stack = load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )

    assert [f.subject for f in karpenter_findings(stack, described_cluster("API"), iam)] == [
        "cluster ml-karpenter-dev"
    ]


def test_node_group_stacks_get_none_of_these(iam: Any) -> None:
    values = stack_config("dev")
    stack = load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )

    assert karpenter_findings(stack, described_cluster("CONFIG_MAP"), iam) == []


# --- Karpenter's CRDs in the cluster ----------------------------------------------------------

CRD_NAMES = {
    "NodePool": "nodepools.karpenter.sh",
    "NodeClaim": "nodeclaims.karpenter.sh",
    "EC2NodeClass": "ec2nodeclasses.karpenter.k8s.aws",
}
# Upstream's own install: release karpenter-crd in kube-system (aws/karpenter-provider-aws
# v1.14.1, website/content/en/docs/getting-started/getting-started-with-karpenter/_index.md:50
# `KARPENTER_NAMESPACE="kube-system"`, upgrading/upgrade-guide.md:71-72 `helm upgrade --install
# karpenter-crd ... --namespace "${KARPENTER_NAMESPACE}"`): the platform's release names too.
BY_THE_BOOK = {
    "meta.helm.sh/release-name": "karpenter-crd",
    "meta.helm.sh/release-namespace": "kube-system",
}
MARK = "gpu-platform/karpenter-dev"
OWNED = {**BY_THE_BOOK, "gpu-platform.io/stack": MARK}


def cluster_crds(
    annotations: dict[str, str] | None = None,
    without: tuple[str, ...] = (),
    drop: tuple[str, str] | None = None,
) -> Callable[[str], dict[str, Any] | None]:
    """The CRDs as the API server returns them, their `v1` schema the pinned Karpenter's
    (gpu_platform/kubernetes/crd_schemas/, from karpenter-provider-aws v1.14.1's CRDs);
    `without` some CRDs, `drop` one spec field of one kind's schema, as an older release has
    it."""
    crds: dict[str, dict[str, Any]] = {}
    for crd in chart_crds(KARPENTER_CHART.name, KARPENTER_CHART.version):
        schema = copy.deepcopy(crd["versions"]["v1"])
        if drop is not None and crd["kind"] == drop[0]:
            # `drop[1]` is a dotted path under `spec`: template.spec.terminationGracePeriod.
            *parents, field = drop[1].split(".")
            node = schema["properties"]["spec"]
            for parent in parents:
                node = node["properties"][parent]
            del node["properties"][field]
        crds[crd["kind"]] = schema
    served = {
        name: {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "annotations": dict(annotations or BY_THE_BOOK)},
            "spec": {
                "versions": [{"name": "v1", "schema": {"openAPIV3Schema": crds.get(kind, {})}}]
            },
        }
        for kind, name in CRD_NAMES.items()
        if kind not in without
    }
    return served.get


def crd_findings(stack: StackConfig, crds: Callable[[str], Any]) -> list[Finding]:
    found = karpenter_findings(stack, described_cluster("API"), None, crds, MARK)
    return [f for f in found if f.subject == "cluster ml-karpenter-dev"][-1:]


@pytest.fixture
def spot_free_stack() -> StackConfig:
    """karpenter-dev without its spot pool, so that IAM is not read."""
    values = stack_config("karpenter-dev")
    values["gpu-platform:pools"] = [
        p for p in values["gpu-platform:pools"] if p.get("capacity") != "spot"
    ]
    return load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )


def existing(stack: StackConfig) -> StackConfig:
    return stack.model_copy(
        update={"karpenter": KarpenterSpec.model_validate({"install": False, "nodeRoleArn": ROLE})}
    )


def test_the_platforms_own_crds_let_it_install(spot_free_stack: StackConfig) -> None:
    assert crd_findings(spot_free_stack, cluster_crds(OWNED))[0].severity == "ok"


def test_a_capacity_buffer_crd_of_another_tool_blocks_the_install(
    spot_free_stack: StackConfig,
) -> None:
    # The pinned karpenter-crd chart installs capacitybuffers.autoscaling.x-k8s.io too (its
    # templates/ at v1.14.1), the API of SIG Autoscaling's capacity buffers.
    ours = cluster_crds(OWNED)
    buffers = {"metadata": {"name": "capacitybuffers.autoscaling.x-k8s.io", "annotations": {}}}

    (finding,) = crd_findings(
        spot_free_stack, lambda name: buffers if name == buffers["metadata"]["name"] else ours(name)
    )

    assert finding.severity == "blocking"
    assert "capacitybuffers.autoscaling.x-k8s.io: no Helm release" in finding.message


def test_upstreams_install_under_the_same_release_name_blocks_the_install(
    spot_free_stack: StackConfig,
) -> None:
    (finding,) = crd_findings(spot_free_stack, cluster_crds(BY_THE_BOOK))

    assert finding.severity == "blocking"
    assert finding.message.startswith(
        "The cluster runs Karpenter already (ec2nodeclasses.karpenter.k8s.aws: release"
        " karpenter-crd in kube-system;"
    )
    assert "without this stack's mark (gpu-platform.io/stack: gpu-platform/karpenter-dev)" in (
        finding.message
    )


def test_another_stacks_karpenter_blocks_the_install(spot_free_stack: StackConfig) -> None:
    theirs = {**BY_THE_BOOK, "gpu-platform.io/stack": "gpu-platform/karpenter-prod"}

    assert crd_findings(spot_free_stack, cluster_crds(theirs))[0].severity == "blocking"


def test_install_false_where_this_stack_installed_karpenter_blocks(
    spot_free_stack: StackConfig,
) -> None:
    # The karpenter-crd chart ships its CRDs as templates without `helm.sh/resource-policy:
    # keep` (charts/karpenter-crd/templates/*.yaml at v1.14.1): uninstalling the release deletes
    # them, and the API server every NodePool, NodeClaim and EC2NodeClass with them.
    (finding,) = crd_findings(existing(spot_free_stack), cluster_crds(OWNED))

    assert finding.severity == "blocking"
    assert finding.message.startswith(
        "gpu-platform:karpenter.install is false, but this stack installed the cluster's"
        " Karpenter (ec2nodeclasses.karpenter.k8s.aws, nodeclaims.karpenter.sh,"
        " nodepools.karpenter.sh carry gpu-platform.io/stack: gpu-platform/karpenter-dev)"
    )


def test_install_false_over_another_stacks_karpenter_is_ok(spot_free_stack: StackConfig) -> None:
    theirs = {**BY_THE_BOOK, "gpu-platform.io/stack": "gpu-platform/karpenter-prod"}

    assert crd_findings(existing(spot_free_stack), cluster_crds(theirs))[0].severity == "ok"


def test_crds_of_another_installation_block_the_install(spot_free_stack: StackConfig) -> None:
    # Helm refuses to install over them: "invalid ownership metadata" (Karpenter's
    # troubleshooting guide); helm/pkg/action/validate.go reads these annotations.
    theirs = {
        "meta.helm.sh/release-name": "karpenter",
        "meta.helm.sh/release-namespace": "karpenter",
    }

    (finding,) = crd_findings(spot_free_stack, cluster_crds(theirs))

    assert finding.severity == "blocking"
    assert finding.message.startswith(
        "The cluster runs Karpenter already (ec2nodeclasses.karpenter.k8s.aws: release karpenter"
        " in karpenter;"
    )
    assert "gpu-platform:karpenter.install: false" in finding.action


def test_an_existing_karpenter_of_the_pinned_version_has_every_field(
    spot_free_stack: StackConfig,
) -> None:
    theirs = {
        "meta.helm.sh/release-name": "karpenter",
        "meta.helm.sh/release-namespace": "karpenter",
    }

    assert crd_findings(existing(spot_free_stack), cluster_crds(theirs)) == [
        Finding(
            "ok",
            "cluster ml-karpenter-dev",
            "The cluster's Karpenter CRDs have every field the pools set.",
            "Nothing.",
        )
    ]


@pytest.mark.parametrize(
    ("drop", "named"),
    [
        (
            ("EC2NodeClass", "networkInterfaces"),
            "ec2nodeclasses.karpenter.k8s.aws spec.networkInterfaces",
        ),
        (
            ("EC2NodeClass", "capacityReservationSelectorTerms"),
            "ec2nodeclasses.karpenter.k8s.aws spec.capacityReservationSelectorTerms",
        ),
    ],
)
def test_an_older_karpenter_lacking_a_field_the_pools_set_blocks(
    spot_free_stack: StackConfig, drop: tuple[str, str], named: str
) -> None:
    (finding,) = crd_findings(existing(spot_free_stack), cluster_crds(drop=drop))

    assert finding.severity == "blocking"
    assert finding.message == (
        "The cluster's Karpenter CRDs lack fields the pools set, which its API server would drop"
        f" without an error: {named}."
    )


def test_crds_serving_no_v1_api_block(spot_free_stack: StackConfig) -> None:
    # Before v1.0.0 the CRDs served karpenter.sh/v1beta1 only, without weight or budget reasons.
    pinned = cluster_crds()

    def v1beta1(name: str) -> Any:
        crd = copy.deepcopy(pinned(name))
        if crd is not None and name == "nodepools.karpenter.sh":
            crd["spec"]["versions"][0]["name"] = "v1beta1"
        return crd

    (finding,) = crd_findings(existing(spot_free_stack), v1beta1)

    assert finding.severity == "blocking"
    assert finding.message.startswith(
        "The cluster's nodepools.karpenter.sh serve no v1 API, which the pools' NodePools and"
    )


def test_an_on_demand_efa_pool_needs_placement_group_selector_in_the_crd(
    spot_free_stack: StackConfig,
) -> None:
    # Only an EFA pool launching into no reservation gets a placement group: karpenter-dev's
    # Capacity Block pool, made on-demand.
    pools = [
        p.model_copy(
            update={
                "capacity": "on-demand",
                "aws": p.aws.model_copy(update={"capacity_reservation_id": None}),
            }
        )
        if p.aws.efa
        else p
        for p in spot_free_stack.pools
    ]
    stack = existing(spot_free_stack.model_copy(update={"pools": pools}))

    (finding,) = crd_findings(stack, cluster_crds(drop=("EC2NodeClass", "placementGroupSelector")))

    assert finding.message == (
        "The cluster's Karpenter CRDs lack fields the pools set, which its API server would drop"
        " without an error: ec2nodeclasses.karpenter.k8s.aws spec.placementGroupSelector."
    )


def test_install_false_on_a_cluster_without_karpenter_blocks(
    spot_free_stack: StackConfig,
) -> None:
    (finding,) = crd_findings(existing(spot_free_stack), cluster_crds(without=("NodeClaim",)))

    assert finding == Finding(
        "blocking",
        "cluster ml-karpenter-dev",
        "gpu-platform:karpenter.install is false, but the cluster has no nodeclaims.karpenter.sh:"
        " no Karpenter runs there to launch the pools' nodes.",
        "Install Karpenter, or set gpu-platform:karpenter.install: true.",
    )


def test_crds_the_check_may_not_read_are_a_warning(spot_free_stack: StackConfig) -> None:
    (finding,) = crd_findings(spot_free_stack, refused)

    assert (finding.severity, finding.message) == (
        "warning",
        "Cannot read the cluster's Karpenter CRDs: the Kubernetes API answered 403.",
    )


# --- The running controller, with install: false ------------------------------------------------

# charts/karpenter/templates/deployment.yaml at aws/karpenter-provider-aws v1.14.1: the image
# `<controller.image.repository>:<tag>@<digest>` (_helpers.tpl `karpenter.controller.image`),
# FEATURE_GATES from `settings.featureGates` (values.yaml: reservedCapacity true, the rest
# false) and INTERRUPTION_QUEUE from `settings.interruptionQueue`.
CHART_GATES = (
    "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=false,NodeOverlay=false,"
    "StaticCapacity=false,CapacityBuffer=false"
)
CONTROLLER = "cluster ml-karpenter-dev Karpenter controller"


def controller(
    tag: str, gates: str | None = CHART_GATES, queue: str | None = "ml-queue"
) -> dict[str, Any]:
    env = [{"name": "KUBERNETES_MIN_VERSION", "value": "1.19.0-0"}]
    if gates is not None:
        env.append({"name": "FEATURE_GATES", "value": gates})
    if queue is not None:
        env.append({"name": "INTERRUPTION_QUEUE", "value": queue})
    return {
        "metadata": {"name": "karpenter", "namespace": "kube-system"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "controller",
                            "image": f"public.ecr.aws/karpenter/controller:{tag}@sha256:0a1b",
                            "env": env,
                        }
                    ]
                }
            }
        },
    }


def controller_findings(stack: StackConfig, *deployments: dict[str, Any]) -> list[Finding]:
    found = karpenter_findings(
        stack, described_cluster("API"), None, None, MARK, lambda: list(deployments)
    )
    return [f for f in found if f.subject == CONTROLLER]


def test_the_pinned_controller_with_the_charts_defaults_is_ok(
    spot_free_stack: StackConfig,
) -> None:
    assert controller_findings(existing(spot_free_stack), controller("1.14.1")) == [
        Finding(
            "ok",
            CONTROLLER,
            "kube-system/karpenter runs public.ecr.aws/karpenter/controller:1.14.1@sha256:0a1b.",
            "Nothing.",
        )
    ]


def test_a_controller_with_reserved_capacity_off_blocks(spot_free_stack: StackConfig) -> None:
    gates = CHART_GATES.replace("ReservedCapacity=true", "ReservedCapacity=false")

    (finding,) = controller_findings(existing(spot_free_stack), controller("1.14.1", gates))

    assert finding.severity == "blocking"
    assert "reserved capacity needs v1.3.0 and the ReservedCapacity feature gate on" in (
        finding.message
    )


def test_a_v1_5_controller_with_its_default_gates_blocks_reserved_blocks_and_efa(
    spot_free_stack: StackConfig,
) -> None:
    # v1.5.0's default: options.go `FEATURE_GATES` "NodeRepair=false,ReservedCapacity=false,
    # SpotToSpotConsolidation=false" (kubernetes-sigs/karpenter v1.5.0); capacity-block first in
    # v1.6.0's ec2nodeclass_status.go; networkInterfaces first in v1.11.0's EC2NodeClass CRD.
    (finding,) = controller_findings(existing(spot_free_stack), controller("1.5.0", gates=None))

    assert finding == Finding(
        "blocking",
        CONTROLLER,
        "kube-system/karpenter runs public.ecr.aws/karpenter/controller:1.5.0@sha256:0a1b:"
        " reserved capacity needs v1.3.0 and the ReservedCapacity feature gate on: the reserved"
        " and capacity-block pools' pods would stay Pending; Capacity Blocks need v1.6.0: the"
        " capacity-block pools' pods would stay Pending; networkInterfaces and"
        " placementGroupSelector need v1.11.0: the EFA pools' nodes would come up with one ENA"
        " interface; limits.nodes is enforced from v1.11.0: only the GPU and CPU limits hold.",
        "Upgrade the cluster's Karpenter to v1.14.1 (the pinned release), with the"
        " ReservedCapacity feature gate on.",
    )


def test_from_v1_6_reserved_capacity_is_on_without_feature_gates(
    spot_free_stack: StackConfig,
) -> None:
    # v1.6.0's options.go default turns ReservedCapacity on; v1.10 still lacks node limits.
    (finding,) = controller_findings(existing(spot_free_stack), controller("v1.10.2", gates=None))

    assert "reserved capacity" not in finding.message
    assert "Capacity Blocks" not in finding.message
    assert "networkInterfaces and placementGroupSelector need v1.11.0" in finding.message


def test_a_controller_without_an_interruption_queue_warns(iam: Any) -> None:
    stack = karpenter_stack(install=False, nodeRoleArn=ROLE)
    found = karpenter_findings(
        stack,
        described_cluster("API"),
        with_spot_role(iam),
        None,
        MARK,
        lambda: [controller("1.14.1", queue=None)],
    )

    (finding,) = [f for f in found if f.subject == CONTROLLER]
    assert finding.severity == "warning"
    assert finding.message.endswith(
        "it has no INTERRUPTION_QUEUE: spot nodes are not drained within their two-minute notice"
        " before EC2 takes them back."
    )


def test_capacity_block_pools_need_no_interruption_queue(spot_free_stack: StackConfig) -> None:
    # Karpenter deletes a block's nodes 40 minutes before its end with the
    # capacityreservation.expiration controller, registered whatever INTERRUPTION_QUEUE says
    # (aws/karpenter-provider-aws pkg/controllers/controllers.go at v1.14.1).
    (finding,) = controller_findings(existing(spot_free_stack), controller("1.14.1", queue=None))

    assert finding.severity == "ok"


def test_a_controller_before_the_v1_api_blocks(spot_free_stack: StackConfig) -> None:
    (finding,) = controller_findings(existing(spot_free_stack), controller("0.37.5"))

    assert finding.severity == "blocking"
    assert "it predates the karpenter.sh/v1 API (v1.0.0) the NodePools are written in" in (
        finding.message
    )


def test_no_controller_in_the_namespace_warns(spot_free_stack: StackConfig) -> None:
    elsewhere = controller("1.14.1")
    elsewhere["metadata"]["namespace"] = "karpenter"

    (finding,) = controller_findings(existing(spot_free_stack), elsewhere)

    assert (finding.severity, finding.message) == (
        "warning",
        "No Karpenter controller Deployment in kube-system (gpu-platform:karpenter.namespace):"
        " the check cannot tell its release.",
    )


def test_the_controller_is_not_checked_where_the_platform_installs_it(
    spot_free_stack: StackConfig,
) -> None:
    assert controller_findings(spot_free_stack, controller("1.5.0")) == []


# --- The cluster's other NodePools --------------------------------------------------------------

POOLS_SUBJECT = "cluster ml-karpenter-dev NodePools"


def node_pool(name: str, weight: int | None = None, taint: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {}}}
    if weight is not None:
        spec["weight"] = weight
    if taint is not None:
        spec["template"]["spec"]["taints"] = [{"key": taint, "effect": "NoSchedule"}]
    return {"metadata": {"name": name}, "spec": spec}


def weight_findings(stack: StackConfig, *pools: dict[str, Any]) -> list[Finding]:
    found = karpenter_findings(
        stack, described_cluster("API"), None, None, MARK, None, lambda: list(pools)
    )
    return [f for f in found if f.subject == POOLS_SUBJECT]


def test_other_node_pools_at_or_below_the_gpu_pools_weight_warn(
    spot_free_stack: StackConfig,
) -> None:
    # karpenter-dev's highest pool is its Capacity Block pool, weight 40. Karpenter reads an
    # unset weight as 0 (`OrderByWeight`, kubernetes-sigs/karpenter
    # pkg/utils/nodepool/nodepool.go at v1.14.1, and the NodePool CRD's `weight`).
    (finding,) = weight_findings(
        spot_free_stack,
        node_pool("default"),
        node_pool("general", weight=40),
        node_pool("system", weight=41),
        node_pool("h100-block", weight=40, taint="nvidia.com/gpu"),
        node_pool("a100-team", taint="nvidia.com/gpu"),
    )

    assert finding == Finding(
        "warning",
        POOLS_SUBJECT,
        "NodePools without the GPU taint rank at or below the GPU pools' weight 40: default"
        " (weight 0), general (weight 40). A pod that tolerates the GPU taint and fits one of"
        " them would start a GPU node instead.",
        "Give them a weight above 40, e.g. 50 (spec.weight; docs/karpenter.md, Which pool a pod"
        " starts in).",
    )


def test_other_node_pools_above_the_gpu_pools_weight_are_ok(
    spot_free_stack: StackConfig,
) -> None:
    (finding,) = weight_findings(spot_free_stack, node_pool("default", weight=50))

    assert finding.severity == "ok"


def test_a_foreign_node_pool_named_like_a_pool_blocks(spot_free_stack: StackConfig) -> None:
    found = karpenter_findings(
        spot_free_stack,
        described_cluster("API"),
        None,
        None,
        MARK,
        None,
        lambda: [node_pool("l4-reserved", weight=50), node_pool("default", weight=50)],
    )

    (clash,) = [f for f in found if f.subject == "cluster ml-karpenter-dev NodePool names"]
    assert clash.severity == "blocking"
    assert clash.message.startswith(
        "The cluster has NodePools of another installation named like the pools: l4-reserved."
    )


def test_the_platforms_own_node_pool_is_no_clash(spot_free_stack: StackConfig) -> None:
    own = node_pool("l4-reserved", weight=30, taint="nvidia.com/gpu")
    own["spec"]["template"]["metadata"] = {"labels": {"gpu-platform.io/pool": "l4-reserved"}}

    found = karpenter_findings(
        spot_free_stack, described_cluster("API"), None, None, MARK, None, lambda: [own]
    )

    assert [f.subject for f in found] == ["cluster ml-karpenter-dev", POOLS_SUBJECT]


# --- The command's exit codes for these findings -------------------------------------------------


def refused(name: str) -> Any:
    response = requests.Response()
    response.status_code = 403
    raise requests.HTTPError(response=response)


@pytest.fixture
def command(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """`gpu-platform preflight karpenter-dev` whose EKS findings are these checks' on the cluster,
    IAM and CRDs given: (mode, iam, crds) -> the CLI's result."""

    def run(mode: str, iam: Any, crds: Callable[[str], Any] | None = None) -> Any:
        clients = AwsClients(
            boto3.client("eks", region_name="us-east-1"),
            boto3.client("ec2", region_name="us-east-1"),
            boto3.client("service-quotas", region_name="us-east-1"),
            boto3.client("resource-groups", region_name="us-east-1"),
        )
        monkeypatch.setattr(AwsClients, "for_region", classmethod(lambda cls, *_, **__: clients))
        monkeypatch.setattr(
            preflight_eks,
            "preflight",
            lambda config, _, mark: karpenter_findings(
                config, described_cluster(mode), iam, crds, mark
            ),
        )
        return CliRunner().invoke(app, ["preflight", "karpenter-dev"])

    return run


def test_a_config_map_cluster_exits_blocked(command: Callable[..., Any], iam: Any) -> None:
    result = command("CONFIG_MAP", with_spot_role(iam))

    assert result.exit_code == EXIT_BLOCKED, result.output


def test_a_missing_spot_role_exits_blocked(command: Callable[..., Any], iam: Any) -> None:
    result = command("API", iam)

    assert result.exit_code == EXIT_BLOCKED, result.output


def test_unreadable_crds_are_a_warning_that_exits_zero(
    command: Callable[..., Any], iam: Any
) -> None:
    result = command("API", with_spot_role(iam), refused)

    assert result.exit_code == 0, result.output
    assert "warning" in result.output


def test_iam_refusing_get_role_exits_cannot_check_naming_the_permission(
    command: Callable[..., Any],
) -> None:
    iam = boto3.client("iam", region_name="us-east-1")
    with Stubber(iam) as stubber:
        stubber.add_client_error("get_role", "AccessDenied", "not authorized", 403)

        result = command("API", iam)

    assert result.exit_code == EXIT_CANNOT_CHECK, result.output
    assert "AWS refused GetRole (AccessDenied" in result.output
    assert "iam:GetRole" in result.output


# --- The EFA pools' live EC2NodeClasses -------------------------------------------------------


def node_class(name: str, device_above_card_0: int, cards: int = 32) -> dict[str, Any]:
    """An EC2NodeClass as the cluster returns it, its `efa-only` interfaces of cards above 0 at
    `device_above_card_0`: 1 as earlier releases of the platform wrote it, 0 in AWS's layout
    (EC2 user guide, "Maximize network bandwidth on Amazon EC2 instances with multiple network
    cards")."""
    interfaces = [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}]
    interfaces += [
        {
            "networkCardIndex": card,
            "deviceIndex": device_above_card_0 if card else 1,
            "interfaceType": "efa-only",
        }
        for card in range(cards)
    ]
    return {"metadata": {"name": name}, "spec": {"networkInterfaces": interfaces}}


def layout_findings(stack: StackConfig, *classes: dict[str, Any]) -> list[Finding]:
    def read() -> list[dict[str, Any]]:
        return list(classes)

    found = karpenter_findings(stack, described_cluster("API"), None, None, MARK, node_classes=read)
    return [
        f
        for f in found
        if f.subject in ("pool h100-block", "cluster ml-karpenter-dev EC2NodeClasses")
    ]


def test_a_node_class_of_the_earlier_layout_warns_that_up_replaces_its_nodes(
    spot_free_stack: StackConfig,
) -> None:
    # `EC2NodeClass.Hash` hashes the whole spec, networkInterfaces included (no
    # `hash:"ignore"` tag; aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go at v1.14.1):
    # karpenter-dev's h100-block (32 EFA cards) drifts.
    (finding,) = layout_findings(
        spot_free_stack, node_class("h100-block", 1), node_class("other", 1)
    )

    label = "-l gpu-platform.io/pool=h100-block"
    assert finding == Finding(
        "warning",
        "pool h100-block",
        "EC2NodeClass h100-block's network interfaces differ from AWS's EFA layout, which `up`"
        " writes: it has efa-only at device 1 of cards 1-31 where `up` writes efa-only at device"
        " 0 of cards 1-31. Karpenter hashes the node class's whole spec (EC2NodeClass.Hash,"
        " aws/karpenter-provider-aws v1.14.1), so every running node of the pool drifts and is"
        " replaced within the pool's Drifted budget, its jobs drained (where its NodeClaim has a"
        " terminationGracePeriod, at its end even with do-not-disrupt pods).",
        # A node's own do-not-disrupt annotation blocks every disruption of it
        # (`ValidateNodeDisruptable`, kubernetes-sigs/karpenter
        # pkg/controllers/state/statenode.go), the grace period notwithstanding.
        f"Run `up` between jobs; or hold the replacement: kubectl annotate nodes {label}"
        f" karpenter.sh/do-not-disrupt=true before `up`, and kubectl annotate nodes {label}"
        " karpenter.sh/do-not-disrupt- once the jobs end (docs/karpenter.md, Upgrading a"
        " Karpenter stack to AWS's EFA layout).",
    )


def test_a_hand_edited_node_class_is_described_as_it_is(spot_free_stack: StackConfig) -> None:
    # Not every difference is an earlier release's layout: one card moved by hand.
    edited = node_class("h100-block", 0)
    edited["spec"]["networkInterfaces"][3]["deviceIndex"] = 2

    (finding,) = layout_findings(spot_free_stack, edited)

    assert finding.message.startswith(
        "EC2NodeClass h100-block's network interfaces differ from AWS's EFA layout, which `up`"
        " writes: it has efa-only at device 2 of card 2 where `up` writes efa-only at device 0"
        " of card 2. Karpenter"
    )


def test_a_node_class_of_aws_layout_or_none_yet_is_no_finding(
    spot_free_stack: StackConfig,
) -> None:
    # In any order the API server returns them.
    current = node_class("h100-block", 0)
    current["spec"]["networkInterfaces"].reverse()

    assert layout_findings(spot_free_stack, current) == []
    assert layout_findings(spot_free_stack) == []


def test_unreadable_node_classes_warn(spot_free_stack: StackConfig) -> None:
    def refused() -> list[dict[str, Any]]:
        raise requests.HTTPError("403 Forbidden")

    found = karpenter_findings(
        spot_free_stack, described_cluster("API"), None, None, MARK, node_classes=refused
    )

    (finding,) = [f for f in found if f.subject == "cluster ml-karpenter-dev EC2NodeClasses"]
    assert finding.severity == "warning"
    assert finding.message.startswith("Cannot read the cluster's EC2NodeClasses: 403 Forbidden.")

"""A cluster the platform creates (`cluster.create`, the eks-new stack): every object it declares
is a request the AWS APIs accept by botocore's models, at every supported Kubernetes version,
and the cluster has what the platform promises: nodes only in private subnets, Secrets
encrypted with a rotated KMS key, the endpoint access configured, audit logs, `API`
authentication with access entries, add-ons pinned for its Kubernetes version, and GPU pools
exactly as on a cluster the stack attaches to."""

import copy
import ipaddress
import json
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.eks.new_cluster.addon_pins import CORE_ADDONS
from gpu_platform.offline.plan import read_policy_config
from gpu_platform.offline.program import Plan, PlannedResource, run_program
from gpu_platform.stack_files import stack_config
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS
from tests.kubernetes_schemas import manifest, validate
from tests.repository import PROJECT

from .aws_api import request_problems
from .new_cluster_api import requests_for
from .plans import problems_of

Config = dict[str, Any]
NEW_CLUSTER = "gpu-platform:eks:NewCluster"
CLUSTER = "aws:eks/cluster:Cluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
SUBNET = "aws:ec2/subnet:Subnet"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
NAT = "aws:ec2/natGateway:NatGateway"
ADDON = "aws:eks/addon:Addon"
KMS_KEY = "aws:kms/key:Key"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
VPC_ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
# One AL2023 NVIDIA release of each supported minor whose driver the platform knows
# (gpu_platform/driver_tables/al2023-nvidia.json).
AL2023_RELEASES = {
    "1.33": "1.33.13-20260714",
    "1.34": "1.34.9-20260714",
    "1.35": "1.35.6-20260714",
    "1.36": "1.36.2-20260714",
}
# eks-new's public endpoint answers a documentation range (RFC 5737) its users replace.
EKS_NEW_CIDRS = ["203.0.113.0/24"]


def eks_new() -> Config:
    return copy.deepcopy(stack_config("eks-new", PROJECT))


def create_of(config: Config) -> Config:
    create: Config = config["gpu-platform:cluster"]["create"]
    return create


def on_version(version: str) -> Callable[[Config], None]:
    def change(config: Config) -> None:
        create_of(config)["kubernetesVersion"] = version
        config["gpu-platform:pools"][0]["aws"]["amiReleaseVersion"] = AL2023_RELEASES[version]

    return change


EXISTING_SUBNETS = [f"subnet-0123456789abcdef{i}" for i in range(3)]
VPN = "10.8.0.0/16"
RUNNERS = "sg-0123456789abcdef0"


def private_endpoint(config: Config) -> None:
    """A private endpoint reached from a VPN's range and a CI runner's group, in existing subnets:
    a new VPC is reached by nothing on its first `pulumi up`."""
    create_of(config)["endpoint"] = {"access": "private"}
    create_of(config)["aws"] = {
        "subnetIds": EXISTING_SUBNETS,
        "privateEndpointCidrs": [VPN],
        "privateEndpointSecurityGroupIds": [RUNNERS],
    }


def protected(config: Config) -> None:
    config["gpu-platform:protect"] = True


def on_karpenter(config: Config) -> None:
    config["gpu-platform:provisioner"] = "karpenter"


def on_auto_mode(config: Config) -> None:
    """EKS Auto Mode turned on at creation: its own AMIs, so no pinned release."""
    config["gpu-platform:provisioner"] = "eks-auto-mode"
    del config["gpu-platform:pools"][0]["aws"]["amiReleaseVersion"]


VARIANTS: dict[str, Callable[[Config], None]] = {
    **{f"kubernetes {v}": on_version(v) for v in SUPPORTED_KUBERNETES_VERSIONS},
    "private endpoint": private_endpoint,
    "protected": protected,
    "karpenter": on_karpenter,
    "auto mode": on_auto_mode,
}


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    found = {}
    for name, change in VARIANTS.items():
        config = eks_new()
        change(config)
        found[name] = run_program("eks-new", config=config, project=PROJECT)
    return found


@pytest.fixture(scope="module")
def plan(plans: dict[str, Plan]) -> Plan:
    return plans["kubernetes 1.35"]


def only(plan: Plan, type_: str) -> PlannedResource:
    [resource] = plan.of_type(type_)
    return resource


def descendants(plan: Plan, ancestor: PlannedResource) -> list[PlannedResource]:
    children = plan.children_of(ancestor)
    return [*children, *(d for child in children for d in descendants(plan, child))]


# --- Every created object against botocore's models ------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_aws_object_is_a_request_the_api_accepts(
    plans: dict[str, Plan], variant: str
) -> None:
    checked = set()
    plan = plans[variant]
    # The cluster's own objects; the GPU pools' are test_contract.py's.
    for resource in descendants(plan, only(plan, NEW_CLUSTER)):
        if not resource.type.startswith("aws:"):
            continue
        for service, operation, params in requests_for(resource):
            assert request_problems(service, operation, params) == [], (resource.name, operation)
        checked.add(resource.type)
    # The private endpoint's variant goes into existing subnets.
    network = set() if variant == "private endpoint" else {SUBNET, NAT, VPC_ENDPOINT}
    # Auto Mode's cluster has neither a system node group nor add-ons.
    nodes = {ROLE} if variant == "auto mode" else {NODE_GROUP, ADDON}
    assert {CLUSTER, KMS_KEY, ACCESS_ENTRY, SECURITY_GROUP, *nodes, *network} <= checked


# --- Nodes only in private subnets -------------------------------------------------------------


def private_subnet_urns(plan: Plan) -> set[str]:
    """The subnets whose route table sends nothing to an internet gateway (EKS user guide,
    network-reqs.adoc: a public subnet's route table has a route to an internet gateway)."""
    public_tables = {
        r.urn
        for r in plan.of_type(ROUTE_TABLE)
        if any("gatewayId" in route for route in r.inputs.get("routes", []))
    }
    tables_of = {
        a.property_dependencies["subnetId"][0]: a.property_dependencies["routeTableId"]
        for a in plan.of_type(ASSOCIATION)
    }
    return {subnet for subnet, tables in tables_of.items() if not set(tables) & public_tables}


@pytest.mark.parametrize("variant", ["kubernetes 1.35", "protected"])
def test_every_node_group_is_in_private_subnets_only(plans: dict[str, Plan], variant: str) -> None:
    plan = plans[variant]
    private = private_subnet_urns(plan)
    groups = plan.of_type(NODE_GROUP)

    assert len(groups) == 2  # the system nodes and the GPU pool
    for group in groups:
        assert set(group.property_dependencies["subnetIds"]) <= private, group.name
        assert len(group.inputs["subnetIds"]) == 3


def test_karpenter_launches_gpu_nodes_in_private_subnets_only(plans: dict[str, Plan]) -> None:
    plan = plans["karpenter"]
    [node_class] = plan.of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")

    chosen = set(node_class.property_dependencies["spec"]) & {r.urn for r in plan.of_type(SUBNET)}

    assert len(node_class.inputs["spec"]["subnetSelectorTerms"]) == 3
    assert len(chosen) == 3 and chosen <= private_subnet_urns(plan)


def test_karpenter_selects_the_created_subnets_by_ids_its_crd_takes(plans: dict[str, Plan]) -> None:
    # The pinned EC2NodeClass CRD takes `subnetSelectorTerms[].id` only as `subnet-[0-9a-z]+`,
    # EC2's shape (aws/karpenter-provider-aws pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml
    # at v1.14.1): the offline plan gives created subnets ids of that shape, as EC2 does.
    [node_class] = plans["karpenter"].of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")

    validate(manifest(node_class), "1.35")


def test_private_subnets_take_three_quarters_of_the_vpc_for_pods(plan: Plan) -> None:
    private = [r for r in plan.of_type(SUBNET) if r.urn in private_subnet_urns(plan)]

    assert (
        sorted(ipaddress.ip_network(r.inputs["cidrBlock"]).num_addresses for r in private)
        == [16384] * 3
    )
    assert {r.inputs["tags"]["kubernetes.io/role/internal-elb"] for r in private} == {"1"}
    assert not any(r.inputs["mapPublicIpOnLaunch"] for r in plan.of_type(SUBNET))


def test_subnets_carry_the_tags_load_balancers_and_karpenter_discover_them_by(plan: Plan) -> None:
    # aws-load-balancer-controller docs/deploy/subnet_discovery.md: `kubernetes.io/role/elb: 1`
    # for internet-facing load balancers, `kubernetes.io/role/internal-elb: 1` for internal
    # ones, `kubernetes.io/cluster/<cluster>` (shared or owned) for the cluster's subnets;
    # Karpenter's EC2NodeClass selects the private ones by `karpenter.sh/discovery`.
    private = private_subnet_urns(plan)
    tags = {
        ("private" if r.urn in private else "public", r.inputs["availabilityZone"]): {
            k: v
            for k, v in r.inputs["tags"].items()
            if k not in ("Name", "gpu-platform.io/cluster")
        }
        for r in plan.of_type(SUBNET)
    }

    for zone in ("us-east-1a", "us-east-1b", "us-east-1c"):
        assert tags[("public", zone)] == {
            "kubernetes.io/role/elb": "1",
            "kubernetes.io/cluster/ml-new": "shared",
        }
        assert tags[("private", zone)] == {
            "kubernetes.io/role/internal-elb": "1",
            "kubernetes.io/cluster/ml-new": "shared",
            "karpenter.sh/discovery": "ml-new",
        }


def test_the_system_nodes_root_volume_is_encrypted_gp3(plan: Plan) -> None:
    template = plan.named("cluster-system-launch-template", "aws:ec2/launchTemplate:LaunchTemplate")

    (volume,) = template.inputs["blockDeviceMappings"]
    assert volume["ebs"]["encrypted"] == "true"
    assert volume["ebs"]["volumeType"] == "gp3"


SYSTEM_NODE_GROUP = "cluster-system-nodes"


def test_the_system_nodes_follow_eks_newest_al2023_release_for_the_version(plan: Plan) -> None:
    # A managed node group takes a new AMI only when asked (EKS API, UpdateNodegroupVersion
    # `releaseVersion`); EKS publishes the newest release per version and AMI type as a public
    # SSM parameter (EKS user guide, retrieve-ami-id), which terraform-aws-eks's
    # `use_latest_ami_release_version` reads. The stand-in answers the newest 1.35 release.
    (lookup,) = [i for i in plan.invokes if i.token == "aws:ssm/getParameter:getParameter"]
    nodes = plan.named(SYSTEM_NODE_GROUP, NODE_GROUP)

    assert lookup.args["name"] == (
        "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/standard/recommended"
        "/release_version"
    )
    assert nodes.inputs["releaseVersion"] == "1.35.6-20260714"


def test_the_release_looked_up_is_that_of_the_clusters_version_and_the_nodes_architecture() -> None:
    config = eks_new()
    on_version("1.36")(config)
    create_of(config)["aws"] = {"systemNodes": {"instanceTypes": ["m7g.xlarge"]}}

    plan = run_program("eks-new", config=config, project=PROJECT)

    (lookup,) = [i for i in plan.invokes if i.token == "aws:ssm/getParameter:getParameter"]
    assert lookup.args["name"] == (
        "/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/arm64/standard/recommended"
        "/release_version"
    )
    nodes = plan.named(SYSTEM_NODE_GROUP, NODE_GROUP)
    assert (nodes.inputs["amiType"], nodes.inputs["releaseVersion"]) == (
        "AL2023_ARM_64_STANDARD",
        "1.36.2-20260714",
    )


def test_a_pinned_system_release_is_used_and_nothing_looked_up() -> None:
    config = eks_new()
    create_of(config)["aws"] = {"systemNodes": {"amiReleaseVersion": "1.35.5-20260625"}}

    plan = run_program("eks-new", config=config, project=PROJECT)

    assert plan.named(SYSTEM_NODE_GROUP, NODE_GROUP).inputs["releaseVersion"] == "1.35.5-20260625"
    assert not [i for i in plan.invokes if i.token == "aws:ssm/getParameter:getParameter"]


def test_the_system_nodes_are_repaired_by_eks(plan: Plan) -> None:
    # EKS node auto repair (CreateNodegroup `nodeRepairConfig`), as on the GPU node groups.
    nodes = plan.named(SYSTEM_NODE_GROUP, NODE_GROUP)

    assert nodes.inputs["nodeRepairConfig"] == {"enabled": True}


def test_a_new_release_of_the_system_nodes_waits_for_all_of_them(plan: Plan) -> None:
    # 4 nodes (`systemNodes.max`), one at a time (EKS user guide, managed-node-update-behavior:
    # 15 minutes' drain and 60 seconds per node; 15 for each start): 15 + 4 x 31 = 139 minutes,
    # x 1.25: past terraform-provider-aws node_group.go's 60-minute default.
    assert plan.named(SYSTEM_NODE_GROUP, NODE_GROUP).custom_timeouts == {"update": "174m"}


def test_a_dev_stack_has_one_nat_gateway_and_a_protected_one_one_per_zone(
    plans: dict[str, Plan],
) -> None:
    assert len(plans["kubernetes 1.35"].of_type(NAT)) == 1
    assert len(plans["protected"].of_type(NAT)) == 3


def test_s3_traffic_of_every_private_subnet_bypasses_the_nat_gateways(plan: Plan) -> None:
    # VPC user guide, "Gateway endpoints for Amazon S3": a gateway endpoint is a target in the
    # route tables given; ECR serves image layers from S3 (ECR user guide, vpc-endpoints).
    endpoint = only(plan, VPC_ENDPOINT)
    private_tables = {
        a.property_dependencies["routeTableId"][0]
        for a in plan.of_type(ASSOCIATION)
        if a.property_dependencies["subnetId"][0] in private_subnet_urns(plan)
    }

    assert (endpoint.inputs["serviceName"], endpoint.inputs["vpcEndpointType"]) == (
        "com.amazonaws.us-east-1.s3",
        "Gateway",
    )
    assert set(endpoint.property_dependencies["routeTableIds"]) == private_tables
    assert len(private_tables) == 3


# --- The control plane -------------------------------------------------------------------------


def bounded_roles_vpcs(plan: Plan) -> dict[str, str]:
    return {
        r.inputs["name"]: r.inputs["tags"].get("gpu-platform.io/vpc", "")
        for r in plan.of_type("aws:iam/role:Role")
        if "permissionsBoundary" in r.inputs
    }


def test_every_role_within_the_boundary_names_the_created_vpc(plan: Plan) -> None:
    # docs/iam/eks-permissions-boundary.json holds network interface actions to
    # `ec2:Vpc` = the role's `gpu-platform.io/vpc` tag: an empty tag matches no VPC, and the
    # VPC CNI's role could then give no pod an address. The stand-in VPC's id.
    vpcs = bounded_roles_vpcs(plan)

    assert {"ml-new.vpc-cni", "ml-new.system-nodes", "ml-new.pool-l4"} <= set(vpcs)
    assert set(vpcs.values()) == {"cluster-network-vpc-id"}


def test_in_existing_subnets_every_role_within_the_boundary_names_their_vpc() -> None:
    config = eks_new()
    create_of(config)["aws"] = {"subnetIds": EXISTING_SUBNETS}

    vpcs = bounded_roles_vpcs(run_program("eks-new", config=config, project=PROJECT))

    assert "ml-new.vpc-cni" in vpcs
    (vpc,) = set(vpcs.values())
    assert vpc.startswith("vpc-")


def test_the_vpcs_default_security_group_is_left_with_no_rule(plan: Plan) -> None:
    # EC2's default group admits all traffic among its members and all egress; the provider
    # removes every rule the inputs do not list (terraform-provider-aws
    # `aws_default_security_group`), as AWS Security Hub control EC2.2 asks.
    (group,) = plan.of_type("aws:ec2/defaultSecurityGroup:DefaultSecurityGroup")
    (vpc,) = plan.of_type("aws:ec2/vpc:Vpc")

    assert (group.inputs["ingress"], group.inputs["egress"]) == ([], [])
    assert group.property_dependencies["vpcId"] == (vpc.urn,)


def test_secrets_are_encrypted_with_a_rotated_key_of_the_stack(plan: Plan) -> None:
    cluster = only(plan, CLUSTER)
    key = only(plan, KMS_KEY)

    assert cluster.inputs["encryptionConfig"]["resources"] == ["secrets"]
    assert cluster.property_dependencies["encryptionConfig"] == (key.urn,)
    assert key.inputs["enableKeyRotation"] is True


def test_the_endpoint_is_private_unless_opened_to_the_cidrs_given(plans: dict[str, Plan]) -> None:
    private = only(plans["private endpoint"], CLUSTER).inputs["vpcConfig"]
    public = only(plans["kubernetes 1.35"], CLUSTER).inputs["vpcConfig"]

    assert (private["endpointPrivateAccess"], private["endpointPublicAccess"]) == (True, False)
    assert "publicAccessCidrs" not in private
    assert (public["endpointPublicAccess"], public["publicAccessCidrs"]) == (True, EKS_NEW_CIDRS)


def test_the_private_endpoint_admits_the_networks_and_groups_given_on_443_only(
    plans: dict[str, Plan],
) -> None:
    plan = plans["private endpoint"]
    [group] = plan.of_type(SECURITY_GROUP)
    cluster = only(plan, CLUSTER)

    # EKS user guide, cluster-endpoint.adoc: "You must ensure that your Amazon EKS control plane
    # security group contains rules to allow ingress traffic on port 443"; a group of the control
    # plane's own, as terraform-aws-eks v21 main.tf `aws_security_group.cluster` with
    # `security_group_additional_rules`, attached through `vpc_config.security_group_ids`.
    assert cluster.property_dependencies["vpcConfig"] == (group.urn,)
    assert [
        (
            rule["protocol"],
            rule["fromPort"],
            rule["toPort"],
            rule.get("cidrBlocks"),
            rule.get("securityGroups"),
        )
        for rule in group.inputs["ingress"]
    ] == [("tcp", 443, 443, [VPN], None), ("tcp", 443, 443, None, [RUNNERS])]
    assert "egress" not in group.inputs
    # In the subnets' VPC (the stand-in's), which the cluster goes into.
    assert group.inputs["vpcId"].startswith("vpc-")


def test_without_private_sources_the_control_planes_group_stays_with_no_rules(
    plans: dict[str, Plan],
) -> None:
    # The sources emptied on a cluster that had some: its `vpcConfig.securityGroupIds` must not
    # change, as terraform-provider-aws sends an update of it as UpdateClusterConfig with the
    # new set (internal/service/eks/cluster.go, `vpc_config.0.security_group_ids`), here none.
    without = plans["kubernetes 1.35"]
    [group] = without.of_type(SECURITY_GROUP)
    cluster = only(without, CLUSTER)
    opened = only(plans["private endpoint"], CLUSTER)
    assert group.urn in cluster.property_dependencies["vpcConfig"]
    [group_id] = cluster.inputs["vpcConfig"]["securityGroupIds"]
    assert group_id.startswith("sg-")
    assert opened.inputs["vpcConfig"]["securityGroupIds"] == [group_id]
    # `ingress` given empty, not left out: a group without it keeps the rules it has
    # (terraform-provider-aws issue #644; pulumi/pulumi issue #2675).
    assert group.inputs["ingress"] == []


def test_a_private_endpoint_in_the_vpc_the_first_run_creates_is_refused_by_key() -> None:
    config = eks_new()
    create_of(config)["endpoint"] = {"access": "private"}
    create_of(config)["aws"] = {"privateEndpointCidrs": [VPN]}

    problems = problems_of(run_program("eks-new", config, PROJECT, raise_errors=False))

    assert problems["gpu-platform:cluster.create.endpoint.access"].startswith(
        "public, with endpoint.publicCidrs, for the first `pulumi up`"
    )


def test_access_is_by_access_entries_only(plan: Plan) -> None:
    cluster = only(plan, CLUSTER).inputs

    assert cluster["accessConfig"] == {
        "authenticationMode": "API",
        "bootstrapClusterCreatorAdminPermissions": False,
    }
    assert cluster["bootstrapSelfManagedAddons"] is False


def test_the_audit_api_and_authenticator_logs_are_kept_by_default(plan: Plan) -> None:
    # terraform-aws-eks variables.tf (v21), `enabled_log_types`: ["audit", "api",
    # "authenticator"]; the controller manager's and scheduler's are left out.
    logs = only(plan, CLUSTER).inputs["enabledClusterLogTypes"]

    assert sorted(logs) == ["api", "audit", "authenticator"]


def test_the_cluster_leaves_extended_support_off_unless_asked(plan: Plan) -> None:
    # botocore EKS UpgradePolicyRequest `supportType`: "The default value is EXTENDED";
    # left unset, a cluster would move to extended support's higher price by itself.
    assert only(plan, CLUSTER).inputs["upgradePolicy"] == {"supportType": "STANDARD"}


def test_the_deployer_and_the_administrators_get_access_entries(plan: Plan) -> None:
    principals = {r.inputs["principalArn"] for r in plan.of_type(ACCESS_ENTRY)}

    # The stand-in deployer is a session of the role gpu-platform-deploy
    # (gpu_platform/offline/stand_ins/aws.py): its entry names the role, not the session.
    assert principals == {
        "arn:aws:iam::123456789012:role/gpu-platform-deploy",
        "arn:aws:iam::123456789012:role/platform-admins",
    }


def test_a_protected_stack_protects_the_cluster_and_its_key(plans: dict[str, Plan]) -> None:
    plan = plans["protected"]

    assert only(plan, CLUSTER).protect and only(plan, KMS_KEY).protect
    assert only(plan, CLUSTER).inputs["deletionProtection"] is True
    assert not only(plans["kubernetes 1.35"], CLUSTER).protect


# --- Add-ons -----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_core_addon_is_pinned_for_the_clusters_version(
    plans: dict[str, Plan], version: str
) -> None:
    plan = plans[f"kubernetes {version}"]
    pinned = {
        r.inputs["addonName"]: r.inputs["addonVersion"]
        for r in plan.children_of(only(plan, NEW_CLUSTER))
        if r.type == ADDON
    }

    assert set(pinned) == set(CORE_ADDONS)
    assert only(plan, CLUSTER).inputs["version"] == version
    # kube-proxy is built per Kubernetes minor, and must be the cluster's (EKS user guide,
    # managing-kube-proxy.adoc: "the same minor version as your cluster").
    assert pinned["kube-proxy"].startswith(f"v{version}.")


def test_the_vpc_cni_enforces_network_policies_and_no_other_core_addon_is_configured(
    plan: Plan,
) -> None:
    configured = {
        r.inputs["addonName"]: r.inputs.get("configurationValues")
        for r in plan.of_type(ADDON)
        if r.inputs["addonName"] in CORE_ADDONS
    }

    # EKS user guide, cni-network-policy-configure.adoc: `{ "enableNetworkPolicy": "true" }`,
    # a string as aws/amazon-vpc-cni-k8s v1.21.1 charts/aws-vpc-cni/values.yaml declares it
    # (`enableNetworkPolicy: "false"` by default), which the pinned v1.21.1 passes on as the
    # node agent's `--enable-network-policy` (templates/daemonset.yaml).
    assert configured == {
        "vpc-cni": '{"enableNetworkPolicy": "true"}',
        "kube-proxy": None,
        "eks-pod-identity-agent": None,
        "coredns": None,
        "aws-ebs-csi-driver": None,
    }


def test_the_vpc_cni_configuration_given_is_sent_with_the_network_policy_agent() -> None:
    # botocore EKS UpdateAddonRequest `configurationValues` is the add-on's whole
    # configuration, sent with `resolveConflicts: OVERWRITE`: what the add-on had by hand is
    # replaced, so the user's values go in the same document. Prefix delegation as the EKS user
    # guide sets it (cni-increase-ip-addresses.adoc: `ENABLE_PREFIX_DELEGATION` "true" in the
    # add-on's `env`).
    config = eks_new()
    create_of(config).setdefault("aws", {})["vpcCniConfiguration"] = {
        "env": {"ENABLE_PREFIX_DELEGATION": "true", "WARM_PREFIX_TARGET": "1"}
    }

    plan = run_program("eks-new", config=config, project=PROJECT)

    [cni] = [r for r in plan.of_type(ADDON) if r.inputs["addonName"] == "vpc-cni"]
    assert json.loads(cni.inputs["configurationValues"]) == {
        "env": {"ENABLE_PREFIX_DELEGATION": "true", "WARM_PREFIX_TARGET": "1"},
        "enableNetworkPolicy": "true",
    }


def test_the_nodes_cni_and_the_pod_identity_agent_come_before_the_system_nodes(plan: Plan) -> None:
    system = plan.named("cluster-system-nodes", NODE_GROUP)
    addons = {r.inputs["addonName"]: r.urn for r in plan.of_type(ADDON)}

    assert {addons["vpc-cni"], addons["kube-proxy"], addons["eks-pod-identity-agent"]} <= set(
        system.dependencies
    )


# --- GPU pools as on an existing cluster -------------------------------------------------------


def test_gpu_pools_are_those_of_the_same_stack_on_an_existing_cluster(plan: Plan) -> None:
    attached = eks_new()
    del attached["gpu-platform:cluster"]["create"]
    existing = run_program("eks-new", config=attached, project=PROJECT)

    def gpu_pool(p: Plan) -> tuple[dict[str, Any], dict[str, Any]]:
        group = p.named("l4-nodes", NODE_GROUP).inputs
        template = p.named("l4-launch-template", "aws:ec2/launchTemplate:LaunchTemplate").inputs
        return {k: v for k, v in group.items() if k != "subnetIds"}, template

    assert gpu_pool(plan) == gpu_pool(existing)


# --- EKS Auto Mode turned on at creation -------------------------------------------------------

AUTO_MODE_NODE_ROLE = "ml-new.auto-mode-nodes"
# The EKS user guide, automode-get-started-cli.adoc ("IAM Roles for EKS Auto Mode Clusters"):
# the cluster role's policies, and the node role's.
AUTO_MODE_CLUSTER_POLICIES = {
    "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",
    "arn:aws:iam::aws:policy/AmazonEKSComputePolicy",
    "arn:aws:iam::aws:policy/AmazonEKSBlockStoragePolicy",
    "arn:aws:iam::aws:policy/AmazonEKSLoadBalancingPolicy",
    "arn:aws:iam::aws:policy/AmazonEKSNetworkingPolicy",
}
AUTO_MODE_NODE_POLICIES = {
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodeMinimalPolicy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
}


def attached(plan: Plan, role: str) -> set[str]:
    return {r.inputs["policyArn"] for r in plan.of_type(ATTACHMENT) if r.inputs["role"] == role}


def test_auto_mode_turns_compute_storage_and_load_balancing_on_together(
    plans: dict[str, Plan],
) -> None:
    # auto-enable-existing.adoc: "The compute, block storage, and load balancing capabilities
    # must all be enabled or disabled in the same request"; set-builtin-node-pools.adoc: the
    # built-in `general-purpose` pool has no taint, and the platform's own pods run there.
    cluster = only(plans["auto mode"], CLUSTER).inputs

    assert cluster["computeConfig"] == {
        "enabled": True,
        "nodePools": ["general-purpose"],
        "nodeRoleArn": f"arn:aws:iam::123456789012:role/{AUTO_MODE_NODE_ROLE}",
    }
    assert cluster["kubernetesNetworkConfig"] == {"elasticLoadBalancing": {"enabled": True}}
    assert cluster["storageConfig"] == {"blockStorage": {"enabled": True}}
    assert cluster["accessConfig"]["authenticationMode"] == "API"
    assert cluster["bootstrapSelfManagedAddons"] is False


def test_without_auto_mode_the_cluster_has_none_of_its_settings(plan: Plan) -> None:
    cluster = only(plan, CLUSTER).inputs

    assert {"computeConfig", "kubernetesNetworkConfig", "storageConfig"} & set(cluster) == set()
    assert attached(plan, "ml-new.cluster") == {"arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"}


def test_auto_modes_roles_have_the_policies_aws_documents(plans: dict[str, Plan]) -> None:
    plan = plans["auto mode"]
    [node_role] = [r for r in plan.of_type(ROLE) if r.inputs["name"] == AUTO_MODE_NODE_ROLE]

    assert attached(plan, "ml-new.cluster") == AUTO_MODE_CLUSTER_POLICIES
    assert attached(plan, AUTO_MODE_NODE_ROLE) == AUTO_MODE_NODE_POLICIES
    assert json.loads(node_role.inputs["assumeRolePolicy"])["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "ec2.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ]
    # Both policies' actions (Pod Identity's AssumeRoleForPodIdentity, ECR pulls) are within the
    # platform's boundary (docs/iam/eks-permissions-boundary.json, statement `Read`).
    assert node_role.inputs["permissionsBoundary"] == (
        "arn:aws:iam::123456789012:policy/gpu-platform-permissions-boundary"
    )


def test_the_cluster_waits_for_its_roles_auto_mode_policies(plans: dict[str, Plan]) -> None:
    # Created before the cluster and deleted after it, as its AmazonEKSClusterPolicy is: EKS
    # needs them to clean up the instances, volumes and load balancers Auto Mode made, and
    # Auto Mode's nodes theirs until the cluster is gone.
    plan = plans["auto mode"]
    policies = {
        r.urn
        for r in plan.of_type(ATTACHMENT)
        if r.inputs["role"] in ("ml-new.cluster", AUTO_MODE_NODE_ROLE)
    }

    assert len(policies) == 7
    assert policies <= set(only(plan, CLUSTER).dependencies)


def test_an_auto_mode_cluster_installs_no_node_group_add_on_or_cni_role(
    plans: dict[str, Plan],
) -> None:
    # automode.adoc, "Managed Components" and "Identity and Access Management": Pod IP
    # addresses, local DNS and EBS CSI storage are Auto Mode's, and no Pod Identity agent is
    # needed.
    plan = plans["auto mode"]

    assert plan.of_type(NODE_GROUP) == plan.of_type(ADDON) == []
    assert [r.inputs["name"] for r in plan.of_type(ROLE)] == [
        "ml-new.auto-mode-nodes",
        "ml-new.cluster",
    ]


def test_auto_mode_pools_run_as_the_created_node_role(plans: dict[str, Plan]) -> None:
    [node_class] = plans["auto mode"].of_type("kubernetes:eks.amazonaws.com/v1:NodeClass")

    assert node_class.inputs["spec"]["role"] == AUTO_MODE_NODE_ROLE


def test_a_created_auto_mode_cluster_plans_with_no_mandatory_violation(
    plans: dict[str, Plan], analyze_plan: Callable[..., list[Any]]
) -> None:
    config = read_policy_config(PROJECT.directory / "policy-config", "eks-new", None)

    verdicts = analyze_plan(plans["auto mode"].resources, config=config)

    assert [v for v in verdicts if v.mandatory] == []


def test_a_created_auto_mode_cluster_enforces_network_policies(plans: dict[str, Plan]) -> None:
    # The vpc-cni add-on's enableNetworkPolicy is gone with the add-on; Auto Mode enforces
    # NetworkPolicies once this ConfigMap key is "true" (awsdocs/amazon-eks-user-guide
    # latest/ug/automode/auto-net-pol.adoc, "Step 1: Enable Network Policy Controller").
    [patch] = plans["auto mode"].of_type("kubernetes:core/v1:ConfigMapPatch")

    assert patch.inputs["metadata"] == {"name": "amazon-vpc-cni", "namespace": "kube-system"}
    assert patch.inputs["data"] == {"enable-network-policy-controller": "true"}

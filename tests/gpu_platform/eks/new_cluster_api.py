"""The API calls the AWS provider would make for the objects of a cluster the platform creates:
each declared resource translated into the requests of its create call (and of the calls that
set what the create call cannot), to be checked against botocore's models with
`aws_api.request_problems`.

An input a translation does not know fails the test, so that a new property cannot slip past
the contract unchecked. Inputs that name another resource's output hold the stand-in value the
offline plan gives it.
"""

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gpu_platform.offline.program import PlannedResource

from .aws_api import create_launch_template_request, create_nodegroup_request

Request = tuple[str, str, dict[str, Any]]
"""(botocore service, operation, parameters)."""


def _known(resource: PlannedResource, keys: set[str]) -> dict[str, Any]:
    unknown = set(resource.inputs) - keys - {"region"}
    if unknown:
        raise KeyError(f"{resource.type} inputs {sorted(unknown)} have no translation")
    # The region picks the client; it is no parameter.
    return {k: v for k, v in resource.inputs.items() if k != "region"}


def _ec2_tags(kind: str, tags: Mapping[str, str] | None) -> list[dict[str, Any]]:
    if not tags:
        return []
    return [{"ResourceType": kind, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


def _vpc(r: PlannedResource) -> Iterator[Request]:
    i = _known(r, {"cidrBlock", "enableDnsHostnames", "enableDnsSupport", "tags"})
    yield (
        "ec2",
        "CreateVpc",
        {"CidrBlock": i["cidrBlock"], "TagSpecifications": _ec2_tags("vpc", i.get("tags"))},
    )
    for key, member in (
        ("enableDnsHostnames", "EnableDnsHostnames"),
        ("enableDnsSupport", "EnableDnsSupport"),
    ):
        yield "ec2", "ModifyVpcAttribute", {"VpcId": "vpc-0", member: {"Value": i[key]}}


def _subnet(r: PlannedResource) -> Iterator[Request]:
    i = _known(r, {"vpcId", "cidrBlock", "availabilityZone", "mapPublicIpOnLaunch", "tags"})
    yield (
        "ec2",
        "CreateSubnet",
        {
            "VpcId": i["vpcId"],
            "CidrBlock": i["cidrBlock"],
            "AvailabilityZone": i["availabilityZone"],
            "TagSpecifications": _ec2_tags("subnet", i.get("tags")),
        },
    )
    yield (
        "ec2",
        "ModifySubnetAttribute",
        {
            "SubnetId": "subnet-0",
            "MapPublicIpOnLaunch": {"Value": i["mapPublicIpOnLaunch"]},
        },
    )


def _internet_gateway(r: PlannedResource) -> Iterator[Request]:
    i = _known(r, {"vpcId", "tags"})
    yield (
        "ec2",
        "CreateInternetGateway",
        {"TagSpecifications": _ec2_tags("internet-gateway", i.get("tags"))},
    )
    yield "ec2", "AttachInternetGateway", {"InternetGatewayId": "igw-0", "VpcId": i["vpcId"]}


def _default_security_group(r: PlannedResource) -> Iterator[Request]:
    # terraform-provider-aws `aws_default_security_group`: it finds the VPC's group named
    # `default`, revokes every rule the group holds that the inputs do not list (none are
    # listed here), and tags it.
    i = _known(r, {"vpcId", "ingress", "egress", "tags"})
    assert (i.get("ingress", []), i.get("egress", [])) == ([], [])
    yield (
        "ec2",
        "DescribeSecurityGroups",
        {
            "Filters": [
                {"Name": "vpc-id", "Values": [i["vpcId"]]},
                {"Name": "group-name", "Values": ["default"]},
            ]
        },
    )
    tags = [{"Key": k, "Value": v} for k, v in sorted(i.get("tags", {}).items())]
    yield "ec2", "CreateTags", {"Resources": ["sg-0"], "Tags": tags}


def _security_group(r: PlannedResource) -> Iterator[Request]:
    # terraform-provider-aws `aws_security_group`: CreateSecurityGroup (a generated name where
    # none is given), then one Authorize call per direction with its inline rules.
    i = _known(r, {"description", "vpcId", "ingress", "egress", "tags"})
    yield (
        "ec2",
        "CreateSecurityGroup",
        {
            "GroupName": f"{r.name}-generated",
            "Description": i["description"],
            "VpcId": i["vpcId"],
            "TagSpecifications": _ec2_tags("security-group", i.get("tags")),
        },
    )
    for key, operation in (
        ("ingress", "AuthorizeSecurityGroupIngress"),
        ("egress", "AuthorizeSecurityGroupEgress"),
    ):
        if i.get(key):
            permissions = [_ip_permission(rule) for rule in i[key]]
            yield "ec2", operation, {"GroupId": "sg-0", "IpPermissions": permissions}


def _ip_permission(rule: dict[str, Any]) -> dict[str, Any]:
    described = {"Description": rule["description"]} if "description" in rule else {}
    groups = [*rule.get("securityGroups", []), *(["sg-0"] if rule.get("self") else [])]
    return {
        "IpProtocol": rule["protocol"],
        "FromPort": rule["fromPort"],
        "ToPort": rule["toPort"],
        "IpRanges": [{"CidrIp": cidr, **described} for cidr in rule.get("cidrBlocks", [])],
        "UserIdGroupPairs": [{"GroupId": group, **described} for group in groups],
    }


_ROUTE_TARGETS = {"gatewayId": "GatewayId", "natGatewayId": "NatGatewayId"}


def _route_table(r: PlannedResource) -> Iterator[Request]:
    i = _known(r, {"vpcId", "routes", "tags"})
    yield (
        "ec2",
        "CreateRouteTable",
        {"VpcId": i["vpcId"], "TagSpecifications": _ec2_tags("route-table", i.get("tags"))},
    )
    for route in i.get("routes", []):
        params = {"RouteTableId": "rtb-0", "DestinationCidrBlock": route["cidrBlock"]}
        for key, value in route.items():
            if key != "cidrBlock":
                params[_ROUTE_TARGETS[key]] = value
        yield "ec2", "CreateRoute", params


def _route_table_association(r: PlannedResource) -> Iterator[Request]:
    i = _known(r, {"subnetId", "routeTableId"})
    yield (
        "ec2",
        "AssociateRouteTable",
        {"SubnetId": i["subnetId"], "RouteTableId": i["routeTableId"]},
    )


def _vpc_endpoint(r: PlannedResource) -> Iterator[Request]:
    i = _known(r, {"vpcId", "serviceName", "vpcEndpointType", "routeTableIds", "tags"})
    params = {key[0].upper() + key[1:]: value for key, value in i.items() if key != "tags"}
    yield (
        "ec2",
        "CreateVpcEndpoint",
        params | {"TagSpecifications": _ec2_tags("vpc-endpoint", i.get("tags"))},
    )


def _eip(r: PlannedResource) -> Iterator[Request]:
    i = _known(r, {"domain", "tags"})
    yield (
        "ec2",
        "AllocateAddress",
        {"Domain": i["domain"], "TagSpecifications": _ec2_tags("elastic-ip", i.get("tags"))},
    )


def _nat_gateway(r: PlannedResource) -> Iterator[Request]:
    i = _known(r, {"allocationId", "subnetId", "connectivityType", "tags"})
    yield (
        "ec2",
        "CreateNatGateway",
        {
            "AllocationId": i["allocationId"],
            "SubnetId": i["subnetId"],
            "ConnectivityType": i["connectivityType"],
            "TagSpecifications": _ec2_tags("natgateway", i.get("tags")),
        },
    )


def _cluster(r: PlannedResource) -> Iterator[Request]:
    i = _known(
        r,
        {
            "name",
            "version",
            "roleArn",
            "vpcConfig",
            "accessConfig",
            "bootstrapSelfManagedAddons",
            "encryptionConfig",
            "enabledClusterLogTypes",
            "deletionProtection",
            "upgradePolicy",
            "computeConfig",
            "kubernetesNetworkConfig",
            "storageConfig",
            "tags",
        },
    )
    encryption = i["encryptionConfig"]
    # EKS Auto Mode's settings, sent as they are named (terraform-provider-aws
    # internal/service/eks/cluster.go: `computeConfig`, `kubernetesNetworkConfig`,
    # `storageConfig` of CreateClusterInput).
    auto_mode: dict[str, Any] = {
        key: i[key]
        for key in ("computeConfig", "kubernetesNetworkConfig", "storageConfig")
        if key in i
    }
    yield (
        "eks",
        "CreateCluster",
        {
            "name": i["name"],
            "version": i["version"],
            "roleArn": i["roleArn"],
            "resourcesVpcConfig": i["vpcConfig"],
            "accessConfig": i["accessConfig"],
            "bootstrapSelfManagedAddons": i["bootstrapSelfManagedAddons"],
            "encryptionConfig": [
                {"resources": encryption["resources"], "provider": encryption["provider"]}
            ],
            "logging": {
                "clusterLogging": [{"types": i["enabledClusterLogTypes"], "enabled": True}]
            },
            "deletionProtection": i["deletionProtection"],
            "upgradePolicy": i["upgradePolicy"],
            "tags": i.get("tags", {}),
            **auto_mode,
        },
    )


def _as_is(operation: str, keys: set[str]) -> Callable[[PlannedResource], Iterator[Request]]:
    """An EKS resource whose inputs are its create call's parameters, by the same names."""

    def translate(r: PlannedResource) -> Iterator[Request]:
        yield "eks", operation, _known(r, keys)

    return translate


def _addon(r: PlannedResource) -> Iterator[Request]:
    i = _known(
        r,
        {
            "clusterName",
            "addonName",
            "addonVersion",
            "resolveConflictsOnCreate",
            "resolveConflictsOnUpdate",
            "podIdentityAssociations",
            "configurationValues",
        },
    )
    params = {
        "clusterName": i["clusterName"],
        "addonName": i["addonName"],
        "addonVersion": i["addonVersion"],
    }
    for key in ("podIdentityAssociations", "configurationValues"):
        if key in i:
            params[key] = i[key]
    if "resolveConflictsOnCreate" in i:
        params["resolveConflicts"] = i["resolveConflictsOnCreate"]
    yield "eks", "CreateAddon", params
    update = {"clusterName": i["clusterName"], "addonName": i["addonName"]}
    if "resolveConflictsOnUpdate" in i:
        update["resolveConflicts"] = i["resolveConflictsOnUpdate"]
    yield "eks", "UpdateAddon", update


def _node_group(r: PlannedResource) -> Iterator[Request]:
    yield "eks", "CreateNodegroup", create_nodegroup_request(r.name, r.inputs)


def _launch_template(r: PlannedResource) -> Iterator[Request]:
    yield "ec2", "CreateLaunchTemplate", create_launch_template_request(r.name, r.inputs)


def _kms_key(r: PlannedResource) -> Iterator[Request]:
    i = _known(
        r,
        {
            "description",
            "keyUsage",
            "customerMasterKeySpec",
            "enableKeyRotation",
            "deletionWindowInDays",
            "tags",
        },
    )
    yield (
        "kms",
        "CreateKey",
        {
            "Description": i["description"],
            "KeyUsage": i["keyUsage"],
            "KeySpec": i["customerMasterKeySpec"],
            "Tags": [{"TagKey": k, "TagValue": v} for k, v in i.get("tags", {}).items()],
        },
    )
    if i["enableKeyRotation"]:
        yield "kms", "EnableKeyRotation", {"KeyId": "1234abcd-12ab-34cd-56ef-1234567890ab"}
    yield (
        "kms",
        "ScheduleKeyDeletion",
        {
            "KeyId": "1234abcd-12ab-34cd-56ef-1234567890ab",
            "PendingWindowInDays": int(i["deletionWindowInDays"]),
        },
    )


def _kms_alias(r: PlannedResource) -> Iterator[Request]:
    i = _known(r, {"name", "targetKeyId"})
    yield "kms", "CreateAlias", {"AliasName": i["name"], "TargetKeyId": i["targetKeyId"]}


def _log_group(r: PlannedResource) -> Iterator[Request]:
    i = _known(r, {"name", "retentionInDays", "tags"})
    yield "logs", "CreateLogGroup", {"logGroupName": i["name"], "tags": i.get("tags", {})}
    yield (
        "logs",
        "PutRetentionPolicy",
        {
            "logGroupName": i["name"],
            "retentionInDays": int(i["retentionInDays"]),
        },
    )


def _role(r: PlannedResource) -> Iterator[Request]:
    i = _known(r, {"name", "description", "assumeRolePolicy", "permissionsBoundary", "tags"})
    params = {
        "RoleName": i.get("name", r.name),
        "Description": i["description"],
        "AssumeRolePolicyDocument": i["assumeRolePolicy"],
        "Tags": [{"Key": k, "Value": v} for k, v in i.get("tags", {}).items()],
    }
    if "permissionsBoundary" in i:
        params["PermissionsBoundary"] = i["permissionsBoundary"]
    json.loads(params["AssumeRolePolicyDocument"])
    yield "iam", "CreateRole", params


def _role_policy(r: PlannedResource) -> Iterator[Request]:
    i = _known(r, {"role", "policy"})
    yield (
        "iam",
        "PutRolePolicy",
        {
            "RoleName": i["role"],
            "PolicyName": r.name,
            "PolicyDocument": i["policy"],
        },
    )


def _role_policy_attachment(r: PlannedResource) -> Iterator[Request]:
    i = _known(r, {"role", "policyArn"})
    yield "iam", "AttachRolePolicy", {"RoleName": i["role"], "PolicyArn": i["policyArn"]}


TRANSLATIONS: dict[str, Callable[[PlannedResource], Iterator[Request]]] = {
    "aws:ec2/vpc:Vpc": _vpc,
    "aws:ec2/subnet:Subnet": _subnet,
    "aws:ec2/internetGateway:InternetGateway": _internet_gateway,
    "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup": _default_security_group,
    "aws:ec2/securityGroup:SecurityGroup": _security_group,
    "aws:ec2/routeTable:RouteTable": _route_table,
    "aws:ec2/routeTableAssociation:RouteTableAssociation": _route_table_association,
    "aws:ec2/eip:Eip": _eip,
    "aws:ec2/vpcEndpoint:VpcEndpoint": _vpc_endpoint,
    "aws:ec2/natGateway:NatGateway": _nat_gateway,
    "aws:ec2/launchTemplate:LaunchTemplate": _launch_template,
    "aws:eks/cluster:Cluster": _cluster,
    "aws:eks/accessEntry:AccessEntry": _as_is(
        "CreateAccessEntry", {"clusterName", "principalArn", "type", "tags"}
    ),
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": _as_is(
        "AssociateAccessPolicy", {"clusterName", "principalArn", "policyArn", "accessScope"}
    ),
    "aws:eks/addon:Addon": _addon,
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": _as_is(
        "CreatePodIdentityAssociation", {"clusterName", "namespace", "serviceAccount", "roleArn"}
    ),
    "aws:eks/nodeGroup:NodeGroup": _node_group,
    "aws:kms/key:Key": _kms_key,
    "aws:kms/alias:Alias": _kms_alias,
    "aws:cloudwatch/logGroup:LogGroup": _log_group,
    "aws:iam/role:Role": _role,
    "aws:iam/rolePolicy:RolePolicy": _role_policy,
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": _role_policy_attachment,
}


def requests_for(resource: PlannedResource) -> list[Request]:
    """The calls that create `resource`; KeyError for a type without a translation."""
    return list(TRANSLATIONS[resource.type](resource))

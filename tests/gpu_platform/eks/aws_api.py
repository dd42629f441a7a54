"""What the AWS provider would send for a declared resource, checked against botocore's models.

`create_nodegroup_request` and `create_launch_template_request` translate the engine inputs of
an `aws:eks/nodeGroup:NodeGroup` and an `aws:ec2/launchTemplate:LaunchTemplate` into the
parameters of EKS `CreateNodegroup` and EC2 `CreateLaunchTemplate`. An input the translation
does not know fails the test, so a new property cannot slip past the contract unchecked.
`request_problems` validates parameters against the operation's input shape: botocore's own
validator (member names, types, required members, minimums) and, as botocore leaves them to the
service, enums and maximums.
"""

from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import botocore.session
from botocore.model import ListShape, MapShape, ServiceModel, Shape, StructureShape
from botocore.validate import ParamValidator

# Engine input -> CreateNodegroup parameter; `region` picks the client, it is not sent.
_NODE_GROUP_PARAMS = {
    "clusterName": "clusterName",
    "nodeRoleArn": "nodeRole",
    "subnetIds": "subnets",
    "amiType": "amiType",
    "releaseVersion": "releaseVersion",
    "version": "version",
    "instanceTypes": "instanceTypes",
    "capacityType": "capacityType",
    "scalingConfig": "scalingConfig",
    "updateConfig": "updateConfig",
    "nodeRepairConfig": "nodeRepairConfig",
    "labels": "labels",
    "taints": "taints",
    "launchTemplate": "launchTemplate",
    "tags": "tags",
    "diskSize": "diskSize",
}
_INTEGERS = {
    "minSize",
    "maxSize",
    "desiredSize",
    "maxUnavailable",
    "maxUnavailablePercentage",
    "maxParallelNodesRepairedCount",
    "maxUnhealthyNodeThresholdPercentage",
    "maxUnhealthyNodeThresholdCount",
    "minRepairWaitTimeMins",
}

# Engine input -> CreateLaunchTemplate LaunchTemplateData member.
_LAUNCH_TEMPLATE_DATA = {
    "metadataOptions": "MetadataOptions",
    "blockDeviceMappings": "BlockDeviceMappings",
    "tagSpecifications": "TagSpecifications",
    "instanceMarketOptions": "InstanceMarketOptions",
    "capacityReservationSpecification": "CapacityReservationSpecification",
    "userData": "UserData",
    "networkInterfaces": "NetworkInterfaces",
    "placement": "Placement",
}
# Where the provider's name for a member differs from EC2's, not only in its first letter.
_EC2_NAMES = {"securityGroups": "Groups"}
# The provider's tri-state strings for EBS flags become booleans on the wire.
_EBS_FLAGS = {"encrypted", "deleteOnTermination"}


@cache
def service_model(service: str) -> ServiceModel:
    return botocore.session.get_session().get_service_model(service)


def create_nodegroup_request(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    request: dict[str, Any] = {}
    for key, value in inputs.items():
        if key == "region":
            continue
        if key in ("nodeGroupName", "nodeGroupNamePrefix"):
            # The provider appends a unique suffix to a prefix.
            request["nodegroupName"] = value if key == "nodeGroupName" else f"{value}20261121"
            continue
        if key not in _NODE_GROUP_PARAMS:
            raise KeyError(f"node group input {key!r} has no CreateNodegroup translation")
        request[_NODE_GROUP_PARAMS[key]] = _integers(value)
    request.setdefault("nodegroupName", name)
    return request


def create_launch_template_request(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    request: dict[str, Any] = {"LaunchTemplateName": inputs.get("name", name)}
    for key, value in inputs.items():
        if key in ("region", "name"):
            continue
        if key == "description":
            request["VersionDescription"] = value
        elif key == "tags":
            request["TagSpecifications"] = [
                {"ResourceType": "launch-template", "Tags": _tag_list(value)}
            ]
        elif key in _LAUNCH_TEMPLATE_DATA:
            data[_LAUNCH_TEMPLATE_DATA[key]] = _ec2_member(value)
        else:
            raise KeyError(f"launch template input {key!r} has no CreateLaunchTemplate translation")
    request["LaunchTemplateData"] = data
    return request


def _integers(value: Any) -> Any:
    """Numbers come back from the engine as floats; the API's counts are integers."""
    if isinstance(value, Mapping):
        return {k: int(v) if k in _INTEGERS else _integers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integers(v) for v in value]
    return value


def _ec2_member(value: Any) -> Any:
    """Engine camelCase -> EC2 PascalCase, tags as Key/Value lists, EBS flags as booleans."""
    if isinstance(value, list):
        return [_ec2_member(v) for v in value]
    if not isinstance(value, Mapping):
        return int(value) if isinstance(value, float) and value.is_integer() else value
    member: dict[str, Any] = {}
    for key, item in value.items():
        if key == "tags":
            member["Tags"] = _tag_list(item)
        elif key in _EBS_FLAGS:
            member[key[0].upper() + key[1:]] = {"true": True, "false": False}[item]
        else:
            member[_EC2_NAMES.get(key, key[0].upper() + key[1:])] = _ec2_member(item)
    return member


def _tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def request_problems(service: str, operation: str, params: Mapping[str, Any]) -> list[str]:
    """Everything the operation's input shape does not allow in `params`."""
    shape = service_model(service).operation_model(operation).input_shape
    assert shape is not None
    report = ParamValidator().validate(params, shape)
    problems = [report.generate_report()] if report.has_errors() else []
    return problems + list(_constraint_problems(shape, params, operation))


def _constraint_problems(shape: Shape, value: Any, path: str) -> Iterator[str]:
    limits = shape.metadata
    if "enum" in limits and value not in limits["enum"]:
        yield f"{path}: {value!r} is not one of {limits['enum']}"
    if "max" in limits:
        size = value if isinstance(value, int | float) else len(value)
        if size > limits["max"]:
            yield f"{path}: {size} is above the maximum {limits['max']}"
    if isinstance(shape, StructureShape) and isinstance(value, Mapping):
        for key, item in value.items():
            if key in shape.members:
                yield from _constraint_problems(shape.members[key], item, f"{path}.{key}")
    elif isinstance(shape, ListShape) and isinstance(value, list):
        for i, item in enumerate(value):
            yield from _constraint_problems(shape.member, item, f"{path}[{i}]")
    elif isinstance(shape, MapShape) and isinstance(value, Mapping):
        for key, item in value.items():
            yield from _constraint_problems(shape.key, key, f"{path}.<key {key}>")
            yield from _constraint_problems(shape.value, item, f"{path}.{key}")

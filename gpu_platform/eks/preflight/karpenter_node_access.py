"""With `karpenter.install: false`, whether the existing Karpenter's node role
(`karpenter.nodeRoleArn`) lets its nodes join the cluster.

A node joins as its instance role: through an EKS access entry of type `EC2_LINUX` (botocore's
EKS model, CreateAccessEntryRequest `type`: "If the principalArn is for an IAM role that's used
for self-managed Amazon EC2 nodes, specify EC2_LINUX"; `EC2` is for EKS Auto Mode's nodes,
`STANDARD` for people and tools), or where the cluster reads the ConfigMap, through an
`aws-auth` mapping of the role to the groups `system:bootstrappers` and `system:nodes`
(aws/karpenter-provider-aws v1.14.1, getting-started/migrating-from-cas, "Update aws-auth
ConfigMap"; by its ARN without a path: "ARNs in aws-auth ConfigMap entries can't include a
path", EKS user guide, "Create access entries"). A role with an entry of another node type
(`EC2_WINDOWS`, `EC2`) may serve other nodes too: preflight never prints the command that
deletes it. A node without
either never registers: Karpenter deletes its NodeClaim 15 minutes after launch
(`registrationTimeout`, kubernetes-sigs/karpenter v1.14.1
pkg/controllers/nodeclaim/lifecycle/liveness.go) and launches another for the same pods, each
instance paid for, a costly loop on p5.
"""

from collections.abc import Mapping
from typing import Any

import requests
import yaml
from botocore.exceptions import ClientError

from gpu_platform.config import StackConfig, key_path
from gpu_platform.eks.preflight.running_autoscaler import ConfigMaps
from gpu_platform.preflight.findings import Finding

NODE_ENTRY_TYPE = "EC2_LINUX"
NODE_GROUPS = ("system:bootstrappers", "system:nodes")
AWS_AUTH = ("kube-system", "aws-auth")
# `AccessConfigResponse.authenticationMode` (botocore's EKS model): which of access entries and
# the ConfigMap EKS reads.
_READS_ENTRIES = ("API", "API_AND_CONFIG_MAP")
_READS_CONFIG_MAP = ("CONFIG_MAP", "API_AND_CONFIG_MAP")
_NEVER_JOIN = (
    "its nodes would never register, and Karpenter deletes each 15 minutes after launch and"
    " launches another (liveness.go, registrationTimeout), every one paid for"
)


def node_role_access_finding(
    config: StackConfig,
    cluster: Mapping[str, Any],
    eks: Any,
    config_maps: ConfigMaps | None = None,
) -> Finding:
    """The node role's access entry, else its `aws-auth` mapping (unread where `config_maps`
    is None), as the cluster's authentication mode lets EKS read them."""
    role = str(config.karpenter.node_role_arn)
    name = config.cluster.name
    subject = f"cluster {name} Karpenter node role"
    mode = (cluster.get("accessConfig") or {}).get("authenticationMode", "CONFIG_MAP")
    create = (
        f"aws eks create-access-entry --cluster-name {name} --principal-arn {role}"
        f" --type {NODE_ENTRY_TYPE}"
    )
    if mode in _READS_ENTRIES:
        try:
            entry = eks.describe_access_entry(clusterName=name, principalArn=role)["accessEntry"]
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            if code in ("AccessDeniedException", "AccessDenied"):
                return Finding(
                    "warning",
                    subject,
                    f"Whether {role} ({key_path('karpenter', 'nodeRoleArn')}) may join the"
                    " cluster cannot be read: eks:DescribeAccessEntry was refused.",
                    f"Run aws eks describe-access-entry --cluster-name {name} --principal-arn"
                    f" {role} and check its type is {NODE_ENTRY_TYPE}"
                    " (docs/iam/eks-preflight-policy.json allows it).",
                )
            if code != "ResourceNotFoundException":
                raise
        else:
            kind = entry.get("type")
            if kind == NODE_ENTRY_TYPE:
                return Finding(
                    "ok",
                    subject,
                    f"{role} has an access entry of type {NODE_ENTRY_TYPE}: its nodes join.",
                    "Nothing.",
                )
            return _entry_type_finding(subject, role, name, str(kind), create)
    if mode not in _READS_CONFIG_MAP:
        return Finding(
            "blocking",
            subject,
            f"{role} ({key_path('karpenter', 'nodeRoleArn')}) has no access entry, and in"
            f" authentication mode {mode} EKS reads no aws-auth ConfigMap: {_NEVER_JOIN}.",
            create,
        )
    return _aws_auth_finding(config, subject, role, mode, config_maps, create)


def _entry_type_finding(subject: str, role: str, cluster: str, kind: str, create: str) -> Finding:
    """The node role's access entry of another type than `EC2_LINUX`. A principal has one entry,
    whose type cannot be changed (botocore's EKS model, UpdateAccessEntry takes no `type`):
    deleting a node type's entry would cut off the other nodes that share the role."""
    key = key_path("karpenter", "nodeRoleArn")
    if kind == "EC2_WINDOWS":
        return Finding(
            "warning",
            subject,
            f"{role} ({key}) has an access entry of type EC2_WINDOWS, for self-managed Windows"
            " nodes (botocore's EKS model, CreateAccessEntryRequest `type`), not"
            f" {NODE_ENTRY_TYPE}: whether Karpenter's Linux nodes join with it is unverified,"
            " and deleting it would cut off the Windows nodes that share the role.",
            f"Give Karpenter's nodes a role of their own ({key}) with an access entry of type"
            f" {NODE_ENTRY_TYPE}.",
        )
    if kind != "STANDARD":
        return Finding(
            "blocking",
            subject,
            f"{role} ({key}) has an access entry of type {kind}, not {NODE_ENTRY_TYPE}, the type"
            f" of self-managed Linux nodes (EC2 is EKS Auto Mode's): {_NEVER_JOIN}.",
            f"Give Karpenter's nodes a role of their own ({key}) with an access entry of type"
            f" {NODE_ENTRY_TYPE}: deleting this entry would cut off the nodes it is for.",
        )
    return Finding(
        "blocking",
        subject,
        f"{role} ({key}) has an access entry of type STANDARD, for people and tools, not"
        f" {NODE_ENTRY_TYPE}, the type of self-managed Linux nodes: {_NEVER_JOIN}.",
        "An entry's type cannot be changed: aws eks delete-access-entry --cluster-name"
        f" {cluster} --principal-arn {role}, then {create}.",
    )


def _aws_auth_finding(
    config: StackConfig,
    subject: str,
    role: str,
    mode: str,
    config_maps: ConfigMaps | None,
    create: str,
) -> Finding:
    fix = (
        create
        if mode in _READS_ENTRIES
        else f"Map {_without_path(role)} to the groups {' and '.join(NODE_GROUPS)} with username"
        " system:node:{{EC2PrivateDNSName}} in kube-system's aws-auth ConfigMap (kubectl -n"
        " kube-system edit configmap aws-auth)"
    )
    if config_maps is None:
        return Finding(
            "warning",
            subject,
            f"{role} has no access entry, and the aws-auth ConfigMap was not read.",
            f"Check that kube-system's aws-auth maps {_without_path(role)} to"
            f" {' and '.join(NODE_GROUPS)}, or {create}.",
        )
    try:
        found = config_maps(*AWS_AUTH)
    except requests.RequestException as error:
        return Finding(
            "warning",
            subject,
            f"{role} has no access entry, and the aws-auth ConfigMap cannot be read: {error}.",
            "Check that it maps the role to the nodes' groups (kubectl -n kube-system get"
            f" configmap aws-auth -o yaml), or {create}.",
        )
    try:
        mapped = _mapping(found, role)
    except yaml.YAMLError as error:
        return Finding(
            "warning",
            subject,
            f"{role} has no access entry, and the aws-auth ConfigMap's mapRoles is not YAML:"
            f" {error}.",
            "Check that it maps the role to the nodes' groups (kubectl -n kube-system get"
            f" configmap aws-auth -o yaml), or {create}.",
        )
    mapped_arn = None if mapped is None else str(mapped.get("rolearn"))
    if mapped_arn is not None and mapped_arn != _without_path(mapped_arn):
        return Finding(
            "blocking",
            subject,
            f"The aws-auth ConfigMap maps {role} ({key_path('karpenter', 'nodeRoleArn')}) as"
            f' {mapped_arn}, an ARN with a path, which EKS never matches ("ARNs in aws-auth'
            ' ConfigMap entries can\'t include a path", EKS user guide, "Create access'
            f' entries"; kubernetes-sigs/aws-iam-authenticator#153): {_NEVER_JOIN}.',
            f"Map {_without_path(role)} instead of {mapped_arn} in kube-system's aws-auth"
            " ConfigMap (kubectl -n kube-system edit configmap aws-auth)"
            + ("" if mode not in _READS_ENTRIES else f", or {create}")
            + ".",
        )
    groups = None if mapped is None else set(mapped.get("groups") or [])
    if groups is not None and set(NODE_GROUPS) <= groups:
        return Finding(
            "ok",
            subject,
            f"The aws-auth ConfigMap maps {_without_path(role)} to {' and '.join(NODE_GROUPS)}:"
            " its nodes join.",
            "Nothing.",
        )
    what = (
        "no access entry and no aws-auth mapping"
        if groups is None
        else f"no access entry, and its aws-auth mapping lacks {' or '.join(NODE_GROUPS)}"
    )
    return Finding(
        "blocking",
        subject,
        f"{role} ({key_path('karpenter', 'nodeRoleArn')}) has {what}: {_NEVER_JOIN}.",
        fix,
    )


def _mapping(config_map: Mapping[str, Any] | None, role: str) -> Mapping[str, Any] | None:
    """The entry of `aws-auth`'s `mapRoles` for the role, by its ARN with or without a path;
    None where it has none. Of several, the first without a path before any with one: EKS
    matches only the ARN without a path, so a pathed entry left beside it keeps no node out."""
    text = ((config_map or {}).get("data") or {}).get("mapRoles") or "[]"
    wanted = _without_path(role)
    found = [
        mapping
        for mapping in yaml.safe_load(text) or []
        if isinstance(mapping, Mapping) and _without_path(str(mapping.get("rolearn"))) == wanted
    ]
    return min(found, key=lambda mapping: str(mapping.get("rolearn")) != wanted, default=None)


def _without_path(role: str) -> str:
    """`arn:aws:iam::1:role/a/b/Name` as `arn:aws:iam::1:role/Name`."""
    prefix, _, rest = role.partition(":role/")
    return f"{prefix}:role/{rest.rsplit('/', 1)[-1]}"

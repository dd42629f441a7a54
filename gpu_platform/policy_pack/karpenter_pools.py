"""GPU pools that Karpenter provisions: a `karpenter.sh/v1` NodePool and its
`karpenter.k8s.aws/v1` EC2NodeClass, held to the rules of the EKS node groups they replace.

A NodePool is a GPU pool, as a node group is one by its instance types, when what it lets
Karpenter launch has GPUs: a requirement (or a template label, which Karpenter adds to its
requirements as `In` its value: kubernetes-sigs/karpenter v1.14.1
`pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go`, `NewNodeClaimTemplate`) that
allows a GPU instance type (`node.kubernetes.io/instance-type`), family
(`karpenter.k8s.aws/instance-family`) or category (`karpenter.k8s.aws/instance-category`: g, gr,
p), or that asks for a `karpenter.k8s.aws/instance-gpu-*` label to exist (any operator but
`NotIn` and `DoesNotExist`, which instance types without GPUs also meet); or limits on
`nvidia.com/gpu`. Either sign is enough. A NodePool that constrains none of these may launch
GPU instances for a pod that asks for GPUs, but is no GPU pool of the platform's, and is left
alone.
"""

import re
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from checks import Findings, resource_policy
from gpu_pools import (
    GPU_INSTANCE_FAMILY,
    PoolCheck,
    imdsv2_problems,
    linked_resource,
    missing_taint_problems,
    volume_encryption_problems,
)
from props import any_holds, elements, field_path, keys, mapping, shown, text, value_at
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

NODE_POOL_TYPE = "kubernetes:karpenter.sh/v1:NodePool"
NODE_CLASS_TYPE = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODE_CLASS = "karpenter-gpu-node-class"

REQUIREMENTS = ("spec", "template", "spec", "requirements")
TEMPLATE_LABELS = ("spec", "template", "metadata", "labels")
TAINTS = ("spec", "template", "spec", "taints")
NODE_CLASS_REF = ("spec", "template", "spec", "nodeClassRef")
GPU_RESOURCE = "nvidia.com/gpu"
NOUN = "GPU NodePool"

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
INSTANCE_FAMILY = "karpenter.k8s.aws/instance-family"
INSTANCE_CATEGORY = "karpenter.k8s.aws/instance-category"
GPU_LABEL_PREFIX = "karpenter.k8s.aws/instance-gpu-"
GPU_CATEGORIES = ("g", "gr", "p")
# Operators an instance type without the label does not meet; NotIn and DoesNotExist it does
# (kubernetes-sigs/karpenter v1.14.1 pkg/scheduling/requirements.go, `Intersects`).
_LABEL_NEEDED = ("In", "Exists", "Gt", "Lt", "Gte", "Lte")

CAPACITY_TYPE = "karpenter.sh/capacity-type"
# kubernetes-sigs/karpenter v1.14.1 pkg/apis/v1/labels.go, WellKnownValuesForRequirements.
CAPACITY_TYPES = ("reserved", "spot", "on-demand")
ON_DEMAND = "on-demand"
ON_DEMAND_FALLBACK = "gpu-platform.io/on-demand-fallback"
# How each family's releases are pinned (the EC2NodeClass docs, "spec.amiSelectorTerms").
PINNED_ALIASES = {"al2023": "al2023@v20260714", "bottlerocket": "bottlerocket@v1.54.0"}


Requirement = tuple[str, str, list[Any]]


def requirements(props: Mapping[str, Any]) -> list[Requirement]:
    """(key, operator, values) of each of the NodePool's requirements, then of its template
    labels as Karpenter adds them (`In` the label's value)."""
    found = [
        (text(r, "key") or "", text(r, "operator") or "", elements(r, "values"))
        for r in elements(props, *REQUIREMENTS)
    ]
    labels = mapping(props, *TEMPLATE_LABELS) or {}
    return found + [(key, "In", [text(labels, key)]) for key in keys(labels)]


def _allows_gpu_instances(props: Mapping[str, Any]) -> bool:
    for key, operator, values in requirements(props):
        if key.startswith(GPU_LABEL_PREFIX) and operator in _LABEL_NEEDED:
            return True
        if operator != "In":
            continue
        names = [v for v in values if isinstance(v, str)]
        if key in (INSTANCE_TYPE, INSTANCE_FAMILY) and any(map(GPU_INSTANCE_FAMILY.match, names)):
            return True
        if key == INSTANCE_CATEGORY and set(names) & set(GPU_CATEGORIES):
            return True
    return False


def _limits_gpus(props: Mapping[str, Any]) -> bool:
    return GPU_RESOURCE in keys(props, "spec", "limits")


def is_gpu_node_pool(props: Mapping[str, Any]) -> bool:
    return any_holds((_allows_gpu_instances, _limits_gpus), props)


# --- the NodePool --------------------------------------------------------------------------


def taint_problems(args: ResourceValidationArgs) -> Iterator[str]:
    # Only `taints` keep pods off: Karpenter ignores `startupTaints` when it decides whether a
    # pod fits a NodePool (kubernetes-sigs/karpenter v1.14.1
    # pkg/controllers/provisioning/scheduling/nodeclaim.go line 126), and they are removed
    # once the node is up.
    yield from missing_taint_problems(NOUN, elements(args.props, *TAINTS), TAINTS, "NoSchedule")


def limit_problems(args: ResourceValidationArgs) -> Iterator[str]:
    if not _limits_gpus(args.props):
        field = field_path("spec", "limits", GPU_RESOURCE)
        yield (
            f"the {NOUN} sets no {field}, so Karpenter starts GPU nodes for as long as GPU pods "
            "are pending, bounded only by the account's EC2 quotas. Fix: set it to the most "
            "GPUs the pool may run (its largest node count times the GPUs of a node)."
        )


# The CRD's defaults (karpenter.sh_nodepools.yaml at v1.14.1): `expireAfter: 720h` and
# `consolidationPolicy: WhenEmptyOrUnderutilized`.
EXPIRE_AFTER = ("spec", "template", "spec", "expireAfter")
CONSOLIDATION_POLICY = ("spec", "disruption", "consolidationPolicy")
_DEFAULT_EXPIRE_AFTER = "720h"
_DEFAULT_CONSOLIDATION_POLICY = "WhenEmptyOrUnderutilized"


def _unsafe_setting(
    props: Mapping[str, Any], path: tuple[str, ...], safe: str, default: str
) -> str | None:
    """How the NodePool sets `path` where it is not `safe`: left to the CRD's `default`, or set
    to another value; None where it is safe."""
    value = value_at(props, *path)
    if value == safe:
        return None
    if value is None:
        return f"leaves {field_path(*path)} to its default, {default}"
    return f"sets {field_path(*path)}={shown(value)}"


# EKS Auto Mode replaces every node within 21 days, whatever its NodePool says (EKS user guide,
# automode/automode.adoc: "a maximum lifetime of 21 days (which you can reduce)"): there the
# longest lifetime, 504h, is the safe one. Its NodePools name its NodeClass's group.
NODE_CLASS_GROUP = ("spec", "template", "spec", "nodeClassRef", "group")
AUTO_MODE_NODE_CLASS_GROUP = "eks.amazonaws.com"
AUTO_MODE_LONGEST_EXPIRY = "504h"


def expiry_problems(args: ResourceValidationArgs) -> Iterator[str]:
    auto_mode = value_at(args.props, *NODE_CLASS_GROUP) == AUTO_MODE_NODE_CLASS_GROUP
    safe = AUTO_MODE_LONGEST_EXPIRY if auto_mode else "Never"
    how = _unsafe_setting(args.props, EXPIRE_AFTER, safe, _DEFAULT_EXPIRE_AFTER)
    if how is not None:
        fix = (
            f'set it to "{safe}", the longest EKS Auto Mode allows'
            if auto_mode
            else 'set it to "Never" and roll new AMIs through drift'
        )
        yield (
            f"the {NOUN} {how}, so Karpenter drains every node that old, running jobs and all: "
            "expiry is forceful, past disruption budgets and karpenter.sh/do-not-disrupt "
            f'(karpenter.sh docs, concepts/disruption, "Expiration"). Fix: {fix}.'
        )


def consolidation_problems(args: ResourceValidationArgs) -> Iterator[str]:
    how = _unsafe_setting(
        args.props, CONSOLIDATION_POLICY, "WhenEmpty", _DEFAULT_CONSOLIDATION_POLICY
    )
    if how is not None:
        yield (
            f"the {NOUN} {how}, so Karpenter moves running GPU pods off nodes it finds underused"
            " to pack them tighter, and a moved job starts over (karpenter.sh docs, "
            'concepts/disruption, "Consolidation"). Fix: set it to "WhenEmpty".'
        )


BUDGETS = ("spec", "disruption", "budgets")
# The CRD's default budgets (karpenter.sh_nodepools.yaml at v1.14.1): one, without reasons.
_DEFAULT_BUDGETS = [{"nodes": "10%"}]


def budget_problems(args: ResourceValidationArgs) -> Iterator[str]:
    """A budget without `reasons`, or whose reasons include it, governs `Empty`, and Karpenter
    takes the pool's NotReady and deleting nodes off every budget (`BuildDisruptionBudgetMapping`,
    kubernetes-sigs/karpenter pkg/controllers/disruption/helpers.go at v1.14.1): below 100%, a
    few NotReady GPU nodes stop the pool's empty nodes from going, idle and paid for."""
    left_default = value_at(args.props, *BUDGETS) is None
    budgets = _DEFAULT_BUDGETS if left_default else elements(args.props, *BUDGETS)
    # A budget for reasons that include `Empty` is the same trap as one without reasons.
    small = [
        budget
        for budget in budgets
        if isinstance(budget, Mapping)
        and (not budget.get("reasons") or "Empty" in (budget.get("reasons") or []))
        and isinstance(budget.get("nodes"), str)
        and budget["nodes"] != "100%"
    ]
    if not small:
        return
    described = " and ".join(
        f"nodes={shown(b['nodes'])} "
        + ("for reasons including Empty" if b.get("reasons") else "without reasons")
        for b in small
    )
    how = (
        f"leaves {field_path(*BUDGETS)} to its default, one budget of nodes=10% without reasons"
        if left_default
        else f"has a disruption budget of {described}"
    )
    yield (
        f"the {NOUN} {how}, which also limits the removal of empty nodes, and Karpenter takes"
        " the pool's NotReady and deleting nodes off it: a NotReady GPU node can stop every"
        " empty node of the pool from going (kubernetes-sigs/karpenter,"
        ' pkg/controllers/disruption/helpers.go). Fix: give it reasons, with a budget of "100%"'
        " for reasons [Empty]."
    )


def allowed_capacity_types(capacity: Sequence[tuple[str, list[Any]]]) -> list[str]:
    """The capacity types a NodePool's requirements on its capacity type (operator, values)
    leave Karpenter, in its order of preference (reserved, spot, on-demand: karpenter.sh docs,
    concepts/nodepools.md "Capacity Type"); all of them when there is none."""
    allowed = list(CAPACITY_TYPES)
    for operator, values in capacity:
        allowed = [t for t in allowed if _meets(operator, values, t)]
    return allowed


def _meets(operator: str, values: Sequence[Any], value: str) -> bool:
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    # `Exists` leaves every type; `DoesNotExist` and the numeric operators none, as every node
    # has a capacity type and none is a number.
    return operator == "Exists"


def capacity_problems(args: ResourceValidationArgs) -> Iterator[str]:
    capacity = [(op, vals) for key, op, vals in requirements(args.props) if key == CAPACITY_TYPE]
    allowed = allowed_capacity_types(capacity)
    others = [t for t in allowed if t != ON_DEMAND]
    if ON_DEMAND not in allowed or not others:
        return
    if text(args.props, "metadata", "annotations", ON_DEMAND_FALLBACK) == "true":
        return
    how = (
        f"{CAPACITY_TYPE} allows {', '.join(allowed)}"
        if capacity
        else f"no {CAPACITY_TYPE} requirement, which allows {', '.join(allowed)}"
    )
    cheaper = " or ".join(others)
    yield (
        f"the {NOUN} allows on-demand capacity beside {cheaper} ({how}), so Karpenter falls back "
        f"to on-demand GPU nodes at their full price whenever no {cheaper} capacity is to be "
        f"had. Fix: require only {cheaper} in {field_path(*REQUIREMENTS)}, or, where that "
        f'fallback is meant, annotate the NodePool {ON_DEMAND_FALLBACK}: "true".'
    )


# --- the EC2NodeClass: linked to its NodePools, so a stack policy ---------------------------


def linked_node_class(
    node_pool: PolicyResource, node_classes: Sequence[PolicyResource]
) -> PolicyResource | None:
    """The EC2NodeClass a NodePool uses: the one its `spec` is computed from, else the one
    its `nodeClassRef` names."""
    return linked_resource(
        node_pool, (*NODE_CLASS_REF, "name"), NODE_CLASS_TYPE, node_classes, ("metadata", "name")
    )


def missing_node_class_problems(node_pool: PolicyResource) -> Iterator[str]:
    name = value_at(node_pool.props, *NODE_CLASS_REF, "name")
    yield (
        f'the EC2NodeClass {shown(name)} of {NOUN} "{node_pool.name}" is not declared in this '
        "stack, so its AMI, IMDSv2 and volume encryption cannot be checked. Fix: declare it in "
        "this stack."
    )


# AWS's public SSM parameters that move with each release: `.../recommended/image_id` and
# `.../latest/image_id` (EKS, Bottlerocket); a release's own parameter names its version.
_FLOATING_SSM = re.compile(
    r"^(arn:[^:]+:ssm:[^:]*:[^:]*:parameter)?/aws/service/.*/(recommended|latest|current)(/|$)"
)
# Karpenter takes, of every AMI a name or tag term matches, the newest (concepts/nodeclasses.md
# at v1.14.1, "spec.amiSelectorTerms": "If multiple AMIs are found that can be used, Karpenter
# will choose the latest one"), and names and tags take wildcards.
_WILDCARD = re.compile(r"[*?]")


def _floating_terms(term: Mapping[str, Any]) -> Iterator[tuple[str, Any, str]]:
    """(field, value, what) of what in one AMI selector term follows new AMIs as they come."""
    alias = text(term, "alias")
    if alias is not None and alias.partition("@")[2] == "latest":
        yield "alias", alias, "every new AMI release"
    parameter = text(term, "ssmParameter")
    if parameter is not None and _FLOATING_SSM.match(parameter):
        # Karpenter reads the parameter again and again and launches the AMI it names then
        # (`DescribeImageQueries`, pkg/providers/amifamily/ami.go at v1.14.1).
        yield "ssmParameter", parameter, "the AMI AWS's parameter names at each release"
    name = text(term, "name")
    if name is not None and _WILDCARD.search(name):
        yield "name", name, "the newest AMI whose name matches"
    tags = mapping(term, "tags") or {}
    for key in keys(tags):
        value = text(tags, key)
        if value is not None and _WILDCARD.search(value):
            yield f"tags.{key}", value, "the newest AMI whose tags match"


def ami_problems(subject: str, props: Mapping[str, Any]) -> Iterator[str]:
    for index, term in enumerate(elements(props, "spec", "amiSelectorTerms")):
        family = (text(term, "alias") or "al2023@").partition("@")[0]
        for field, value, what in _floating_terms(term):
            where = field_path("spec", "amiSelectorTerms", index, *field.split(".", 1))
            yield (
                f"the {subject} selects its AMI by {where}={shown(value)}, so {what}, and the "
                "NVIDIA driver in it, reaches the pool's nodes unreviewed: Karpenter replaces "
                "them as drifted (karpenter.sh docs, managing-amis). Fix: pin a release, e.g. "
                f"{shown(PINNED_ALIASES.get(family, family + '@<version>'))} or an AMI id, and "
                "move it on a canary pool first."
            )


def metadata_problems(subject: str, props: Mapping[str, Any]) -> Iterator[str]:
    # The CRD defaults httpTokens to "required", with or without the rest of metadataOptions
    # (karpenter-provider-aws v1.14.1 pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml).
    tokens_path = ("spec", "metadataOptions", "httpTokens")
    tokens = value_at(props, *tokens_path)
    yield from imdsv2_problems(subject, "required" if tokens is None else tokens, tokens_path)


def volume_problems(subject: str, props: Mapping[str, Any]) -> Iterator[str]:
    # Without mappings Karpenter maps the root volume of every AMI family but Custom encrypted
    # (karpenter-provider-aws v1.14.1 pkg/providers/amifamily/resolver.go, DefaultEBS; the
    # Custom family's custom.go leaves the volumes to the AMI).
    yield from volume_encryption_problems(
        subject,
        elements(props, "spec", "blockDeviceMappings"),
        ("spec", "blockDeviceMappings"),
        True,
        unmapped_is_a_problem=text(props, "spec", "amiFamily") == "Custom",
    )


# Each reads its own fields, so that a value not known yet skips only the check that reads it.
_NODE_CLASS_CHECKS = (ami_problems, metadata_problems, volume_problems)


def validate_node_classes(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    node_pools = [r for r in args.resources if r.resource_type == NODE_POOL_TYPE]
    node_classes = [r for r in args.resources if r.resource_type == NODE_CLASS_TYPE]
    with Findings(NODE_CLASS, "the stack", report_violation) as findings:
        for node_pool in node_pools:
            what = f"the EC2NodeClass of {node_pool.urn}"
            if not findings.known(what, partial(_gpu_pool_on_ec2, node_pool.props)):
                continue
            found = findings.known(what, partial(_link, node_pool, node_classes))
            if found is None:
                continue
            (node_class,) = found
            if node_class is None:
                findings.check(
                    what, partial(missing_node_class_problems, node_pool), urn=node_pool.urn
                )
                continue
            subject = f'EC2NodeClass "{node_class.name}" of {NOUN} "{node_pool.name}"'
            for check in _NODE_CLASS_CHECKS:
                findings.check(what, partial(check, subject, node_class.props), urn=node_class.urn)


def _gpu_pool_on_ec2(props: Mapping[str, Any]) -> bool:
    # A NodePool of another cloud provider's node class is not this policy's.
    kind = text(props, *NODE_CLASS_REF, "kind")
    return kind in (None, "EC2NodeClass") and is_gpu_node_pool(props)


def _link(
    node_pool: PolicyResource, node_classes: Sequence[PolicyResource]
) -> tuple[PolicyResource | None]:
    # In a tuple, so that a node class not found (None) differs from one not known yet.
    return (linked_node_class(node_pool, node_classes),)


# --- the policies --------------------------------------------------------------------------


def _gpu_node_pool_policy(
    name: str, description: str, problems: PoolCheck | Sequence[PoolCheck]
) -> ResourceValidationPolicy:
    return resource_policy(
        name,
        description,
        problems,
        resource_types=(NODE_POOL_TYPE,),
        applies=lambda args: is_gpu_node_pool(args.props),
    )


POLICIES = [
    _gpu_node_pool_policy(
        "karpenter-gpu-pool-scheduling",
        "Karpenter GPU NodePools taint their nodes nvidia.com/gpu=present:NoSchedule.",
        taint_problems,
    ),
    _gpu_node_pool_policy(
        "karpenter-gpu-pool-limits",
        "Karpenter GPU NodePools limit the GPUs they may launch (spec.limits).",
        limit_problems,
    ),
    _gpu_node_pool_policy(
        "karpenter-gpu-pool-disruption",
        "Karpenter GPU NodePools never expire their nodes and remove only empty ones.",
        [expiry_problems, consolidation_problems],
    ),
    resource_policy(
        "karpenter-gpu-pool-budgets",
        "Karpenter GPU NodePools let every empty node go at once: no budget below 100% governs"
        " the Empty reason.",
        budget_problems,
        resource_types=(NODE_POOL_TYPE,),
        applies=lambda args: is_gpu_node_pool(args.props),
        enforcement_level=EnforcementLevel.ADVISORY,
    ),
    _gpu_node_pool_policy(
        "karpenter-gpu-capacity-fallback",
        "Karpenter GPU NodePools fall back to on-demand beside spot or reserved capacity only "
        "where annotated to.",
        capacity_problems,
    ),
    StackValidationPolicy(
        name=NODE_CLASS,
        description="The EC2NodeClasses of Karpenter GPU NodePools pin their AMI, require "
        "IMDSv2 and encrypt their EBS volumes.",
        validate=validate_node_classes,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]

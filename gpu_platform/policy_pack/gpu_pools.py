"""GPU node pools: tainted and labelled for GPU work only, able to scale to zero, bounded, and
hardened.

An EKS managed node group is a GPU pool when its AMI type is an NVIDIA (or legacy GPU) one, or
its instance types are of a GPU family (g*, gr*, p*); a GKE node pool when it attaches guest
accelerators. Other pools are left alone.

A node group on a custom AMI (`amiType: CUSTOM`) usually names its instance type only in its
launch template, out of sight of a policy that sees one resource. `eks-gpu-launch-template-pools`
finds those, once the stack is known, and holds them to the same pool rules.
"""

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from checks import Findings, resource_policy
from props import (
    Step,
    any_holds,
    elements,
    field_path,
    flag,
    keys,
    mapping,
    number,
    shown,
    text,
    value_at,
)
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from settings import Setting

NODE_GROUP_TYPE = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE_TYPE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_POOL_TYPE = "gcp:container/nodePool:NodePool"
POOL_TYPES = (NODE_GROUP_TYPE, NODE_POOL_TYPE)
CLUSTER_TYPE = "gcp:container/cluster:Cluster"
EKS_LAUNCH_TEMPLATE = "eks-gpu-launch-template"

GPU_INSTANCE_FAMILY = re.compile(r"(g|gr|p)\d")
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
EKS_ACCELERATOR_LABELS = ("gpu-platform.io/accelerator", "k8s.amazonaws.com/accelerator")
DRIVER_LABEL = "gpu-platform.io/driver"

PoolCheck = Callable[[ResourceValidationArgs], Iterator[str]]


def _gpu_ami_type(props: Mapping[str, Any]) -> bool:
    ami_type = text(props, "amiType") or ""
    return "NVIDIA" in ami_type or "GPU" in ami_type


def _gpu_instance_types(props: Mapping[str, Any]) -> bool:
    instance_types = elements(props, "instanceTypes")
    return any(isinstance(t, str) and GPU_INSTANCE_FAMILY.match(t) for t in instance_types)


def is_gpu_node_group(props: Mapping[str, Any]) -> bool:
    return any_holds((_gpu_ami_type, _gpu_instance_types), props)


def is_gpu_pool(resource_type: str, props: Mapping[str, Any]) -> bool:
    if resource_type == NODE_GROUP_TYPE:
        return is_gpu_node_group(props)
    if resource_type == NODE_POOL_TYPE:
        return bool(elements(props, "nodeConfig", "guestAccelerators"))
    return False


def _pool_noun(resource_type: str) -> str:
    return "GPU node group" if resource_type == NODE_GROUP_TYPE else "GPU node pool"


# --- scheduling: taint and label -----------------------------------------------------------


def taint_problems(args: ResourceValidationArgs) -> Iterator[str]:
    resource_type, props = args.resource_type, args.props
    taints_path = ("taints",) if resource_type == NODE_GROUP_TYPE else ("nodeConfig", "taints")
    yield from missing_taint_problems(
        _pool_noun(resource_type), elements(props, *taints_path), taints_path, GPU_TAINT["effect"]
    )


def missing_taint_problems(
    noun: str, taints: Sequence[Any], taints_path: Sequence[Step], effect: str
) -> Iterator[str]:
    """The GPU taint missing from a pool's `taints` (at `taints_path`), its effect spelt as the
    pool's API spells it: `NO_SCHEDULE` in EKS and GKE, `NoSchedule` in Kubernetes objects."""
    wanted = {**GPU_TAINT, "effect": effect}
    key, value = wanted["key"], wanted["value"]
    if not any(all(value_at(t, k) == v for k, v in wanted.items()) for t in taints):
        yield (
            f"the {noun} has no {key}={value}:{effect} taint in {field_path(*taints_path)}, so "
            "pods that need no GPU can land on its nodes and keep them from scaling to zero. "
            f'Fix: add {{key: "{key}", value: "{value}", effect: "{effect}"}}.'
        )


def accelerator_label_problems(args: ResourceValidationArgs) -> Iterator[str]:
    resource_type, props = args.resource_type, args.props
    noun = _pool_noun(resource_type)
    # GKE labels every GPU node with cloud.google.com/gke-accelerator itself, and its
    # autoscaler knows the label of a pool at zero; EKS labels nothing.
    if resource_type == NODE_GROUP_TYPE and not set(EKS_ACCELERATOR_LABELS) & set(
        keys(props, "labels")
    ):
        yield (
            f"the {noun} sets neither accelerator label ({' nor '.join(EKS_ACCELERATOR_LABELS)})"
            " in labels, so GPU pods cannot select it, and the cluster autoscaler does not treat "
            "a new node as a GPU node while its device plugin starts. Fix: set "
            'labels["gpu-platform.io/accelerator"] to the GPU model, e.g. "a10g".'
        )


# --- scaling: from zero, up to a bound -----------------------------------------------------

POOLS_ALLOWED_MIN_ABOVE_ZERO = Setting(
    "poolsAllowedMinAboveZero",
    {
        "type": "array",
        "items": {"type": "string"},
        "default": [],
        "description": "Resource names of the GPU pools allowed a minimum size above zero "
        "(kept warm, and paid for, while idle).",
    },
)
MAX_NODES_PER_POOL = Setting(
    "maxNodesPerPool",
    {
        "type": "integer",
        "minimum": 1,
        "default": 64,
        "description": "The most nodes one GPU pool may grow to.",
    },
)


def floor_problems(args: ResourceValidationArgs) -> Iterator[str]:
    """A pool kept above zero while idle, unless allowed."""
    noun = _pool_noun(args.resource_type)
    if args.resource_type == NODE_POOL_TYPE and mapping(args.props, "autoscaling") is None:
        yield (
            f"the {noun} does not autoscale (autoscaling is unset), so it can neither scale to "
            "zero nor grow with demand. Fix: set autoscaling.totalMinNodeCount to 0 and "
            "autoscaling.totalMaxNodeCount to its largest size."
        )
        return
    minimum = _bound(args, "minSize", "minNodeCount", "totalMinNodeCount")
    allowed = args.name in POOLS_ALLOWED_MIN_ABOVE_ZERO.read(args.get_config())
    if minimum is not None and minimum[1] > 0 and not allowed:
        yield (
            f"the {noun} keeps nodes running while idle ({minimum[0]}). Fix: set it to 0, or list "
            f'"{args.name}" in {POOLS_ALLOWED_MIN_ABOVE_ZERO.key} if it must stay warm.'
        )


def ceiling_problems(args: ResourceValidationArgs) -> Iterator[str]:
    """A pool without a bound on its size, or bounded above the limit."""
    noun = _pool_noun(args.resource_type)
    autoscaling = mapping(args.props, "autoscaling")
    if args.resource_type == NODE_POOL_TYPE and autoscaling is None:
        return  # floor_problems says so
    maximum = _bound(args, "maxSize", "maxNodeCount", "totalMaxNodeCount")
    if args.resource_type == NODE_POOL_TYPE:
        if maximum is None:
            yield f"the {noun} sets no autoscaling maximum. Fix: set autoscaling.totalMaxNodeCount."
        elif number(autoscaling, "totalMaxNodeCount") is None and not elements(
            args.props, "nodeLocations"
        ):
            yield (
                f"the {noun} bounds its size per zone ({maximum[0]}) without nodeLocations, so "
                "its total size depends on the cluster's zones. Fix: set "
                "autoscaling.totalMaxNodeCount instead, or list nodeLocations."
            )
    limit = MAX_NODES_PER_POOL.read(args.get_config())
    if maximum is not None and maximum[1] > limit:
        yield (
            f"the {noun} can grow to {shown(maximum[1])} nodes ({maximum[0]}), more than "
            f"{MAX_NODES_PER_POOL.key} ({limit}). Fix: lower it, or raise {MAX_NODES_PER_POOL.key}."
        )


def _bound(
    args: ResourceValidationArgs, group_key: str, per_zone: str, total: str
) -> tuple[str, float] | None:
    """(how the pool sets a size bound, total nodes), None when unset: a node group's
    `scalingConfig.<group_key>`, or a node pool's autoscaling limit."""
    if args.resource_type == NODE_GROUP_TYPE:
        value = number(args.props, "scalingConfig", group_key)
        return None if value is None else (_setting(f"scalingConfig.{group_key}", value), value)
    autoscaling = mapping(args.props, "autoscaling")
    return (
        None if autoscaling is None else _node_pool_bound(args.props, autoscaling, per_zone, total)
    )


def _setting(field: str, value: float) -> str:
    return f"{field}={shown(value)}"


def _node_pool_bound(
    props: Mapping[str, Any], autoscaling: Mapping[str, Any], per_zone: str, total: str
) -> tuple[str, float] | None:
    """(how the node pool sets the bound, total nodes), None when unset. The total_* limits
    count nodes across zones; the others count them in each zone."""
    count = number(autoscaling, total)
    if count is not None:
        return _setting(f"autoscaling.{total}", count), count
    zone_count = number(autoscaling, per_zone)
    if zone_count is None:
        return None
    zones = len(elements(props, "nodeLocations"))
    zones_shown = f" x {zones} zones" if zones else ""
    described = _setting(f"autoscaling.{per_zone}", zone_count) + " per zone" + zones_shown
    return described, zone_count * max(zones, 1)


# --- node hardening ------------------------------------------------------------------------


def remote_access_problems(args: ResourceValidationArgs) -> Iterator[str]:
    if value_at(args.props, "remoteAccess") is not None:
        yield (
            f"the {_pool_noun(NODE_GROUP_TYPE)} opens SSH to its nodes (remoteAccess). Fix: "
            "remove remoteAccess; reach nodes through SSM Session Manager if you must."
        )


def launch_template_presence_problems(args: ResourceValidationArgs) -> Iterator[str]:
    noun = _pool_noun(NODE_GROUP_TYPE)
    if mapping(args.props, "launchTemplate") is None:
        yield (
            f"the {noun} has no launchTemplate, so IMDSv2 and the encryption of its root volume "
            "are not set by this stack. Fix: give it a launch template that sets "
            'metadataOptions.httpTokens "required" and encrypts its EBS volumes.'
        )


def _operator_built_driver(props: Mapping[str, Any]) -> bool:
    """An Ubuntu pool labelled `gpu-platform.io/driver: operator`: the GPU Operator compiles its
    driver on the node, an unsigned kernel module that secure boot would refuse to load. (On
    COS the driver is Google's, signed, so the label exempts nothing there.)"""
    image_type = text(props, "nodeConfig", "imageType") or ""
    driver = value_at(props, "nodeConfig", "labels", DRIVER_LABEL)
    return image_type.upper().startswith("UBUNTU") and driver == "operator"


def secure_boot_problems(args: ResourceValidationArgs) -> Iterator[str]:
    props = args.props
    secure_boot = ("nodeConfig", "shieldedInstanceConfig", "enableSecureBoot")
    if flag(props, *secure_boot) is not True and not _operator_built_driver(props):
        yield (
            f"the {_pool_noun(NODE_POOL_TYPE)} does not turn on secure boot "
            f"({field_path(*secure_boot)}), so its nodes can boot a tampered kernel or unsigned "
            "modules. Fix: set it to true; only an Ubuntu pool labelled "
            f'{DRIVER_LABEL}: "operator", whose driver the GPU Operator builds, may leave it off.'
        )


def metadata_problems(args: ResourceValidationArgs) -> Iterator[str]:
    props = args.props
    noun = _pool_noun(NODE_POOL_TYPE)
    mode = value_at(props, "nodeConfig", "workloadMetadataConfig", "mode")
    if mode != "GKE_METADATA":
        yield (
            f"the {noun} does not set nodeConfig.workloadMetadataConfig.mode to GKE_METADATA "
            f"(it is {shown(mode)}), so pods can read the node's service account credentials. "
            'Fix: set it to "GKE_METADATA".'
        )


def legacy_endpoint_problems(args: ResourceValidationArgs) -> Iterator[str]:
    noun = _pool_noun(NODE_POOL_TYPE)
    legacy = value_at(args.props, "nodeConfig", "metadata", "disable-legacy-endpoints")
    if legacy != "true":
        yield (
            f'the {noun} does not set nodeConfig.metadata["disable-legacy-endpoints"] to "true" '
            f"(it is {shown(legacy)}), leaving the metadata server's legacy endpoints open. "
            'Fix: set it to "true".'
        )


# --- EKS launch templates: linked to their node groups, so a stack policy -------------------


def linked_resource(
    resource: PolicyResource,
    reference: tuple[str, ...],
    linked_type: str,
    candidates: Sequence[PolicyResource],
    name_path: tuple[str, ...],
) -> PolicyResource | None:
    """The resource of `linked_type` that `resource` uses: the one its input holding
    `reference` (a path to a name) is computed from, else the candidate whose name (at
    `name_path`) that reference gives."""
    for dependency in resource.property_dependencies.get(reference[0], []):
        if dependency.resource_type == linked_type:
            return dependency
    name = text(resource.props, *reference)
    named = [c for c in candidates if name is not None and value_at(c.props, *name_path) == name]
    return named[0] if named else None


def linked_launch_template(
    node_group: PolicyResource, launch_templates: Sequence[PolicyResource]
) -> PolicyResource | None:
    """The launch template a node group uses: the one its `launchTemplate` input is computed
    from, else the one whose name it gives."""
    return linked_resource(
        node_group, ("launchTemplate", "name"), LAUNCH_TEMPLATE_TYPE, launch_templates, ("name",)
    )


def launch_template_problems(
    node_group: PolicyResource, template: PolicyResource | None
) -> Iterator[str]:
    subject = f'GPU node group "{node_group.name}"'
    if template is None:
        reference = mapping(node_group.props, "launchTemplate") or {}
        named = value_at(reference, "name") or value_at(reference, "id")
        yield (
            f"the launch template {shown(named)} of {subject} is not declared in this stack, so "
            "its IMDSv2 and volume encryption cannot be checked. Fix: declare it in this stack."
        )
        return
    subject = f'launch template "{template.name}" of {subject}'
    tokens = value_at(template.props, "metadataOptions", "httpTokens")
    yield from imdsv2_problems(subject, tokens, ("metadataOptions", "httpTokens"))
    mappings = elements(template.props, "blockDeviceMappings")
    yield from volume_encryption_problems(
        subject, mappings, ("blockDeviceMappings",), "true", unmapped_is_a_problem=True
    )


def imdsv2_problems(subject: str, tokens: Any, tokens_path: Sequence[Step]) -> Iterator[str]:
    """IMDSv2 not required by the node settings of `subject`, whose `httpTokens` (at
    `tokens_path`) is `tokens`."""
    if tokens != "required":
        field = field_path(*tokens_path)
        yield (
            f"the {subject} does not require IMDSv2 ({field}={shown(tokens)}), so any process on "
            "the node can read its instance credentials without a session token. Fix: set "
            f'{field} to "required".'
        )


def volume_encryption_problems(
    subject: str,
    mappings: Sequence[Any],
    mappings_path: Sequence[Step],
    encrypted: str | bool,
    *,
    unmapped_is_a_problem: bool,
) -> Iterator[str]:
    """The EBS volumes of `subject`'s block device `mappings` (at `mappings_path`) not
    encrypted; `encrypted` is how its API spells it (`"true"` in a launch template).
    `unmapped_is_a_problem`: where no mapping leaves the root volume's encryption to the account's
    default."""
    volumes = [(i, m) for i, m in enumerate(mappings) if mapping(m, "ebs") is not None]
    if not volumes and unmapped_is_a_problem:
        yield (
            f"the {subject} maps no EBS volume, so the root volume is encrypted only if the "
            'account encrypts by default. Fix: map the root device (e.g. "/dev/xvda") with '
            f"ebs.encrypted {shown(encrypted)}."
        )
    for index, volume in volumes:
        value = value_at(volume, "ebs", "encrypted")
        if value not in ("true", True):
            device = field_path(*mappings_path, index)
            yield (
                f"the {subject} does not encrypt {device} "
                f"({shown(value_at(volume, 'deviceName'))}, ebs.encrypted={shown(value)}). "
                f"Fix: set ebs.encrypted to {shown(encrypted)}."
            )


def node_groups_and_templates(
    args: StackValidationArgs,
) -> tuple[list[PolicyResource], list[PolicyResource]]:
    """The stack's EKS node groups, and its launch templates."""
    return (
        [r for r in args.resources if r.resource_type == NODE_GROUP_TYPE],
        [r for r in args.resources if r.resource_type == LAUNCH_TEMPLATE_TYPE],
    )


def validate_launch_templates(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    check_launch_templates(
        EKS_LAUNCH_TEMPLATE,
        _gpu_node_group_with_template,
        launch_template_problems,
        args,
        report_violation,
    )


NodeGroupTemplateProblems = Callable[[PolicyResource, PolicyResource | None], Iterator[str]]


def check_launch_templates(
    policy: str,
    selects: Callable[[PolicyResource, Sequence[PolicyResource]], bool],
    problems: NodeGroupTemplateProblems,
    args: StackValidationArgs,
    report_violation: ReportViolation,
) -> None:
    """Report `problems(node group, its launch template or None)` for each EKS node group of
    the stack that `selects(node group, the stack's launch templates)`."""
    node_groups, templates = node_groups_and_templates(args)
    with Findings(policy, "the stack", report_violation) as findings:
        for node_group in node_groups:
            what = f"the launch template of {node_group.urn}"
            if not findings.known(what, partial(selects, node_group, templates)):
                continue
            found = findings.known(what, partial(_link, node_group, templates))
            if found is None:
                continue
            (template,) = found
            findings.check(
                what, partial(problems, node_group, template), urn=(template or node_group).urn
            )


def _link(
    node_group: PolicyResource, templates: Sequence[PolicyResource]
) -> tuple[PolicyResource | None]:
    # In a tuple, so that a template not found (None) differs from one not known yet.
    return (linked_launch_template(node_group, templates),)


def _gpu_node_group_with_template(
    node_group: PolicyResource, templates: Sequence[PolicyResource]
) -> bool:
    # A GPU node group without a launch template is reported by eks-gpu-node-access.
    if mapping(node_group.props, "launchTemplate") is None:
        return False
    return (
        is_gpu_node_group(node_group.props)
        or _gpu_only_by_template(node_group, templates) is not None
    )


# --- EKS node groups whose GPU instance type is in their launch template -------------------

EKS_LAUNCH_TEMPLATE_POOLS = "eks-gpu-launch-template-pools"
SCALING = "gpu-pool-scaling"
SCALING_CONFIG: dict[str, Any] = {}
"""`gpu-pool-scaling`'s config, as the pack was last configured: the pools found by their launch
template are held to the same bounds, set in one place."""


def take_scaling_config(config: Mapping[str, Any]) -> None:
    SCALING_CONFIG.clear()
    SCALING_CONFIG.update(config)


def is_gpu_launch_template(template: PolicyResource) -> bool:
    instance_type = text(template.props, "instanceType") or ""
    return bool(GPU_INSTANCE_FAMILY.match(instance_type))


def _gpu_only_by_template(
    node_group: PolicyResource, templates: Sequence[PolicyResource]
) -> PolicyResource | None:
    """The GPU launch template of a node group that shows no GPU sign of its own."""
    if is_gpu_node_group(node_group.props) or mapping(node_group.props, "launchTemplate") is None:
        return None
    template = linked_launch_template(node_group, templates)
    return template if template is not None and is_gpu_launch_template(template) else None


# The rules the resource policies apply to a GPU node group, by the policy that applies them.
_POOL_RULES: Sequence[tuple[str, PoolCheck]] = (
    ("gpu-pool-scheduling", taint_problems),
    ("gpu-pool-scheduling", accelerator_label_problems),
    (SCALING, floor_problems),
    (SCALING, ceiling_problems),
    ("eks-gpu-node-access", remote_access_problems),
)


def validate_launch_template_pools(
    args: StackValidationArgs, report_violation: ReportViolation
) -> None:
    node_groups, templates = node_groups_and_templates(args)
    with Findings(EKS_LAUNCH_TEMPLATE_POOLS, "the stack", report_violation) as findings:
        for node_group in node_groups:
            what = f"the instance type of {node_group.urn}"
            template = findings.known(what, partial(_gpu_only_by_template, node_group, templates))
            if template is None:
                continue
            as_pool = ResourceValidationArgs(
                NODE_GROUP_TYPE,
                node_group.props,
                node_group.urn,
                node_group.name,
                node_group.opts,
                node_group.provider,
                SCALING_CONFIG,
                args.stack_tags,
            )
            instance_type = text(template.props, "instanceType")
            for rule, check in _POOL_RULES:
                findings.check(
                    f"{rule} on {node_group.urn}",
                    partial(_as_rule, rule, instance_type, check, as_pool),
                    urn=node_group.urn,
                )


def _as_rule(rule: str, instance_type: str | None, check: PoolCheck, args: Any) -> Iterator[str]:
    for problem in check(args):
        yield f"{rule} (a {instance_type} node group by its launch template): {problem}"


# --- a pool over several node groups (one per zone) ----------------------------------------

POOL_TOTAL_SIZE = "gpu-pool-total-size"
POOL_LABEL = "gpu-platform.io/pool"


def validate_pool_totals(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    limit = MAX_NODES_PER_POOL.read(SCALING_CONFIG)
    by_pool: dict[str, list[tuple[PolicyResource, float]]] = {}
    node_groups, _ = node_groups_and_templates(args)
    with Findings(POOL_TOTAL_SIZE, "the stack", report_violation) as findings:
        for node_group in node_groups:
            what = f"the pool and maximum of {node_group.urn}"
            found = findings.known(what, partial(_pool_and_maximum, node_group.props))
            if found is not None:
                pool, maximum = found
                by_pool.setdefault(pool, []).append((node_group, maximum))
        for pool, groups in by_pool.items():
            total = sum(maximum for _, maximum in groups)
            # A pool's only node group is judged by gpu-pool-scaling on its own.
            if len(groups) > 1 and total > limit:
                sizes = ", ".join(f"{group.name} {shown(maximum)}" for group, maximum in groups)
                report_violation(
                    f'GPU pool "{pool}" can grow to {shown(total)} nodes over its {len(groups)} '
                    f"node groups ({sizes}), more than {MAX_NODES_PER_POOL.key} ({limit}). Fix: "
                    f"lower the pool's max, or raise {MAX_NODES_PER_POOL.key} in the config of "
                    f"{SCALING}.",
                    groups[0][0].urn,
                )


def _pool_and_maximum(props: Mapping[str, Any]) -> tuple[str, float] | None:
    pool = text(props, "labels", POOL_LABEL)
    maximum = number(props, "scalingConfig", "maxSize")
    if pool is None or maximum is None or not is_gpu_node_group(props):
        return None
    return pool, maximum


# --- the policies --------------------------------------------------------------------------


def gpu_pool_policy(
    name: str,
    description: str,
    resource_types: tuple[str, ...],
    problems: Sequence[PoolCheck],
    *settings: Setting,
) -> ResourceValidationPolicy:
    """A policy checking the node pools of `resource_types` that have GPUs; GKE node pools also
    where a cluster declares them inline (`Cluster.nodePools`)."""
    if NODE_POOL_TYPE in resource_types:
        resource_types = (*resource_types, CLUSTER_TYPE)
        problems = [_with_inline_node_pools(check) for check in problems]
    return resource_policy(
        name,
        description,
        problems,
        *settings,
        resource_types=resource_types,
        applies=lambda args: (
            args.resource_type == CLUSTER_TYPE or is_gpu_pool(args.resource_type, args.props)
        ),
    )


def _with_inline_node_pools(check: PoolCheck) -> PoolCheck:
    """`check`, which also judges each GPU node pool a GKE cluster declares inline, as if it
    were a NodePool of its own (the two share their fields), naming it in each problem."""

    def each(args: ResourceValidationArgs) -> Iterator[str]:
        if args.resource_type != CLUSTER_TYPE:
            yield from check(args)
            return
        for index, props in enumerate(elements(args.props, "nodePools")):
            if not isinstance(props, Mapping) or not is_gpu_pool(NODE_POOL_TYPE, props):
                continue
            inline = ResourceValidationArgs(
                NODE_POOL_TYPE,
                props,
                args.urn,
                text(props, "name") or f"{args.name}/nodePools[{index}]",
                args.opts,
                args.provider,
                args.get_config(),
                args.stack_tags,
            )
            yield from (f"nodePools[{index}]: {problem}" for problem in check(inline))

    return each


POLICIES = [
    gpu_pool_policy(
        "gpu-pool-scheduling",
        "GPU node pools carry the nvidia.com/gpu=present:NO_SCHEDULE taint and an accelerator "
        "label.",
        POOL_TYPES,
        (taint_problems, accelerator_label_problems),
    ),
    gpu_pool_policy(
        SCALING,
        "GPU node pools scale from zero (unless allowed a floor) up to a bounded size.",
        POOL_TYPES,
        (floor_problems, ceiling_problems),
        POOLS_ALLOWED_MIN_ABOVE_ZERO,
        MAX_NODES_PER_POOL,
    ),
    gpu_pool_policy(
        "eks-gpu-node-access",
        "EKS GPU node groups allow no SSH and use a launch template.",
        (NODE_GROUP_TYPE,),
        (remote_access_problems, launch_template_presence_problems),
    ),
    StackValidationPolicy(
        name=EKS_LAUNCH_TEMPLATE,
        description="The launch templates of EKS GPU node groups require IMDSv2 and encrypt "
        "their EBS volumes.",
        validate=validate_launch_templates,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name=EKS_LAUNCH_TEMPLATE_POOLS,
        description="EKS node groups whose launch template gives them a GPU instance type (as "
        "on a custom AMI) meet the GPU pool rules.",
        validate=validate_launch_template_pools,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name=POOL_TOTAL_SIZE,
        description="GPU pools of several node groups (one per zone) grow to at most "
        "maxNodesPerPool nodes in all.",
        validate=validate_pool_totals,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    gpu_pool_policy(
        "gke-gpu-node-security",
        "GKE GPU node pools use secure boot (except on the GPU Operator's own driver), the GKE "
        "metadata server, and no legacy metadata endpoints.",
        (NODE_POOL_TYPE,),
        (secure_boot_problems, metadata_problems, legacy_endpoint_problems),
    ),
]

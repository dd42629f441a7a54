"""Preflight on an EKS stack whose cluster runs its own cluster autoscaler (`autoscaler.install:
false`): the flags and priorities the platform's GPU pools rely on, read from that autoscaler's
container and its priority expander's ConfigMap. The stack cannot set them there itself; the
plan prints what to set (`ownAutoscaler`).

What the autoscaler does with them, at cluster-autoscaler-1.35.2 (the same from 1.33.6 to
1.36.1) of kubernetes/autoscaler:
- Flags are parsed by pflag over Go's flag set (`kube_flag.InitFlags`, main.go): `--name=value`,
  or `--name value` for a flag that takes one; a bare `--name` sets a bool; `_` reads as `-`.
  `--expander` defaults to `least-waste`, `--balance-similar-node-groups` to false,
  `--balancing-ignore-label` may repeat, the two scale-down thresholds default to 0.5
  (config/flags/flags.go, config/const.go).
- The `priority` expander reads `data.priorities` of the ConfigMap
  `cluster-autoscaler-priority-expander` in the namespace of `--namespace` (kube-system unless
  set) as `map[int][]string` of regular expressions, and drops every node group no expression
  matches ("The group won't be used"); without the ConfigMap it filters nothing
  (`BestOptions`, expander/priority/priority.go).
"""

import re
from collections.abc import Mapping, Sequence
from typing import Any

import requests
import yaml

from gpu_platform.config import StackConfig, key_path
from gpu_platform.eks.autoscaler_settings import BALANCING_IGNORED_LABELS, PRIORITY_CONFIG_MAP
from gpu_platform.eks.autoscaler_tags import EMPTY_NODE_THRESHOLD
from gpu_platform.eks.preflight.running_autoscaler import ConfigMaps, removes_empty_nodes_at_zero
from gpu_platform.preflight.findings import Finding

_BOOL_FLAGS = {"balance-similar-node-groups"}
_THRESHOLD_FLAGS = ("scale-down-utilization-threshold", "scale-down-gpu-utilization-threshold")
_DEFAULT_NAMESPACE = "kube-system"
# A name EKS gives the Auto Scaling group of one of a pool's node groups: `eks-`, the node group's
# name (`<pool>-` and its 26-character unique suffix, `node_group_names`), `-` and a UUID.
_SAMPLE_GROUP = "eks-{pool}-" + "2" * 18 + "0000000a" + "-00000000-0000-0000-0000-000000000000"


def parse_flags(argv: Sequence[str]) -> dict[str, list[str]]:
    """The autoscaler's flags from its container's command and arguments, each with every value
    given (a bool given bare reads `true`)."""
    flags: dict[str, list[str]] = {}
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("--") or word == "--":
            continue
        name, equals, value = word[2:].partition("=")
        name = name.replace("_", "-")
        if not equals:
            if name in _BOOL_FLAGS or i >= len(words) or words[i].startswith("-"):
                value = "true"
            else:
                value, i = words[i], i + 1
        flags.setdefault(name, []).append(value)
    return flags


def autoscaler_settings_findings(
    config: StackConfig,
    container: Mapping[str, Any],
    release: str,
    config_maps: ConfigMaps,
) -> list[Finding]:
    """Every finding on the running autoscaler's flags and priorities; `release` is its image's
    tag."""
    subject = f"cluster {config.cluster.name} autoscaler settings"
    flags = parse_flags([*(container.get("command") or []), *(container.get("args") or [])])
    expanders = ",".join(flags.get("expander", ["least-waste"])).split(",")
    findings: list[Finding] = []
    if config.autoscaler.expander == "priority":
        if "priority" not in expanders:
            findings.append(
                Finding(
                    "warning",
                    subject,
                    f"Its expander is {','.join(expanders)}, not priority: the GPU pools are not"
                    " ranked by capacity, and a CPU pod that tolerates the GPU taint may grow a"
                    " GPU pool where a CPU group fits it.",
                    "Give it --expander=priority,least-waste and the priority ConfigMap the plan"
                    " prints (ownAutoscaler).",
                )
            )
        else:
            namespace = (flags.get("namespace") or [_DEFAULT_NAMESPACE])[-1]
            findings += _priority_findings(config, subject, namespace, config_maps)
    if config.autoscaler.balance_similar_node_groups:
        findings += _balancing_findings(subject, flags)
    findings += _threshold_findings(subject, flags, release)
    findings += _provisioning_request_findings(config, subject, flags)
    return findings or [
        Finding("ok", subject, "Its flags and priorities are the platform's.", "Nothing.")
    ]


def _priority_findings(
    config: StackConfig,
    subject: str,
    namespace: str,
    config_maps: ConfigMaps,
) -> list[Finding]:
    fix = (
        f"Set data.priorities of ConfigMap {namespace}/{PRIORITY_CONFIG_MAP} to the text the plan"
        " prints (ownAutoscaler.priorityConfigMap), or rank the GPU pools in your own."
    )
    try:
        found = config_maps(namespace, PRIORITY_CONFIG_MAP)
    except requests.RequestException as error:
        return [
            Finding(
                "warning",
                subject,
                f"Cannot read ConfigMap {namespace}/{PRIORITY_CONFIG_MAP}: {error}.",
                f"Check by hand that it ranks every GPU pool (kubectl -n {namespace} get"
                f" configmap {PRIORITY_CONFIG_MAP} -o yaml). {fix}",
            )
        ]
    text = ((found or {}).get("data") or {}).get("priorities")
    if not text:
        return [
            Finding(
                "warning",
                subject,
                f"Its expander lists priority, but ConfigMap {namespace}/{PRIORITY_CONFIG_MAP} has"
                " no priorities: the expander filters nothing, and the GPU pools are not ranked.",
                fix,
            )
        ]
    try:
        priorities = _parsed(text)
    except (yaml.YAMLError, ValueError, TypeError, re.error) as error:
        return [
            Finding(
                "warning",
                subject,
                f"ConfigMap {namespace}/{PRIORITY_CONFIG_MAP} cannot be read as the expander reads"
                f" it (priority -> list of regular expressions): {error}. The autoscaler ignores"
                " it.",
                fix,
            )
        ]
    dropped = [
        pool.name
        for pool in config.pools
        if not any(
            e.search(_SAMPLE_GROUP.format(pool=pool.name)) for es in priorities.values() for e in es
        )
    ]
    if not dropped:
        return []
    return [
        Finding(
            "warning",
            subject,
            f"No expression of ConfigMap {namespace}/{PRIORITY_CONFIG_MAP} matches the node groups"
            f" of {', '.join(dropped)} (eks-<pool>-...): wherever another group fits a pod, the"
            " priority expander drops them.",
            fix,
        )
    ]


def _parsed(text: str) -> dict[int, list[re.Pattern[str]]]:
    # Python's `re` reads the anchors, classes and groups such expressions use as Go's RE2 does.
    loaded = yaml.safe_load(text)
    if not isinstance(loaded, dict):
        raise ValueError("not a mapping")
    return {int(level): [re.compile(str(e)) for e in found] for level, found in loaded.items()}


def _balancing_findings(subject: str, flags: Mapping[str, Sequence[str]]) -> list[Finding]:
    findings = []
    balance = (flags.get("balance-similar-node-groups") or ["false"])[-1]
    if balance.lower() not in ("true", "1", "t"):
        findings.append(
            Finding(
                "warning",
                subject,
                "It runs without --balance-similar-node-groups: a burst fills one zonal node"
                " group of a pool before the next.",
                "Give it --balance-similar-node-groups=true, or set"
                f" {key_path('autoscaler', 'balanceSimilarNodeGroups')}: false.",
            )
        )
    ((flag, label),) = BALANCING_IGNORED_LABELS.items()
    if label not in flags.get(flag, []):
        findings.append(
            Finding(
                "warning",
                subject,
                f"It runs without --{flag}={label}: the label names each node group (EKS's"
                " eks:nodegroup-name tag, kubernetes/autoscaler#6954), so no two zonal groups"
                " of a pool are similar and none is balanced.",
                f"Give it --{flag}={label}.",
            )
        )
    return findings


def _threshold_findings(
    subject: str, flags: Mapping[str, Sequence[str]], release: str
) -> list[Finding]:
    try:
        fixed = removes_empty_nodes_at_zero(release)
    except ValueError:
        fixed = False
    findings = []
    for flag in _THRESHOLD_FLAGS:
        given = flags.get(flag)
        if not given or fixed:
            continue
        value = given[-1]
        try:
            zero = float(value) == 0
        except ValueError:
            continue
        if zero:
            findings.append(
                Finding(
                    "warning",
                    subject,
                    f"It runs with --{flag}={value} at {release}, which keeps a node whose"
                    " utilization equals the threshold (eligibility.go before"
                    " kubernetes/autoscaler 66d2242f61): an empty node of a group without its"
                    " own threshold is never removed.",
                    f"Give it --{flag}={EMPTY_NODE_THRESHOLD}, which removes an empty node under"
                    " both comparisons.",
                )
            )
    return findings


def _provisioning_request_findings(
    config: StackConfig, subject: str, flags: Mapping[str, Sequence[str]]
) -> list[Finding]:
    """Blocking where a pool scales up atomically and the autoscaler ignores ProvisioningRequests
    (`--enable-provisioning-requests`, false by default: config/flags/flags.go): Kueue then
    admits none of the pool's queued jobs, whose requests are never provisioned."""
    atomic = [pool.name for pool in config.pools if pool.aws.atomic_scale_up]
    given = (flags.get("enable-provisioning-requests") or ["false"])[-1]
    if not atomic or given.lower() in ("true", "1", "t"):
        return []
    return [
        Finding(
            "blocking",
            subject,
            f"It runs without --enable-provisioning-requests, and pools {', '.join(atomic)}"
            " scale up atomically (aws.atomicScaleUp): their queued jobs would wait for"
            " ProvisioningRequests it never acts on.",
            "Give it --enable-provisioning-requests=true, with the ProvisioningRequest CRD of"
            " its release installed before Kueue starts (before the `up` that adds the first"
            " atomic pool, or restart Kueue's manager after: docs/queues.md).",
        )
    ]

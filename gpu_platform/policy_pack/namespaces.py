"""Every Namespace says which Pod Security Standard applies to it, at a pinned version.

`restricted` for every namespace except the few that run node agents (the GPU Operator's,
monitoring's, kube-system); only those may be `baseline` or `privileged`. A pinned
`<mode>-version` keeps a cluster upgrade from changing what a namespace admits. The missing
`audit` and `warn` labels are added as a remediation, copying `enforce`: they only report, so
copying is always safe, and it makes violations show up in audit logs and `kubectl` warnings.
"""

from collections.abc import Iterator, Mapping, MutableMapping
from functools import partial
from typing import Any, cast

from checks import Findings, resource_policy
from pod_security import (
    LABEL_PREFIX,
    LATEST_VERSION,
    LEVELS,
    MODES,
    NAMESPACE_TYPE,
    parse_version,
    version_name,
)
from props import field_path, mapping, shown, text, value_at
from pulumi_policy import EnforcementLevel, ResourceValidationArgs
from settings import EXEMPT_NAMESPACES

NAME = "namespace-pod-security"


def _labels(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(props, "metadata", "labels") or {}


def _pinned(version: object) -> bool:
    return isinstance(version, str) and version != "latest" and parse_version(version) is not None


def label_problems(props: Mapping[str, Any]) -> Iterator[str]:
    labels = _labels(props)
    enforce_version = value_at(labels, f"{LABEL_PREFIX}enforce-version")
    example = enforce_version if _pinned(enforce_version) else version_name(LATEST_VERSION)
    for mode in MODES:
        key = f"{LABEL_PREFIX}{mode}"
        field = field_path("metadata", "labels", key)
        level = value_at(labels, key)
        if level is None:
            yield f"{field} is missing. Fix: set it to restricted."
        elif level not in LEVELS:
            yield (
                f"{field}={shown(level)} is not a Pod Security level. "
                "Fix: use restricted (or baseline or privileged on an exempt namespace)."
            )
        version_field = field_path("metadata", "labels", f"{key}-version")
        version = value_at(labels, f"{key}-version")
        if not _pinned(version):
            problem = " is missing" if version is None else f"={shown(version)} is not pinned"
            yield (
                f"{version_field}{problem}, so the policy would change with the cluster's "
                f'Kubernetes version. Fix: pin it to a policy version such as "{example}".'
            )


def level_problems(
    props: Mapping[str, Any], resource_name: str, exempt: tuple[str, ...]
) -> Iterator[str]:
    # A namespace without a name gets a generated one, which no exemption can name.
    name = text(props, "metadata", "name")
    if name in exempt:
        return
    name = name or resource_name
    labels = _labels(props)
    for mode in MODES:
        key = f"{LABEL_PREFIX}{mode}"
        level = value_at(labels, key)
        if level in LEVELS and level != "restricted":
            yield (
                f'namespace "{name}" is not exempt, so {field_path("metadata", "labels", key)} '
                f"must be restricted, not {level}. Fix: set it to restricted, or list the "
                "namespace in exemptNamespaces if its pods need host access."
            )


def problems(args: ResourceValidationArgs) -> Iterator[str]:
    yield from label_problems(args.props)
    yield from level_problems(args.props, args.name, EXEMPT_NAMESPACES.read(args.get_config()))


def add_audit_and_warn_labels(props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """`props` with the missing audit and warn labels and versions copied from enforce, or None
    when nothing is missing or there is no valid enforce label to copy."""
    labels = mapping(props, "metadata", "labels")
    if labels is None:
        return None

    def label(key: str) -> Any:
        # Read from the top, so that a value not known yet is named by its full path.
        return value_at(props, "metadata", "labels", key)

    level = label(f"{LABEL_PREFIX}enforce")
    version = label(f"{LABEL_PREFIX}enforce-version")
    additions: dict[str, str] = {}
    for mode in ("audit", "warn"):
        key = f"{LABEL_PREFIX}{mode}"
        if level in LEVELS and label(key) is None:
            additions[key] = str(level)
        if _pinned(version) and label(f"{key}-version") is None:
            additions[f"{key}-version"] = str(version)
    if not additions:
        return None
    # The SDK's property proxies accept writes, and keep a secret label map secret.
    writable = cast(MutableMapping[str, Any], labels)
    for key, value in additions.items():
        writable[key] = value
    return props


def remediate(args: ResourceValidationArgs) -> Mapping[str, Any] | None:
    if args.resource_type != NAMESPACE_TYPE:
        return None
    with Findings(NAME, args.urn) as findings:
        return findings.known(
            "adding the audit and warn labels", partial(add_audit_and_warn_labels, args.props)
        )


POLICIES = [
    resource_policy(
        NAME,
        "Namespaces enforce, audit and warn at a pinned Pod Security level: restricted unless "
        "exempt.",
        problems,
        EXEMPT_NAMESPACES,
        resource_types=(NAMESPACE_TYPE,),
        enforcement_level=EnforcementLevel.REMEDIATE,
        remediate=remediate,
    )
]

"""The Pod Security Standards, baseline and restricted, as the built-in admission checks them.

Each check mirrors a `check_<id>.go` of Kubernetes' pod-security-admission (policy versions up to
v1.37): the same fields, the same allowed values, the same version in which a rule changed.
The level a workload must meet is the one its namespace enforces, as the stack's policy config
lists it (`namespaceLevels`); a namespace it does not list gets a configured default. Listed
levels are checked against the `pod-security.kubernetes.io/enforce` labels of the Namespaces the
stack declares.

The admission enforces on Pods only and warns on the pod templates of workload controllers;
the pack checks both, so a bad template fails in preview rather than as pods that never start.
"""

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any

from checks import Findings, each, parts
from pods import Container, Pod, namespace_or_default, pods_of
from props import (
    elements,
    field_path,
    flag,
    indexed,
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
from pulumi_policy.proxy import UnknownValueError
from settings import EXEMPT_NAMESPACES, Setting, config_schema

NAME = "pod-security-standards"
NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
LABEL_PREFIX = "pod-security.kubernetes.io/"
MODES = ("enforce", "audit", "warn")
LEVELS = ("privileged", "baseline", "restricted")

Version = tuple[int, int]
# `latest` means the newest policy version the admission knows, the highest version in which
# any check changed (net.ipv4.tcp_slow_start_after_idle and tcp_notsent_lowat became safe
# sysctls in v1.37).
LATEST_VERSION: Version = (1, 37)
OLDEST_VERSION: Version = (1, 0)
# From v1.25 the restricted checks that Windows pods cannot meet (seccomp, capabilities,
# privilege escalation) exempt pods with `spec.os.name: windows`.
WINDOWS_EXEMPT_SINCE: Version = (1, 25)
_VERSION_LABEL = re.compile(r"v(\d+)\.(\d+)")


def parse_version(label: str) -> Version | None:
    """(1, 35) from `v1.35`, the latest version from `latest`, None when malformed."""
    if label == "latest":
        return LATEST_VERSION
    match = _VERSION_LABEL.fullmatch(label)
    return (int(match[1]), int(match[2])) if match else None


def version_name(version: Version) -> str:
    return f"v{version[0]}.{version[1]}"


DEFAULT_LEVEL = Setting(
    "defaultLevel",
    {
        "type": "string",
        "enum": list(LEVELS),
        "default": "restricted",
        "description": "The level for workloads whose namespace is not in namespaceLevels (nor "
        "exempt), or is not known yet at preview.",
    },
)


@dataclass(frozen=True)
class Standard:
    """The level and policy version a workload is held to, and why."""

    level: str
    version: Version
    reason: str

    def describe(self) -> str:
        return f"Pod Security {self.level} {version_name(self.version)}, {self.reason}"


@dataclass(frozen=True)
class PodUnderCheck:
    pod: Pod
    version: Version

    @cached_property
    def containers(self) -> list[Container]:
        return self.pod.containers()

    @cached_property
    def windows(self) -> bool:
        return text(self.pod.spec, "os", "name") == "windows"

    @cached_property
    def user_namespaced(self) -> bool:
        """`hostUsers: false`: the pod runs in its own user namespace (KEP-127)."""
        return flag(self.pod.spec, "hostUsers") is False

    def security_contexts(self) -> list["SecurityContext"]:
        """The pod's security context, then each container's."""
        pod = SecurityContext("pod", lambda: self.pod.spec, self.pod.spec_field)
        return [pod] + [
            SecurityContext(
                container.label,
                partial(getattr, container, "props"),
                partial(self.pod.container_field, container),
            )
            for container in self.containers
        ]


@dataclass(frozen=True)
class SecurityContext:
    subject: str
    """`pod`, or `container "app"`."""
    owner: Callable[[], Mapping[str, object]]
    """The pod spec or the container that holds it, read only when a check reads it, so that
    one not known yet raises where that one is judged (`per_context`)."""
    owner_field: Callable[..., str]
    """The path of a field of the pod spec or container that holds the security context."""

    @property
    def props(self) -> Mapping[str, object] | None:
        return mapping(self.owner(), "securityContext")

    def field(self, *steps: str) -> str:
        return self.owner_field("securityContext", *steps)


def _problem(reason: str, subject: str, what: str, fix: str) -> str:
    return f"{reason}: {subject} {what}. Fix: {fix}."


def _quoted(values: Sequence[object]) -> str:
    return ", ".join(shown(v) for v in values)


def _sets(field: str, value: object) -> str:
    return f"sets {field}={shown(value)}"


# --- judging one container, security context, volume or field at a time ---------------------
#
# A value not known yet (at preview) in one container must not hide what the others show
# (checks.each): each check below judges the parts it reads one at a time, and a note names
# the part it skipped.

ContainerCheck = Callable[[PodUnderCheck, Container], Iterator[str]]
ContextCheck = Callable[[PodUnderCheck, "SecurityContext"], Iterator[str]]
VolumeCheck = Callable[[PodUnderCheck, int, Any], Iterator[str]]
PodCheck = Callable[[PodUnderCheck], Iterator[str]]


def per_container(check: ContainerCheck) -> PodCheck:
    def judged(c: PodUnderCheck, container: Container) -> Iterator[str]:
        for problem in check(c, container):
            note = container.fix_note
            yield problem if note is None else f"{problem.removesuffix('.')}; {note}."

    def run(c: PodUnderCheck) -> Iterator[str]:
        return each(c.containers, partial(judged, c), c.pod.container_field)

    return run


def per_context(check: ContextCheck) -> PodCheck:
    """The pod's security context, then each container's, on their own."""

    def run(c: PodUnderCheck) -> Iterator[str]:
        return each(c.security_contexts(), partial(check, c), lambda context: context.field())

    return run


def per_volume(check: VolumeCheck) -> PodCheck:
    def run(c: PodUnderCheck) -> Iterator[str]:
        return each(
            indexed(c.pod.spec, "volumes"),
            lambda item: check(c, *item),
            lambda item: c.pod.spec_field("volumes", item[0]),
        )

    return run


def annotation_problems(
    c: PodUnderCheck,
    reason: str,
    applies_to: Callable[[str], bool],
    allowed: Callable[[object], bool],
) -> Iterator[str]:
    """A profile annotation (AppArmor, or seccomp before policy v1.19) of a value the admission
    does not allow. Each annotation is read on its own, and only those the check is about."""

    def judge(key: str) -> Iterator[str]:
        if not applies_to(key):
            return
        value = value_at(c.pod.metadata, "annotations", key)
        if not allowed(value):
            yield _problem(
                reason,
                "pod",
                _sets(c.pod.metadata_field("annotations", key), value),
                'use "runtime/default" or "localhost/<profile>"',
            )

    label = partial(c.pod.metadata_field, "annotations")
    return each(keys(c.pod.metadata, "annotations"), judge, label)


def _volume_label(volume: Any, index: int) -> str:
    """`volume "data"`, or its place while its name is not known."""
    try:
        name = text(volume, "name")
    except UnknownValueError:
        name = None
    return f'volume "{name}"' if name else f"volume #{index}"


# --- baseline ------------------------------------------------------------------------------


def _turned_on(
    reason: str, subject: str, props: object, field: Callable[..., str], *steps: str
) -> Iterator[str]:
    """A switch that must stay off (hostNetwork, privileged, hostProcess), found on."""
    if flag(props, *steps) is True:
        yield _problem(
            reason, subject, _sets(field(*steps), True), f"remove {steps[-1]} or set it to false"
        )


def host_namespaces(c: PodUnderCheck) -> Iterator[str]:
    def judge(name: str) -> Iterator[str]:
        return _turned_on("host namespaces", "pod", c.pod.spec, c.pod.spec_field, name)

    return each(("hostNetwork", "hostPID", "hostIPC"), judge, c.pod.spec_field)


@per_container
def privileged(c: PodUnderCheck, container: Container) -> Iterator[str]:
    field = partial(c.pod.container_field, container)
    return _turned_on(
        "privileged", container.label, container.props, field, "securityContext", "privileged"
    )


BASELINE_CAPABILITIES = (
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
)


@per_container
def capabilities_baseline(c: PodUnderCheck, container: Container) -> Iterator[str]:
    added = elements(container.props, "securityContext", "capabilities", "add")
    forbidden = [cap for cap in added if cap not in BASELINE_CAPABILITIES]
    if forbidden:
        yield _problem(
            "non-default capabilities",
            container.label,
            f"adds {_quoted(forbidden)} in "
            + c.pod.container_field(container, "securityContext", "capabilities", "add"),
            f"add only capabilities from {', '.join(BASELINE_CAPABILITIES)}",
        )


@per_volume
def host_path_volumes(c: PodUnderCheck, index: int, volume: Any) -> Iterator[str]:
    if value_at(volume, "hostPath") is not None:
        yield _problem(
            "hostPath volumes",
            _volume_label(volume, index),
            f"mounts the node's filesystem ({c.pod.spec_field('volumes', index, 'hostPath')})",
            "use a persistentVolumeClaim, emptyDir or another volume type instead of hostPath",
        )


@per_container
def host_ports(c: PodUnderCheck, container: Container) -> Iterator[str]:
    def judge(item: tuple[int, Any]) -> Iterator[str]:
        index, port = item
        host_port = number(port, "hostPort")
        if host_port is not None and host_port != 0:
            yield _problem(
                "hostPort",
                container.label,
                _sets(c.pod.container_field(container, "ports", index, "hostPort"), host_port),
                "remove hostPort and reach the container through a Service",
            )

    field = partial(c.pod.container_field, container, "ports")
    return each(indexed(container.props, "ports"), judge, lambda item: field(item[0]))


_APPARMOR_TYPES = ("RuntimeDefault", "Localhost")
_APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"


def app_armor(c: PodUnderCheck) -> Iterator[str]:
    profiles = partial(
        _profile_types,
        c,
        "appArmorProfile",
        _APPARMOR_TYPES,
        "forbidden AppArmor profile",
        "use the RuntimeDefault or a Localhost AppArmor profile",
    )

    def allowed(value: object) -> bool:
        return isinstance(value, str) and (
            value in ("", "runtime/default") or value.startswith("localhost/")
        )

    annotations = partial(
        annotation_problems,
        c,
        "forbidden AppArmor profile",
        lambda key: key.startswith(_APPARMOR_ANNOTATION_PREFIX),
        allowed,
    )
    return parts(
        ("appArmorProfile fields", profiles),
        (c.pod.metadata_field("annotations"), annotations),
    )


@per_context
def se_linux_options(c: PodUnderCheck, context: SecurityContext) -> Iterator[str]:
    allowed = ["", "container_t", "container_init_t", "container_kvm_t"]
    if c.version >= (1, 31):
        allowed.append("container_engine_t")
    options = mapping(context.props, "seLinuxOptions")
    if options is None:
        return
    selinux_type = value_at(options, "type")
    if selinux_type is not None and selinux_type not in allowed:
        yield _problem(
            "seLinuxOptions",
            context.subject,
            _sets(context.field("seLinuxOptions", "type"), selinux_type),
            f"leave type unset or use one of {', '.join(allowed[1:])}",
        )
    for name in ("user", "role"):
        if text(options, name):
            yield _problem(
                "seLinuxOptions",
                context.subject,
                _sets(context.field("seLinuxOptions", name), text(options, name)),
                f"remove seLinuxOptions.{name}",
            )


@per_container
def _proc_mount(c: PodUnderCheck, container: Container) -> Iterator[str]:
    proc_mount = value_at(container.props, "securityContext", "procMount")
    if proc_mount is not None and proc_mount != "Default":
        yield _problem(
            "procMount",
            container.label,
            _sets(c.pod.container_field(container, "securityContext", "procMount"), proc_mount),
            "remove procMount or set it to Default",
        )


def proc_mount_baseline(c: PodUnderCheck) -> Iterator[str]:
    # From policy v1.35 baseline lets a pod in its own user namespace choose its /proc mount;
    # before, that relaxation sat behind a feature gate that was never on by default.
    if c.version >= (1, 35) and c.user_namespaced:
        return
    yield from _proc_mount(c)


_SECCOMP_TYPES = ("RuntimeDefault", "Localhost")


# Before policy v1.19 seccomp was set by alpha annotations (check_seccompProfile_baseline.go,
# seccompProfileBaseline_1_0): allowed values, on the pod's key or a container's.
_SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER_ANNOTATION_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"


def _seccomp_annotation_allowed(value: object) -> bool:
    return isinstance(value, str) and (
        value in ("runtime/default", "docker/default") or value.startswith("localhost/")
    )


def seccomp_baseline(c: PodUnderCheck) -> Iterator[str]:
    if c.version < (1, 19):
        yield from _seccomp_annotations(c)
        return
    yield from _profile_types(
        c,
        "seccompProfile",
        _SECCOMP_TYPES,
        "seccompProfile",
        "set seccompProfile.type to RuntimeDefault or Localhost",
    )


def _seccomp_annotations(c: PodUnderCheck) -> Iterator[str]:
    names = {_SECCOMP_POD_ANNOTATION}
    names |= {_SECCOMP_CONTAINER_ANNOTATION_PREFIX + container.name for container in c.containers}

    return annotation_problems(c, "seccompProfile", names.__contains__, _seccomp_annotation_allowed)


def _profile_types(
    c: PodUnderCheck, profile: str, allowed: tuple[str, ...], reason: str, fix: str
) -> Iterator[str]:
    """A profile (AppArmor, seccomp) set on the pod or a container is of an allowed type."""

    @per_context
    def judge(c: PodUnderCheck, context: SecurityContext) -> Iterator[str]:
        settings = mapping(context.props, profile)
        if settings is not None and value_at(settings, "type") not in allowed:
            field = context.field(profile, "type")
            yield _problem(reason, context.subject, _sets(field, value_at(settings, "type")), fix)

    return judge(c)


_SYSCTLS_BY_VERSION: Sequence[tuple[Version, tuple[str, ...]]] = (
    (
        (1, 0),
        (
            "kernel.shm_rmid_forced",
            "net.ipv4.ip_local_port_range",
            "net.ipv4.tcp_syncookies",
            "net.ipv4.ping_group_range",
            "net.ipv4.ip_unprivileged_port_start",
        ),
    ),
    ((1, 27), ("net.ipv4.ip_local_reserved_ports",)),
    (
        (1, 29),
        (
            "net.ipv4.tcp_keepalive_time",
            "net.ipv4.tcp_fin_timeout",
            "net.ipv4.tcp_keepalive_intvl",
            "net.ipv4.tcp_keepalive_probes",
        ),
    ),
    ((1, 32), ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")),
    ((1, 37), ("net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat")),
)


def safe_sysctls(version: Version) -> tuple[str, ...]:
    return tuple(name for since, names in _SYSCTLS_BY_VERSION if version >= since for name in names)


def sysctls(c: PodUnderCheck) -> Iterator[str]:
    allowed = safe_sysctls(c.version)
    field = partial(c.pod.spec_field, "securityContext", "sysctls")

    def judge(item: tuple[int, Any]) -> Iterator[str]:
        index, sysctl = item
        name = value_at(sysctl, "name")
        if name not in allowed:
            yield _problem(
                "forbidden sysctls",
                "pod",
                _sets(field(index, "name"), name),
                f"remove it; policy {version_name(c.version)} allows only {', '.join(allowed)}",
            )

    return each(indexed(c.pod.spec, "securityContext", "sysctls"), judge, lambda i: field(i[0]))


@per_context
def windows_host_process(c: PodUnderCheck, context: SecurityContext) -> Iterator[str]:
    return _turned_on(
        "hostProcess",
        context.subject,
        context.props,
        context.field,
        "windowsOptions",
        "hostProcess",
    )


_HANDLERS: tuple[tuple[str, ...], ...] = (
    ("livenessProbe",),
    ("readinessProbe",),
    ("startupProbe",),
    ("lifecycle", "postStart"),
    ("lifecycle", "preStop"),
)


@per_container
def probe_and_lifecycle_hosts(c: PodUnderCheck, container: Container) -> Iterator[str]:
    for handler in _HANDLERS:
        for action in ("httpGet", "tcpSocket"):
            host = text(container.props, *handler, action, "host")
            if host:
                yield _problem(
                    "probe or lifecycle host",
                    container.label,
                    _sets(c.pod.container_field(container, *handler, action, "host"), host),
                    "remove host, so the kubelet connects to the pod's own IP",
                )


# --- restricted ----------------------------------------------------------------------------

RESTRICTED_VOLUME_TYPES = (
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
)
# The volume sources restricted forbids, in the order the admission names them.
_FORBIDDEN_VOLUME_TYPES = (
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "portworxVolume",
    "photonPersistentDisk",
    "scaleIO",
    "storageos",
)


@per_volume
def restricted_volumes(c: PodUnderCheck, index: int, volume: Any) -> Iterator[str]:
    if any(value_at(volume, t) is not None for t in RESTRICTED_VOLUME_TYPES):
        return
    # A volume with no source at all is defaulted to emptyDir by the API server.
    for volume_type in _FORBIDDEN_VOLUME_TYPES:
        if value_at(volume, volume_type) is not None:
            yield _problem(
                "restricted volume types",
                _volume_label(volume, index),
                f"uses {volume_type} ({c.pod.spec_field('volumes', index, volume_type)})",
                f"use only {', '.join(RESTRICTED_VOLUME_TYPES)} volumes",
            )
            return


def windows_exempt(check: PodCheck) -> PodCheck:
    """From policy v1.25 the restricted checks Windows pods cannot meet skip them: such a check
    reads the pod's `os.name` before anything else."""

    def run(c: PodUnderCheck) -> Iterator[str]:
        if c.windows and c.version >= WINDOWS_EXEMPT_SINCE:
            return iter(())
        return check(c)

    return run


@windows_exempt
@per_container
def allow_privilege_escalation(c: PodUnderCheck, container: Container) -> Iterator[str]:
    field = c.pod.container_field(container, "securityContext", "allowPrivilegeEscalation")
    value = flag(container.props, "securityContext", "allowPrivilegeEscalation")
    if value is not False:
        yield _problem(
            "allowPrivilegeEscalation != false",
            container.label,
            _sets(field, True) if value else f"does not set {field}=false",
            "set securityContext.allowPrivilegeEscalation: false on the container",
        )


def run_as_non_root(c: PodUnderCheck) -> Iterator[str]:
    if c.version >= (1, 35) and c.user_namespaced:
        return
    reason = "runAsNonRoot != true"
    fix = "set securityContext.runAsNonRoot: true on the pod or on every container"
    pod_field = c.pod.spec_field("securityContext", "runAsNonRoot")

    def pod_value() -> bool | None:
        return flag(c.pod.spec, "securityContext", "runAsNonRoot")

    def pod_problems() -> Iterator[str]:
        if pod_value() is False:
            yield _problem(reason, "pod", _sets(pod_field, False), fix)

    @per_container
    def container_problems(c: PodUnderCheck, container: Container) -> Iterator[str]:
        field = c.pod.container_field(container, "securityContext", "runAsNonRoot")
        value = flag(container.props, "securityContext", "runAsNonRoot")
        if value is False:
            yield _problem(reason, container.label, _sets(field, False), fix)
        elif value is None and pod_value() is None:
            # With the pod's own setting false, that one violation is the one to fix.
            yield _problem(
                reason, container.label, f"does not set {field}=true, nor does {pod_field}", fix
            )

    yield from parts((pod_field, pod_problems), ("the containers", partial(container_problems, c)))


@per_context
def _run_as_user(c: PodUnderCheck, context: SecurityContext) -> Iterator[str]:
    if number(context.props, "runAsUser") == 0:
        yield _problem(
            "runAsUser=0",
            context.subject,
            _sets(context.field("runAsUser"), 0),
            "remove runAsUser or set a non-zero user ID",
        )


def run_as_user(c: PodUnderCheck) -> Iterator[str]:
    if c.version >= (1, 35) and c.user_namespaced:
        return iter(())
    return _run_as_user(c)


@windows_exempt
def seccomp_restricted(c: PodUnderCheck) -> Iterator[str]:
    fix = "set securityContext.seccompProfile.type: RuntimeDefault (or Localhost) on the pod"
    pod_field = c.pod.spec_field("securityContext", "seccompProfile")

    def pod_profile() -> Mapping[str, object] | None:
        return mapping(c.pod.spec, "securityContext", "seccompProfile")

    def pod_problems() -> Iterator[str]:
        profile = pod_profile()
        if profile is not None and value_at(profile, "type") not in _SECCOMP_TYPES:
            yield _problem(
                "seccompProfile", "pod", _sets(f"{pod_field}.type", value_at(profile, "type")), fix
            )

    @per_container
    def container_problems(c: PodUnderCheck, container: Container) -> Iterator[str]:
        field = c.pod.container_field(container, "securityContext", "seccompProfile")
        profile = mapping(container.props, "securityContext", "seccompProfile")
        if profile is not None and value_at(profile, "type") not in _SECCOMP_TYPES:
            yield _problem(
                "seccompProfile",
                container.label,
                _sets(f"{field}.type", value_at(profile, "type")),
                fix,
            )
        elif profile is None and pod_profile() is None:
            # A pod-level profile, valid or not, is the one place to fix for such containers.
            yield _problem(
                "seccompProfile",
                container.label,
                f"does not set {field}.type, nor does {pod_field}.type",
                fix,
            )

    yield from parts((pod_field, pod_problems), ("the containers", partial(container_problems, c)))


@windows_exempt
@per_container
def capabilities_restricted(c: PodUnderCheck, container: Container) -> Iterator[str]:
    capabilities = ("securityContext", "capabilities")
    drop_field = c.pod.container_field(container, *capabilities, "drop")
    add_field = c.pod.container_field(container, *capabilities, "add")

    def dropped() -> Iterator[str]:
        if "ALL" not in elements(container.props, *capabilities, "drop"):
            yield _problem(
                "unrestricted capabilities",
                container.label,
                f"does not drop ALL in {drop_field}",
                'set securityContext.capabilities.drop: ["ALL"]',
            )

    def added() -> Iterator[str]:
        forbidden = [
            cap
            for cap in elements(container.props, *capabilities, "add")
            if cap != "NET_BIND_SERVICE"
        ]
        if forbidden:
            yield _problem(
                "unrestricted capabilities",
                container.label,
                f"adds {_quoted(forbidden)} in {add_field}",
                "add at most NET_BIND_SERVICE",
            )

    return parts((drop_field, dropped), (add_field, added))


@dataclass(frozen=True)
class Check:
    id: str
    level: str
    problems: Callable[[PodUnderCheck], Iterator[str]]
    since: Version = (1, 0)
    overrides: str | None = None
    """The baseline check this restricted check takes over from its `since` version on
    (`OverrideCheckIDs` upstream): before it, the baseline check applies at restricted too."""


CHECKS = (
    Check("hostNamespaces", "baseline", host_namespaces),
    Check("privileged", "baseline", privileged),
    Check("capabilities_baseline", "baseline", capabilities_baseline),
    Check("hostPathVolumes", "baseline", host_path_volumes),
    Check("hostPorts", "baseline", host_ports),
    Check("appArmorProfile", "baseline", app_armor),
    Check("seLinuxOptions", "baseline", se_linux_options),
    Check("procMount", "baseline", proc_mount_baseline),
    Check("seccompProfile_baseline", "baseline", seccomp_baseline),
    Check("sysctls", "baseline", sysctls),
    Check("windowsHostProcess", "baseline", windows_host_process),
    Check("hostProbesAndHostLifecycle", "baseline", probe_and_lifecycle_hosts, since=(1, 34)),
    Check("restrictedVolumes", "restricted", restricted_volumes, overrides="hostPathVolumes"),
    Check("allowPrivilegeEscalation", "restricted", allow_privilege_escalation, since=(1, 8)),
    Check("runAsNonRoot", "restricted", run_as_non_root),
    Check("runAsUser", "restricted", run_as_user, since=(1, 23)),
    Check(
        "seccompProfile_restricted",
        "restricted",
        seccomp_restricted,
        since=(1, 19),
        overrides="seccompProfile_baseline",
    ),
    Check(
        "capabilities_restricted",
        "restricted",
        capabilities_restricted,
        since=(1, 22),
        overrides="capabilities_baseline",
    ),
    Check("procMount_restricted", "restricted", _proc_mount, since=(1, 35), overrides="procMount"),
)


# Restricted checks that fail on a field left unset: a patch leaves most fields unset, and the
# object it patches may well set them. On a patch only the checks of values it sets apply (the
# baseline checks these override come back in their place).
REQUIRED_VALUE_CHECKS = (
    "allowPrivilegeEscalation",
    "runAsNonRoot",
    "seccompProfile_restricted",
    "capabilities_restricted",
    "procMount_restricted",
)


def checks_for(standard: Standard, partial: bool = False) -> list[Check]:
    """The checks of a level at a version, as the admission's check registry assembles them;
    for a patch's `partial` pod, those of the values it sets."""
    if standard.level == "privileged":
        return []
    levels = ("baseline", "restricted") if standard.level == "restricted" else ("baseline",)
    applicable = [
        c
        for c in CHECKS
        if c.level in levels
        and standard.version >= c.since
        and not (partial and c.id in REQUIRED_VALUE_CHECKS)
    ]
    overridden = {c.overrides for c in applicable}
    return [c for c in applicable if c.id not in overridden]


def problems_of(pod: Pod, standard: Standard, check: Check) -> Iterator[str]:
    for problem in check.problems(PodUnderCheck(pod, standard.version)):
        yield f"{problem} [{standard.describe()}]"


# --- which standard applies ----------------------------------------------------------------
#
# `pod-security-standards` is a resource policy, so that at `pulumi up` it runs before each
# resource's step, as the engine runs resource policies, and a privileged workload is refused
# before it is created: a stack policy runs only after every step (pulumi
# pkg/engine/deployment_executor.go analyzes the stack once the step executor is done). A
# resource policy sees its resource only, not the Namespace, so each namespace's level comes
# from the policy's config (`namespaceLevels`), and `pod-security-levels-listed`, a stack
# policy, checks that config against the Namespaces the stack declares.


def _name(resource: PolicyResource) -> str | None:
    try:
        return text(resource.props, "metadata", "name")
    except UnknownValueError:
        return None


def namespace_resource(
    workload: PolicyResource, namespaces: Sequence[PolicyResource]
) -> tuple[str, PolicyResource | None]:
    """The workload's namespace name, and the Namespace resource declaring it in the stack.

    A Namespace whose name is not known (computed, or generated by the provider) is matched
    through the workload's dependency on it for its `metadata`, the usual `metadata.namespace`
    taken from the Namespace's output."""
    linked = [
        dependency
        for dependency in workload.property_dependencies.get("metadata", [])
        if dependency.resource_type == NAMESPACE_TYPE
    ]
    try:
        name = namespace_or_default(
            text(workload.props, "metadata", "namespace"), workload.provider
        )
    except UnknownValueError:
        if len(linked) != 1:
            raise
        return _name(linked[0]) or linked[0].name, linked[0]
    for namespace in namespaces:
        if _name(namespace) == name:
            return name, namespace
    unnamed = [namespace for namespace in linked if _name(namespace) is None]
    if len(unnamed) == 1:
        return name, unnamed[0]
    return name, None


def _within_known(version: Version | None) -> Version:
    """As the admission reads a version: a malformed one is the latest, one past the newest it
    knows is the newest, one before v1.0 is v1.0."""
    return min(max(version or LATEST_VERSION, OLDEST_VERSION), LATEST_VERSION)


def enforced_standard(namespace: PolicyResource, default_level: str) -> Standard:
    """The level and version a declared Namespace's labels enforce, as the admission reads
    them: without an enforce label the default, a malformed label restricted, a malformed or
    missing version the latest."""
    name = _name(namespace) or namespace.name
    labels = mapping(namespace.props, "metadata", "labels") or {}
    level_label = value_at(labels, LABEL_PREFIX + "enforce")
    version_label = value_at(labels, LABEL_PREFIX + "enforce-version")
    version = _within_known(
        parse_version(version_label) if isinstance(version_label, str) else None
    )
    if level_label is None:
        reason = f'the default, as namespace "{name}" has no enforce label'
        return Standard(default_level, version, reason)
    if level_label not in LEVELS:
        reason = f'as namespace "{name}" has a malformed enforce label {shown(level_label)}'
        return Standard("restricted", version, reason)
    return Standard(str(level_label), version, f'from namespace "{name}"')


NAMESPACE_LEVELS = Setting(
    "namespaceLevels",
    {
        "type": "object",
        "additionalProperties": {
            "type": "string",
            "pattern": r"^(privileged|baseline|restricted)(:(latest|v[0-9]+\.[0-9]+))?$",
        },
        "default": {},
        "description": 'Each namespace\'s enforced level, as "<level>:<version>" (such as '
        '"restricted:v1.35"; without a version, the latest): the level its workloads are '
        "judged at before they are applied. pod-security-levels-listed checks it against the "
        "Namespaces the stack declares.",
    },
)


def listed_standard(name: str, config: Mapping[str, object]) -> Standard | None:
    """The standard `namespaceLevels` gives a namespace, or None where it is not listed."""
    listed = NAMESPACE_LEVELS.read(config).get(name)
    if not isinstance(listed, str):
        return None
    level, _, version = listed.partition(":")
    known = _within_known(parse_version(version or "latest"))
    return Standard(level, known, f'from namespace "{name}"')


def standard_for(name: str | None, config: Mapping[str, object]) -> Standard:
    """The level and version a workload in namespace `name` is held to: the one place that
    decides it.

    - a namespace listed in `namespaceLevels`: its level and version;
    - one not listed: not checked when exempt (`exemptNamespaces`), else the default;
    - one not known yet at preview: the default, until `pulumi up` knows the name.
    """
    default_level = DEFAULT_LEVEL.read(config)
    if name is None:
        return Standard(default_level, LATEST_VERSION, "the default, as the namespace is not known")
    found = listed_standard(name, config)
    if found is not None:
        return found
    if name in EXEMPT_NAMESPACES.read(config):
        return Standard("privileged", LATEST_VERSION, f'namespace "{name}" is exempt')
    return Standard(
        default_level,
        LATEST_VERSION,
        f'the default, as namespace "{name}" is not in {NAMESPACE_LEVELS.key}',
    )


def _namespace_name(args: ResourceValidationArgs) -> str | None:
    try:
        return namespace_or_default(text(args.props, "metadata", "namespace"), args.provider)
    except UnknownValueError:
        return None


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    pods = pods_of(args.resource_type, args.props)
    if not pods:
        return
    config = args.get_config()
    standard = standard_for(_namespace_name(args), config)
    with Findings(NAME, args.urn, report_violation) as findings:
        for pod in pods:
            # An object an Argo resource template creates lands in a namespace of its own.
            held_to = standard_for(pod.namespace, config) if pod.own_namespace else standard
            if pod.unread:
                findings.check(NAME, partial(unread_problems, pod, held_to))
                continue
            for check in checks_for(held_to, pod.partial):
                findings.check(check.id, partial(problems_of, pod, held_to, check))


def unread_problems(pod: Pod, standard: Standard) -> Iterator[str]:
    """What no policy can read (`Pod.unread`) is refused wherever the standard has checks.
    It is not left to `checks-deferred-at-preview`, as a value not known at preview is: that
    value is judged at `pulumi up`, this only once its pod is built, after every policy has
    run; like a configured workload kind in which no pod is found (`gpu-workload-kinds`), it
    is reported rather than passed over."""
    if standard.level == "privileged":
        return
    yield f"{field_path(*pod.path)} {pod.unread}. [{standard.describe()}]"


LISTED_NAME = "pod-security-levels-listed"
CONFIGURED: dict[str, object] = {}
"""pod-security-standards' config, as the pack last received it (`configure`)."""


def configure(config: Mapping[str, object]) -> None:
    CONFIGURED.clear()
    CONFIGURED.update(config)


def _same(a: Standard, b: Standard) -> bool:
    # Privileged has no checks, whatever its version.
    return a.level == b.level and (a.level == "privileged" or a.version == b.version)


def listing_problems(namespace: PolicyResource) -> Iterator[str]:
    name = _name(namespace)
    if name is None:
        return
    enforced = enforced_standard(namespace, DEFAULT_LEVEL.read(CONFIGURED))
    judged = standard_for(name, CONFIGURED)
    if not _same(enforced, judged):
        version = version_name(enforced.version)
        yield (
            f'namespace "{name}" enforces Pod Security {enforced.level} {version} '
            f"({enforced.reason}), but {NAME} judges its workloads before they are applied at "
            f"{judged.level} {version_name(judged.version)} ({judged.reason}). Fix: set "
            f'"{name}": "{enforced.level}:{version}" in {NAME}\'s {NAMESPACE_LEVELS.key} (the '
            "stack's policy config)."
        )


def validate_listing(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    with Findings(LISTED_NAME, "the stack", report_violation) as findings:
        for resource in args.resources:
            if resource.resource_type == NAMESPACE_TYPE:
                findings.check(
                    f"the level of {resource.urn}",
                    partial(listing_problems, resource),
                    resource.urn,
                )


POD_SECURITY = ResourceValidationPolicy(
    name=NAME,
    description="Pods and pod templates meet the Pod Security Standard their namespace enforces.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=config_schema(DEFAULT_LEVEL, EXEMPT_NAMESPACES, NAMESPACE_LEVELS),
)
LEVELS_LISTED = StackValidationPolicy(
    name=LISTED_NAME,
    description=f"Each Namespace the stack declares enforces the level {NAME} judges its "
    "workloads at.",
    validate=validate_listing,
    enforcement_level=EnforcementLevel.MANDATORY,
)

POLICIES = [POD_SECURITY, LEVELS_LISTED]

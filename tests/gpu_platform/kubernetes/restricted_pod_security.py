"""Pod Security Standards `restricted` (baseline included), rule by rule, as the built-in
admission checks a pod spec; each rule names the fields it reads, so a failure says which.

Annotations (AppArmor) live on the pod's metadata and are not checked here: the specs built by
the platform set none. Windows pods, exempt from three of the rules, are not built here either.
"""

from collections.abc import Callable, Iterator, Mapping
from typing import Any

PodSpec = Mapping[str, Any]

BASELINE_CAPABILITIES = frozenset(
    {
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
    }
)
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    }
)
SELINUX_TYPES = frozenset(
    {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)
RESTRICTED_VOLUME_TYPES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "image",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
PROFILE_TYPES = frozenset({"RuntimeDefault", "Localhost"})


def containers(spec: PodSpec) -> Iterator[Mapping[str, Any]]:
    """All containers, as Pod Security counts them."""
    for field in ("containers", "initContainers", "ephemeralContainers"):
        yield from spec.get(field) or []


def _context(container: Mapping[str, Any]) -> Mapping[str, Any]:
    return container.get("securityContext") or {}


def _pod_context(spec: PodSpec) -> Mapping[str, Any]:
    return spec.get("securityContext") or {}


def _contexts(spec: PodSpec) -> Iterator[Mapping[str, Any]]:
    yield _pod_context(spec)
    yield from (_context(c) for c in containers(spec))


# --- baseline ------------------------------------------------------------------------------


def no_privileged_containers(spec: PodSpec) -> bool:
    return not any(_context(c).get("privileged") for c in containers(spec))


def no_host_namespaces(spec: PodSpec) -> bool:
    return not any(spec.get(f) for f in ("hostNetwork", "hostPID", "hostIPC"))


def no_host_path_volumes(spec: PodSpec) -> bool:
    return not any("hostPath" in v for v in spec.get("volumes") or [])


def no_host_ports(spec: PodSpec) -> bool:
    return all(p.get("hostPort", 0) == 0 for c in containers(spec) for p in c.get("ports") or [])


def only_baseline_capabilities_added(spec: PodSpec) -> bool:
    added = {
        a
        for c in containers(spec)
        for a in (_context(c).get("capabilities") or {}).get("add") or []
    }
    return added <= BASELINE_CAPABILITIES


def app_armor_is_runtime_default_or_localhost(spec: PodSpec) -> bool:
    return all(
        ctx["appArmorProfile"].get("type") in PROFILE_TYPES
        for ctx in _contexts(spec)
        if "appArmorProfile" in ctx
    )


def selinux_type_allowed_and_no_user_or_role(spec: PodSpec) -> bool:
    options = [ctx["seLinuxOptions"] for ctx in _contexts(spec) if "seLinuxOptions" in ctx]
    return all(
        o.get("type", "") in SELINUX_TYPES and not o.get("user") and not o.get("role")
        for o in options
    )


def proc_mount_default(spec: PodSpec) -> bool:
    return all(_context(c).get("procMount", "Default") == "Default" for c in containers(spec))


def seccomp_not_unconfined(spec: PodSpec) -> bool:
    return all(
        ctx["seccompProfile"].get("type") in PROFILE_TYPES
        for ctx in _contexts(spec)
        if "seccompProfile" in ctx
    )


def only_safe_sysctls(spec: PodSpec) -> bool:
    return all(s.get("name") in SAFE_SYSCTLS for s in _pod_context(spec).get("sysctls") or [])


def no_windows_host_process(spec: PodSpec) -> bool:
    return not any((ctx.get("windowsOptions") or {}).get("hostProcess") for ctx in _contexts(spec))


def no_probe_or_lifecycle_host(spec: PodSpec) -> bool:
    handlers = []
    for c in containers(spec):
        handlers += [c.get(p) or {} for p in ("livenessProbe", "readinessProbe", "startupProbe")]
        handlers += list((c.get("lifecycle") or {}).values())
    return not any(
        (h.get(kind) or {}).get("host") for h in handlers for kind in ("httpGet", "tcpSocket")
    )


# --- restricted ----------------------------------------------------------------------------


def no_privilege_escalation(spec: PodSpec) -> bool:
    return all(_context(c).get("allowPrivilegeEscalation") is False for c in containers(spec))


def all_capabilities_dropped_and_at_most_net_bind_service_added(spec: PodSpec) -> bool:
    for c in containers(spec):
        capabilities = _context(c).get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            return False
        if set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}:
            return False
    return True


def runs_as_non_root(spec: PodSpec) -> bool:
    pod_level = _pod_context(spec).get("runAsNonRoot")
    per_container = [_context(c).get("runAsNonRoot") for c in containers(spec)]
    if pod_level is False or False in per_container:
        return False
    return pod_level is True or all(v is True for v in per_container)


def never_runs_as_user_zero(spec: PodSpec) -> bool:
    return all(ctx.get("runAsUser") != 0 for ctx in _contexts(spec))


def seccomp_runtime_default_or_localhost_everywhere(spec: PodSpec) -> bool:
    def set_on(ctx: Mapping[str, Any]) -> bool:
        return (ctx.get("seccompProfile") or {}).get("type") in PROFILE_TYPES

    return set_on(_pod_context(spec)) or all(set_on(_context(c)) for c in containers(spec))


def only_restricted_volume_types(spec: PodSpec) -> bool:
    return all(set(v) - {"name"} <= RESTRICTED_VOLUME_TYPES for v in spec.get("volumes") or [])


RESTRICTED_RULES: Mapping[str, Callable[[PodSpec], bool]] = {
    rule.__name__: rule
    for rule in (
        no_privileged_containers,
        no_host_namespaces,
        no_host_path_volumes,
        no_host_ports,
        only_baseline_capabilities_added,
        app_armor_is_runtime_default_or_localhost,
        selinux_type_allowed_and_no_user_or_role,
        proc_mount_default,
        seccomp_not_unconfined,
        only_safe_sysctls,
        no_windows_host_process,
        no_probe_or_lifecycle_host,
        no_privilege_escalation,
        all_capabilities_dropped_and_at_most_net_bind_service_added,
        runs_as_non_root,
        never_runs_as_user_zero,
        seccomp_runtime_default_or_localhost_everywhere,
        only_restricted_volume_types,
    )
}


def restricted_violations(spec: PodSpec) -> list[str]:
    """The `restricted` rules the pod spec breaks, by name; empty when it passes."""
    return [name for name, rule in RESTRICTED_RULES.items() if not rule(spec)]

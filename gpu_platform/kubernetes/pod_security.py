"""Pod Security admission labels, the same for every namespace the platform creates."""

from gpu_platform.versions import POD_SECURITY_VERSION

POD_SECURITY_MODES = ("enforce", "audit", "warn")


def pod_security_labels(level: str) -> dict[str, str]:
    """Labels enforcing, auditing and warning at `level`, each pinned to POD_SECURITY_VERSION so
    that a cluster upgrade cannot change what the namespace admits."""
    return {
        f"pod-security.kubernetes.io/{mode}{suffix}": value
        for mode in POD_SECURITY_MODES
        for suffix, value in (("", level), ("-version", POD_SECURITY_VERSION))
    }

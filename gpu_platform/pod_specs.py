"""Where a Kubernetes workload keeps the spec of the pods it runs.

Apart from the fit (`gpu_platform.fit`), which reads it with the clouds' node templates, so that a
plan's checks that read pod specs load neither cloud's modules.
"""

from collections.abc import Mapping
from typing import Any


def pod_spec_of(document: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod spec inside a Pod, or the pod template of a workload (Deployment, Job, ...)."""
    kind = document.get("kind")
    spec = document.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        return spec["jobTemplate"]["spec"]["template"]["spec"]
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        return spec["template"]["spec"]
    raise ValueError(f"{kind!r} has no pod spec: expected a Pod, Deployment, Job or the like")

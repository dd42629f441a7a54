"""The sweep's check of all-or-nothing scale-up: each tenant's ClusterQueue holds Kueue's
provisioning check on exactly the flavors of the pools whose nodes come from a
ProvisioningRequest, of the class their cloud provisions them by, and Kueue's manager pods say
whether there are such pools, so that it restarts where that changes (it sets its provisioning
controller up only if the API is served when it starts: cmd/kueue/main.go at v0.19.2)."""

from collections.abc import Mapping
from typing import Any

from gpu_platform.offline.program import Plan

KUEUE = "kueue.x-k8s.io/v1beta2"
# GKE's class for queued-provisioning pools, and the cluster autoscaler's atomic class
# (`ProvisioningClassBestEffortAtomicScaleUp`, cluster-autoscaler/apis/provisioningrequest/
# autoscaling.x-k8s.io/v1/types.go at cluster-autoscaler-1.36.1).
GKE_CLASS = "queued-provisioning.gke.io"
ATOMIC_CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"


def expected_classes(config: Mapping[str, Any]) -> dict[str, str]:
    """Each atomic pool of the stack file, by name, with its class."""
    found = {}
    for pool in config.get("gpu-platform:pools", []):
        if pool.get("gcp", {}).get("queuedProvisioning"):
            found[pool["name"]] = GKE_CLASS
        elif pool.get("aws", {}).get("atomicScaleUp"):
            found[pool["name"]] = ATOMIC_CLASS
    return found


def provisioning_check_problems(plan: Plan, config: Mapping[str, Any]) -> list[str]:
    classes = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]["provisioningClassName"]
        for r in plan.of_type(f"kubernetes:{KUEUE}:ProvisioningRequestConfig")
    }
    checks = {
        r.inputs["metadata"]["name"]: classes.get(r.inputs["spec"]["parameters"]["name"])
        for r in plan.of_type(f"kubernetes:{KUEUE}:AdmissionCheck")
        if r.inputs["spec"]["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    }
    expected = expected_classes(config)
    problems = []
    for release in plan.of_type("kubernetes:helm.sh/v3:Release"):
        if release.inputs["chart"].endswith("/kueue"):
            manager = release.inputs["values"]["controllerManager"]["manager"]
            said = manager["podAnnotations"]["gpu-platform.io/provisioning-requests"]
            if said != ("enabled" if classes else "disabled"):
                problems.append(
                    f"Kueue's manager says provisioning requests are {said}, the stack having"
                    f" {len(classes)} ProvisioningRequestConfigs"
                )
    for queue in plan.of_type(f"kubernetes:{KUEUE}:ClusterQueue"):
        strategy = queue.inputs["spec"].get("admissionChecksStrategy", {})
        held = {
            flavor: checks.get(check["name"])
            for check in strategy.get("admissionChecks", [])
            for flavor in check["onFlavors"]
        }
        flavors = {
            f["name"] for group in queue.inputs["spec"]["resourceGroups"] for f in group["flavors"]
        }
        want = {pool: cls for pool, cls in expected.items() if pool in flavors}
        if held != want:
            problems.append(
                f"ClusterQueue {queue.inputs['metadata']['name']} checks {held}, its atomic"
                f" pools' flavors being {want}"
            )
    return problems

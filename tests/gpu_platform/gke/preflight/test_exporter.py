"""The GKE pre-flight check's warning for GKE-shared pools whose nodes still run the GPU
Operator's DCGM exporter when the stack gets pools of whole GPUs, against the fake GKE API of
test_checks.

The operator's exporter runs wherever `nvidia.com/gpu.deploy.dcgm-exporter` is "true", which the
operator sets on a GPU node without it (gpu-operator v26.7.0
assets/state-dcgm-exporter/0800_daemonset.yaml, controllers/state_manager.go
`addGPUStateLabels`), and matches pods by UUID unless told `device-name`, the IDs GKE's device
plugin uses (dcgm-exporter 4.5.3-4.8.2 internal/pkg/collector/types.go `GetIDOfType`;
container-engine-accelerators pkg/gpu/nvidia/manager.go)."""

from typing import Any

from gpu_platform.preflight.findings import Finding
from tests.gpu_platform.gke.preflight import test_checks as base
from tests.gpu_platform.gke.preflight.test_upgrades import node_pool, running_pools

Config = dict[str, Any]
google = base.google
# The lock gives every GPU its driver on the cluster's version: its own findings are not these.
locked = base.locked
FakeGoogle = base.FakeGoogle
EXPORTER_LABELS = {
    "nvidia.com/gpu.deploy.dcgm-exporter": "false",
    "gpu-platform.io/gpu-sharer": "gke",
}
# l4-shared as GKE runs it from before the platform's exporter took GKE-shared nodes.
UNLABELLED = node_pool()


def labelled() -> dict[str, Any]:
    pool = node_pool()
    pool["config"]["labels"].update(EXPORTER_LABELS)
    return pool


def exporter_findings(google: FakeGoogle, change: Any = lambda c: None) -> list[Finding]:
    return [f for f in base.findings(google, change) if "DCGM exporter" in f.message]


def gke_shared_alone(c: Config) -> None:
    c["gpu-platform:pools"] = [base.pool(c, "l4-shared")]


def test_whole_gpu_pools_beside_a_running_gke_shared_pool_without_the_exporter_labels_warn(
    google: FakeGoogle,
) -> None:
    # h100-specific, l4-flex and h100-queued are exclusive: the operator's device plugin serves
    # them, and its exporter then matches by UUID (gpu_platform/kubernetes/operator_values.py).
    google.cluster(**running_pools(UNLABELLED))

    assert exporter_findings(google) == [
        Finding(
            "warning",
            "cluster ml-dev",
            "The node pools of GKE-shared pools l4-shared lack"
            " nvidia.com/gpu.deploy.dcgm-exporter=false, gpu-platform.io/gpu-sharer=gke: their"
            " nodes run the GPU Operator's DCGM exporter, which matches pods by device name only"
            " while every pool is GKE-shared. With the pools of whole GPUs h100-specific, l4-flex,"
            " h100-queued it matches by UUID, and those nodes' GPU series lose their pod and"
            " namespace (the idle-GPU alert and the reaper do not see those pods) until their"
            " node pools are updated, which for a pool a canary leads waits for the canary's"
            " gate.",
            "Leave h100-specific, l4-flex, h100-queued out of the stack until pulumi up has"
            " updated l4-shared (a pool a canary leads once the canary's gate passes), then add"
            " them (docs/gpu-sharing.md).",
        )
    ]


def test_a_running_gke_shared_pool_with_the_exporter_labels_is_ready_for_whole_gpu_pools(
    google: FakeGoogle,
) -> None:
    google.cluster(**running_pools(labelled()))

    assert exporter_findings(google) == []


def test_while_every_pool_is_gke_shared_an_unlabelled_pool_keeps_its_pods_series(
    google: FakeGoogle,
) -> None:
    google.cluster(**running_pools(UNLABELLED))

    assert exporter_findings(google, gke_shared_alone) == []

"""The shapes the platform declares pass the whole pack with no verdict at all: if a policy
and the platform ever disagree, this is where it shows first."""

from typing import Any

from tests.gpu_platform.policy_pack.builders import (
    PLATFORM,
    RELEASE,
    ROLLS_BACK,
    Analyze,
    eks_node_group,
    gke_node_pool,
    gpu_alert_rules,
    gpu_operator_release,
    launch_template,
    namespace,
    resource,
    workload,
)


def smoke_test_pod() -> dict[str, Any]:
    """`nvidia-smi` once, in a restricted pod on the `l4` pool, as tenant namespaces run it."""
    return {
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 1000,
            "runAsGroup": 1000,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": "nvidia-smi",
                # The platform's smoke test runs its image by digest
                # (platform-images-by-digest holds an object of its kind and name to it).
                "image": "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04@sha256:" + "0" * 64,
                "command": ["nvidia-smi"],
                "env": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"}],
                "resources": {
                    "requests": {"cpu": "100m", "memory": "128Mi"},
                    "limits": {"memory": "128Mi", "nvidia.com/gpu": "1"},
                },
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
        "tolerations": [
            {
                "key": "nvidia.com/gpu",
                "operator": "Equal",
                "value": "present",
                "effect": "NoSchedule",
            }
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "gpu-platform.io/pool", "operator": "In", "values": ["l4"]}
                            ]
                        }
                    ]
                }
            }
        },
        "restartPolicy": "Never",
    }


def test_the_platforms_resources_draw_no_verdict(analyze: Analyze) -> None:
    template = launch_template()
    monitoring_stack = resource(
        RELEASE,
        "kube-prometheus-stack",
        {
            "name": "kube-prometheus-stack",
            "chart": "kube-prometheus-stack",
            "version": "93.4.1",
            "repositoryOpts": {"repo": "https://prometheus-community.github.io/helm-charts"},
            "namespace": "monitoring",
            **ROLLS_BACK,
            "values": {"grafana": {"sidecar": {"dashboards": {"enabled": True}}}},
        },
        parents=(PLATFORM, "gpu-platform:kubernetes:GpuMonitoring"),
    )
    # The driver and CUDA release the platform labels each pool with (gpu-pods-cuda-known reads
    # them; a pool without them draws its advisory).
    node_group = eks_node_group(template)
    node_group.inputs["labels"].update(
        {"gpu-platform.io/nvidia-driver": "580.95.05", "gpu-platform.io/cuda": "13.0"}
    )
    smoke_test = workload("Job", smoke_test_pod(), name="gpu-smoke-test", namespace="ml-sandbox")
    smoke_test.inputs["spec"].update(backoffLimit=0, activeDeadlineSeconds=1800)

    verdicts = analyze(
        namespace("gpu-operator", "privileged"),
        namespace("monitoring", "privileged"),
        namespace("ml-sandbox", "restricted"),
        template,
        node_group,
        gke_node_pool(),
        gpu_operator_release(),
        monitoring_stack,
        gpu_alert_rules(),
        smoke_test,
    )

    assert verdicts == []

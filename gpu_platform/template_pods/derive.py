"""Derive the pod specs of the DaemonSets the platform installs from charts and manifests, as far
as the autoscaler's template node needs them (`daemonset-pods.json` beside this script).

    uv run python -m gpu_platform.template_pods.derive \
        --nfd-values node-feature-discovery/values.yaml \
        --efa-values aws-efa-k8s-device-plugin/values.yaml \
        --cos-manifest daemonset-preloaded.yaml \
        --vpc-cni-manifest aws-k8s-cni.yaml \
        --ebs-csi-manifest node.yaml \
        --node-monitoring-values eks-node-monitoring-agent/values.yaml

Run it on the chart's own values files (`helm show values` of the versions in
gpu_platform/versions.py: node-feature-discovery at `GPU_OPERATOR_NFD_SUBCHART`,
aws-efa-k8s-device-plugin at `EFA_DEVICE_PLUGIN_CHART`), on the COS driver installer's
manifest at `GKE_COS_DRIVER_INSTALLER_MANIFEST`, and on the EKS add-ons' upstream sources at the
releases the platform pins (gpu_platform/eks/new_cluster/addon_versions.json, less EKS's
`-eksbuild.N`; `EKS_NODE_MONITORING_AGENT_ADDON_VERSION`): aws/amazon-vpc-cni-k8s
`config/master/aws-k8s-cni.yaml`, kubernetes-sigs/aws-ebs-csi-driver
`deploy/kubernetes/base/node.yaml` and aws/eks-node-monitoring-agent
`charts/eks-node-monitoring-agent/values.yaml`, each at its release's tag, whenever one of
those pins moves, and commit the file it writes. Each entry keeps what decides where the pod
runs and what it reserves: its containers' and init containers' `resources` (and
`restartPolicy`), tolerations, node selector, affinity and priority class. Settings the
platform gives a release or an add-on (its tolerations and node selector) are read from the
stack's plan instead (`gpu_platform.offline.fit`).
"""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from gpu_platform.kubernetes.chart_files import write_derived
from gpu_platform.template_pods import (
    EFA_DEVICE_PLUGIN_KEY,
    NFD_WORKER_KEY,
    addon_key,
    pinned_addon_release,
)
from gpu_platform.versions import (
    EFA_DEVICE_PLUGIN_CHART,
    GKE_COS_DRIVER_INSTALLER_MANIFEST,
)

OUTPUT = Path(__file__).with_name("daemonset-pods.json")
_SCHEDULING_KEYS = ("tolerations", "nodeSelector", "affinity", "priorityClassName")
_CONTAINER_KEYS = ("name", "resources", "restartPolicy")


def chart_pod(values: Mapping[str, Any], container: str) -> dict[str, Any]:
    """The pod a chart's DaemonSet renders from `values` (the chart's values, or one section of
    them): one container of that name with the values' `resources`, and their scheduling
    settings."""
    pod: dict[str, Any] = {
        "containers": [{"name": container, "resources": values.get("resources") or {}}]
    }
    pod |= {key: values[key] for key in _SCHEDULING_KEYS if values.get(key)}
    return pod


def manifest_pod(manifest: str) -> dict[str, Any]:
    """The pod template of the one DaemonSet in a manifest, cut to what decides its requests and
    where it runs."""
    (daemonset,) = [d for d in yaml.safe_load_all(manifest) if d and d.get("kind") == "DaemonSet"]
    spec = daemonset["spec"]["template"]["spec"]
    pod = {
        part: [{k: c[k] for k in _CONTAINER_KEYS if k in c} for c in spec.get(part) or []]
        for part in ("initContainers", "containers")
    }
    return pod | {key: spec[key] for key in _SCHEDULING_KEYS if spec.get(key)}


def derive(
    nfd_values: str,
    efa_values: str,
    cos_manifest: str,
    vpc_cni_manifest: str,
    ebs_csi_manifest: str,
    node_monitoring_values: str,
) -> dict[str, Any]:
    """Each DaemonSet's pod, by a key naming its source and pinned version."""
    monitoring = yaml.safe_load(node_monitoring_values)
    addons = {
        ("vpc-cni", "aws-node"): manifest_pod(vpc_cni_manifest),
        ("aws-ebs-csi-driver", "ebs-csi-node"): manifest_pod(ebs_csi_manifest),
        ("eks-node-monitoring-agent", "agent"): chart_pod(monitoring["nodeAgent"], "agent"),
        ("eks-node-monitoring-agent", "dcgm-server"): chart_pod(
            monitoring["dcgmAgent"], "dcgm-server"
        ),
    }
    return {
        NFD_WORKER_KEY: chart_pod(yaml.safe_load(nfd_values)["worker"], "worker"),
        EFA_DEVICE_PLUGIN_KEY: chart_pod(yaml.safe_load(efa_values), EFA_DEVICE_PLUGIN_CHART.name),
        GKE_COS_DRIVER_INSTALLER_MANIFEST: manifest_pod(cos_manifest),
        **{
            addon_key(addon, pinned_addon_release(addon), daemonset): pod
            for (addon, daemonset), pod in addons.items()
        },
    }


File = Annotated[Path, typer.Option(exists=True, dir_okay=False)]


def main(
    nfd_values: File,
    efa_values: File,
    cos_manifest: File,
    vpc_cni_manifest: File,
    ebs_csi_manifest: File,
    node_monitoring_values: File,
) -> None:
    """Write the DaemonSets' pods beside this script."""
    sources = (
        nfd_values,
        efa_values,
        cos_manifest,
        vpc_cni_manifest,
        ebs_csi_manifest,
        node_monitoring_values,
    )
    pods = derive(*(source.read_text() for source in sources))
    text = json.dumps(pods, indent=1, sort_keys=True) + "\n"
    write_derived(OUTPUT, text, f"{len(pods)} DaemonSet pods")


if __name__ == "__main__":
    typer.run(main)

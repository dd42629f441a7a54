"""What takes a new MIG node's startup taint off once its GPUs are partitioned: a one-replica
Deployment in the GPU Operator's namespace that runs `mig_startup_taint_remover.py` (shipped in
a ConfigMap, standard library only, on the pinned official Python image), declared wherever a
pool's MIG slices are made by the operator's MIG manager.

Its service account may list nodes and patch them, cluster-wide (nodes are not namespaced): the
least that removing one taint takes. Its pod meets Pod Security `restricted` with a read-only
root filesystem, and runs on the cluster's other nodes (it tolerates no GPU taint).
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pulumi
from pulumi_kubernetes import apps, core

from gpu_platform.kubernetes.account_roles import Grant, declare_account_roles
from gpu_platform.kubernetes.script_pod import NO_BYTECODE, content_named, script_pod_spec
from gpu_platform.node_identity import MIG_STARTUP_TAINT, ResolvedPool
from gpu_platform.versions import MIG_STARTUP_TAINT_REMOVER_IMAGE

NAME = "gpu-mig-startup-taint-remover"
SCRIPT_FILE = Path(__file__).with_name("mig_startup_taint_remover.py")
CLUSTER_ROLE_RULES = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "patch"]}]
"""Listing the partitioned nodes and patching their taints: nothing else."""


def needs_remover(pools: Sequence[ResolvedPool]) -> bool:
    return any(MIG_STARTUP_TAINT in pool.identity.taints for pool in pools)


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "gpu-platform"}


def _metadata(**fields: Any) -> Any:
    return {"name": NAME, "labels": _labels(), **fields}


def remover_pod_spec(config_map: str) -> dict[str, Any]:
    return script_pod_spec(
        name=NAME,
        container="remover",
        image=MIG_STARTUP_TAINT_REMOVER_IMAGE,
        script=SCRIPT_FILE,
        config_map=config_map,
        env=[NO_BYTECODE],
        cpu_request="10m",
        memory="64Mi",
        memory_request="32Mi",
    )


def declare_mig_startup_taint_remover(
    name: str, namespace: pulumi.Input[str], parent: pulumi.Resource
) -> apps.v1.Deployment:
    """The remover's objects in `namespace`, children of `parent`; the Deployment last."""
    child = pulumi.ResourceOptions(parent=parent)
    resource_name = f"{name}-{NAME}"
    script = SCRIPT_FILE.read_text()
    config_map_name = content_named(NAME, script)
    config_map = core.v1.ConfigMap(
        resource_name,
        metadata=_metadata(name=config_map_name, namespace=namespace),
        data={SCRIPT_FILE.name: script},
        opts=child,
    )
    account = core.v1.ServiceAccount(
        resource_name,
        metadata=_metadata(namespace=namespace),
        automount_service_account_token=False,
        opts=child,
    )
    (binding,) = declare_account_roles(
        resource_name,
        NAME,
        namespace,
        [Grant("ClusterRole", _metadata(), CLUSTER_ROLE_RULES)],
        child,
        after=[account],
    )
    return apps.v1.Deployment(
        resource_name,
        metadata=_metadata(namespace=namespace),
        spec=cast(
            Any,
            {
                "replicas": 1,
                "selector": {"matchLabels": _labels()},
                "template": {
                    "metadata": {"labels": _labels()},
                    "spec": remover_pod_spec(config_map_name),
                },
            },
        ),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[config_map, binding]),
    )

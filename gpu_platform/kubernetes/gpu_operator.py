"""The NVIDIA GPU Operator, installed from its pinned chart in a namespace of its own."""

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_kubernetes import apiextensions, core, helm, meta

from gpu_platform.config import MonitoringSpec, OperatorSpec, Platform
from gpu_platform.kubernetes.exporter_slice_access import declare_exporter_slice_access
from gpu_platform.kubernetes.gke_dcgm_exporter import (
    declare_gke_dcgm_exporter,
    needs_gke_exporter,
)
from gpu_platform.kubernetes.helm_release import GPU_OPERATOR_BASE_SECONDS, Rollout, most_nodes
from gpu_platform.kubernetes.mig_startup_taint import (
    declare_mig_startup_taint_remover,
    needs_remover,
)
from gpu_platform.kubernetes.nvidia_driver import nvidia_drivers_for
from gpu_platform.kubernetes.operand_images import operand_image_values
from gpu_platform.kubernetes.operator_values import deep_merge, operator_values_for
from gpu_platform.kubernetes.pod_security import pod_security_labels
from gpu_platform.node_identity import ResolvedPool
from gpu_platform.secrets import secret_if
from gpu_platform.versions import GPU_OPERATOR_CHART


@dataclass
class GpuOperatorArgs:
    operator: OperatorSpec
    """The chart version and repository, namespace, timeout and value overrides."""
    platform: Platform
    """Decides who installs the driver, the container toolkit and the device plugin."""
    pools: Sequence[ResolvedPool]
    """Their sharing modes and taints shape the device plugin configs and the tolerations; on GKE
    Ubuntu each gets an NVIDIADriver with its driver version."""
    monitoring: MonitoringSpec
    """The labels the cluster's Prometheus selects the DCGM exporter's ServiceMonitor by."""
    secret_values: bool = False
    """Config the chart values take from (chart overrides, pools, monitoring labels) was set as a
    secret: keep the release's values, and the NVIDIADrivers' specs, secret."""
    protect: bool = False
    """Protect the operator's namespace, Helm release and NVIDIADriver resources from deletion
    and replacement; value changes still upgrade the release in place."""
    held_back: Collection[str] = ()
    """Pools whose NVIDIADriver is declared by `held_back_driver`, not with the release: after
    the pool's node validator and, on a pool led by a canary, the canary's gate."""


RELEASE_NAME = "gpu-operator"
"""The Helm release name, fixed so that a release is never renamed (and so reinstalled)."""
CRITICAL_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
"""The priority classes of the operator's pods and the node-feature-discovery pods."""

# GKE admits pods of the critical priority classes outside kube-system only under a
# ResourceQuota that names them; without one the operator's pods are never created and the
# install times out (gpu-operator#660).
_NEEDS_CRITICAL_POD_QUOTA = frozenset({Platform.GKE_COS, Platform.GKE_UBUNTU})


class GpuOperator(pulumi.ComponentResource):
    """The operator's namespace (Pod Security `privileged`: its DaemonSets load kernel modules
    and reach the host's devices), GKE's quota for its critical pods, the chart release, on
    GKE Ubuntu each pool's NVIDIADriver, where GKE shares a pool's GPUs the DCGM exporter of
    those nodes, and where a pool uses DRA the exporter's read access to ResourceSlices."""

    namespace: pulumi.Output[str]
    release_name: pulumi.Output[str | None]
    chart_version: pulumi.Output[str | None]
    status: pulumi.Output[helm.v3.outputs.ReleaseStatus]

    def __init__(
        self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:kubernetes:GpuOperator", name, None, opts)
        namespace = core.v1.Namespace(
            name,
            metadata=meta.v1.ObjectMetaArgs(
                name=args.operator.namespace, labels=pod_security_labels("privileged")
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        # The name is set above; taking it from the Namespace makes what uses it wait for it.
        self.namespace = namespace.metadata.apply(lambda _: args.operator.namespace)
        before_release: list[pulumi.Resource] = []
        if args.platform in _NEEDS_CRITICAL_POD_QUOTA:
            before_release.append(self._critical_pod_quota(name, args.operator.critical_pod_quota))
        if any(pool.spec.allocation == "dra" for pool in args.pools):
            before_release.append(declare_exporter_slice_access(name, self.namespace, self))
        # Under the platform's values and `operator.overrides`, each operand by the digest
        # NVIDIA's release bundle records for the chart's tag (operand_images/): a tag pushed
        # again never reaches the nodes. An override of an operand's image sets `repository`,
        # `image` and `version` together.
        values = deep_merge(
            operand_image_values(args.operator.chart_version),
            operator_values_for(args.operator, args.platform, args.pools, args.monitoring),
        )
        release = helm.v3.Release(
            name,
            helm.v3.ReleaseArgs(
                name=RELEASE_NAME,
                chart=GPU_OPERATOR_CHART.name,
                version=args.operator.chart_version,
                repository_opts=helm.v3.RepositoryOptsArgs(repo=args.operator.repository),
                namespace=self.namespace,
                create_namespace=False,
                values=secret_if(args.secret_values, values),
                # A failed install or upgrade is rolled back rather than left half applied. The
                # rollback takes the ClusterPolicy back too: where the operator manages the
                # driver, its upgrade policy may drain GPU nodes a second time
                # (docs/upgrades.md, "A chart upgrade that fails").
                **operator_rollout(args.operator, args.pools).release_args(),
                # The chart requires it with `operator.upgradeCRD`: Helm validates the new
                # ClusterPolicy against the old CRD before the hook has upgraded it, and fails
                # on every field the new version added (the chart's values.yaml; gpu-operator#435).
                disable_openapi_validation=True,
            ),
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=before_release, protect=args.protect
            ),
        )
        self._name, self._args, self._release = name, args, release
        self._drivers: dict[str, pulumi.Resource] = {}
        self._held_back: dict[str, dict[str, Any]] = {}
        for driver in nvidia_drivers_for(args.platform, args.operator, args.pools):
            pool = driver["metadata"]["name"]
            if pool in args.held_back:
                self._held_back[pool] = driver
            else:
                self._declare_driver(pool, driver, after=())
        self._installed: list[pulumi.Resource] = [release]
        if needs_gke_exporter(args.pools, values):
            declare_gke_dcgm_exporter(
                name,
                self.namespace,
                values,
                args.operator.chart_version,
                pulumi.ResourceOptions(parent=self, depends_on=[release]),
                secret=args.secret_values,
            )
        if needs_remover(args.pools):
            self._installed.append(
                declare_mig_startup_taint_remover(name, self.namespace, parent=self)
            )
        self.release_name = release.name
        self.chart_version = release.version
        self.status = release.status
        self.register_outputs(
            {
                "namespace": self.namespace,
                "release_name": self.release_name,
                "chart_version": self.chart_version,
                "status": self.status,
            }
        )

    def ready_for(self, pool: str) -> list[pulumi.Resource]:
        """What a GPU pod on `pool` waits for of the operator: its release, the MIG startup
        taint's remover where a pool needs it, and the pool's NVIDIADriver (GKE Ubuntu)."""
        return [*self._installed, *([self._drivers[pool]] if pool in self._drivers else [])]

    def held_back_driver(
        self, pool: str, after: Sequence[pulumi.Resource]
    ) -> pulumi.Resource | None:
        """The NVIDIADriver of a pool `held_back`, created and updated after `after` (its node
        validator, and its canary's gate); None where the operator builds no driver."""
        driver = self._held_back.pop(pool, None)
        return None if driver is None else self._declare_driver(pool, driver, after)

    def _declare_driver(
        self, pool: str, driver: dict[str, Any], after: Sequence[pulumi.Resource]
    ) -> pulumi.Resource:
        # The chart installs the NVIDIADriver CRD (from crds/ on install, and from its
        # `operator.upgradeCRD` hook on upgrades: templates/upgrade_crd.yaml), so the resources
        # wait for the release. The operator rolls each NVIDIADriver out on its own, whenever its
        # spec changes (v26.7.0 controllers/upgrade_controller.go, reconcileNVIDIADriverUpgrades:
        # each resource's nodes under its own upgrade policy): only a dependency holds a led
        # pool's driver back until its canary's gate has passed.
        self._drivers[pool] = apiextensions.CustomResource(
            f"{self._name}-driver-{pool}",
            api_version=driver["apiVersion"],
            kind=driver["kind"],
            metadata=driver["metadata"],
            spec=secret_if(self._args.secret_values, driver["spec"]),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[self._release, *after],
                protect=self._args.protect,
            ),
        )
        return self._drivers[pool]

    def _critical_pod_quota(self, name: str, pods: int) -> core.v1.ResourceQuota:
        return core.v1.ResourceQuota(
            f"{name}-critical-pods",
            metadata=meta.v1.ObjectMetaArgs(
                name="gpu-operator-critical-pods", namespace=self.namespace
            ),
            spec=core.v1.ResourceQuotaSpecArgs(
                hard={"pods": str(pods)},
                scope_selector=core.v1.ScopeSelectorArgs(
                    match_expressions=[
                        core.v1.ScopedResourceSelectorRequirementArgs(
                            scope_name="PriorityClass",
                            operator="In",
                            values=list(CRITICAL_PRIORITY_CLASSES),
                        )
                    ]
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )


def operator_rollout(operator: OperatorSpec, pools: Sequence[ResolvedPool]) -> Rollout:
    """The release's wait: `operator.timeoutSeconds`, else one that grows with the GPU nodes,
    which node-feature-discovery's worker rolls over with every other node."""
    if operator.timeout_seconds is not None:
        return Rollout(operator.timeout_seconds)
    return Rollout.with_daemonset(GPU_OPERATOR_BASE_SECONDS, most_nodes(p.spec for p in pools))

"""The GPU Operator's own custom resources: the operator turns each into privileged DaemonSets
on the GPU nodes, so one declared beside its Release does what the Release's values, which the
pack judges, would.

- ClusterPolicy (nvidia.com/v1) is the chart's to render from the platform's release; the
  oldest is the singleton, and a patch of it changes the driver, toolkit or device plugin image
  every GPU node runs (gpu-operator v26.7.0 controllers/clusterpolicy_controller.go).
- GPUCluster (nvidia.com/v1alpha1) cannot coexist with a ClusterPolicy: while one exists the
  ClusterPolicy controller fails every reconcile, so no driver rollout or MIG change happens
  (the same file, "ClusterPolicy and GPUCluster cannot co-exist").
- NVIDIADriver (nvidia.com/v1alpha1) runs its `repository`/`image`/`version` privileged on the
  nodes its `nodeSelector`, `nodeAffinity` or `default` pick
  (api/nvidia/v1alpha1/nvidiadriver_types.go). The platform declares one per GKE Ubuntu pool
  (gpu_platform/kubernetes/nvidia_driver.py): named after the pool, selecting its nodes by the
  pool label alone, the NVIDIA driver image.

A patch (the SDK's `CustomResourcePatch`, type `kubernetes:<apiVersion>:<kind>Patch`) of any of
them is never the platform's. The operator does not own its API group: v26.7.0 defines only
these three kinds in it (api/nvidia/v1, api/nvidia/v1alpha1), and other NVIDIA projects define
theirs there too (ai-dynamo/dynamo's DynamoGraphDeployment and others,
deploy/operator/config/crd/bases/nvidia.com_*.yaml), whose pods `pods.GPU_WORKLOAD_CRDS` finds.
So only these three kinds are judged here, and only in the group `nvidia.com` itself: the
chart's ComputeDomains (`resource.nvidia.com`) and NIM's kinds (`apps.nvidia.com`) are others'.
"""

from collections.abc import Iterator, Mapping
from typing import Any

from checks import resource_policy
from props import shown, text, value_at
from pulumi_policy import ResourceValidationArgs
from settings import Setting
from type_tokens import kubernetes_type

GROUP = "nvidia.com"
RENDERED_BY_THE_CHART = ("ClusterPolicy", "GPUCluster")
DRIVER_KIND = "NVIDIADriver"
OPERATOR_KINDS = (*RENDERED_BY_THE_CHART, DRIVER_KIND)
# gpu_platform/node_identity.py, POOL_LABEL.
POOL_LABEL = "gpu-platform.io/pool"
# The NVIDIA driver image, as the chart's values.yaml (`driver.repository`, `driver.image`) and
# the platform's NVIDIADriver name it.
DRIVER_REPOSITORY = "nvcr.io/nvidia"
DRIVER_IMAGE = "driver"
# The spec fields the platform's NVIDIADriver sets; any other (the driver manager's, GDS's or
# GDRCopy's image, `nodeAffinity`, `env`, `args`, `repoConfig`, `kernelModuleConfig`, ...)
# changes what runs or where.
PLATFORM_DRIVER_FIELDS = frozenset(
    {
        "default",
        "driverType",
        "repository",
        "image",
        "imagePullSecrets",
        "version",
        "nodeSelector",
        "tolerations",
        "upgradePolicy",
    }
)

DRIVER_IMAGES = Setting(
    "driverImages",
    {
        "type": "array",
        "items": {"type": "string", "pattern": r"^[^\s@:]+(:[0-9]+)?(/[^\s@:]+)+$"},
        "default": [],
        "description": "Driver images an NVIDIADriver may run besides NVIDIA's "
        f'("{DRIVER_REPOSITORY}/{DRIVER_IMAGE}"), each as `<repository>/<image>`: the one '
        "operator.overrides.driver.repository and image name (a mirror).",
    },
)


def _kind(resource_type: str) -> tuple[str, bool] | None:
    """(kind, is a patch) of a GPU Operator resource; None for any other."""
    found = kubernetes_type(resource_type)
    if found is None or found.group != GROUP or found.patched_kind not in OPERATOR_KINDS:
        return None
    return found.patched_kind, found.is_patch


def applies(args: ResourceValidationArgs) -> bool:
    return _kind(args.resource_type) is not None


def gpu_operator_resource_problems(args: ResourceValidationArgs) -> Iterator[str]:
    kind, patch = _kind(args.resource_type) or ("", False)
    name = shown(text(args.props, "metadata", "name"))
    if kind in RENDERED_BY_THE_CHART:
        yield (
            f"{kind}{' patch' if patch else ''} {name} is declared beside the GPU Operator's "
            "release, which renders the cluster's only ClusterPolicy from values the pack "
            "judges: the operator runs what it says, privileged, on every GPU node (a GPUCluster "
            "stops the ClusterPolicy from reconciling at all). Fix: set it through the "
            "platform's operator values (operator.overrides)."
        )
    elif kind == DRIVER_KIND and patch:
        yield (
            f"NVIDIADriver patch {name} changes a driver the operator runs privileged on a "
            "pool's nodes. Fix: change the pool's driver through the stack's config "
            "(operator.driverVersion, operator.overrides.driver)."
        )
    else:
        yield from _driver_problems(args)


def _driver_problems(args: ResourceValidationArgs) -> Iterator[str]:
    name = text(args.props, "metadata", "name") or ""
    spec = value_at(args.props, "spec")
    spec = spec if isinstance(spec, Mapping) else {}
    own = f"NVIDIADriver {shown(name)} is not one the platform declares (one per pool, named "
    other = sorted(str(key) for key in spec if key not in PLATFORM_DRIVER_FIELDS)
    if other:
        yield (
            f"{own}after it): it sets {', '.join(f'spec.{key}' for key in other)}, which pick "
            "what the operator runs privileged on GPU nodes, or where. Fix: leave them out."
        )
    selector = value_at(spec, "nodeSelector")
    pool_only = isinstance(selector, Mapping) and dict(selector) == {POOL_LABEL: name}
    if value_at(spec, "default") is not False or not pool_only:
        yield (
            f"{own}after it): its nodes are {_nodes(spec)}, not only the pool's "
            f'({{"{POOL_LABEL}": {shown(name)}}}). Fix: set spec.default: false and '
            f'spec.nodeSelector to {{"{POOL_LABEL}": "<pool>"}} alone.'
        )
    allowed = [f"{DRIVER_REPOSITORY}/{DRIVER_IMAGE}", *DRIVER_IMAGES.read(args.get_config())]
    repository, image = value_at(spec, "repository"), value_at(spec, "image")
    if f"{repository}/{image}" not in allowed:
        yield (
            f"{own}after it): it runs image {shown(image)} from {shown(repository)}, not "
            f"NVIDIA's driver or a declared mirror of it ({', '.join(map(shown, allowed))}). "
            f"Fix: use that image, or add `<repository>/<image>` to {DRIVER_IMAGES.key} (the "
            "platform's NVIDIADrivers run the one operator.overrides.driver names)."
        )


def _nodes(spec: Mapping[str, Any]) -> str:
    if value_at(spec, "default") is not False:
        return "every GPU node no other NVIDIADriver selects (spec.default is not false)"
    return f"those of spec.nodeSelector {shown(value_at(spec, 'nodeSelector'))}"


POLICIES = [
    resource_policy(
        "gpu-operator-resources",
        "The GPU Operator's custom resources are the platform's: ClusterPolicy and GPUCluster "
        "only from its release, an NVIDIADriver only as the platform declares one per pool, "
        "and no patch of any.",
        gpu_operator_resource_problems,
        DRIVER_IMAGES,
        applies=applies,
    ),
]

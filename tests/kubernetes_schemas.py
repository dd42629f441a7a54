"""Kubernetes objects of a plan against the official models: built-in kinds against the OpenAPI
schema of a Kubernetes minor version (kubernetes-validate, strict, which rejects a field
Kubernetes does not know: the API server would drop it silently on apply), custom resources
against the CRDs of the pinned charts that install them, where the platform keeps their schemas,
else their apiVersion, kind and metadata. Helm releases are not objects (their charts are checked
against the charts' own values), and component resources have no children under the mock runner.

pulumi-kubernetes sends an object's apiVersion and kind as inputs beside its fields, so a
resource's recorded inputs are the object it applies.
"""

import copy
import functools
import re
from typing import Any

import kubernetes_validate
import kubernetes_validate.utils

from gpu_platform.eks.auto_mode.node_pool import NODE_CLASS_SCHEMA
from gpu_platform.kubernetes.crd_schemas import chart_crds, validation_errors
from gpu_platform.offline.program import Plan, PlannedResource
from gpu_platform.versions import (
    GPU_OPERATOR_CHART,
    KARPENTER_CHART,
    KUEUE_CHART,
    SUPPORTED_KUBERNETES_VERSIONS,
    HelmChart,
)

# kubernetes-validate reads a kind's schema and the whole `_definitions.json` from disk on every
# call (`schema_contents`, kubernetes_validate/utils.py), six times the cost of the check itself;
# the files never change during a run, and jsonschema does not change what it is given.
kubernetes_validate.utils.schema_contents = functools.cache(  # type: ignore[method-assign]
    kubernetes_validate.utils.schema_contents
)

NOT_OBJECTS = frozenset({"kubernetes:helm.sh/v3:Release"})
NEWEST = SUPPORTED_KUBERNETES_VERSIONS[-1]
CUSTOM_API_VERSION = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+/v\d+((alpha|beta)\d+)?$")
KIND = re.compile(r"^[A-Z][A-Za-z0-9]*$")

# The charts whose CRDs the platform's custom resources are checked against, at their pins.
CRD_CHARTS: tuple[HelmChart, ...] = (
    KARPENTER_CHART,
    GPU_OPERATOR_CHART,
    KUEUE_CHART,
    # EKS Auto Mode's NodeClass, whose CRD AWS installs and publishes nowhere: its schema is the
    # EKS user guide's (gpu_platform/kubernetes/crd_schemas/__init__.py).
    HelmChart(*NODE_CLASS_SCHEMA, "https://github.com/awsdocs/amazon-eks-user-guide"),
)


def kubernetes_objects(plan: Plan) -> list[PlannedResource]:
    return [
        r
        for r in plan.resources
        if r.type.startswith("kubernetes:") and r.custom and r.type not in NOT_OBJECTS
    ]


def manifest(resource: PlannedResource) -> dict[str, Any]:
    """The object a resource applies: its inputs, whose apiVersion and kind must be its type's.
    A `<Kind>Patch` type applies part of a `<Kind>` by server-side apply (pulumi-kubernetes'
    Patch resources), whose fields are checked as that kind's."""
    group_version, kind = resource.type.removeprefix("kubernetes:").rsplit(":", 1)
    kind = kind.removesuffix("Patch")
    api_version = group_version.removeprefix("core/")
    obj = copy.deepcopy(resource.inputs)
    if (obj.get("apiVersion"), obj.get("kind")) != (api_version, kind):
        raise AssertionError(
            f"{resource.urn}: apiVersion/kind {obj.get('apiVersion')}/{obj.get('kind')}"
            f" do not match its type {api_version}/{kind}"
        )
    return obj


def is_custom_resource(api_version: str) -> bool:
    """Whether the API group is an extension's: built-in groups are the core group, undotted
    groups (`apps`, `batch`) and `*.k8s.io`, but for `*.x-k8s.io`, the groups of Kubernetes SIG
    projects that are not part of Kubernetes (Kueue's `kueue.x-k8s.io`)."""
    group = api_version.rpartition("/")[0]
    return "." in group and (not group.endswith("k8s.io") or group.endswith(".x-k8s.io"))


def validate(obj: dict[str, Any], minor: str = NEWEST) -> None:
    """Raise if Kubernetes `minor` (`1.35`) would not accept the object as it is."""
    if is_custom_resource(obj["apiVersion"]):
        validate_custom_resource(obj, minor)
        return
    validated = kubernetes_validate.validate(obj, f"{minor}.0", strict=True)
    assert validated == minor, f"validated against {validated}, not {minor}"


def validate_custom_resource(obj: dict[str, Any], minor: str) -> None:
    """Against the CRD of the pinned chart that installs the kind, where the platform keeps its
    schema (gpu_platform/kubernetes/crd_schemas/); otherwise its apiVersion, kind and metadata."""
    chart = crd_chart(obj)
    if chart is not None:
        errors = validation_errors(obj, chart.name, chart.version)
        if errors:
            raise ValueError("; ".join(errors))
    if not CUSTOM_API_VERSION.match(obj["apiVersion"]):
        raise ValueError(f"apiVersion {obj['apiVersion']!r} is not <group>/<version>")
    if not KIND.match(obj["kind"]):
        raise ValueError(f"kind {obj['kind']!r} is not a Kubernetes kind")
    # ObjectMeta is the same for every kind: check it as a ConfigMap's.
    stand_in = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj.get("metadata", {})}
    kubernetes_validate.validate(stand_in, f"{minor}.0", strict=True)


def crd_chart(obj: dict[str, Any]) -> HelmChart | None:
    group = obj["apiVersion"].rpartition("/")[0]
    return next(
        (
            chart
            for chart in CRD_CHARTS
            for crd in chart_crds(chart.name, chart.version)
            if (crd["group"], crd["kind"]) == (group, obj["kind"])
        ),
        None,
    )


def problems(plan: Plan, minor: str) -> list[str]:
    found = []
    for resource in kubernetes_objects(plan):
        try:
            validate(manifest(resource), minor)
        except (AssertionError, ValueError, kubernetes_validate.ValidationError) as error:
            found.append(f"{resource.type} {resource.name}: {getattr(error, 'message', error)}")
        except kubernetes_validate.SchemaNotFoundError as error:
            found.append(f"{resource.type} {resource.name}: {error.message}")
    return found

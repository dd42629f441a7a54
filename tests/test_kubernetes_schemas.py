"""Every Kubernetes object the program creates is valid at every supported Kubernetes version.

Each built-in object is checked against the OpenAPI schema of each minor version in
`SUPPORTED_KUBERNETES_VERSIONS` with kubernetes-validate in strict mode, which rejects a field
Kubernetes does not know: the API server would drop it silently on apply. Custom resources (the
Prometheus Operator's) have no schema there: their apiVersion, kind and metadata are checked. Helm
releases are not objects (their charts are checked against the charts' own values), and component
resources, such as a YAML file applied through `yaml/v2`, have no children under the mock runner.

pulumi-kubernetes sends an object's apiVersion and kind as inputs beside its fields, so a
resource's recorded inputs are the object it applies.
"""

import copy
import dataclasses
import re
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest

from gpu_platform.cli.offline import Plan, PlannedResource
from gpu_platform.cli.stack_files import stack_config
from gpu_platform.kubernetes.crd_schemas import chart_crds, validation_errors
from gpu_platform.versions import (
    GPU_OPERATOR_CHART,
    KARPENTER_CHART,
    SUPPORTED_KUBERNETES_VERSIONS,
    HelmChart,
)
from tests.gpu_platform.gke.plans import on_ubuntu
from tests.repository import PROJECT
from tests.stack_variants import reachable_gke, with_gke_capacity_pools, with_mig_mixed_pool

Config = dict[str, Any]
NOT_OBJECTS = frozenset({"kubernetes:helm.sh/v3:Release"})
NEWEST = SUPPORTED_KUBERNETES_VERSIONS[-1]
CUSTOM_API_VERSION = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+/v\d+((alpha|beta)\d+)?$")
KIND = re.compile(r"^[A-Z][A-Za-z0-9]*$")

STACKS: dict[str, Callable[[Config, Config], Config]] = {
    "dev": lambda dev, gke: dev,
    "gke": lambda dev, gke: reachable_gke(gke),
    "eks-mig-mixed": lambda dev, gke: with_mig_mixed_pool(dev),
    "karpenter-dev": lambda dev, gke: stack_config("karpenter-dev", PROJECT),
    "gke-ubuntu": lambda dev, gke: on_ubuntu(reachable_gke(gke)),
    "gke-capacity": lambda dev, gke: with_gke_capacity_pools(reachable_gke(gke)),
}
# The charts whose CRDs the platform's custom resources are checked against, at their pins.
CRD_CHARTS: tuple[HelmChart, ...] = (KARPENTER_CHART, GPU_OPERATOR_CHART)


def kubernetes_objects(plan: Plan) -> list[PlannedResource]:
    return [
        r
        for r in plan.resources
        if r.type.startswith("kubernetes:") and r.custom and r.type not in NOT_OBJECTS
    ]


def manifest(resource: PlannedResource) -> dict[str, Any]:
    """The object a resource applies: its inputs, whose apiVersion and kind must be its type's."""
    group_version, kind = resource.type.removeprefix("kubernetes:").rsplit(":", 1)
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
    groups (`apps`, `batch`) and `*.k8s.io`."""
    group = api_version.rpartition("/")[0]
    return "." in group and not group.endswith("k8s.io")


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


@pytest.fixture(params=sorted(STACKS))
def plan(request, dev_config, gke_config, plan_for) -> Plan:
    return plan_for(STACKS[request.param](dev_config, gke_config))


@pytest.mark.parametrize("minor", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_kubernetes_object_validates_at_every_supported_version(plan, minor: str) -> None:
    assert problems(plan, minor) == []


def test_the_core_platform_objects_are_among_those_validated(plan) -> None:
    kinds = {manifest(r)["kind"] for r in kubernetes_objects(plan)}

    assert {"Namespace", "ResourceQuota", "Job"} <= kinds


@pytest.mark.parametrize(
    ("stack", "kinds"),
    [("karpenter-dev", {"NodePool", "EC2NodeClass"}), ("gke-ubuntu", {"NVIDIADriver"})],
)
def test_custom_resources_are_validated_against_their_pinned_crds(
    stack: str, kinds: set[str], dev_config, gke_config, plan_for
) -> None:
    plan = plan_for(STACKS[stack](dev_config, gke_config))
    checked = {
        manifest(r)["kind"] for r in kubernetes_objects(plan) if crd_chart(manifest(r)) is not None
    }

    assert checked == kinds


# --- The checks can fail -------------------------------------------------------------------


@pytest.fixture
def smoke_test_job(dev_plan) -> dict[str, Any]:
    return manifest(dev_plan.named("ml-sandbox-gpu-smoke-test", "kubernetes:batch/v1:Job"))


def test_a_misspelt_field_is_rejected(smoke_test_job) -> None:
    container = smoke_test_job["spec"]["template"]["spec"]["containers"][0]
    container["securityContex"] = container.pop("securityContext")

    with pytest.raises(kubernetes_validate.ValidationError, match="securityContex"):
        validate(smoke_test_job)


def test_a_value_of_the_wrong_type_is_rejected(smoke_test_job) -> None:
    smoke_test_job["spec"]["backoffLimit"] = "none"

    with pytest.raises(kubernetes_validate.ValidationError):
        validate(smoke_test_job)


def test_a_kind_kubernetes_does_not_have_is_rejected(smoke_test_job) -> None:
    smoke_test_job["kind"] = "Jobs"

    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        validate(smoke_test_job)


def test_custom_resource_metadata_is_checked() -> None:
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "gpu-alerts", "labels": {"release": 1}},
    }

    with pytest.raises(kubernetes_validate.ValidationError):
        validate(rule)


def test_a_resource_whose_inputs_disagree_with_its_type_is_rejected(dev_plan) -> None:
    namespace = dev_plan.named("ml-sandbox", "kubernetes:core/v1:Namespace")
    mislabelled = dataclasses.replace(namespace, inputs={**namespace.inputs, "apiVersion": "v2"})

    with pytest.raises(AssertionError, match="do not match its type"):
        manifest(mislabelled)


def test_a_field_a_pinned_crd_does_not_have_is_rejected() -> None:
    node_pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "l4"},
        "spec": {"template": {"spec": {"nodeClassRef": {}}}, "limit": {"nvidia.com/gpu": "8"}},
    }

    with pytest.raises(ValueError, match="limit"):
        validate(node_pool)

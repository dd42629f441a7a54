"""The examples in docs/ are workloads the pack accepts as they are written, in the namespaces
the stacks declare, and that land on the pools they are meant for."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from gpu_platform.fit import fitting_pools
from gpu_platform.offline.analyzer import Verdict
from gpu_platform.offline.fit import node_templates
from gpu_platform.offline.program import Plan, PlannedResource
from gpu_platform.pod_specs import pod_spec_of
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS
from tests.gpu_platform.policy_pack.builders import Analyze, namespace, resource, violations
from tests.kubernetes_schemas import validate
from tests.repository import ROOT
from tests.shared_plans import shared_plan
from tests.stack_variants import QUEUED_POOL, with_gke_capacity_pools

Config = dict[str, Any]
NCCL_OVER_EFA = ROOT / "docs" / "examples" / "nccl-tests-over-efa.yaml"
QUEUED_PROVISIONING = ROOT / "docs" / "examples" / "queued-provisioning-job.yaml"
NOT_JUDGED_FOR_CUDA = "gpu-pods-cuda-known"
"""An example analyzed alone is a tenant's stack without `gpuPools`: its one advisory says that
the CUDA policies had no pool to hold its GPU pods to."""


def example(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text())
    assert isinstance(document, dict)
    return document


def examples(path: Path) -> dict[str, dict[str, Any]]:
    """The objects of a file of several, by kind."""
    documents = list(yaml.safe_load_all(path.read_text()))
    by_kind = {document["kind"]: document for document in documents}
    assert len(by_kind) == len(documents), "one object of each kind"
    return by_kind


def as_resource(document: dict[str, Any]) -> PlannedResource:
    """The object as the engine records a pulumi-kubernetes resource that applies it."""
    group, _, version = document["apiVersion"].rpartition("/")
    return resource(
        f"kubernetes:{group or 'core'}/{version}:{document['kind']}",
        document["metadata"]["name"],
        {k: v for k, v in document.items() if k not in ("apiVersion", "kind")},
    )


def test_the_nccl_over_efa_job_passes_the_pack_in_a_restricted_namespace(
    analyze: Analyze,
) -> None:
    verdicts = analyze(namespace("ml-training"), as_resource(example(NCCL_OVER_EFA)))

    assert [v.policy_name for v in violations(verdicts)] == [NOT_JUDGED_FOR_CUDA]


def test_the_nccl_over_efa_job_passes_prods_pack_in_ml_training_once_its_image_is_pinned(
    analyze_plan: Callable[..., list[Verdict]],
) -> None:
    # docs/training-over-efa.md: prod's policy config requires GPU pods' images by digest, which
    # only the image built has; the example names it by tag, and the docs say to pin it.
    prod = json.loads((ROOT / "policy-config" / "prod.json").read_text())
    plan = shared_plan("prod").resources
    job = example(NCCL_OVER_EFA)
    replicas = job["spec"]["mpiReplicaSpecs"]
    (image,) = {c["image"] for r in replicas.values() for c in r["template"]["spec"]["containers"]}

    def verdicts() -> list[tuple[str, str, str]]:
        found = as_resource(job)
        return [
            (v.policy_name, v.enforcement_level, v.message)
            for v in analyze_plan([*plan, found], config=prod)
            if v.urn == found.urn
        ]

    as_written = verdicts()
    for replica in replicas.values():
        for container in replica["template"]["spec"]["containers"]:
            container["image"] = f"{image}@sha256:{'3c' * 32}"

    assert [(name, level) for name, level, _ in as_written] == [
        ("gpu-pods-pinned-images", "mandatory")
    ]
    assert f'"{image}"' in as_written[0][2]
    assert verdicts() == []
    assert f"{image}@sha256:<digest>" in (ROOT / "docs" / "training-over-efa.md").read_text()


def test_the_nccl_over_efa_workers_land_on_the_efa_pool_only() -> None:
    workers = example(NCCL_OVER_EFA)["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]

    assert fitting_pools(workers, node_templates(shared_plan("prod"))) == ["h100-training"]


# The queued-provisioning job: a PodTemplate, the ProvisioningRequest for it, and the Job whose
# pods consume what the request provisions (docs/gke-capacity.md).

# The ProvisioningRequest's `spec` as the cluster autoscaler's CRD declares it at version v1
# (cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml at tag
# cluster-autoscaler-1.35.2, lines 50-139). A field it does not declare is refused here, as the
# API server would drop it.
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
PROVISIONING_REQUEST_SPEC = {
    "type": "object",
    "additionalProperties": False,
    "required": ["podSets", "provisioningClassName"],
    "properties": {
        "parameters": {
            "type": "object",
            "maxProperties": 100,
            "additionalProperties": {"type": "string", "maxLength": 255},
        },
        "podSets": {
            "type": "array",
            "minItems": 1,
            "maxItems": 32,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["count", "podTemplateRef"],
                "properties": {
                    "count": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
                    "podTemplateRef": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string", "maxLength": 253, "pattern": _DNS_SUBDOMAIN}
                        },
                    },
                },
            },
        },
        "provisioningClassName": {"type": "string", "maxLength": 253, "pattern": _DNS_SUBDOMAIN},
    },
}


@pytest.fixture
def queued() -> dict[str, dict[str, Any]]:
    return examples(QUEUED_PROVISIONING)


def test_every_object_of_the_queued_provisioning_job_passes_the_pack_in_a_restricted_namespace(
    analyze: Analyze, queued: dict[str, dict[str, Any]]
) -> None:
    verdicts = analyze(namespace("ml-training"), *map(as_resource, queued.values()))

    assert [v.policy_name for v in violations(verdicts)] == [NOT_JUDGED_FOR_CUDA]
    assert set(queued) == {"PodTemplate", "ProvisioningRequest", "Job"}


@pytest.mark.parametrize("minor", SUPPORTED_KUBERNETES_VERSIONS)
@pytest.mark.parametrize("kind", ["PodTemplate", "Job"])
def test_the_queued_provisioning_pods_are_valid_at_every_supported_version(
    queued: dict[str, dict[str, Any]], kind: str, minor: str
) -> None:
    validate(queued[kind], minor)


def test_the_provisioning_request_fits_the_autoscalers_v1_crd(
    queued: dict[str, dict[str, Any]],
) -> None:
    request = queued["ProvisioningRequest"]

    assert (request["apiVersion"], request["kind"]) == (
        "autoscaling.x-k8s.io/v1",
        "ProvisioningRequest",
    )
    jsonschema.validate(request["spec"], PROVISIONING_REQUEST_SPEC)


def test_the_crd_schema_refuses_what_the_api_server_would(
    queued: dict[str, dict[str, Any]],
) -> None:
    spec = {**queued["ProvisioningRequest"]["spec"], "podSet": []}

    with pytest.raises(jsonschema.ValidationError, match="podSet"):
        jsonschema.validate(spec, PROVISIONING_REQUEST_SPEC)


def test_the_request_asks_gke_for_the_jobs_pods_and_the_jobs_pods_consume_it(
    queued: dict[str, dict[str, Any]],
) -> None:
    template, request, job = queued["PodTemplate"], queued["ProvisioningRequest"], queued["Job"]
    (pod_set,) = request["spec"]["podSets"]

    assert request["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
    assert pod_set == {"count": job["spec"]["parallelism"], "podTemplateRef": {"name": "llm-train"}}
    assert template["metadata"]["name"] == "llm-train"
    assert job["spec"]["template"]["metadata"]["annotations"] == {
        "autoscaling.x-k8s.io/consume-provisioning-request": request["metadata"]["name"],
        "autoscaling.x-k8s.io/provisioning-class-name": "queued-provisioning.gke.io",
    }
    # The nodes are sized from the template: the pods must be the template's.
    assert job["spec"]["template"]["spec"] == template["template"]["spec"]
    assert {o["metadata"]["namespace"] for o in queued.values()} == {"ml-training"}


def test_the_docs_size_the_namespaces_gpu_quota_for_the_requests_pods(
    queued: dict[str, dict[str, Any]],
) -> None:
    # A ResourceQuota counts pods when each is created, not the VMs a ProvisioningRequest books
    # (k8s.io/apiserver v0.35.0, pkg/admission/plugin/resourcequota): docs/gke-capacity.md
    # says how much gpuQuota the example's request needs, which must be its pods' GPUs.
    (pod_set,) = queued["ProvisioningRequest"]["spec"]["podSets"]
    (container,) = queued["PodTemplate"]["template"]["spec"]["containers"]
    gpus = int(container["resources"]["limits"]["nvidia.com/gpu"])
    docs = " ".join((ROOT / "docs" / "gke-capacity.md").read_text().split())

    assert (pod_set["count"], gpus) == (2, 8)
    assert "`gpuQuota` must cover the request's GPUs" in docs
    assert "2 \N{MULTIPLICATION SIGN} 8 = 16 in the example" in docs


def test_the_queued_provisioning_pods_land_on_the_queued_pool_only(
    queued: dict[str, dict[str, Any]],
    gke_config: Config,
    plan_for: Callable[[Config], Plan],
) -> None:
    templates = node_templates(plan_for(with_gke_capacity_pools(gke_config)))
    pod = pod_spec_of(queued["Job"])

    assert fitting_pools(pod, templates) == [QUEUED_POOL]

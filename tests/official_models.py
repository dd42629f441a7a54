"""Every resource of a plan against the official models the suite checks each kind by: Kubernetes
objects against Kubernetes' OpenAPI schema and the pinned CRDs (tests/kubernetes_schemas.py), AWS
resources as the requests the provider makes, against botocore's models
(tests/gpu_platform/eks/aws_api.py, new_cluster_api.py), and GKE, Compute Engine and Cloud KMS
resources against their discovery documents (tests/gpu_platform/gke/gke_api.py,
new_cluster/api_bodies.py). Resource types none of them translates are not checked here."""

from gpu_platform.offline.program import Plan
from tests.gpu_platform.eks.aws_api import request_problems
from tests.gpu_platform.eks.new_cluster_api import TRANSLATIONS, requests_for
from tests.gpu_platform.gke.new_cluster.api_bodies import problems_of_created
from tests.kubernetes_schemas import problems as kubernetes_problems


def official_model_problems(plan: Plan, kubernetes_minor: str) -> list[str]:
    """What the official models refuse of the plan's resources, the Kubernetes objects judged at
    `kubernetes_minor` (`1.35`)."""
    found = kubernetes_problems(plan, kubernetes_minor)
    for resource in plan.resources:
        if resource.type not in TRANSLATIONS:
            continue
        try:
            requests = requests_for(resource)
        except KeyError as error:
            found.append(f"{resource.type} {resource.name}: {error}")
            continue
        for service, operation, params in requests:
            found += [
                f"{resource.type} {resource.name} ({operation}): {problem}"
                for problem in request_problems(service, operation, params)
            ]
    found += [
        f"{name}: {problem}"
        for name, problems in problems_of_created(plan).items()
        for problem in problems
    ]
    return found

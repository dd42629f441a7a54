"""Over any plan: a GKE cluster the platform creates admits its nodes' range and holds master
authorized networks on its private endpoint as `gcp.privateEndpointEnforcement` says
(container.v1 `MasterAuthorizedNetworksConfig.privateEndpointEnforcementEnabled`), evaluates
Binary Authorization as `cluster.create.gcp.binaryAuthorization` says (container.v1
`BinaryAuthorization.evaluationMode`), with the project's policy written in `audit` and
`enforce` only and break-glass refused in `enforce` only, and every key ring it creates, with
its key, falls under the IAM condition the stack exports for the deploy identity's Cloud KMS
role (`secretsKeyCondition`)."""

import re
from typing import Any

from gpu_platform.gke.new_cluster.break_glass import POLICY_NAME as BREAK_GLASS_POLICY
from gpu_platform.offline.program import Plan

CLUSTER = "gcp:container/cluster:Cluster"
CRYPTO_KEY = "gcp:kms/cryptoKey:CryptoKey"
POLICY = "gcp:binaryauthorization/policy:Policy"
VALIDATING_POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"


def allows(condition: str, resource_name: str) -> bool:
    """An IAM condition's verdict on a resource name, for the two forms the platform writes, CEL's
    `resource.name == '…'` and `resource.name.startsWith('…')`, joined by `||`."""
    verdicts = []
    for clause in condition.split(" || "):
        if equal := re.fullmatch(r"resource\.name == '([^']*)'", clause):
            verdicts.append(resource_name == equal[1])
        else:
            prefix = re.fullmatch(r"resource\.name\.startsWith\('([^']*)'\)", clause)
            assert prefix, f"not a clause the check reads: {clause}"
            verdicts.append(resource_name.startswith(prefix[1]))
    return any(verdicts)


def hardening_problems(plan: Plan, config: dict[str, Any]) -> list[str]:
    create = config.get("gpu-platform:cluster", {}).get("create") or {}
    gcp = create.get("gcp", {})
    binary_authorization = gcp.get("binaryAuthorization", "audit")
    evaluation = "DISABLED" if binary_authorization == "off" else "PROJECT_SINGLETON_POLICY_ENFORCE"
    written = binary_authorization in ("audit", "enforce")
    enforced = gcp.get("privateEndpointEnforcement", True)
    problems = []
    for cluster in plan.of_type(CLUSTER):
        authorized = cluster.inputs.get("masterAuthorizedNetworksConfig", {})
        if authorized.get("privateEndpointEnforcementEnabled") is not enforced:
            problems.append(f"{cluster.name}: private endpoint enforcement is not {enforced}")
        blocks = authorized.get("cidrBlocks", [])
        if not blocks or blocks[0].get("displayName") != "cluster nodes":
            problems.append(f"{cluster.name}: the nodes' range is not an authorized network")
        mode = cluster.inputs.get("binaryAuthorization", {}).get("evaluationMode")
        if mode != evaluation:
            problems.append(f"{cluster.name}: Binary Authorization {mode}, not {evaluation}")
        if written and len(plan.of_type(POLICY)) != 1:
            problems.append(f"{cluster.name}: no Binary Authorization policy written")
    if not written and plan.of_type(POLICY):
        problems.append(f"a Binary Authorization policy written with {binary_authorization}")
    # Binary Authorization's break-glass annotation would admit any image under enforce.
    # Other admission policies of the platform's (node validation's) refuse nothing of the kind.
    refusing = any(
        p.inputs["metadata"]["name"] == BREAK_GLASS_POLICY for p in plan.of_type(VALIDATING_POLICY)
    )
    if create and refusing is not (binary_authorization == "enforce"):
        problems.append(f"break-glass refused is {refusing} with {binary_authorization}")
    condition = plan.outputs.get("secretsKeyCondition")
    for key in plan.of_type(CRYPTO_KEY):
        ring = key.inputs["keyRing"]
        for name in (ring, f"{ring}/cryptoKeys/{key.inputs['name']}"):
            if condition is None or not allows(condition, name):
                problems.append(f"{name}: outside the condition {condition}")
    return problems

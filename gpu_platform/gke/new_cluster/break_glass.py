"""Binary Authorization's break-glass refused where the platform enforces its policy.

A pod annotated `alpha.image-policy.k8s.io/break-glass` is admitted whatever its images,
Binary Authorization only logging it (Google's "Using breakglass" for GKE): anyone who may
create a pod would step around `gcp.binaryAuthorization: enforce`. A ValidatingAdmissionPolicy
refuses the annotation on every pod outside kube-system, where only GKE and the cluster's
administrators create pods. A workload whose pod template carries it is refused as its pods
are created.
"""

import pulumi
from pulumi_kubernetes import admissionregistration, meta

from gpu_platform.config import GkeClusterCreate
from gpu_platform.instance import part_name

BREAK_GLASS_ANNOTATION = "alpha.image-policy.k8s.io/break-glass"
POLICY_NAME = "gpu-platform-no-break-glass"


def break_glass_refusal(gcp: GkeClusterCreate, opts: pulumi.ResourceOptions) -> None:
    """With `enforce`, the policy refusing break-glass pods, and its binding."""
    if gcp.binary_authorization != "enforce":
        return
    policy = admissionregistration.v1.ValidatingAdmissionPolicy(
        part_name("no-break-glass"),
        metadata=meta.v1.ObjectMetaArgs(name=POLICY_NAME),
        spec=admissionregistration.v1.ValidatingAdmissionPolicySpecArgs(
            failure_policy="Fail",
            match_constraints=admissionregistration.v1.MatchResourcesArgs(
                resource_rules=[
                    admissionregistration.v1.NamedRuleWithOperationsArgs(
                        api_groups=[""],
                        api_versions=["v1"],
                        operations=["CREATE", "UPDATE"],
                        resources=["pods"],
                    )
                ]
            ),
            validations=[
                admissionregistration.v1.ValidationArgs(
                    expression="!has(object.metadata.annotations) || !("
                    f"'{BREAK_GLASS_ANNOTATION}' in object.metadata.annotations)",
                    message=f"the {BREAK_GLASS_ANNOTATION} annotation is refused: the cluster"
                    " enforces Binary Authorization (cluster.create.gcp.binaryAuthorization)",
                )
            ],
        ),
        opts=opts,
    )
    admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        part_name("no-break-glass"),
        metadata=meta.v1.ObjectMetaArgs(name=POLICY_NAME),
        spec=admissionregistration.v1.ValidatingAdmissionPolicyBindingSpecArgs(
            policy_name=POLICY_NAME,
            validation_actions=["Deny"],
            match_resources=admissionregistration.v1.MatchResourcesArgs(
                namespace_selector=meta.v1.LabelSelectorArgs(
                    match_expressions=[
                        meta.v1.LabelSelectorRequirementArgs(
                            key="kubernetes.io/metadata.name",
                            operator="NotIn",
                            values=["kube-system"],
                        )
                    ]
                )
            ),
        ),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[policy])),
    )

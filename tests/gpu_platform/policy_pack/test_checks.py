"""Values not known during preview: the checks that need them are skipped with a note, never
reported as violations, and the checks that do not still run."""

from tests.gpu_platform.policy_pack.builders import (
    NAMESPACE,
    UNKNOWN,
    Analyze,
    Notes,
    eks_node_group,
    gke_node_pool,
    launch_template,
    messages,
    namespace,
    resource,
    restricted_pod_spec,
    violations,
    workload,
)


def test_an_unknown_security_context_skips_only_the_checks_that_read_it(
    analyze: Analyze, new_notes: Notes
) -> None:
    spec = restricted_pod_spec()
    spec["containers"][0]["securityContext"] = UNKNOWN
    spec["hostNetwork"] = True
    deployment = workload("Deployment", spec)

    verdicts = analyze(namespace(), deployment)

    assert messages(verdicts, "pod-security-standards") == [
        "host namespaces: pod sets spec.template.spec.hostNetwork=true. Fix: remove hostNetwork "
        'or set it to false. [Pod Security restricted v1.35, from namespace "team-a"]'
    ]
    (note,) = [n for n in new_notes() if "pod-security-standards" in n]
    assert note.startswith(
        f'policy "pod-security-standards" skipped checks on {deployment.urn} until values are '
        "known: privileged: spec.template.spec.containers[0]: string value at "
        ".spec.template.spec.containers.0.securityContext can't be known during preview; "
    )


def test_an_unknown_namespace_name_skips_the_exemption_check_only(
    analyze: Analyze, new_notes: Notes
) -> None:
    computed = namespace("team-a", "baseline")
    computed.inputs["metadata"]["name"] = UNKNOWN
    del computed.inputs["metadata"]["labels"]["pod-security.kubernetes.io/warn-version"]

    verdicts = analyze(computed, config={"namespace-pod-security": "mandatory"})

    assert messages(verdicts, "namespace-pod-security") == [
        'metadata.labels["pod-security.kubernetes.io/warn-version"] is missing, so the policy '
        "would change with the cluster's Kubernetes version. Fix: pin it to a policy version "
        'such as "v1.35".'
    ]
    assert new_notes() == [
        f'policy "namespace-pod-security" skipped checks on {computed.urn} until values are '
        "known: namespace-pod-security: string value at .metadata.name can't be known during "
        "preview"
    ]


def test_a_pool_whose_gpus_are_unknown_is_not_judged(analyze: Analyze, new_notes: Notes) -> None:
    # With its launch template, which every node group must have (eks-node-group-imdsv2).
    template = launch_template()
    group = eks_node_group(template)
    group.inputs.update(
        amiType=UNKNOWN,
        instanceTypes=UNKNOWN,
        taints=[],
        scalingConfig={"minSize": 3, "maxSize": 500},
    )

    verdicts = [v for v in analyze(template, group) if v.urn == group.urn]

    # No verdict of a pool policy; each says, advisory, what it could not check.
    assert {(v.policy_name, v.enforcement_level) for v in verdicts} == {
        ("checks-deferred-at-preview", "advisory")
    }
    assert (
        'policy "gpu-pool-scaling" could not check this at preview (gpu-pool-scaling: string '
        "value at .instanceTypes can't be known during preview); it runs when the value is "
        "known, at pulumi up."
    ) in [v.message for v in verdicts]
    assert (
        f'policy "gpu-pool-scaling" skipped checks on {group.urn} until values are known: '
        "gpu-pool-scaling: string value at .instanceTypes can't be known during preview"
    ) in new_notes()


def test_an_unknown_ami_type_does_not_hide_a_gpu_instance_type(analyze: Analyze) -> None:
    # The example: a p5 node group with no taint, SSH open and 500 nodes.
    template = launch_template()
    group = eks_node_group(template)
    group.inputs.update(
        amiType=UNKNOWN,
        instanceTypes=["p5.48xlarge"],
        taints=[],
        remoteAccess={"ec2SshKey": "ops"},
        scalingConfig={"minSize": 0, "maxSize": 500},
    )

    verdicts = [v for v in analyze(template, group) if v.urn == group.urn]

    assert sorted(v.policy_name for v in verdicts) == [
        "eks-gpu-node-access",
        "gpu-pool-scaling",
        "gpu-pool-scheduling",
    ]


def test_an_unknown_maximum_does_not_hide_a_known_minimum(analyze: Analyze) -> None:
    group = eks_node_group()
    group.inputs["scalingConfig"] = {"minSize": 2, "desiredSize": 2, "maxSize": UNKNOWN}

    assert messages(analyze(group), "gpu-pool-scaling") == [
        "the GPU node group keeps nodes running while idle (scalingConfig.minSize=2). Fix: set "
        'it to 0, or list "l4-nodes" in poolsAllowedMinAboveZero if it must stay warm.'
    ]


def test_an_unknown_shielded_config_does_not_hide_the_metadata_mode(analyze: Analyze) -> None:
    pool = gke_node_pool()
    pool.inputs["nodeConfig"]["shieldedInstanceConfig"] = UNKNOWN
    pool.inputs["nodeConfig"]["workloadMetadataConfig"] = {"mode": "GCE_METADATA"}

    (message,) = messages(analyze(pool), "gke-gpu-node-security")
    assert message.startswith(
        "the GPU node pool does not set nodeConfig.workloadMetadataConfig.mode to GKE_METADATA"
    )


def test_an_unknown_memory_limit_does_not_hide_the_gpu_rules(analyze: Analyze) -> None:
    # A GPU Deployment with a floating image tag, no GPU node selector and no toleration.
    spec = restricted_pod_spec()
    spec["containers"][0]["image"] = "registry.example.com/train:latest"
    spec["containers"][0]["resources"] = {
        "limits": {"nvidia.com/mig-1g.10gb": 1, "memory": UNKNOWN}
    }

    verdicts = analyze(namespace(), workload("Deployment", spec))

    assert {v.policy_name for v in violations(verdicts)} >= {
        "gpu-pods-tolerate-gpu-taint",
        "gpu-pods-select-gpu-nodes",
        "gpu-pods-pinned-images",
    }


def test_remediation_waits_for_an_unknown_enforce_label(analyze: Analyze, new_notes: Notes) -> None:
    labels = {"pod-security.kubernetes.io/enforce": UNKNOWN}
    computed = resource(NAMESPACE, "team-a", {"metadata": {"name": "team-a", "labels": labels}})

    verdicts = analyze(computed)

    assert [v for v in verdicts if v.enforcement_level == "remediate"] == []
    assert {v.policy_name for v in violations(verdicts)} == {"checks-deferred-at-preview"}
    assert new_notes() == [
        f'policy "namespace-pod-security" skipped checks on {computed.urn} until values are '
        "known: adding the audit and warn labels: string value at "
        ".metadata.labels.pod-security.kubernetes.io/enforce can't be known during preview",
        f'policy "namespace-pod-security" skipped checks on {computed.urn} until values are '
        "known: namespace-pod-security: string value at "
        ".metadata.labels.pod-security.kubernetes.io/enforce can't be known during preview",
        'policy "pod-security-levels-listed" skipped checks on the stack until values are '
        f"known: the level of {computed.urn}: string value at "
        ".metadata.labels.pod-security.kubernetes.io/enforce can't be known during preview",
    ]


def test_a_launch_template_whose_name_is_unknown_is_not_called_missing(
    analyze: Analyze, new_notes: Notes
) -> None:
    group = eks_node_group()
    group.inputs["launchTemplate"] = {"name": UNKNOWN, "version": UNKNOWN}

    assert messages(analyze(group), "eks-gpu-launch-template") == []
    assert (
        'policy "eks-gpu-launch-template" skipped checks on the stack until values are known: '
        f"the launch template of {group.urn}: string value at .launchTemplate.name can't be "
        "known during preview"
    ) in new_notes()

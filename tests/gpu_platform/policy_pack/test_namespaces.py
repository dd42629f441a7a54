"""The namespace policy: pinned Pod Security labels, restricted unless exempt, and the
remediation that adds the missing audit and warn labels."""

from typing import Any

from tests.gpu_platform.policy_pack.builders import (
    NAMESPACE,
    Analyze,
    messages,
    namespace,
    pod_security_labels,
    resource,
    urn,
)

POLICY = "namespace-pod-security"
ENFORCE = "pod-security.kubernetes.io/enforce"


def labelled(labels: dict[str, Any], name: str = "team-a") -> Any:
    return resource(NAMESPACE, name, {"metadata": {"name": name, "labels": labels}})


def test_a_restricted_namespace_pinned_in_every_mode_passes(analyze: Analyze) -> None:
    assert [v for v in analyze(namespace()) if v.policy_name == POLICY] == []


def test_a_workload_namespace_must_be_restricted_in_every_mode(analyze: Analyze) -> None:
    labels = pod_security_labels("restricted")
    labels["pod-security.kubernetes.io/warn"] = "baseline"

    assert messages(analyze(labelled(labels)), POLICY) == [
        'namespace "team-a" is not exempt, so metadata.labels["pod-security.kubernetes.io/warn"] '
        "must be restricted, not baseline. Fix: set it to restricted, or list the namespace in "
        "exemptNamespaces if its pods need host access."
    ]


def test_exempt_namespaces_may_be_privileged(analyze: Analyze) -> None:
    verdicts = analyze(namespace("gpu-operator", "privileged"))

    assert messages(verdicts, POLICY) == []


def test_the_exemption_list_is_configurable(analyze: Analyze) -> None:
    exempt = {"exemptNamespaces": ["ray-system"]}
    config = {
        POLICY: exempt,
        "pod-security-standards": exempt,
        "gpu-validation-taint-platform-only": exempt,
    }

    assert messages(analyze(namespace("ray-system", "baseline"), config=config), POLICY) == []
    assert (
        len(messages(analyze(namespace("gpu-operator", "privileged"), config=config), POLICY)) == 3
    )


def test_an_unpinned_or_latest_version_is_reported(analyze: Analyze) -> None:
    labels = pod_security_labels()
    labels["pod-security.kubernetes.io/enforce-version"] = "latest"
    del labels["pod-security.kubernetes.io/audit-version"]

    assert messages(analyze(labelled(labels)), POLICY) == [
        'metadata.labels["pod-security.kubernetes.io/enforce-version"]="latest" is not pinned, '
        "so the policy would change with the cluster's Kubernetes version. Fix: pin it to a "
        'policy version such as "v1.37".',
        'metadata.labels["pod-security.kubernetes.io/audit-version"] is missing, so the policy '
        "would change with the cluster's Kubernetes version. Fix: pin it to a policy version "
        'such as "v1.37".',
    ]


def test_a_missing_or_unknown_level_is_reported(analyze: Analyze) -> None:
    bad = {ENFORCE: "strict", f"{ENFORCE}-version": "v1.35"}

    found = messages(analyze(labelled(bad), config={POLICY: "mandatory"}), POLICY)

    assert found[0] == (
        'metadata.labels["pod-security.kubernetes.io/enforce"]="strict" is not a Pod Security '
        "level. Fix: use restricted (or baseline or privileged on an exempt namespace)."
    )
    assert (
        'metadata.labels["pod-security.kubernetes.io/audit"] is missing. Fix: set it to restricted.'
        in found
    )


def test_remediation_copies_enforce_into_the_missing_audit_and_warn_labels(
    analyze: Analyze,
) -> None:
    only_enforce = {ENFORCE: "restricted", f"{ENFORCE}-version": "v1.35"}

    verdicts = analyze(labelled(only_enforce))

    assert [(v.enforcement_level, v.urn) for v in verdicts if v.policy_name == POLICY] == [
        ("remediate", urn(NAMESPACE, "team-a"))
    ]
    assert verdicts[0].message.splitlines()[1] == (
        'changed metadata.labels["pod-security.kubernetes.io/audit"], '
        'metadata.labels["pod-security.kubernetes.io/audit-version"], '
        'metadata.labels["pod-security.kubernetes.io/warn"], '
        'metadata.labels["pod-security.kubernetes.io/warn-version"]'
    )


def test_remediation_keeps_existing_labels(analyze: Analyze) -> None:
    labels = pod_security_labels()
    labels["pod-security.kubernetes.io/audit"] = "baseline"
    del labels["pod-security.kubernetes.io/warn-version"]

    verdicts = analyze(labelled(labels, name="gpu-operator"))

    assert [v.message.splitlines()[1] for v in verdicts if v.policy_name == POLICY] == [
        'changed metadata.labels["pod-security.kubernetes.io/warn-version"]'
    ]


def test_without_remediation_missing_labels_are_violations(analyze: Analyze) -> None:
    only_enforce = {ENFORCE: "restricted", f"{ENFORCE}-version": "v1.35"}

    found = messages(analyze(labelled(only_enforce), config={POLICY: "mandatory"}), POLICY)

    assert found == [
        'metadata.labels["pod-security.kubernetes.io/audit"] is missing. '
        "Fix: set it to restricted.",
        'metadata.labels["pod-security.kubernetes.io/audit-version"] is missing, so the policy '
        "would change with the cluster's Kubernetes version. Fix: pin it to a policy version "
        'such as "v1.35".',
        'metadata.labels["pod-security.kubernetes.io/warn"] is missing. Fix: set it to restricted.',
        'metadata.labels["pod-security.kubernetes.io/warn-version"] is missing, so the policy '
        "would change with the cluster's Kubernetes version. Fix: pin it to a policy version "
        'such as "v1.35".',
    ]


def test_remediation_cannot_invent_an_enforce_label(analyze: Analyze) -> None:
    verdicts = analyze(resource(NAMESPACE, "bare", {"metadata": {"name": "bare"}}))

    assert {v.enforcement_level for v in verdicts if v.policy_name == POLICY} == {"mandatory"}
    assert len(messages(verdicts, POLICY)) == 6

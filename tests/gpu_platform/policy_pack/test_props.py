"""Whatever a stack sends (any shape, values not known yet, secrets), no policy crashes: a crash
would fail every preview of every stack the pack is enforced on.

The properties travel as the engine sends them: a protobuf Struct in which a value not known
yet is the unknown sentinel string and a secret is an object tagged with the secret signature
(the policy SDK unwraps secrets before a policy sees them, and proxies unknowns)."""

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_platform.offline.analyzer import PolicyPack, Verdict
from gpu_platform.offline.program import PlannedResource
from tests.gpu_platform.policy_pack.builders import (
    CHART,
    GKE_CLUSTER,
    KIND_TYPES,
    LAUNCH_TEMPLATE,
    NAMESPACE,
    NODE_GROUP,
    NODE_POOL,
    PROMETHEUS_RULE,
    RELEASE,
    UNKNOWN,
    Analyze,
    eks_node_group,
    gke_node_pool,
    gpu_alert_rules,
    gpu_operator_release,
    gpu_pod_spec,
    launch_template,
    messages,
    namespace,
    resource,
    restricted_pod_spec,
    workload,
)

UNKNOWN_SENTINELS = (
    "04da6b54-80e4-46f7-96ec-b56ff0331ba9",  # string
    "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",  # boolean
    "3eeb2bf0-c639-47a8-9e75-3b44932eb421",  # number
    "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",  # array
    "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",  # object
)
SIGNATURE_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIGNATURE = "1b47061264138c4ac30d75fd1eb44270"


def secret(value: Any) -> dict[str, Any]:
    return {SIGNATURE_KEY: SECRET_SIGNATURE, "value": value}


# Field names and values the policies look for, so generated properties reach deep into them.
FIELD_NAMES = [
    "metadata",
    "spec",
    "template",
    "jobTemplate",
    "containers",
    "initContainers",
    "ephemeralContainers",
    "name",
    "namespace",
    "labels",
    "annotations",
    "securityContext",
    "privileged",
    "capabilities",
    "add",
    "drop",
    "volumes",
    "hostPath",
    "nfs",
    "ports",
    "hostPort",
    "seccompProfile",
    "type",
    "appArmorProfile",
    "seLinuxOptions",
    "user",
    "role",
    "procMount",
    "sysctls",
    "windowsOptions",
    "hostProcess",
    "hostUsers",
    "hostNetwork",
    "os",
    "runAsNonRoot",
    "runAsUser",
    "allowPrivilegeEscalation",
    "livenessProbe",
    "httpGet",
    "host",
    "lifecycle",
    "preStop",
    "resources",
    "limits",
    "requests",
    "nvidia.com/gpu",
    "nvidia.com/mig-1g.10gb",
    "tolerations",
    "key",
    "operator",
    "value",
    "effect",
    "nodeSelector",
    "affinity",
    "nodeAffinity",
    "nodeSelectorTerms",
    "matchExpressions",
    "image",
    "restartPolicy",
    "amiType",
    "instanceTypes",
    "taints",
    "scalingConfig",
    "minSize",
    "maxSize",
    "remoteAccess",
    "launchTemplate",
    "metadataOptions",
    "httpTokens",
    "blockDeviceMappings",
    "ebs",
    "encrypted",
    "nodeConfig",
    "guestAccelerators",
    "imageType",
    "shieldedInstanceConfig",
    "enableSecureBoot",
    "workloadMetadataConfig",
    "mode",
    "autoscaling",
    "totalMaxNodeCount",
    "maxNodeCount",
    "nodeLocations",
    "chart",
    "version",
    "repositoryOpts",
    "repo",
    "values",
    "dcgmExporter",
    "enabled",
    "groups",
    "rules",
    "expr",
    "pod-security.kubernetes.io/enforce",
    "pod-security.kubernetes.io/enforce-version",
]
FIELD_VALUES = [
    "restricted",
    "baseline",
    "privileged",
    "latest",
    "v1.35",
    "v9.99",
    "Default",
    "Unmasked",
    "RuntimeDefault",
    "Unconfined",
    "Localhost",
    "ALL",
    "NET_RAW",
    "NoSchedule",
    "NO_SCHEDULE",
    "Exists",
    "Equal",
    "present",
    "windows",
    "Always",
    "nvidia.com/gpu",
    "gpu-operator",
    "kube-system",
    "AL2023_x86_64_NVIDIA",
    "g6.xlarge",
    "required",
    "true",
    "false",
    "500m",
    "1Ki",
    "oci://x/gpu-operator",
    "https://x",
    "http://x",
    "^1.0",
    "1.2.3",
    "DCGM_FI_DEV_XID_ERRORS",
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(FIELD_VALUES)
    | st.sampled_from(UNKNOWN_SENTINELS)
)
keys = st.sampled_from(FIELD_NAMES) | st.text(min_size=1, max_size=8)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5) | inner.map(secret)
    ),
    max_leaves=40,
)
TYPES = [
    *KIND_TYPES.values(),
    NAMESPACE,
    NODE_GROUP,
    NODE_POOL,
    GKE_CLUSTER,
    LAUNCH_TEMPLATE,
    RELEASE,
    CHART,
    PROMETHEUS_RULE,
    "aws:eks/cluster:Cluster",
    "aws:eks/addon:Addon",
    "pulumi:providers:kubernetes",
    "random:index/randomId:RandomId",
]
GENERATED = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def policy_names(policy_pack: PolicyPack) -> frozenset[str]:
    """The policies the pack announces to the engine (GetAnalyzerInfo)."""
    return frozenset(policy.name for policy in policy_pack.policies)


def well_formed(verdicts: list[Verdict], names: frozenset[str]) -> bool:
    return all(v.policy_name in names and v.message for v in verdicts)


@GENERATED
@given(
    st.lists(
        st.tuples(st.sampled_from(TYPES), st.dictionaries(keys, values, max_size=6)),
        min_size=1,
        max_size=4,
    )
)
def test_arbitrary_properties_never_crash_a_policy(
    analyze: Analyze, policy_names: frozenset[str], generated: list[tuple[str, dict[str, Any]]]
) -> None:
    resources = [resource(t, f"r{i}", inputs) for i, (t, inputs) in enumerate(generated)]

    assert well_formed(analyze(*resources), policy_names)


def realistic_stack() -> list[PlannedResource]:
    template = launch_template()
    return [
        namespace("team-a", "restricted"),
        template,
        eks_node_group(template),
        gke_node_pool(),
        gpu_operator_release(),
        gpu_alert_rules(),
        workload("Deployment", gpu_pod_spec()),
        workload("CronJob", restricted_pod_spec(), name="report"),
    ]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a value, its own root included, but not into a secret's signature: the
    engine never sends a malformed one."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            if key != SIGNATURE_KEY:
                found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


def replaced(inputs: dict[str, Any], path: tuple[Any, ...], new: Any) -> None:
    target: Any = inputs
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new


@GENERATED
@given(st.data())
def test_any_field_of_a_real_stack_may_hold_anything(
    analyze: Analyze, policy_names: frozenset[str], data: st.DataObject
) -> None:
    stack = realistic_stack()
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        target = data.draw(st.sampled_from(stack))
        path = data.draw(st.sampled_from([p for p in paths(target.inputs) if p]))
        replaced(target.inputs, path, data.draw(values))

    assert well_formed(analyze(*stack), policy_names)


def test_a_secret_is_judged_by_its_value(analyze: Analyze) -> None:
    spec = restricted_pod_spec()
    spec["containers"][0]["securityContext"]["privileged"] = secret(True)
    team = namespace()
    team.inputs["metadata"]["labels"] = secret(team.inputs["metadata"]["labels"])

    # The stack's policy config lists the namespace's level as the labels' values say it.
    listed = {"pod-security-standards": {"namespaceLevels": {"team-a": "restricted:v1.35"}}}

    verdicts = analyze(team, workload("Deployment", spec), config=listed)

    assert messages(verdicts, "pod-security-standards") == [
        'privileged: container "app" sets '
        "spec.template.spec.containers[0].securityContext.privileged=true. Fix: remove "
        'privileged or set it to false. [Pod Security restricted v1.35, from namespace "team-a"]'
    ]
    assert messages(verdicts, "namespace-pod-security") == []
    assert messages(verdicts, "pod-security-levels-listed") == []


# --- an unknown value hides only the verdicts that read it ---------------------------------

MIG = "nvidia.com/mig-1g.10gb"
CONTAINER = ("spec", "template", "spec", "containers", 0)


def unschedulable_gpu_deployment() -> PlannedResource:
    """A GPU Deployment with a floating image tag, no GPU node selector and no toleration."""
    spec = restricted_pod_spec()
    spec["containers"][0].update(
        image="registry.example.com/train:latest",
        env=[{"name": "EPOCHS", "value": "3"}],
        resources={"limits": {MIG: "1", "memory": "16Gi"}, "requests": {"cpu": "4"}},
    )
    return workload("Deployment", spec, pod_metadata={"labels": {"app": "train"}})


def open_p5_node_group(template: PlannedResource) -> PlannedResource:
    """A p5 node group with no taint, SSH open and up to 500 nodes."""
    group = eks_node_group(template)
    group.inputs.update(
        instanceTypes=["p5.48xlarge"],
        taints=[],
        remoteAccess={"ec2SshKey": "ops"},
        scalingConfig={"minSize": 0, "desiredSize": 0, "maxSize": 500},
    )
    return group


def node_pool_exposing_metadata() -> PlannedResource:
    pool = gke_node_pool()
    config = pool.inputs["nodeConfig"]
    config["workloadMetadataConfig"] = {"mode": "GCE_METADATA"}
    config["shieldedInstanceConfig"]["enableSecureBoot"] = False
    return pool


# Each case: the resource, and the fields its mandatory verdicts read: with any other field
# unknown, every one of them must still be reported.
Case = tuple[Callable[[], PlannedResource], list[tuple[Any, ...]]]
DIFFERENTIAL_CASES: dict[str, Case] = {
    "gpu deployment": (
        unschedulable_gpu_deployment,
        [
            (*CONTAINER, "resources", "limits", MIG),
            # Whether it also asks for nvidia.com/gpu, which admission would tolerate.
            (*CONTAINER, "resources", "requests"),
            (*CONTAINER, "image"),
        ],
    ),
    "p5 node group": (
        lambda: open_p5_node_group(launch_template()),
        [("taints",), ("scalingConfig", "maxSize"), ("remoteAccess",), ("launchTemplate",)],
    ),
    "gke node pool": (
        node_pool_exposing_metadata,
        [
            ("nodeConfig", "shieldedInstanceConfig", "enableSecureBoot"),
            ("nodeConfig", "workloadMetadataConfig", "mode"),
            ("nodeConfig", "imageType"),
            ("nodeConfig", "labels", "gpu-platform.io/driver"),
            ("nodeConfig", "guestAccelerators"),
        ],
    ),
}


def mandatory(verdicts: list[Verdict], urn: str) -> Counter[str]:
    """The mandatory verdicts on `urn`, by policy (a message may name an unknown field
    differently, say a container by its place instead of its name)."""
    return Counter(v.policy_name for v in verdicts if v.mandatory and v.urn == urn)


@pytest.mark.parametrize("case", DIFFERENTIAL_CASES)
def test_an_unknown_field_never_hides_a_verdict_that_does_not_read_it(
    analyze: Analyze, case: str
) -> None:
    build, read = DIFFERENTIAL_CASES[case]
    subject = build()
    baseline = mandatory(analyze(subject), subject.urn)
    assert baseline.total() >= 2, "the case must have verdicts to lose"

    hidden = {}
    for path in paths(subject.inputs):
        if not path or any(path[: len(f)] == f or f[: len(path)] == path for f in read):
            continue  # a field a verdict reads, in it or holding it: that verdict may wait
        changed = build()
        replaced(changed.inputs, path, UNKNOWN)
        lost = baseline - mandatory(analyze(changed), changed.urn)
        if lost:
            hidden[path] = sorted(lost.elements())

    assert hidden == {}

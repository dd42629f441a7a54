"""The Pod Security Standards policy: every check, every pod-bearing kind, every container list,
the version each rule changed in, and how a workload's level is found."""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.offline.analyzer import PACK_DIR, PolicyPack
from gpu_platform.offline.namespace_levels import with_namespace_levels
from tests.gpu_platform.policy_pack.builders import (
    KIND_TYPES,
    NAMESPACE,
    SPEC_PATHS,
    UNKNOWN,
    Analyze,
    messages,
    namespace,
    resource,
    restricted_pod_spec,
    urn,
    workload,
)

POLICY = "pod-security-standards"
LISTED = "pod-security-levels-listed"
POD = "spec.template.spec"
APP = f"{POD}.containers[0]"


def context(level: str = "restricted", version: str = "v1.35") -> str:
    return f' [Pod Security {level} {version}, from namespace "team-a"]'


def checked(
    analyze: Analyze,
    spec: dict[str, Any],
    level: str = "restricted",
    version: str = "v1.35",
    **workload_args: Any,
) -> list[str]:
    verdicts = analyze(
        namespace("team-a", level, version), workload("Deployment", spec, **workload_args)
    )
    return messages(verdicts, POLICY)


def app(spec: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = spec["containers"][0]
    return container


def app_security(spec: dict[str, Any]) -> dict[str, Any]:
    security: dict[str, Any] = app(spec)["securityContext"]
    return security


Mutation = Callable[[dict[str, Any]], object]

BASELINE_FIXES_CAPABILITIES = (
    "AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP, "
    "SETGID, SETPCAP, SETUID, SYS_CHROOT"
)
RESTRICTED_VOLUMES = (
    "configMap, csi, downwardAPI, emptyDir, ephemeral, image, persistentVolumeClaim, projected, "
    "secret"
)
SAFE_SYSCTLS_1_35 = (
    "kernel.shm_rmid_forced, net.ipv4.ip_local_port_range, net.ipv4.tcp_syncookies, "
    "net.ipv4.ping_group_range, net.ipv4.ip_unprivileged_port_start, "
    "net.ipv4.ip_local_reserved_ports, net.ipv4.tcp_keepalive_time, net.ipv4.tcp_fin_timeout, "
    "net.ipv4.tcp_keepalive_intvl, net.ipv4.tcp_keepalive_probes, net.ipv4.tcp_rmem, "
    "net.ipv4.tcp_wmem"
)

# (check, level, how the compliant pod is broken, the one message expected)
FAILING_CASES: list[tuple[str, str, Mutation, str]] = [
    (
        "hostNamespaces",
        "baseline",
        lambda s: s.update(hostNetwork=True),
        f"host namespaces: pod sets {POD}.hostNetwork=true. "
        "Fix: remove hostNetwork or set it to false.",
    ),
    (
        "privileged",
        "baseline",
        lambda s: app_security(s).update(privileged=True),
        f'privileged: container "app" sets {APP}.securityContext.privileged=true. '
        "Fix: remove privileged or set it to false.",
    ),
    (
        "capabilities_baseline",
        "baseline",
        lambda s: app_security(s).update(capabilities={"add": ["NET_RAW", "CHOWN"]}),
        f'non-default capabilities: container "app" adds "NET_RAW" in '
        f"{APP}.securityContext.capabilities.add. "
        f"Fix: add only capabilities from {BASELINE_FIXES_CAPABILITIES}.",
    ),
    (
        "hostPathVolumes",
        "baseline",
        lambda s: s.update(volumes=[{"name": "host", "hostPath": {"path": "/"}}]),
        f'hostPath volumes: volume "host" mounts the node\'s filesystem '
        f"({POD}.volumes[0].hostPath). Fix: use a persistentVolumeClaim, emptyDir or another "
        "volume type instead of hostPath.",
    ),
    (
        "hostPorts",
        "baseline",
        lambda s: app(s).update(
            ports=[{"containerPort": 80}, {"containerPort": 80, "hostPort": 8080}]
        ),
        f'hostPort: container "app" sets {APP}.ports[1].hostPort=8080. '
        "Fix: remove hostPort and reach the container through a Service.",
    ),
    (
        "appArmorProfile (field)",
        "baseline",
        lambda s: app_security(s).update(appArmorProfile={"type": "Unconfined"}),
        f'forbidden AppArmor profile: container "app" sets '
        f'{APP}.securityContext.appArmorProfile.type="Unconfined". '
        "Fix: use the RuntimeDefault or a Localhost AppArmor profile.",
    ),
    (
        "seLinuxOptions (type)",
        "baseline",
        lambda s: s["securityContext"].update(seLinuxOptions={"type": "spc_t"}),
        f'seLinuxOptions: pod sets {POD}.securityContext.seLinuxOptions.type="spc_t". Fix: leave '
        "type unset or use one of container_t, container_init_t, container_kvm_t, "
        "container_engine_t.",
    ),
    (
        "seLinuxOptions (user)",
        "baseline",
        lambda s: app_security(s).update(seLinuxOptions={"user": "system_u"}),
        f'seLinuxOptions: container "app" sets {APP}.securityContext.seLinuxOptions.user='
        '"system_u". Fix: remove seLinuxOptions.user.',
    ),
    (
        "procMount",
        "baseline",
        lambda s: app_security(s).update(procMount="Unmasked"),
        f'procMount: container "app" sets {APP}.securityContext.procMount="Unmasked". '
        "Fix: remove procMount or set it to Default.",
    ),
    (
        "seccompProfile_baseline",
        "baseline",
        lambda s: s["securityContext"].update(seccompProfile={"type": "Unconfined"}),
        f'seccompProfile: pod sets {POD}.securityContext.seccompProfile.type="Unconfined". '
        "Fix: set seccompProfile.type to RuntimeDefault or Localhost.",
    ),
    (
        "sysctls",
        "baseline",
        lambda s: s["securityContext"].update(
            sysctls=[
                {"name": "net.ipv4.tcp_syncookies", "value": "1"},
                {"name": "kernel.msgmax", "value": "1"},
            ]
        ),
        f'forbidden sysctls: pod sets {POD}.securityContext.sysctls[1].name="kernel.msgmax". '
        f"Fix: remove it; policy v1.35 allows only {SAFE_SYSCTLS_1_35}.",
    ),
    (
        "windowsHostProcess",
        "baseline",
        lambda s: s["securityContext"].update(windowsOptions={"hostProcess": True}),
        f"hostProcess: pod sets {POD}.securityContext.windowsOptions.hostProcess=true. "
        "Fix: remove hostProcess or set it to false.",
    ),
    (
        "hostProbesAndHostLifecycle",
        "baseline",
        lambda s: app(s).update(
            lifecycle={"preStop": {"httpGet": {"host": "10.0.0.1", "port": 80}}}
        ),
        f'probe or lifecycle host: container "app" sets {APP}.lifecycle.preStop.httpGet.host='
        '"10.0.0.1". Fix: remove host, so the kubelet connects to the pod\'s own IP.',
    ),
    (
        "restrictedVolumes",
        "restricted",
        lambda s: s.update(
            volumes=[{"name": "cache", "emptyDir": {}}, {"name": "data", "nfs": {"server": "nas"}}]
        ),
        f'restricted volume types: volume "data" uses nfs ({POD}.volumes[1].nfs). '
        f"Fix: use only {RESTRICTED_VOLUMES} volumes.",
    ),
    (
        "allowPrivilegeEscalation",
        "restricted",
        lambda s: app_security(s).pop("allowPrivilegeEscalation"),
        f'allowPrivilegeEscalation != false: container "app" does not set '
        f"{APP}.securityContext.allowPrivilegeEscalation=false. "
        "Fix: set securityContext.allowPrivilegeEscalation: false on the container.",
    ),
    (
        "runAsNonRoot",
        "restricted",
        lambda s: s["securityContext"].update(runAsNonRoot=False),
        f"runAsNonRoot != true: pod sets {POD}.securityContext.runAsNonRoot=false. "
        "Fix: set securityContext.runAsNonRoot: true on the pod or on every container.",
    ),
    (
        "runAsUser",
        "restricted",
        lambda s: app_security(s).update(runAsUser=0),
        f'runAsUser=0: container "app" sets {APP}.securityContext.runAsUser=0. '
        "Fix: remove runAsUser or set a non-zero user ID.",
    ),
    (
        "seccompProfile_restricted",
        "restricted",
        lambda s: s["securityContext"].pop("seccompProfile"),
        f'seccompProfile: container "app" does not set {APP}.securityContext.seccompProfile.type, '
        f"nor does {POD}.securityContext.seccompProfile.type. Fix: set "
        "securityContext.seccompProfile.type: RuntimeDefault (or Localhost) on the pod.",
    ),
    (
        "capabilities_restricted",
        "restricted",
        lambda s: app_security(s)["capabilities"].update(add=["NET_BIND_SERVICE", "CHOWN"]),
        f'unrestricted capabilities: container "app" adds "CHOWN" in '
        f"{APP}.securityContext.capabilities.add. Fix: add at most NET_BIND_SERVICE.",
    ),
    (
        "procMount_restricted",
        "restricted",
        lambda s: (app_security(s).update(procMount="Unmasked"), s.update(hostUsers=False)),
        f'procMount: container "app" sets {APP}.securityContext.procMount="Unmasked". '
        "Fix: remove procMount or set it to Default.",
    ),
]


@pytest.mark.parametrize(
    ("level", "mutate", "expected"),
    [case[1:] for case in FAILING_CASES],
    ids=[case[0] for case in FAILING_CASES],
)
def test_each_check_reports_what_breaks_it(
    analyze: Analyze, level: str, mutate: Mutation, expected: str
) -> None:
    spec = restricted_pod_spec()
    mutate(spec)

    assert checked(analyze, spec, level) == [expected + context(level)]


@pytest.mark.parametrize("kind", KIND_TYPES)
def test_a_compliant_pod_of_each_kind_passes_restricted(analyze: Analyze, kind: str) -> None:
    verdicts = analyze(namespace(), workload(kind, restricted_pod_spec()))

    assert messages(verdicts, POLICY) == []


@pytest.mark.parametrize("kind", KIND_TYPES)
def test_each_kind_reports_its_own_field_path(analyze: Analyze, kind: str) -> None:
    spec = restricted_pod_spec()
    app_security(spec)["privileged"] = True

    verdicts = analyze(namespace(), workload(kind, spec))

    field = f"{SPEC_PATHS[kind]}.containers[0].securityContext.privileged"
    assert messages(verdicts, POLICY) == [
        f'privileged: container "app" sets {field}=true. '
        "Fix: remove privileged or set it to false." + context()
    ]


def test_init_and_ephemeral_containers_are_checked_too(analyze: Analyze) -> None:
    spec = restricted_pod_spec()
    spec["initContainers"] = [{"name": "setup", "image": "busybox:1.36"}]
    spec["ephemeralContainers"] = [
        {"name": "debug", "image": "busybox:1.36", "securityContext": {"privileged": True}}
    ]

    found = checked(analyze, spec, "baseline")

    assert found == [
        f'privileged: ephemeral container "debug" sets {POD}.ephemeralContainers[0]'
        ".securityContext.privileged=true. Fix: remove privileged or set it to false."
        + context("baseline")
    ]
    assert any(
        m.startswith('allowPrivilegeEscalation != false: init container "setup"')
        for m in checked(analyze, spec, "restricted")
    )


def test_a_baseline_namespace_does_not_apply_restricted_checks(analyze: Analyze) -> None:
    spec = restricted_pod_spec()
    del spec["securityContext"]
    app(spec).pop("securityContext")

    assert checked(analyze, spec, "baseline") == []
    assert len(checked(analyze, spec, "restricted")) == 4


def test_a_privileged_namespace_admits_anything(analyze: Analyze) -> None:
    spec = restricted_pod_spec()
    spec.update(hostNetwork=True, volumes=[{"name": "host", "hostPath": {"path": "/"}}])

    assert checked(analyze, spec, "privileged") == []


def test_windows_pods_are_exempt_from_three_restricted_checks(analyze: Analyze) -> None:
    spec = restricted_pod_spec()
    del spec["securityContext"]["seccompProfile"]
    app(spec)["securityContext"] = {}
    spec["os"] = {"name": "windows"}

    assert checked(analyze, spec) == []


def test_the_pod_level_setting_covers_containers_but_a_container_false_does_not(
    analyze: Analyze,
) -> None:
    spec = restricted_pod_spec()
    app_security(spec)["runAsNonRoot"] = False

    assert checked(analyze, spec) == [
        f'runAsNonRoot != true: container "app" sets {APP}.securityContext.runAsNonRoot=false. '
        "Fix: set securityContext.runAsNonRoot: true on the pod or on every container." + context()
    ]


def test_apparmor_annotations_on_the_pod_template_are_checked(analyze: Analyze) -> None:
    annotations = {
        "container.apparmor.security.beta.kubernetes.io/app": "unconfined",
        "container.apparmor.security.beta.kubernetes.io/sidecar": "localhost/tight",
    }

    found = checked(analyze, restricted_pod_spec(), pod_metadata={"annotations": annotations})

    assert found == [
        "forbidden AppArmor profile: pod sets spec.template.metadata.annotations"
        '["container.apparmor.security.beta.kubernetes.io/app"]="unconfined". '
        'Fix: use "runtime/default" or "localhost/<profile>".' + context()
    ]


# --- policy versions -------------------------------------------------------------------------


def _with_sysctl(name: str) -> dict[str, Any]:
    spec = restricted_pod_spec()
    spec["securityContext"]["sysctls"] = [{"name": name, "value": "4096 87380 6291456"}]
    return spec


def test_sysctls_become_safe_in_the_version_that_allowed_them(analyze: Analyze) -> None:
    assert checked(analyze, _with_sysctl("net.ipv4.tcp_rmem"), version="v1.32") == []
    assert len(checked(analyze, _with_sysctl("net.ipv4.tcp_rmem"), version="v1.31")) == 1
    assert checked(analyze, _with_sysctl("net.ipv4.tcp_notsent_lowat"), version="v1.37") == []
    assert len(checked(analyze, _with_sysctl("net.ipv4.tcp_notsent_lowat"), version="v1.36")) == 1


def test_selinux_container_engine_t_is_allowed_from_v1_31(analyze: Analyze) -> None:
    spec = restricted_pod_spec()
    spec["securityContext"]["seLinuxOptions"] = {"type": "container_engine_t"}

    assert checked(analyze, spec, version="v1.31") == []
    assert checked(analyze, spec, version="v1.30") == [
        f'seLinuxOptions: pod sets {POD}.securityContext.seLinuxOptions.type="container_engine_t". '
        "Fix: leave type unset or use one of container_t, container_init_t, container_kvm_t."
        + context(version="v1.30")
    ]


def test_probe_hosts_are_forbidden_from_v1_34(analyze: Analyze) -> None:
    spec = restricted_pod_spec()
    app(spec)["livenessProbe"] = {"tcpSocket": {"host": "example.com", "port": 80}}

    assert checked(analyze, spec, version="v1.33") == []
    assert len(checked(analyze, spec, version="v1.34")) == 1


def test_user_namespaced_pods_may_run_as_root_from_v1_35(analyze: Analyze) -> None:
    spec = restricted_pod_spec()
    spec["hostUsers"] = False
    spec["securityContext"].update(runAsNonRoot=False, runAsUser=0)

    assert checked(analyze, spec, version="v1.35") == []
    assert len(checked(analyze, spec, version="v1.34")) == 2


def test_baseline_relaxes_proc_mount_for_user_namespaced_pods_from_v1_35(analyze: Analyze) -> None:
    spec = restricted_pod_spec()
    spec["hostUsers"] = False
    app_security(spec)["procMount"] = "Unmasked"

    assert checked(analyze, spec, "baseline", "v1.35") == []
    assert len(checked(analyze, spec, "baseline", "v1.34")) == 1


def test_latest_and_future_versions_are_the_newest_policy_the_pack_knows(
    analyze: Analyze,
) -> None:
    spec = _with_sysctl("net.ipv4.tcp_notsent_lowat")

    assert checked(analyze, spec, version="latest") == []
    assert checked(analyze, spec, version="v1.40") == []


# --- which level applies -----------------------------------------------------------------------


def _privileged_deployment(**workload_args: Any) -> Any:
    spec = restricted_pod_spec()
    app_security(spec)["privileged"] = True
    return workload("Deployment", spec, **workload_args)


PRIVILEGED = (
    f'privileged: container "app" sets {APP}.securityContext.privileged=true. '
    "Fix: remove privileged or set it to false."
)


def test_a_namespace_not_listed_gets_the_configured_default(analyze: Analyze) -> None:
    verdicts = analyze(_privileged_deployment(namespace="elsewhere"))
    privileged_default = analyze(
        _privileged_deployment(namespace="elsewhere"),
        config={POLICY: {"defaultLevel": "privileged"}},
    )

    assert messages(verdicts, POLICY) == [
        PRIVILEGED
        + ' [Pod Security restricted v1.37, the default, as namespace "elsewhere" is not in '
        "namespaceLevels]"
    ]
    assert messages(privileged_default, POLICY) == []


@pytest.mark.parametrize("exempt", ["kube-system", "monitoring", "gpu-operator"])
def test_workloads_in_an_exempt_namespace_of_another_stack_are_not_checked(
    analyze: Analyze, exempt: str
) -> None:
    # A node-exporter DaemonSet in a monitoring namespace that another stack owns needs host
    # access; exemptNamespaces is the one list both Pod Security policies read, and the one that
    # keeps the node validation taint to the platform's namespaces.
    assert messages(analyze(_privileged_deployment(namespace=exempt)), POLICY) == []
    configured = analyze(
        _privileged_deployment(namespace=exempt),
        config={
            POLICY: {"exemptNamespaces": []},
            "namespace-pod-security": {"exemptNamespaces": []},
            "gpu-validation-taint-platform-only": {"exemptNamespaces": []},
        },
    )
    assert len(messages(configured, POLICY)) == 1


def test_a_workload_whose_namespace_is_unknown_is_held_to_the_default(analyze: Analyze) -> None:
    deployment = _privileged_deployment()
    deployment.inputs["metadata"]["namespace"] = UNKNOWN

    assert messages(analyze(deployment), POLICY) == [
        PRIVILEGED + " [Pod Security restricted v1.37, the default, as the namespace is not known]"
    ]


def test_a_namespace_without_an_enforce_label_needs_no_listing(analyze: Analyze) -> None:
    # Without an enforce label a namespace enforces the default, as an unlisted one is judged.
    unlabelled = resource(NAMESPACE, "team-a", {"metadata": {"name": "team-a"}})

    verdicts = analyze(
        unlabelled, _privileged_deployment(), config={POLICY: {"defaultLevel": "baseline"}}
    )

    assert messages(verdicts, POLICY) == [
        PRIVILEGED + ' [Pod Security baseline v1.37, the default, as namespace "team-a" is not in '
        "namespaceLevels]"
    ]
    assert messages(verdicts, LISTED) == []


def test_a_declared_namespace_whose_level_is_not_listed_is_reported(analyze: Analyze) -> None:
    verdicts = analyze(
        namespace("team-a", "baseline", "v1.35"),
        _privileged_deployment(),
        config={POLICY: {"namespaceLevels": {}}},
    )

    assert messages(verdicts, LISTED) == [
        'namespace "team-a" enforces Pod Security baseline v1.35 (from namespace "team-a"), but '
        "pod-security-standards judges its workloads before they are applied at restricted "
        'v1.37 (the default, as namespace "team-a" is not in namespaceLevels). Fix: set '
        '"team-a": "baseline:v1.35" in pod-security-standards\'s namespaceLevels (the stack\'s '
        "policy config)."
    ]
    assert [v.urn for v in verdicts if v.policy_name == LISTED] == [urn(NAMESPACE, "team-a")]


def test_a_listed_level_that_differs_from_the_label_is_reported(analyze: Analyze) -> None:
    verdicts = analyze(
        namespace("team-a", "restricted", "v1.35"),
        config={POLICY: {"namespaceLevels": {"team-a": "baseline:v1.35"}}},
    )

    (message,) = messages(verdicts, LISTED)
    assert message.startswith(
        'namespace "team-a" enforces Pod Security restricted v1.35 (from namespace "team-a"), '
        "but pod-security-standards judges its workloads before they are applied at baseline "
        'v1.35 (from namespace "team-a").'
    )


def test_a_malformed_enforce_label_means_restricted(analyze: Analyze) -> None:
    # As the admission reads it; the listing must then say restricted.
    bad = resource(
        NAMESPACE,
        "team-a",
        {
            "metadata": {
                "name": "team-a",
                "labels": {"pod-security.kubernetes.io/enforce": "strict"},
            }
        },
    )

    verdicts = analyze(bad, config={POLICY: {"defaultLevel": "baseline"}})

    (message,) = messages(verdicts, LISTED)
    assert message.startswith(
        'namespace "team-a" enforces Pod Security restricted v1.37 (as namespace "team-a" has '
        'a malformed enforce label "strict"), but'
    )
    assert message.endswith(
        'Fix: set "team-a": "restricted:v1.37" in '
        "pod-security-standards's namespaceLevels (the stack's policy config)."
    )


def test_the_namespace_name_is_matched_not_the_resource_name(analyze: Analyze) -> None:
    declared = resource(
        NAMESPACE,
        "tenant",
        {
            "metadata": {
                "name": "team-a",
                "labels": {"pod-security.kubernetes.io/enforce": "privileged"},
            }
        },
    )

    assert messages(analyze(declared, _privileged_deployment()), POLICY) == []


def test_a_workload_without_a_namespace_lands_in_its_providers_namespace(analyze: Analyze) -> None:
    provider = resource(
        "pulumi:providers:kubernetes", "cluster", {"namespace": "team-a", "kubeconfig": "{}"}
    )
    reference = f"{provider.urn}::provider-id"

    verdicts = analyze(
        provider,
        namespace("team-a", "privileged"),
        _privileged_deployment(namespace=None, provider=reference),
    )

    assert messages(verdicts, POLICY) == []


def test_a_privileged_workload_is_refused_before_it_is_applied(analyze: Analyze) -> None:
    # At `pulumi up` the engine runs the resource policies before each resource's step, the
    # stack policies only once every step is done (pulumi pkg/engine/deployment_executor.go).
    deployment = _privileged_deployment()
    with PolicyPack(PACK_DIR, preview=False) as updating:
        updating.configure(with_namespace_levels(None, [namespace()]))

        before = updating.analyze_before_step(deployment)

    assert [(v.policy_name, v.urn, v.message) for v in before] == [
        (
            POLICY,
            deployment.urn,
            PRIVILEGED + ' [Pod Security restricted v1.35, from namespace "team-a"]',
        )
    ]


def test_violations_are_reported_against_the_workload(analyze: Analyze) -> None:
    verdicts = [
        v for v in analyze(namespace(), _privileged_deployment()) if v.policy_name == POLICY
    ]

    assert [(v.urn, v.enforcement_level) for v in verdicts] == [
        (urn(KIND_TYPES["Deployment"], "app"), "mandatory")
    ]

"""Rules of DRA pools (`allocation: dra`): where NVIDIA's DRA driver can serve a pool's GPUs and
the provisioner can scale it, and which of the platform's GPU pods could never run there.

What the pinned provisioners do with a pod that claims devices:
- cluster-autoscaler (1.34.5 to 1.36.1, gpu_platform/versions.py) simulates ResourceClaims with
  `--enable-dynamic-resource-allocation` (off by default at 1.34, locked on from 1.35:
  config/flags/flags.go), but plans a node group from zero with the ASG's template node, which
  the AWS provider builds without ResourceSlices (cloudprovider/aws/aws_cloud_provider.go,
  `TemplateNodeInfo`: `framework.NewNodeInfo(node, nil, ...)`): a pod claiming a GPU fits no
  node it would start. A running node of the group is its template instead, its slices
  included (processors/nodeinfosprovider/mixed_nodeinfos_processor.go), so a DRA pool keeps
  one.
- Karpenter 1.14.1 ignores pods' DRA requests unless `settings.ignoreDRARequests` is turned
  off ("will be removed once formal DRA support is GA": kubernetes-sigs/karpenter
  pkg/operator/options/options.go), and its AWS provider describes no instance type's devices
  (aws/karpenter-provider-aws v1.14.1, no `DynamicResources`): it cannot size a node for a
  claim.
- GKE's autoscaler knows DRA GPUs by the label GKE itself sets on node pools it prepares for
  NVIDIA's DRA driver (`cloud.google.com/gke-gpu-dra-driver`: cluster-autoscaler
  cloudprovider/gce/dynamicresources.go), which the platform's GKE node pools do not do yet.

What a DRA pool relies on in the GPU Operator was read at its pinned chart, v26.7.0, and its
DCGM exporter, 4.6.0-4.8.3: the operator's settings that would undo it are refused beside a DRA
pool (`_operator_problems`).
"""

import re
from collections.abc import Iterator

from gpu_platform.config.fields import Cloud
from gpu_platform.config.operator import DRA_ENV
from gpu_platform.config.operator_rules import IMAGE_KEYS, operand_image, operand_image_problem
from gpu_platform.config.pools import ExclusiveSharing, GpuPoolSpec
from gpu_platform.config.problems import ConfigProblem, key_path
from gpu_platform.config.stack import StackConfig
from gpu_platform.kubernetes.operand_images import operand_images
from gpu_platform.versions import GPU_OPERATOR_CHART

DRA = "dra"
DRA_MIN_KUBERNETES = (1, 34)
"""resource.k8s.io/v1, DRA's GA API, is served from Kubernetes 1.34."""


def dra_pools(config: StackConfig) -> list[tuple[int, GpuPoolSpec]]:
    """The pools with `allocation: dra`, each with its index in `pools`."""
    return [(i, pool) for i, pool in enumerate(config.pools) if pool.allocation == DRA]


def kubernetes_minor(version: str) -> tuple[int, int]:
    """The major and minor of Kubernetes `version` (`1.35`, or GKE's `1.35.6-gke.1163000`)."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return major, minor


def serves_dra(version: str) -> bool:
    """Whether a cluster at Kubernetes `version` (`1.35`, or GKE's `1.35.6-gke.1163000`) serves
    resource.k8s.io/v1."""
    return kubernetes_minor(version) >= DRA_MIN_KUBERNETES


def dra_version_problems(config: StackConfig, version: str, source: str) -> Iterator[ConfigProblem]:
    """DRA pools on a cluster at Kubernetes `version` (`1.33`), as `source` names it."""
    if serves_dra(version):
        return
    for i, _ in dra_pools(config):
        yield ConfigProblem(
            key_path("pools", i, "allocation"),
            DRA,
            f"device-plugin, or no value, on Kubernetes {version} ({source}): dra needs"
            " Kubernetes 1.34 or later, where resource.k8s.io/v1 is served",
        )


def dra_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    pools = dra_pools(config)
    if not pools:
        return
    if config.cluster.create is not None:
        yield from dra_version_problems(
            config, config.cluster.create.kubernetes_version, "cluster.create.kubernetesVersion"
        )
    for i, pool in pools:
        yield from _pool_problems(config, i, pool)
    yield from _mixed_problems(config, pools)
    yield from _operator_problems(config, f"pools[{pools[0][0]}]")
    named = {pool.name: i for i, pool in pools}
    for i, pool in enumerate(config.pools):
        if pool.canary_of is not None and (pool.canary_of in named or pool.name in named):
            # The canary's gate Job asks for `nvidia.com/gpu` (gpu_platform/kubernetes/gpu_pod.py).
            yield ConfigProblem(
                key_path("pools", i, "canaryOf"),
                pool.canary_of,
                "no canary of or on a DRA pool (`allocation: dra`): the canary's gate Job asks"
                " for nvidia.com/gpu, which no device plugin advertises on a DRA pool's nodes",
            )
    for i, namespace in enumerate(config.namespaces):
        if namespace.smoke_test_pool in named:
            yield ConfigProblem(
                key_path("namespaces", i, "smokeTestPool"),
                namespace.smoke_test_pool,
                "a pool with `allocation: device-plugin`: the smoke test asks for"
                " nvidia.com/gpu, which no device plugin advertises on a DRA pool's nodes",
            )
    if config.queues.enabled:
        yield ConfigProblem(
            key_path("queues", "enabled"),
            True,
            f"false with a DRA pool (pools[{pools[0][0]}]): the tenants' ClusterQueues count"
            " nvidia.com/gpu, which a DRA pool's pods do not ask for, so Kueue would admit"
            " their claims uncounted",
        )


def _pool_problems(config: StackConfig, i: int, pool: GpuPoolSpec) -> Iterator[ConfigProblem]:
    if config.cloud is Cloud.GCP:
        yield ConfigProblem(
            key_path("pools", i, "allocation"),
            DRA,
            "device-plugin, or no value, on GKE: GKE's autoscaler scales DRA GPUs only on node"
            " pools GKE prepares for NVIDIA's DRA driver, which the platform's are not yet"
            " (docs/dra.md)",
        )
        return
    if config.uses_auto_mode:
        # AWS's guide said "DRA is not currently supported with EKS Auto Mode" until it added,
        # for Kubernetes 1.36 and later, an NVIDIA DRA driver of Auto Mode's own in the node
        # runtime, one or the other per node: Auto Mode "prevents the DRA driver and the device
        # plugin from managing GPUs on the same node" (EKS user guide, "Use the NVIDIA DRA
        # driver or device plugin on Amazon EKS").
        # The platform's DRA pools run NVIDIA's driver chart, which Auto Mode leaves no place
        # for, and it does not build pools on Auto Mode's own driver yet.
        yield ConfigProblem(
            key_path("pools", i, "allocation"),
            DRA,
            "device-plugin, or no value, with provisioner eks-auto-mode: the platform's DRA"
            " pools run NVIDIA's DRA driver chart, and Auto Mode's nodes run AWS's own NVIDIA"
            " stack (with its own DRA driver only from Kubernetes 1.36), which the platform does"
            " not build DRA pools on yet (docs/eks-auto-mode.md)",
        )
        return
    if config.uses_karpenter:
        yield ConfigProblem(
            key_path("pools", i, "allocation"),
            DRA,
            "device-plugin, or no value, with provisioner karpenter: Karpenter 1.14.1 ignores"
            " pods' DRA claims when it sizes nodes (docs/dra.md)",
        )
        return
    if config.node_image != "al2023":
        yield ConfigProblem(
            key_path("pools", i, "allocation"),
            DRA,
            f"device-plugin, or no value, on {config.node_image} nodes: NVIDIA's DRA driver runs"
            " on the EKS AL2023 NVIDIA AMI (`cluster.nodeImage: al2023`), whose driver it reads"
            " from the host",
        )
    if not isinstance(pool.sharing, ExclusiveSharing):
        yield ConfigProblem(
            key_path("pools", i, "sharing", "mode"),
            pool.sharing.mode,
            "exclusive, or no value, with `allocation: dra`: the DRA driver shares a GPU"
            " between the pods of one claim, and time-slicing and MPS only under its alpha"
            " feature gates; MIG slices there are not made by the platform yet (docs/dra.md)",
        )
    if pool.min < 1:
        yield ConfigProblem(
            key_path("pools", i, "min"),
            pool.min,
            "at least 1 with `allocation: dra`: the cluster autoscaler plans a node group from"
            " zero with a template node carrying no DRA devices, so a pod claiming a GPU would"
            " never start the first node; a running node of the pool is its template instead"
            " (docs/dra.md)",
        )


def _mixed_problems(
    config: StackConfig, pools: list[tuple[int, GpuPoolSpec]]
) -> Iterator[ConfigProblem]:
    """DRA pools beside device-plugin pools. The GPU Operator's validator waits on every node
    for the device plugin's `nvidia.com/gpu` or `nvidia.com/mig-*` and fails without it
    (gpu-operator v26.7.0 cmd/nvidia-validator/main.go, `validateGPUResource`); it skips that
    check only with the device plugin off cluster-wide (controllers/object_controls.go, the
    validator's `plugin` init container), so on a DRA node beside device-plugin pools it would
    restart forever. No per-node switch helps: `nvidia.com/gpu.deploy.operator-validator=false`
    removes the whole validator, whose `toolkit-ready` file the DCGM exporter's init container
    waits for (assets/state-dcgm-exporter/0800_daemonset.yaml)."""
    plugin = [(i, pool) for i, pool in enumerate(config.pools) if pool.allocation != DRA]
    if not plugin:
        return
    j, other = plugin[0]
    for i, _ in pools:
        yield ConfigProblem(
            key_path("pools", i, "allocation"),
            DRA,
            f"device-plugin, as pools[{j}] ({other.name}) uses, or dra on every pool: the GPU"
            " Operator's validator checks every node for the device plugin's nvidia.com/gpu"
            " unless the device plugin is off for the whole cluster, and would never be ready"
            " on a DRA node beside device-plugin pools (docs/dra.md)",
        )


def _operator_problems(config: StackConfig, pool: str) -> Iterator[ConfigProblem]:
    """The GPU Operator's settings that would undo, without a word, what DRA pools rely on: the
    device plugin off cluster-wide, for the validator (`_mixed_problems`), and an exporter that
    attributes DRA GPUs to the pods claiming them, for the idle alerts, reaper and billing
    (gpu_platform/kubernetes/operator_values.py, `_DRA_ENV`). `pool` names a DRA pool."""
    operator = config.operator
    pin = GPU_OPERATOR_CHART.version
    if operator.chart_version != pin:
        yield ConfigProblem(
            key_path("operator", "chartVersion"),
            operator.chart_version,
            f"{pin}, the pinned version, with a DRA pool ({pool}): what DRA pools rely on in the"
            " GPU Operator (its validator leaving out the device plugin's nvidia.com/gpu with"
            " the device plugin off, its DCGM exporter reading the DRA driver's ResourceSlices)"
            " was read at the pin, and is read again when the pin moves; try another version on"
            " a stack without DRA pools (docs/dra.md)",
        )
    overrides = operator.overrides
    plugin = overrides.get("devicePlugin", {})
    if "enabled" in plugin and plugin["enabled"] is not False:
        yield ConfigProblem(
            key_path("operator", "overrides", "devicePlugin", "enabled"),
            plugin["enabled"],
            f"the boolean false, or no value, with a DRA pool ({pool}): the GPU Operator's"
            " validator then waits on every node for the device plugin's nvidia.com/gpu, which a"
            " DRA pool's nodes never advertise, and is never ready (docs/dra.md)",
        )
    exporter = overrides.get("dcgmExporter", {})
    env = exporter.get("env")
    for i, setting in enumerate(env if isinstance(env, list) else []):
        if isinstance(setting, dict) and setting.get("name") == DRA_ENV:
            yield ConfigProblem(
                key_path("operator", "overrides", "dcgmExporter", "env", i),
                setting,
                f"no entry named {DRA_ENV} with a DRA pool ({pool}): the platform sets it, true,"
                " for the DCGM exporter to attribute DRA GPUs to the pods claiming them"
                " (docs/dra.md)",
            )
    args = exporter.get("args")
    for i, arg in enumerate(args if isinstance(args, list) else []):
        # urfave/cli v2 (dcgm-exporter's, pkg/cmd/app.go at 4.5.3-4.8.2) takes a flag given
        # with one dash or two over its env var, KUBERNETES_ENABLE_DRA.
        if isinstance(arg, str) and re.match(r"--?kubernetes-enable-dra\b", arg):
            yield ConfigProblem(
                key_path("operator", "overrides", "dcgmExporter", "args", i),
                arg,
                f"no --kubernetes-enable-dra flag with a DRA pool ({pool}): the platform turns"
                f" it on, through {DRA_ENV}, for the DCGM exporter to attribute DRA GPUs to the"
                " pods claiming them (docs/dra.md)",
            )
    yield from _exporter_image_problems(config, pool)


_EXPORTER_TAG = re.compile(
    r"[0-9]+\.[0-9]+\.[0-9]+-([0-9]+)\.([0-9]+)\.([0-9]+)(?:-[A-Za-z0-9_.]+)?"
)
"""dcgm-exporter's image tags: the DCGM version, the exporter's, then the image's base
(`4.6.0-4.8.3-distroless`: its Makefile's `FULL_VERSION` and image `--tag`, at 4.5.3-4.8.2)."""


def _tag_of(reference: str) -> str:
    """The tag of an image reference, `repository[:tag][@digest]`: what follows its last colon
    before the digest, which names no exporter version where the reference has no tag."""
    return reference.partition("@")[0].rpartition(":")[2]


def _exporter_at_least(tag: str, least: str) -> bool:
    """Whether the exporter of dcgm-exporter image tag `tag` is `least`'s or later; False for a
    tag naming no exporter version."""
    found, pinned = (_EXPORTER_TAG.fullmatch(t) for t in (tag, least))
    return found is not None and pinned is not None and _numbers(found) >= _numbers(pinned)


def _numbers(tag: re.Match[str]) -> tuple[int, ...]:
    return tuple(int(part) for part in tag.groups())


def _exporter_image_problems(config: StackConfig, pool: str) -> Iterator[ConfigProblem]:
    """An exporter image older than the pinned chart's. Those before it read ResourceSlices as
    resource.k8s.io/v1beta1 alone (dcgm-exporter 4.5.3-4.8.2, internal/pkg/transformation/
    dra.go) or not at all (before 4.3.1-4.4.0, which brought `--kubernetes-enable-dra`); the
    later versions of that file read resource.k8s.io/v1 first, as the pinned one does. A mirror
    of the pinned image, or a later one, is kept; a tag the exporter's version cannot be read
    from (a digest alone) is refused, as it may name an older one. The image is judged as the
    operator reads it, the override over the platform's; one the operator refuses is refused
    by `operand_image_problem` alone."""
    exporter = config.operator.overrides.get("dcgmExporter", {})
    if not set(IMAGE_KEYS) & exporter.keys() or operand_image_problem(config, "dcgmExporter"):
        return
    pinned = operand_images(GPU_OPERATOR_CHART.version)["dcgmExporter"]
    image = operand_image(config, "dcgmExporter")
    if image["version"]:
        key, tag = "version", str(image["version"]).partition("@")[0]
    else:
        key, tag = "image", _tag_of(str(image["image"]))
    if _exporter_at_least(tag, _tag_of(pinned)):
        return
    yield ConfigProblem(
        key_path("operator", "overrides", "dcgmExporter", key),
        exporter.get(key, image[key]),
        "a dcgm-exporter image tagged <DCGM version>-<exporter version>[-<base>], of the pinned"
        f" chart's exporter ({_tag_of(pinned)}) or a later one, with a DRA pool ({pool}): an"
        " earlier exporter reads the DRA driver's ResourceSlices only as"
        " resource.k8s.io/v1beta1, or not at all, so DRA GPUs' series would name no pod and the"
        " idle alerts, reaper and billing miss them (docs/dra.md)",
    )

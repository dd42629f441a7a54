"""The objects with pods that the platform's components declare outside Helm, by kind and name
as the platform names them: its own objects are these, wherever a program declares them.

A program may give its resources any parent types it likes (pulumi
sdk/go/common/resource/urn.go: a URN's type path is whatever types its parents were registered
with), so a parent type says nothing of who declared an object; like the platform's Helm
releases (`platform_releases.py`), its other objects are told by what the platform itself
names. A stack's own object of the same kind and name is held to the same rules: those the
platform's objects meet (their images by digest), never fewer. The one rule a platform object
meets otherwise, `gpu-pods-pinned-images`' `requireDigests`, it meets otherwise only for the
images of the repositories the platform runs in it (`repositories`), which
`platform-images-by-digest` holds to a digest instead, but for its reviewed `awaitingDigests`:
any other image in an object of the platform's name, wherever it runs, is held to every rule.
Where the platform makes an object (a tenant's namespace, the GPU Operator's) is the stack's
config, which the pack does not read, so the namespace keys only the two entries whose namespace
is fixed.

Every entry mirrors the name the platform's code gives the object and the images it runs, which
tests/gpu_platform/policy_pack/test_platform_images.py checks against the code
(`gpu_platform/versions.py`) and against the objects of a plan of every committed stack.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class PlatformObject:
    kind: str
    """Its Kubernetes kind (`Deployment`), of the built-in API groups."""
    name: str | None
    """Its name; None for any name in `namespace`."""
    namespace: str | None = None
    """Its namespace; None for any (a tenant's namespace, the GPU Operator's, which the
    stack's config chooses)."""
    prefix: bool = False
    """Whether `name` starts its name, the rest naming a release (the canary gate's) or a pool
    (node validation's)."""
    repositories: tuple[str, ...] = ()
    """The image repositories the platform runs in it (`nvcr.io/nvidia/cuda`), as the
    platform's images name them."""
    needs_no_cuda: bool = False
    """Whether it runs only `nvidia-smi`, which comes from the node's driver, with the container
    toolkit's CUDA check off (`NVIDIA_DISABLE_REQUIRE`): it needs no CUDA release of its pool's
    driver, so the CUDA advisories ask for none (`gpu_cuda.unjudged_gpu_pods`)."""

    def names(self, kind: str, name: str | None) -> bool:
        """Whether an object of `kind` and `name` may be this one (its namespace aside)."""
        if kind != self.kind:
            return False
        if self.name is None:
            return True
        return name is not None and (
            name.startswith(self.name) if self.prefix else name == self.name
        )


_PYTHON = "docker.io/library/python"
_CUDA = "nvcr.io/nvidia/cuda"

PLATFORM_OBJECTS = (
    # gpu_platform/kubernetes/tenant_namespace.py, SMOKE_TEST_NAME: in each tenant namespace.
    PlatformObject("Job", "gpu-smoke-test", repositories=(_CUDA,), needs_no_cuda=True),
    # gpu_platform/kubernetes/canary_gate.py, GATE_NAME_PREFIX and the release's id: the smoke
    # test's image and the Python image of its checks.
    PlatformObject("Job", "gpu-canary-gate-", prefix=True, repositories=(_CUDA, _PYTHON)),
    # gpu_platform/kubernetes/monitoring.py, GKE_DCGM_EXPORTER: in the operator's namespace; the
    # GPU Operator chart's exporter and validator images (values.yaml at v26.7.0).
    PlatformObject(
        "DaemonSet",
        "nvidia-dcgm-exporter-gke",
        repositories=("nvcr.io/nvidia/k8s/dcgm-exporter", "nvcr.io/nvidia/gpu-operator"),
    ),
    # gpu_platform/kubernetes/node_validation/workload.py, NAME and the validated pool's name:
    # in the operator's namespace.
    PlatformObject(
        "DaemonSet",
        "gpu-node-validator-",
        prefix=True,
        repositories=(
            _PYTHON,
            "nvcr.io/nvidia/cloud-native/dcgm",
            "public.ecr.aws/hpc-cloud/nccl-tests",
        ),
    ),
    # gpu_platform/kubernetes/mig_startup_taint.py, NAME: in the operator's namespace.
    PlatformObject("Deployment", "gpu-mig-startup-taint-remover", repositories=(_PYTHON,)),
    # gpu_platform/kubernetes/idle_gpu_pods.py: a CronJob per tenant namespace, named after it,
    # in the reaper's own namespace (REAPER_NAMESPACE).
    PlatformObject("CronJob", None, "gpu-idle-reaper", repositories=(_PYTHON,)),
    # gpu_platform/gke/driver_installer.py: Google's COS driver installer manifest
    # (nvidia-driver-installer/cos/daemonset-preloaded.yaml), as published.
    PlatformObject(
        "DaemonSet",
        "nvidia-driver-installer",
        "kube-system",
        repositories=(
            "cos-nvidia-installer",
            "gcr.io/gke-release/nvidia-partition-gpu",
            "gke.gcr.io/pause",
        ),
    ),
)

"""The NVIDIA accelerators the platform knows, under one cloud-neutral name each.

A pool names its accelerator once (`a100-80gb`); each cloud component translates that name to
its own spelling (GKE's `nvidia-a100-80gb`, the `k8s.amazonaws.com/accelerator` label value on
EKS). The MIG geometry comes from NVIDIA's MIG user guide ("Supported MIG Profiles"): how many
instances of each uniform profile one GPU holds, which is what a `mixed`-strategy node
advertises per GPU and what `all-<profile>` partitions a GPU into.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Accelerator:
    """An NVIDIA GPU model as the platform schedules it."""

    name: str
    memory_gib: int
    gke_type: str | None
    """GKE's `guest_accelerator.type`, or None where GKE does not offer the model."""
    mig_profiles: Mapping[str, int] = field(default_factory=dict)
    """Uniform MIG profile (`1g.10gb`) -> instances per GPU; empty for GPUs without MIG."""
    mig_media_slices: tuple[str, ...] = ()
    """The GPU's MIG profiles with its media engines (NVML's `1g.10gb+me`, one instance per
    GPU), spelt as the device plugin names their resource: `1g.10gb.me` of
    `nvidia.com/mig-1g.10gb.me`. No pool is partitioned into them, but the MIG manager's default
    config has an `all-<profile>.me` entry for each, so a node relabelled by hand advertises one."""

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)


_A100_40GB_MIG = {"1g.5gb": 7, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1}
_80GB_MIG = {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1}

ACCELERATORS: Mapping[str, Accelerator] = {
    a.name: a
    for a in (
        Accelerator("t4", 16, "nvidia-tesla-t4"),
        Accelerator("l4", 24, "nvidia-l4"),
        Accelerator("a10g", 24, None),
        Accelerator("l40s", 48, None),
        Accelerator("v100", 16, "nvidia-tesla-v100"),
        Accelerator("p4", 8, "nvidia-tesla-p4"),
        Accelerator("p100", 16, "nvidia-tesla-p100"),
        Accelerator(
            "a30", 24, None, {"1g.6gb": 4, "2g.12gb": 2, "4g.24gb": 1}, ("1g.6gb.me", "2g.12gb.me")
        ),
        Accelerator("a100-40gb", 40, "nvidia-tesla-a100", _A100_40GB_MIG, ("1g.5gb.me",)),
        Accelerator("a100-80gb", 80, "nvidia-a100-80gb", _80GB_MIG, ("1g.10gb.me",)),
        Accelerator("h100-80gb", 80, "nvidia-h100-80gb", _80GB_MIG, ("1g.10gb.me",)),
        Accelerator("h100-mega-80gb", 80, "nvidia-h100-mega-80gb", _80GB_MIG, ("1g.10gb.me",)),
        Accelerator(
            "h200-141gb",
            141,
            "nvidia-h200-141gb",
            {"1g.18gb": 7, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1},
            ("1g.18gb.me",),
        ),
        Accelerator(
            "b200",
            180,
            "nvidia-b200",
            {"1g.23gb": 7, "1g.45gb": 4, "2g.45gb": 3, "3g.90gb": 2, "4g.90gb": 1, "7g.180gb": 1},
            ("1g.23gb.me",),
        ),
    )
}


MIG_SLICES: tuple[str, ...] = tuple(
    sorted(
        {
            *(profile for gpu in ACCELERATORS.values() for profile in gpu.mig_profiles),
            *(media for gpu in ACCELERATORS.values() for media in gpu.mig_media_slices),
        }
    )
)
"""Every MIG slice of every GPU the platform knows, as its resource is named: the uniform
profiles a pool can be partitioned into (`1g.10gb`) and those with media engines
(`1g.10gb.me`), so every `nvidia.com/mig-<slice>` a node can advertise. Under the `mixed`
strategy the device plugin names a resource after each profile NVML lists, `+` made `.`
(k8s-device-plugin v0.20.0, internal/rm/rm.go `AddDefaultResourcesToConfig`)."""


def mig_instances_per_gpu(accelerator: str, profile: str) -> int:
    """Instances of a uniform `all-<slice>` MIG profile that one GPU of this model holds."""
    return ACCELERATORS[accelerator].mig_profiles[profile.removeprefix("all-")]

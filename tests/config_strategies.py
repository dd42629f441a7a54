"""Hypothesis strategies for whole stack configurations that look valid: both clouds, node groups
and Karpenter, every node image, capacity kind and sharing mode, canaries with newer releases,
versions or drivers, pinned versions and release channels, taints and labels, EFA, zones, update
strategies, tenants and created clusters.

Values come from the platform's own tables (EC2's instance types and zone offerings as the
stand-in cluster answers them, gpu_platform/gke/machine_types.py, the AL2023 and Bottlerocket
driver tables, the stand-in clusters' versions), so that most drawn stacks are ones the loader
accepts; the rest it must refuse by key. `stack_configs()` draws a stack file's config, fully
qualified keys, as `run_program` takes it.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.drivers import AL2023_DRIVERS, BOTTLEROCKET_DRIVERS
from gpu_platform.eks.instance_types import described_instance_type
from gpu_platform.eks.max_pods import MAX_PODS
from gpu_platform.gke.machine_types import FIXED_GPU_SERIES
from gpu_platform.kubernetes.node_validation.expectations import NCCL_TESTS_ACCELERATORS
from gpu_platform.offline.stand_ins.aws import (
    STAND_IN_ACCOUNT,
    STAND_IN_DEPLOY_ROLE,
    STAND_IN_KUBERNETES_VERSION,
    ec2_instance_types,
    ec2_zone_offerings,
)
from gpu_platform.offline.stand_ins.gcp import STAND_IN_MASTER_VERSION, ZONE_OFFERINGS
from gpu_platform.version_order import version_key
from gpu_platform.versions import CLUSTER_AUTOSCALER_IMAGES, SUPPORTED_KUBERNETES_VERSIONS
from tests.stack_variants import quota_key, with_gpu_quotas_fitting_its_pools

Config = dict[str, Any]
AWS_REGION = "us-east-1"
GCP_REGION = "us-central1"
# The prod policy config caps pools at 8 nodes and pods at 8 GPUs, and lets no pool keep idle
# nodes (policy-config/prod.json): the sweep judges stacks by prod's rules.
MAX_NODES = 8


# --- EKS -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ec2Type:
    name: str
    accelerator: str
    gpus: int
    architecture: str
    efa_interfaces: int
    zones: tuple[str, ...]


def _ec2_gpu_types() -> tuple[Ec2Type, ...]:
    """Every GPU instance type of the platform's table (`MAX_PODS`) whose GPU it knows, as EC2
    describes it in the stand-in's region, with up to 8 GPUs."""
    described = ec2_instance_types()
    offered: dict[str, set[str]] = {}
    for name, zone in ec2_zone_offerings(AWS_REGION):
        offered.setdefault(name, set()).add(zone)
    found = []
    for name in sorted(MAX_PODS):
        if name not in described or not offered.get(name):
            continue
        instance = described_instance_type(name, described[name])
        if instance.accelerator is None or instance.architecture is None:
            continue
        if instance.gpu_count > MAX_NODES:
            continue
        efa = described[name].get("NetworkInfo", {}).get("EfaInfo") or {}
        found.append(
            Ec2Type(
                name,
                instance.accelerator,
                instance.gpu_count,
                instance.architecture,
                int(efa.get("MaximumEfaInterfaces", 0)),
                tuple(sorted(offered[name])),
            )
        )
    return tuple(found)


EC2_GPU_TYPES = _ec2_gpu_types()
EC2_BY_NAME = {t.name: t for t in EC2_GPU_TYPES}


CREATED_VPC_ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
"""The zones of the VPC a created EKS cluster gets in the stand-in's region: its first three."""


def _al2023_releases(minor: str) -> list[str]:
    """AL2023 NVIDIA releases the driver table knows for Kubernetes `minor`, oldest first."""
    found = [r for r in AL2023_DRIVERS if r.startswith(f"{minor}.")]
    return sorted(found, key=version_key)[-4:]


def _bottlerocket_releases(minor: str) -> list[str]:
    """Bottlerocket releases whose NVIDIA variant for `minor` the driver table knows."""
    found = [r for r, drivers in BOTTLEROCKET_DRIVERS.items() if minor in drivers]
    return [f"{r}.0-0d4a7f31" for r in sorted(found, key=version_key)[-3:]]


def _releases(node_image: str, minor: str) -> list[str]:
    return (
        _bottlerocket_releases(minor) if node_image == "bottlerocket" else _al2023_releases(minor)
    )


def _hex(draw: st.DrawFn, digits: int) -> str:
    return draw(st.text("0123456789abcdef", min_size=digits, max_size=digits))


LABELS = {"team": "ml", "workload": "training", "example.com/tier": "gold"}
TAINTS = (
    {"key": "dedicated", "value": "team-a", "effect": "NoSchedule"},
    {"key": "example.com/gpu-class", "value": "premium", "effect": "NoSchedule"},
    {"key": "preemptible", "effect": "PreferNoSchedule"},
    {"key": "drain", "value": "soon", "effect": "NoExecute"},
)


def _labels_and_taints(draw: st.DrawFn, pool: Config) -> None:
    labels = draw(st.dictionaries(st.sampled_from(sorted(LABELS)), st.just(""), max_size=2))
    if labels:
        pool["labels"] = {key: LABELS[key] for key in labels}
    taints = draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=lambda t: t["key"]))
    if taints:
        pool["taints"] = [dict(t) for t in taints]


VALIDATION_CHECKS = ("nvlink", "dcgm-diag", "nccl-bandwidth", "efa", "ecc")


def _validation(
    draw: st.DrawFn, pool: Config, karpenter: bool = False, accelerator: str | None = None
) -> None:
    """Node validation as a pool may set it: mostly left to its default (on), or off, or with a
    level, skipped checks, a bandwidth share, an expected bus bandwidth where the pool's
    `accelerator` (given) can run the NCCL test and it is not partitioned into MIG instances,
    and, on Karpenter, a cap on replacements (0 among them)."""
    way = draw(st.integers(0, 3))
    if way == 1:
        pool["validation"] = {"enabled": False}
    elif way > 1:
        validation: Config = {"dcgmDiagLevel": draw(st.sampled_from([1, 2]))}
        skips = draw(st.lists(st.sampled_from(VALIDATION_CHECKS), max_size=2, unique=True))
        if skips:
            validation["skipChecks"] = skips
        if draw(st.booleans()):
            validation["busBandwidthShare"] = draw(st.sampled_from([0.5, 0.9, 1]))
        nccl = accelerator in NCCL_TESTS_ACCELERATORS and pool["sharing"]["mode"] != "mig"
        if nccl and draw(st.booleans()):
            validation["expectedBusBandwidthGbps"] = draw(st.sampled_from([50, 400.5]))
        if karpenter and draw(st.booleans()):
            validation["replacementsPerHour"] = draw(st.sampled_from([0, 1, 5]))
        pool["validation"] = validation


def _sharing(draw: st.DrawFn, accelerator: str, modes: Sequence[str]) -> Config:
    mig_profiles = ACCELERATORS[accelerator].mig_profiles
    allowed = [m for m in modes if m != "mig" or mig_profiles]
    mode = draw(st.sampled_from(allowed))
    if mode == "exclusive":
        return {"mode": "exclusive"}
    if mode == "mig":
        profile = draw(st.sampled_from(sorted(mig_profiles)))
        return {"mode": "mig", "strategy": "mixed", "profile": f"all-{profile}"}
    return {"mode": mode, "replicas": draw(st.integers(2, 8))}


@st.composite
def eks_pool(
    draw: st.DrawFn, name: str, node_image: str, minor: str, karpenter: bool, created: bool
) -> Config:
    """One EKS pool of GPU nodes."""
    region_zones = (
        set(CREATED_VPC_ZONES) if created else {z for t in EC2_GPU_TYPES for z in t.zones}
    )
    types = [
        t
        for t in EC2_GPU_TYPES
        if (node_image != "bottlerocket" or t.architecture != "arm64")
        and region_zones.intersection(t.zones)
    ]
    first = draw(st.sampled_from(types))
    instance_types = [first.name]
    capacity = draw(st.sampled_from(["on-demand", "spot", "reserved", "capacity-block"]))
    if karpenter and capacity != "capacity-block" and draw(st.integers(0, 3)) == 0:
        # Sizes of one GPU model and architecture, which Karpenter picks from per pod.
        sizes = [
            t.name
            for t in types
            if (t.accelerator, t.architecture) == (first.accelerator, first.architecture)
            and t.name != first.name
            and region_zones.intersection(first.zones, t.zones)
        ]
        if sizes:
            instance_types.append(draw(st.sampled_from(sizes)))
    aws: Config = {"amiReleaseVersion": draw(st.sampled_from(_releases(node_image, minor)))}
    pool: Config = {
        "name": name,
        "instanceTypes": instance_types,
        "max": draw(st.integers(1, MAX_NODES)),
        "capacity": capacity,
    }
    shared_zones = set(first.zones).intersection(*(EC2_BY_NAME[n].zones for n in instance_types))
    zones = sorted(shared_zones & region_zones)
    one_zone = capacity in ("reserved", "capacity-block")
    if capacity in ("reserved", "capacity-block"):
        if capacity == "reserved" and not karpenter and draw(st.booleans()):
            group = draw(st.sampled_from(["gpu-reservations", "team-a-odcrs"]))
            aws["capacityReservationResourceGroupArn"] = (
                f"arn:aws:resource-groups:{AWS_REGION}:123456789012:group/{group}"
            )
            one_zone = False
            if draw(st.booleans()):
                aws["onDemandFallback"] = True
        else:
            aws["capacityReservationId"] = f"cr-{_hex(draw, 17)}"
        if capacity == "capacity-block" and not karpenter:
            day = draw(st.integers(1, 28))
            aws["capacityBlockStart"] = f"2026-12-{day:02d}T11:30:00+00:00"
    if capacity == "spot" and karpenter and draw(st.booleans()):
        aws["onDemandFallback"] = True
    if capacity == "reserved" and karpenter and draw(st.booleans()):
        aws["onDemandFallback"] = True
    efa_capable = all(EC2_BY_NAME[n].efa_interfaces for n in instance_types)
    if efa_capable and draw(st.integers(0, 3)) == 0:
        aws["efa"] = True
        one_zone = True
    if one_zone:
        pool["zones"] = [draw(st.sampled_from(zones))]
    elif draw(st.booleans()):
        pool["zones"] = draw(st.lists(st.sampled_from(zones), min_size=1, max_size=3, unique=True))
    # A pool whose GPUs pods claim through DRA: the cluster autoscaler's, on AL2023 at
    # Kubernetes 1.34 or later, exclusive and kept at one node at least
    # (gpu_platform/config/dra_rules.py).
    dra = (
        not karpenter
        and node_image == "al2023"
        and tuple(map(int, minor.split("."))) >= (1, 34)
        and capacity in ("on-demand", "spot")
        and draw(st.integers(0, 3)) == 0
    )
    if dra:
        pool["allocation"] = "dra"
        pool["min"] = draw(st.integers(1, pool["max"]))
    elif not karpenter and not aws.get("efa") and draw(st.integers(0, 3)) == 0:
        # Each zone's node group gets a share of `max`, at least one node.
        aws["nodeGroupPerZone"] = True
        pool["max"] = max(pool["max"], len(pool.get("zones", zones)))
    # Karpenter counts whole GPUs; Bottlerocket's own device plugin serves whole GPUs only.
    shares = not karpenter and node_image != "bottlerocket"
    modes = ["exclusive", "time-slicing", "mps", "mig"] if shares and not dra else ["exclusive"]
    pool["sharing"] = _sharing(draw, first.accelerator, modes)
    if draw(st.booleans()):
        pool["accelerator"] = first.accelerator
    if (
        karpenter
        and capacity in ("on-demand", "spot")
        and not aws.get("efa")
        and draw(st.integers(0, 3)) == 0
    ):
        # Every size of the GPU's family, Karpenter picking one per pod.
        del pool["instanceTypes"]
        pool["accelerator"] = first.accelerator
        aws["instanceFamilies"] = [first.name.partition(".")[0]]
    if draw(st.booleans()):
        aws["maxUnavailablePercent"] = draw(st.sampled_from([10, 25, 50, 100]))
    if not karpenter:
        if draw(st.booleans()):
            aws["updateStrategy"] = draw(st.sampled_from(["minimal", "default"]))
        if draw(st.integers(0, 3)) == 0:
            aws["nodeRepair"] = False
        elif draw(st.integers(0, 3)) == 0:
            aws["nodeRepairMaxUnhealthyNodes"] = draw(st.integers(1, 4))
    elif draw(st.booleans()):
        aws["consolidateAfterMinutes"] = draw(st.sampled_from([5, 60, "never"]))
    if draw(st.integers(0, 4)) == 0:
        pool["diskSizeGib"] = draw(st.sampled_from([100, 500]))
    _labels_and_taints(draw, pool)
    _validation(draw, pool, karpenter, first.accelerator)
    pool["aws"] = aws
    return pool


def eks_canary(draw: st.DrawFn, led: Config, node_image: str, minor: str) -> Config:
    """A canary of `led`: the same instance types and sharing, a release no older than the led
    pool's, one node at most."""
    releases = _releases(node_image, minor)
    led_release = led["aws"]["amiReleaseVersion"]
    newer = [r for r in releases if version_key(r) >= version_key(led_release)]
    canary: Config = {
        "name": f"{led['name']}-canary",
        "canaryOf": led["name"],
        "max": 1,
        "sharing": dict(led["sharing"]),
        "aws": {"amiReleaseVersion": draw(st.sampled_from(newer))},
    }
    for key in ("instanceTypes", "capacity", "zones", "accelerator"):
        if key in led:
            canary[key] = led[key]
    for key in (
        "capacityReservationId",
        "capacityReservationResourceGroupArn",
        "capacityBlockStart",
        "efa",
        "instanceFamilies",
    ):
        if key in led["aws"]:
            canary["aws"][key] = led["aws"][key]
    if canary.get("capacity") == "reserved":
        # A canary on its pool's reservation alone is refused; most draw capacity of its own.
        way = draw(st.sampled_from(["fallback", "on-demand", "refused"]))
        if way == "fallback":
            canary["aws"]["onDemandFallback"] = True
        elif way == "on-demand":
            canary["capacity"] = "on-demand"
            for key in ("capacityReservationId", "capacityReservationResourceGroupArn"):
                canary["aws"].pop(key, None)
    if draw(st.booleans()):
        canary["canarySoakMinutes"] = draw(st.sampled_from([0, 5, 30]))
    _validation(draw, canary)
    return canary


@st.composite
def eks_stack(draw: st.DrawFn) -> Config:
    karpenter = draw(st.integers(0, 2)) == 0
    node_image = draw(st.sampled_from(["al2023", "al2023", "bottlerocket"]))
    created = draw(st.integers(0, 3)) == 0
    # EKS Auto Mode: Karpenter's NodePools on a cluster's Auto Mode, existing or turned on at
    # creation, on its own Bottlerocket-based nodes.
    auto_mode = karpenter and draw(st.booleans())
    if auto_mode:
        node_image = "bottlerocket"
    minor = STAND_IN_KUBERNETES_VERSION
    cluster: Config = {"name": "ml-sweep", "region": AWS_REGION}
    if created:
        minors = list(SUPPORTED_KUBERNETES_VERSIONS)
        if node_image == "bottlerocket":
            minors = [m for m in minors if _bottlerocket_releases(m)]
        minor = draw(st.sampled_from(minors))
        cluster["create"] = {
            "kubernetesVersion": minor,
            "endpoint": {"access": "public", "publicCidrs": ["203.0.113.0/24"]},
            "administrators": ["arn:aws:iam::123456789012:role/platform-admins"],
        }
        # Who reaches the private endpoint too; `access: private` is refused for the first run
        # into a new VPC, which every drawn stack is.
        private: Config = {}
        if draw(st.booleans()):
            private["privateEndpointCidrs"] = draw(
                st.sampled_from([["10.8.0.0/16"], ["10.8.0.0/16", "192.168.0.0/24"]])
            )
        if draw(st.booleans()):
            private["privateEndpointSecurityGroupIds"] = ["sg-0123456789abcdef0"]
        # Auto Mode's cluster installs no VPC CNI add-on.
        if not auto_mode and draw(st.booleans()):
            private["vpcCniConfiguration"] = {"env": {"WARM_IP_TARGET": "5"}}
        if draw(st.booleans()):
            # The creator's entry left out: the one running `pulumi up` (the stand-in
            # deployer) must then be an administrator.
            private["creatorAccess"] = False
            cluster["create"]["administrators"].append(
                f"arn:aws:iam::{STAND_IN_ACCOUNT}:role/{STAND_IN_DEPLOY_ROLE}"
            )
        if private:
            cluster["create"]["aws"] = private
    if node_image != "al2023" or draw(st.booleans()):
        cluster["nodeImage"] = node_image
    config: Config = {
        "aws:region": AWS_REGION,
        "gpu-platform:cloud": "aws",
        "gpu-platform:cluster": cluster,
    }
    if karpenter:
        config["gpu-platform:provisioner"] = "eks-auto-mode" if auto_mode else "karpenter"
    pools = _pools_with_canaries(
        draw,
        lambda name: eks_pool(name, node_image, minor, karpenter, created),
        eks_canary,
        node_image,
        minor,
        canaries=not auto_mode,
    )
    if auto_mode:
        if draw(st.booleans()):
            cluster.pop("nodeImage", None)
        for pool in pools:
            _on_auto_mode(pool)
            window = draw(st.sampled_from([None, ("0 2 * * 6", "4h"), ("30 23 * * *", "1h30m")]))
            if window is not None:
                pool["aws"]["driftWindow"] = {"schedule": window[0], "duration": window[1]}
    config["gpu-platform:pools"] = pools
    if not karpenter and draw(st.booleans()):
        config["gpu-platform:autoscaler"] = {
            "gpuNodeIdleMinutes": draw(st.sampled_from([5, 15, 60])),
            "expander": draw(st.sampled_from(["priority", "least-waste"])),
            "install": draw(st.sampled_from([True, True, False])),
            # The documented way back to kube-system (docs/upgrades.md), a chart trial.
            **_moved(draw, namespace="kube-system", chartVersion=TRIAL_AUTOSCALER_CHART),
        }
        if draw(st.integers(0, 3)) == 0:
            # The pinned tag, or an exact version that is no image tag (a SemVer build), which
            # the policy pack refuses in the release's `image.tag` and so must the loader.
            pinned = CLUSTER_AUTOSCALER_IMAGES[minor].tag
            tag = draw(st.sampled_from([pinned, f"{pinned}+build.1"]))
            config["gpu-platform:autoscaler"]["imageTag"] = tag
    if auto_mode:
        if draw(st.booleans()):
            # The settings of its NodePools, which Auto Mode's take as Karpenter's do.
            config["gpu-platform:karpenter"] = {
                "consolidateAfterMinutes": draw(st.sampled_from([5, 30])),
                "terminationGracePeriodHours": draw(st.sampled_from([1, 48])),
            }
    elif karpenter and not created and draw(st.integers(0, 3)) == 0:
        # An existing Karpenter: the stack declares only the pools' NodePools and node classes.
        config["gpu-platform:karpenter"] = {
            "install": False,
            "nodeRoleArn": "arn:aws:iam::123456789012:role/karpenter-nodes",
        }
    elif karpenter and draw(st.integers(0, 3)) == 0:
        config["gpu-platform:karpenter"] = _moved(
            draw, namespace="karpenter", chartVersion=TRIAL_KARPENTER_CHART
        )
    _common(draw, config, pools, created)
    return config


# --- GKE -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GceType:
    name: str
    accelerator: str
    gpus: int


def _region_zones(machine_type: str) -> list[str]:
    return sorted(
        zone
        for zone, prefixes in ZONE_OFFERINGS.items()
        if zone.startswith(f"{GCP_REGION}-") and machine_type.startswith(prefixes)
    )


GCE_GPU_TYPES = tuple(
    GceType(name, series.accelerator, count)
    for series in FIXED_GPU_SERIES
    for name, count in series.gpus.items()
    if count <= MAX_NODES and _region_zones(name)
)
# N1 machine types with attached T4s, which a pool states with its zones.
N1_T4 = (("n1-standard-8", 1), ("n1-standard-16", 2), ("n1-highmem-32", 4))
GKE_NODE_VERSIONS = ("1.33.4-gke.1036000", STAND_IN_MASTER_VERSION)
"""Node versions no newer than the stand-in cluster's control plane, oldest first."""
PINNABLE_MINOR = "1.33"
"""The minor of a created cluster whose pools may pin those: the stand-in's control plane's."""
UBUNTU_DRIVERS = ("580.95.05", "580.126.09", "595.91.07")
"""GPU Operator driver versions, oldest first."""


@st.composite
def gke_pool(
    draw: st.DrawFn,
    name: str,
    node_image: str,
    shared: bool | None,
    created_minor: str | None,
    pinnable: bool,
) -> Config:
    """One GKE node pool. `shared`: on COS, whether the stack's pools share their GPUs (None:
    either); `pinnable`: whether its node version may be pinned."""
    n1 = draw(st.integers(0, 4)) == 0
    pool: Config = {"name": name, "max": draw(st.integers(1, MAX_NODES))}
    gcp: Config = {}
    if n1:
        machine, gpus = draw(st.sampled_from(N1_T4))
        accelerator = "t4"
        pool.update(instanceTypes=[machine], accelerator="t4", gpusPerNode=gpus)
        pool["zones"] = draw(
            st.lists(st.sampled_from(_region_zones(machine)), min_size=1, max_size=2, unique=True)
        )
    else:
        machine_type = draw(st.sampled_from(GCE_GPU_TYPES))
        accelerator = machine_type.accelerator
        pool["instanceTypes"] = [machine_type.name]
        if draw(st.booleans()):
            pool["accelerator"] = accelerator
        if draw(st.integers(0, 2)) == 0:
            pool["zones"] = [draw(st.sampled_from(_region_zones(machine_type.name)))]
    capacity = draw(st.sampled_from(["on-demand", "spot", "reservation", "flex", "queued"]))
    if capacity == "spot":
        pool["capacity"] = "spot"
    elif capacity == "reservation":
        kind = draw(st.sampled_from(["any", "specific", "none"]))
        gcp["reservation"] = kind
        if kind == "specific":
            gcp["reservationName"] = draw(
                st.sampled_from(["h100-ml", "projects/capacity-central/reservations/gpus"])
            )
            zones = _region_zones(pool["instanceTypes"][0])
            pool["zones"] = [draw(st.sampled_from(zones))]
    elif capacity in ("flex", "queued"):
        gcp["flexStart"] = True
        if capacity == "queued":
            gcp["queuedProvisioning"] = True
        elif draw(st.booleans()):
            gcp["maxRunHours"] = draw(st.sampled_from([4, 24, 168]))
    if node_image == "ubuntu":
        # GKE's autoscaler plans a node's GPUs as whole ones where the operator shares them.
        modes = ["exclusive"]
    elif shared is None:
        modes = ["exclusive", "time-slicing", "mig"]
    else:
        modes = ["time-slicing", "mig"] if shared else ["exclusive"]
    sharing = _sharing(draw, accelerator, modes)
    pool["sharing"] = sharing
    if gcp.get("reservation") != "specific" and not gcp.get("flexStart"):
        strategy = draw(st.sampled_from(["default", "surge", "blue-green"]))
        if strategy == "surge":
            gcp["maxSurge"] = draw(st.integers(0, 2))
            gcp["maxUnavailable"] = draw(st.integers(0 if gcp["maxSurge"] else 1, 2))
        elif strategy == "blue-green":
            gcp["upgradeStrategy"] = "blue-green"
            if draw(st.booleans()):
                gcp["blueGreenDrainWaitHours"] = draw(st.sampled_from([0, 2, 24]))
            if draw(st.booleans()):
                gcp["blueGreenSoakHours"] = draw(st.sampled_from([0, 1, 24]))
    if pinnable and draw(st.integers(0, 3)) == 0:
        gcp["nodeVersion"] = draw(st.sampled_from(GKE_NODE_VERSIONS))
    if node_image == "ubuntu" and draw(st.integers(0, 3)) == 0:
        gcp["driverVersion"] = draw(st.sampled_from(UBUNTU_DRIVERS))
    if node_image == "cos" and created_minor not in (None, "1.33") and draw(st.integers(0, 3)) == 0:
        # From 1.34 on COS's default comes from the sweep's lock (tests/sweep_lock.py), R580
        # for every GPU: a pool may state the branch that agrees with it.
        gcp["cosDriverBranch"] = 580
    if draw(st.integers(0, 4)) == 0:
        pool["diskSizeGib"] = draw(st.sampled_from([100, 500]))
    _labels_and_taints(draw, pool)
    _validation(draw, pool)
    if gcp:
        pool["gcp"] = gcp
    return pool


def gke_canary(draw: st.DrawFn, led: Config, node_image: str, pinnable: bool) -> Config:
    """A canary of `led`: the same machine and sharing, a node version (or on Ubuntu a driver)
    no older than the led pool's, one node at most."""
    canary: Config = {
        "name": f"{led['name']}-canary",
        "canaryOf": led["name"],
        "instanceTypes": list(led["instanceTypes"]),
        "max": 1,
        "sharing": dict(led["sharing"]),
    }
    for key in ("capacity", "zones", "accelerator", "gpusPerNode"):
        if key in led:
            canary[key] = led[key]
    led_gcp = led.get("gcp", {})
    gcp = {
        key: led_gcp[key]
        for key in ("reservation", "reservationName", "flexStart", "queuedProvisioning")
        if key in led_gcp
    }
    if "cosDriverBranch" in led_gcp:
        gcp["cosDriverBranch"] = led_gcp["cosDriverBranch"]
    if "nodeVersion" in led_gcp:
        gcp["nodeVersion"] = GKE_NODE_VERSIONS[-1]
    elif pinnable and draw(st.booleans()):
        gcp["nodeVersion"] = draw(st.sampled_from(GKE_NODE_VERSIONS))
    if node_image == "ubuntu" and (draw(st.booleans()) or "driverVersion" in led_gcp):
        led_driver = led_gcp.get("driverVersion", UBUNTU_DRIVERS[-1])
        newer = [d for d in UBUNTU_DRIVERS if version_key(d) >= version_key(led_driver)]
        gcp["driverVersion"] = draw(st.sampled_from(newer))
    if gcp:
        canary["gcp"] = gcp
    if draw(st.booleans()):
        canary["canarySoakMinutes"] = draw(st.sampled_from([0, 5, 30]))
    _validation(draw, canary)
    return canary


@st.composite
def gke_stack(draw: st.DrawFn) -> Config:
    node_image = draw(st.sampled_from(["cos", "cos", "ubuntu"]))
    created = draw(st.integers(0, 3)) == 0
    location = draw(st.sampled_from([GCP_REGION, GCP_REGION, f"{GCP_REGION}-a"]))
    cluster: Config = {"name": "ml-sweep", "project": "ml-platform-sweep", "location": location}
    created_minor = None
    pinnable = True
    if created:
        cluster["location"] = GCP_REGION
        created_minor = draw(st.sampled_from(SUPPORTED_KUBERNETES_VERSIONS))
        gcp: Config = {
            "releaseChannel": draw(st.sampled_from(["stable", "regular", "rapid", "none"]))
        }
        if draw(st.booleans()):
            gcp["maintenanceWindow"] = {"start": "03:00", "days": ["SA", "SU"], "durationHours": 8}
        if draw(st.booleans()):
            # enforce is refused on COS: its driver installer's image names no registry.
            modes = ["audit", "project", "off", *(["enforce"] if node_image == "ubuntu" else [])]
            gcp["binaryAuthorization"] = draw(st.sampled_from(modes))
            if gcp["binaryAuthorization"] in ("audit", "enforce") and draw(st.booleans()):
                gcp["binaryAuthorizationAllowedImages"] = ["us-docker.pkg.dev/acme-ml/images/**"]
        if draw(st.booleans()):
            gcp["privateEndpointEnforcement"] = draw(st.booleans())
        if draw(st.booleans()):
            gcp["existingNetwork"] = {
                "network": "shared",
                "subnetwork": "gke-sweep",
                "podsRangeName": "gke-pods",
                "servicesRangeName": "gke-services",
            }
        # A created cluster's pools pin versions only outside a release channel, and no newer
        # than its control plane.
        pinnable = created_minor == PINNABLE_MINOR and gcp["releaseChannel"] == "none"
        cluster["create"] = {
            "kubernetesVersion": created_minor,
            "endpoint": {"access": "public", "publicCidrs": ["203.0.113.0/24"]},
            "administrators": ["gke-admins@example.com"],
            "gcp": gcp,
        }
    if node_image != "cos" or draw(st.booleans()):
        cluster["nodeImage"] = node_image
    # On COS one DCGM exporter attributes GPUs for pools GKE shares or for whole GPUs, not both.
    # Drawn apart now and then, which the config refuses while it does.
    shared = draw(st.sampled_from([True, False, None])) if node_image == "cos" else None
    config: Config = {"gpu-platform:cloud": "gcp", "gpu-platform:cluster": cluster}
    pools = _pools_with_canaries(
        draw,
        lambda name: gke_pool(name, node_image, shared, created_minor, pinnable),
        gke_canary,
        node_image,
        pinnable,
    )
    config["gpu-platform:pools"] = pools
    _common(draw, config, pools, created)
    return config


# --- Both clouds -----------------------------------------------------------------------------

POOL_NAMES = ("gpu-a", "gpu-b", "gpu-c")


def _on_auto_mode(pool: Config) -> None:
    """A Karpenter pool made an EKS Auto Mode one: Auto Mode picks the AMI, has no EFA setting,
    and terminates no instance for a deleted Node the platform could count on."""
    pool["aws"].pop("amiReleaseVersion")
    pool["aws"].pop("efa", None)
    pool.get("validation", {}).pop("replacementsPerHour", None)


def _pools_with_canaries(
    draw: st.DrawFn,
    pool: Any,
    canary: Any,
    node_image: str,
    version: Any,
    canaries: bool = True,
) -> list[Config]:
    count = draw(st.integers(1, 3))
    pools: list[Config] = []
    for name in POOL_NAMES[:count]:
        led = draw(pool(name))
        pools.append(led)
        # The gate Job of a canary asks for nvidia.com/gpu, which a DRA pool does not offer.
        if canaries and led.get("allocation") != "dra" and draw(st.integers(0, 2)) == 0:
            pools.append(canary(draw, led, node_image, version))
    # A stack's GPU pools are all DRA or none (gpu_platform/config/dra_rules.py): the first
    # pool's allocation decides, keeping only the DRA pools after a DRA one, and otherwise
    # turning a drawn DRA pool (exclusive, at least one node) into a device-plugin one, which
    # scales to zero like every other: its floor was the DRA pool's alone.
    if pools[0].get("allocation") == "dra":
        return [p for p in pools if p.get("allocation") == "dra"]
    for p in pools:
        if p.pop("allocation", None) == "dra":
            p.pop("min")
    return pools


def _quota_setting(pool: Config, cloud: str, node_image: str) -> tuple[str, Any]:
    """The namespace quota a pool's smoke test asks under, and a value admitting it."""
    key = quota_key(pool, cloud, node_image)
    if key == "migQuota":
        return key, {pool["sharing"]["profile"].removeprefix("all-"): 8}
    return key, 8


def _split(
    draw: st.DrawFn, namespace: Config, pools: list[Config], cloud: str, node_image: str
) -> dict[str, int]:
    """A queued namespace's `queue.poolQuotas`: each quota that several pools Kueue admits on
    hand out split between them, adding up to it or one less, its smoke test's pool given at least 1
    (gpu_platform/config/queue_rules.py). Whole GPUs and replicas are both `nvidia.com/gpu`,
    which `gpuQuota` caps where a pool is exclusive (`with_gpu_quotas_fitting_its_pools`)."""
    keys = {quota_key(p, cloud, node_image) for p in pools}
    whole = "gpuQuota" in keys or "sharedGpuQuota" not in keys
    gpus = namespace.get("gpuQuota" if whole else "sharedGpuQuota", 0)
    groups: dict[str, list[str]] = {}
    for pool in (p for p in pools if "canaryOf" not in p):
        key, value = _quota_setting(pool, cloud, node_image)
        (resource,) = value if key == "migQuota" else ["nvidia.com/gpu"]
        groups.setdefault(resource, []).append(pool["name"])
    split: dict[str, int] = {}
    for resource, names in groups.items():
        cap = gpus if resource == "nvidia.com/gpu" else namespace["migQuota"][resource]
        if len(names) < 2 or cap == 0:
            continue
        # Shares may leave a GPU of the quota unused, as in the middle of moving quota.
        total = cap - draw(st.integers(0, min(1, cap - 1)))
        cuts = sorted(
            draw(st.lists(st.integers(0, total), min_size=len(names) - 1, max_size=len(names) - 1))
        )
        shares = [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]
        split.update(zip(names, shares, strict=True))
        smoke = namespace.get("smokeTestPool")
        if smoke is not None and split.get(smoke) == 0:
            largest = max(names, key=split.__getitem__)
            split[largest] -= 1
            split[smoke] = 1
    return split


def _common(draw: st.DrawFn, config: Config, pools: list[Config], created: bool) -> None:
    """Tenants, monitoring and protection, on either cloud."""
    cloud = config["gpu-platform:cloud"]
    node_image = config["gpu-platform:cluster"].get(
        "nodeImage", "al2023" if cloud == "aws" else "cos"
    )
    namespaces = []
    for i in range(draw(st.integers(0, 2))):
        namespace: Config = {"name": f"team-{'ab'[i]}"}
        for pool in pools:
            key, value = _quota_setting(pool, cloud, node_image)
            if key == "migQuota":
                namespace.setdefault("migQuota", {}).update(value)
            else:
                namespace[key] = value
        # The smoke test asks for nvidia.com/gpu, which a DRA pool does not offer.
        testable = [p["name"] for p in pools if p.get("allocation") != "dra"]
        smoke_test: bool = draw(st.booleans())
        if smoke_test and testable:
            namespace["smokeTestPool"] = draw(st.sampled_from(testable))
        namespaces.append(namespace)
    if namespaces:
        config["gpu-platform:namespaces"] = namespaces
        with_gpu_quotas_fitting_its_pools(config)
    # A canary has no flavor, so it shares nothing with the pool it leads.
    queued = [p for p in pools if "canaryOf" not in p]
    # Kueue's queues count nvidia.com/gpu, which a DRA pool's pods do not ask for: refused.
    dra = any(p.get("allocation") == "dra" for p in pools)
    if not dra and draw(st.integers(0, 2)) == 0:
        # A queued namespace's smoke test runs on a pool Kueue admits jobs on.
        for namespace in namespaces:
            if namespace.get("smokeTestPool") not in {p["name"] for p in queued}:
                namespace.pop("smokeTestPool", None)
        # Kueue, each tenant's queue within the quotas drawn above (8 of each GPU resource).
        queues: Config = {"enabled": True}
        if draw(st.booleans()):
            queues["fairSharing"] = False
        queues.update(_moved(draw, namespace="queues", cohort="ml"))
        config["gpu-platform:queues"] = queues
        under_autoscaler = config.get("gpu-platform:provisioner") != "karpenter"
        # A pool whose nodes come up together for a queued job, or not at all: never one of
        # zonal node groups, which the autoscaler splits a request over (queue_rules.py).
        whole = [p for p in queued if not p.get("aws", {}).get("nodeGroupPerZone")]
        if cloud == "aws" and under_autoscaler and whole and draw(st.booleans()):
            atomic = draw(st.sampled_from(whole))
            atomic.setdefault("aws", {})["atomicScaleUp"] = True
        for namespace in namespaces:
            # A namespace left out of the queues (for its GPU services) borrows and lends none.
            if draw(st.integers(0, 3)) == 0:
                namespace["queue"] = {"enabled": False}
                continue
            split = _split(draw, namespace, pools, cloud, node_image)
            # Kueue refuses a lendingLimit above any flavor's quota (queue_rules.py).
            lending = min([8, *split.values()])
            limits: Config = draw(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "borrowingLimit": st.sampled_from([0, 4]),
                        "lendingLimit": st.sampled_from(sorted({0, lending})),
                    },
                )
            )
            if split:
                limits["poolQuotas"] = split
            if limits:
                namespace["queue"] = limits
    # A namespace out of the queues runs its smoke test as a plain pod, for which a GKE queued
    # pool starts no node (gpu_platform/config/queue_rules.py).
    queued_only = {p["name"] for p in pools if p.get("gcp", {}).get("queuedProvisioning")}
    kueue_on = config.get("gpu-platform:queues", {}).get("enabled", False)
    for namespace in namespaces:
        unqueued = not kueue_on or not namespace.get("queue", {}).get("enabled", True)
        if unqueued and namespace.get("smokeTestPool") in queued_only:
            namespace.pop("smokeTestPool")
    monitoring: Config = {}
    if created or draw(st.booleans()):
        monitoring["installPrometheusStack"] = True
        if draw(st.integers(0, 2)) == 0:
            for namespace in namespaces:
                namespace["gpuIdleMinutes"] = 120
    if draw(st.booleans()):
        monitoring["idleGpuMinutes"] = draw(st.sampled_from([10, 30, 120]))
    if cloud == "gcp" and draw(st.integers(0, 3)) == 0:
        monitoring["googleManagedPrometheus"] = True
    if draw(st.integers(0, 3)) == 0:
        # A prefixed key with upper case, which kube-state-metrics renames the most.
        monitoring["teamLabel"] = draw(st.sampled_from(["team", "example.com/costCenter"]))
    if draw(st.integers(0, 3)) == 0:
        monitoring["teamIdleGpuPercent"] = draw(st.sampled_from([1, 50, 99]))
    monitoring.update(_moved(draw, namespace="observability"))
    if monitoring:
        config["gpu-platform:monitoring"] = monitoring
    if draw(st.integers(0, 3)) == 0:
        operator: Config = {"timeoutSeconds": draw(st.sampled_from([300, 1800]))}
        if node_image == "ubuntu":
            # The operator builds the driver on GKE Ubuntu only.
            operator["driverUpgradeMaxUnavailablePercent"] = draw(st.sampled_from([10, 100]))
        if draw(st.booleans()):
            # Joins the platform's exporter env by name, which keeps the GPU ID type.
            interval = {"name": "DCGM_EXPORTER_INTERVAL", "value": "10000"}
            operator["overrides"] = {"dcgmExporter": {"env": [interval]}}
        if draw(st.booleans()):
            # Values the platform does not set: the policy pack takes the release for the
            # platform's still, as prod's policy config requires of every config the loader
            # accepts.
            operator.setdefault("overrides", {}).update(draw(st.sampled_from(OPERATOR_OVERRIDES)))
        # Not on GKE Ubuntu, whose per-pool drivers need the pinned chart or newer, nor beside a
        # DRA pool, whose premises were read at the pinned chart (gpu_platform/config/
        # dra_rules.py).
        pinned = node_image == "ubuntu" or dra
        trial = {} if pinned else {"chartVersion": TRIAL_OPERATOR_CHART}
        operator.update(_moved(draw, repository=MIRROR, namespace="nvidia-gpu", **trial))
        if cloud == "gcp" and "chartVersion" in operator:
            # The platform's own exporter on GKE-shared nodes is told that version's image.
            overrides = operator.setdefault("overrides", {})
            overrides.setdefault("dcgmExporter", {}).update(TRIAL_EXPORTER_IMAGE)
        config["gpu-platform:operator"] = operator
    if draw(st.booleans()):
        config["gpu-platform:protect"] = True


OPERATOR_OVERRIDES: tuple[Config, ...] = (
    {
        "daemonsets": {
            "labels": {"team": "ml-platform"},
            "priorityClassName": "system-node-critical",
        }
    },
    {
        "operator": {
            "resources": {"limits": {"memory": "1Gi"}},
            "logging": {"level": "debug"},
            # Rendered with toYaml (templates/operator.yaml), so a line break is the value's.
            "annotations": {"example.com/owners": "ml-platform\ngpu-oncall"},
        }
    },
    {"validator": {"plugin": {"env": [{"name": "WITH_WORKLOAD", "value": "false"}]}}},
)
"""`operator.overrides` of chart values the platform leaves to the chart (gpu-operator v26.7.0
values.yaml)."""
TRIAL_OPERATOR_CHART = "v26.3.0"
TRIAL_EXPORTER_IMAGE = {
    "repository": "nvcr.io/nvidia/k8s",
    "image": "dcgm-exporter",
    "version": "4.5.2-4.8.1-distroless@sha256:" + "0" * 64,
}
TRIAL_AUTOSCALER_CHART = "9.58.0"
TRIAL_KARPENTER_CHART = "1.13.0"
MIRROR = "https://charts.example.com/nvidia"
"""Settings that move the platform's own releases off their pins: a stack using one declares
the release in its policy config (`platformReleases`), as `declared_releases` does."""


def _moved(draw: st.DrawFn, **settings: str) -> Config:
    """Each of `settings` now and then."""
    return {key: value for key, value in settings.items() if draw(st.integers(0, 3)) == 0}


def stack_configs() -> st.SearchStrategy[Config]:
    """A stack's config on either cloud."""
    return st.one_of(eks_stack(), gke_stack())


def pool_spec(config: Mapping[str, Any], name: str) -> Config:
    """The config of the pool named `name`."""
    return next(p for p in config["gpu-platform:pools"] if p["name"] == name)


# --- Corners every run plans -----------------------------------------------------------------

AMI_RELEASE = "1.35.6-20260714"
"""An AL2023 NVIDIA release of the stand-in EKS cluster's Kubernetes 1.35."""
CORNER_STACKS: dict[str, Config] = {
    "EKS node groups: a MIG pool a tenant's migQuota and smoke test use, an arm64 pool, chart "
    "values the platform does not set": {
        "aws:region": AWS_REGION,
        "gpu-platform:cloud": "aws",
        "gpu-platform:cluster": {"name": "ml-sweep", "region": AWS_REGION},
        "gpu-platform:pools": [
            {
                "name": "a100-mig",
                "instanceTypes": ["p4d.24xlarge"],
                "max": 2,
                "capacity": "on-demand",
                "sharing": {"mode": "mig", "strategy": "mixed", "profile": "all-1g.5gb"},
                "aws": {"amiReleaseVersion": AMI_RELEASE},
            },
            {
                "name": "t4-arm",
                "instanceTypes": ["g5g.xlarge"],
                "max": 2,
                "capacity": "spot",
                "sharing": {"mode": "exclusive"},
                "aws": {"amiReleaseVersion": AMI_RELEASE},
            },
        ],
        "gpu-platform:namespaces": [
            {
                "name": "team-a",
                "migQuota": {"1g.5gb": 8},
                "gpuQuota": 8,
                "smokeTestPool": "a100-mig",
            }
        ],
        "gpu-platform:operator": {
            "overrides": {key: value for o in OPERATOR_OVERRIDES for key, value in o.items()}
        },
    },
    # From 1.36 Auto Mode's nodes may run AWS's NVIDIA DRA driver, which tenants' quotas allow.
    "EKS Auto Mode turned on at creation, at Kubernetes 1.36": {
        "aws:region": AWS_REGION,
        "gpu-platform:cloud": "aws",
        "gpu-platform:cluster": {
            "name": "ml-sweep",
            "region": AWS_REGION,
            "create": {
                "kubernetesVersion": "1.36",
                "endpoint": {"access": "public", "publicCidrs": ["203.0.113.0/24"]},
                "administrators": ["arn:aws:iam::123456789012:role/platform-admins"],
            },
        },
        "gpu-platform:provisioner": "eks-auto-mode",
        "gpu-platform:pools": [
            {"name": "l40s", "accelerator": "l40s", "max": 2, "aws": {"instanceFamilies": ["g6e"]}}
        ],
        "gpu-platform:namespaces": [{"name": "team-a", "gpuQuota": 8, "smokeTestPool": "l40s"}],
        "gpu-platform:monitoring": {"installPrometheusStack": True},
    },
    "EKS Auto Mode: a Capacity Block, a family pool, tenants on both": {
        "aws:region": AWS_REGION,
        "gpu-platform:cloud": "aws",
        "gpu-platform:cluster": {"name": "ml-sweep", "region": AWS_REGION},
        "gpu-platform:provisioner": "eks-auto-mode",
        "gpu-platform:karpenter": {"terminationGracePeriodHours": 48},
        "gpu-platform:pools": [
            {
                "name": "h100-block",
                "instanceTypes": ["p5.48xlarge"],
                "max": 2,
                "capacity": "capacity-block",
                "zones": ["us-east-1a"],
                "diskSizeGib": 500,
                "aws": {"capacityReservationId": "cr-0b10c4e5a2f6d7890"},
            },
            {
                "name": "l40s",
                "accelerator": "l40s",
                "max": 2,
                "taints": [{"key": "team", "value": "vision", "effect": "NoSchedule"}],
                "aws": {"instanceFamilies": ["g6e"], "consolidateAfterMinutes": 30},
            },
        ],
        "gpu-platform:namespaces": [
            {"name": "team-a", "gpuQuota": 8, "smokeTestPool": "l40s"},
            {"name": "team-b", "gpuQuota": 8},
        ],
    },
    "an existing Karpenter: EFA H100s in two zones, a family pool with its own taints": {
        "aws:region": AWS_REGION,
        "gpu-platform:cloud": "aws",
        "gpu-platform:cluster": {"name": "ml-sweep", "region": AWS_REGION},
        "gpu-platform:provisioner": "karpenter",
        "gpu-platform:karpenter": {
            "install": False,
            "nodeRoleArn": "arn:aws:iam::123456789012:role/karpenter-nodes",
        },
        "gpu-platform:pools": [
            *(
                {
                    "name": f"h100-{zone[-1]}",
                    "instanceTypes": ["p5.48xlarge"],
                    "max": 2,
                    "capacity": "on-demand",
                    "zones": [zone],
                    "sharing": {"mode": "exclusive"},
                    "aws": {"amiReleaseVersion": AMI_RELEASE, "efa": True},
                }
                for zone in ("us-east-1a", "us-east-1b")
            ),
            {
                "name": "l4",
                "accelerator": "l4",
                "max": 4,
                "capacity": "spot",
                "sharing": {"mode": "exclusive"},
                "taints": [dict(TAINTS[0])],
                "aws": {"amiReleaseVersion": AMI_RELEASE, "instanceFamilies": ["g6"]},
            },
        ],
    },
    "GKE: a queued-provisioning pool beside one GKE time-shares, a tenant's queue on both": {
        "gpu-platform:cloud": "gcp",
        "gpu-platform:cluster": {
            "name": "ml-sweep",
            "project": "ml-platform-sweep",
            "location": GCP_REGION,
        },
        "gpu-platform:pools": [
            {
                "name": "l4-queued",
                "instanceTypes": ["g2-standard-8"],
                "max": 4,
                "sharing": {"mode": "exclusive"},
                "gcp": {"flexStart": True, "queuedProvisioning": True},
            },
            {
                "name": "l4-shared",
                "instanceTypes": ["g2-standard-8"],
                "max": 2,
                "sharing": {"mode": "time-slicing", "replicas": 4},
            },
        ],
        # Whole GPUs and replicas are both nvidia.com/gpu: gpuQuota caps them together, and
        # the tenant's queue splits it between the pools.
        "gpu-platform:namespaces": [
            {
                "name": "team-a",
                "gpuQuota": 16,
                "smokeTestPool": "l4-shared",
                "queue": {"poolQuotas": {"l4-queued": 12, "l4-shared": 4}, "borrowingLimit": 4},
            }
        ],
        "gpu-platform:queues": {"enabled": True},
    },
    "GKE created at a bare 1.35 on COS: the drivers its pools run come from the lock": {
        "gpu-platform:cloud": "gcp",
        "gpu-platform:cluster": {
            "name": "ml-sweep",
            "project": "ml-platform-sweep",
            "location": GCP_REGION,
            "create": {
                "kubernetesVersion": "1.35",
                "endpoint": {"access": "public", "publicCidrs": ["203.0.113.0/24"]},
                "administrators": ["gke-admins@example.com"],
                "gcp": {"releaseChannel": "regular"},
            },
        },
        "gpu-platform:pools": [
            {
                "name": "l4",
                "instanceTypes": ["g2-standard-8"],
                "max": 2,
                "sharing": {"mode": "exclusive"},
            },
            {
                "name": "l4-stated",
                "instanceTypes": ["g2-standard-8"],
                "max": 2,
                "sharing": {"mode": "exclusive"},
                "gcp": {"cosDriverBranch": 580},
            },
        ],
        "gpu-platform:monitoring": {"installPrometheusStack": True},
    },
    "refused: a canary on a Capacity Block": {
        "aws:region": AWS_REGION,
        "gpu-platform:cloud": "aws",
        "gpu-platform:cluster": {"name": "ml-sweep", "region": AWS_REGION},
        "gpu-platform:pools": [
            {
                "name": name,
                **({"canaryOf": "h100"} if name != "h100" else {}),
                "instanceTypes": ["p5.48xlarge"],
                "max": 1,
                "capacity": "capacity-block",
                "zones": ["us-east-1a"],
                "sharing": {"mode": "exclusive"},
                "aws": {
                    "amiReleaseVersion": AMI_RELEASE,
                    "capacityReservationId": "cr-0123456789abcdef0",
                    "capacityBlockStart": "2026-12-10T11:30:00+00:00",
                },
            }
            for name in ("h100", "h100-canary")
        ],
    },
}
"""Stacks that join corners a short run may never draw, each planned (or, the last, refused by
key) on every run: MIG quotas and smoke tests, arm64, EFA pools of one GPU in two zones, a
Karpenter the stack does not install, a pool of a whole instance family, a Karpenter pool's own
taints, queued provisioning beside GKE's time-sharing under one tenant's quota, split between
them in its queue."""

"""The zones a GPU pool's nodes may go to: zones of the cluster's region that offer its machine
type, and with it the machine type's GPUs.

Compute Engine lists a zone's machine types (`compute.get_machine_types`); an
accelerator-optimized machine type is listed only where its GPUs are. Which zones offer a GPU
attached to an N1 machine type is not something the provider can look up, so an N1 pool names
its zones and only the machine type is checked there.
"""

from pulumi_gcp import compute

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.config import ConfigError, ConfigProblem, key_path
from gpu_platform.gke.cluster import GkeCluster
from gpu_platform.gke.locations import zone_region
from gpu_platform.gke.machine_types import is_n1
from gpu_platform.instance import lookup_options
from gpu_platform.node_identity import ResolvedPool

GPU_ZONES_DOC = "https://cloud.google.com/compute/docs/gpus/gpu-regions-zones"


class ZoneOfferings:
    """Zone lookups for one cluster, each made once however many pools ask."""

    def __init__(self, cluster: GkeCluster):
        self.cluster = cluster
        self._region_zones: list[str] | None = None
        self._offered: dict[tuple[str, str], bool] = {}

    def region_zones(self) -> list[str]:
        """The zones of the cluster's region that are up."""
        if self._region_zones is None:
            found = compute.get_zones(
                project=self.cluster.project,
                region=self.cluster.region,
                status="UP",
                opts=lookup_options("gcp"),
            )
            self._region_zones = sorted(found.names)
        return self._region_zones

    def offers(self, zone: str, machine_type: str) -> bool:
        key = (zone, machine_type)
        if key not in self._offered:
            found = compute.get_machine_types(
                project=self.cluster.project,
                zone=zone,
                filter=f'name = "{machine_type}"',
                opts=lookup_options("gcp"),
            )
            self._offered[key] = any(m.name == machine_type for m in found.machine_types)
        return self._offered[key]

    def zones_for(self, pool: ResolvedPool) -> list[str]:
        """Where the pool's nodes go; ConfigError naming the pool's key when nowhere can."""
        if pool.spec.zones:
            return self._named_zones(pool)
        machine_type = pool.spec.instance_types[0]
        if is_n1(machine_type):
            gke_type = ACCELERATORS[pool.gpu.accelerator].gke_type
            raise ConfigError(
                [
                    ConfigProblem(
                        key_path("pools", pool.index, "zones"),
                        [],
                        f"the zones of {self.cluster.region} that offer {gke_type}"
                        f" ({GPU_ZONES_DOC}): which zones offer a GPU attached to an N1"
                        " machine type cannot be looked up",
                    )
                ]
            )
        candidates = self.region_zones() if self.cluster.is_regional else [self.cluster.location]
        offering = [zone for zone in candidates if self.offers(zone, machine_type)]
        if not offering:
            raise ConfigError(
                [
                    ConfigProblem(
                        key_path("pools", pool.index, "instanceTypes", 0),
                        machine_type,
                        f"a machine type offered in {self.cluster.location}: pool"
                        f" {pool.spec.name} has no zone left, as none of {candidates} offers"
                        f" {machine_type} ({GPU_ZONES_DOC})",
                    )
                ]
            )
        return offering

    def _named_zones(self, pool: ResolvedPool) -> list[str]:
        machine_type = pool.spec.instance_types[0]
        region = self.cluster.region
        problems = []
        for j, zone in enumerate(pool.spec.zones):
            if zone_region(zone) != region:
                problems.append(
                    ConfigProblem(
                        key_path("pools", pool.index, "zones", j),
                        zone,
                        f"a zone of the cluster's region {region}, such as {region}-a",
                    )
                )
            elif not self.offers(zone, machine_type):
                problems.append(
                    ConfigProblem(
                        key_path("pools", pool.index, "zones", j),
                        zone,
                        f"a zone of {region} that offers {machine_type}: "
                        + (", ".join(self._offering(machine_type)) or "none does"),
                    )
                )
        if problems:
            raise ConfigError(problems)
        return list(pool.spec.zones)

    def _offering(self, machine_type: str) -> list[str]:
        return [zone for zone in self.region_zones() if self.offers(zone, machine_type)]

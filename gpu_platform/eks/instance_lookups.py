"""The program's lookups of EC2's instance type data, through the Pulumi AWS provider: kept
apart from `instance_types` so that preflight, which reads the same data through boto3, loads no
Pulumi SDK."""

from collections.abc import Iterable

from pulumi_aws import ec2

from gpu_platform.eks.instance_types import Gpus, InstanceType, instance_type
from gpu_platform.instance import lookup_options


def look_up_instance_type(name: str, region: str) -> InstanceType:
    """The instance type as EC2 describes it in `region`."""
    found = ec2.get_instance_type(instance_type=name, region=region, opts=lookup_options("aws"))
    return instance_type(
        name,
        found.default_vcpus,
        found.memory_size,
        found.supported_architectures or [],
        [Gpus(g.manufacturer, g.name, g.count, g.memory_size) for g in found.gpuses or []],
        sum(d.count * d.size for d in found.instance_disks or [] if d.type == "ssd"),
        (found.efa_maximum_interfaces or 0) if found.efa_supported else 0,
    )


def offered_zones(instance_types: Iterable[str], region: str) -> dict[str, set[str]]:
    """Availability zones of `region` where EC2 offers each instance type; a type EC2 does not
    know, or does not offer in the region, maps to no zone."""
    names = sorted(set(instance_types))
    found = ec2.get_instance_type_offerings(
        filters=[ec2.GetInstanceTypeOfferingsFilterArgs(name="instance-type", values=names)],
        location_type="availability-zone",
        region=region,
        opts=lookup_options("aws"),
    )
    zones: dict[str, set[str]] = {name: set() for name in names}
    for name, zone in zip(found.instance_types, found.locations, strict=True):
        zones.setdefault(name, set()).add(zone)
    return zones

"""Stand-in answers for the EKS side's lookups in the offline plan.

The program looks up its cluster (`aws:eks/getCluster`), the cluster's subnets
(`aws:ec2/getSubnet`) and their route tables (`aws:ec2/getRouteTables`,
`aws:ec2/getRouteTable`), where EC2 offers each pool's instance types
(`aws:ec2/getInstanceTypeOfferings`) and what they are (`aws:ec2/getInstanceType`); a created
cluster's system nodes look up EKS's newest AL2023 release (`aws:ssm/getParameter`), answered
with the newest release of the driver table for that Kubernetes version.

Instance types and the zones offering GPU instance types are EC2's real data, as moto ships it,
kept in `ec2_data/` by its `derive.py`: GPU models, counts, vCPUs and the zones that lack an
instance type are those of a real region. The rest is plausible and made up: a cluster on
Kubernetes 1.35 in account 123456789012 with a private subnet in every zone of its region, routed
to a NAT gateway, and one public subnet, routed to an internet gateway (`route_tables`), an
endpoint in a documentation address range and a CA that is not one.
None of it comes from an account.
"""

import base64
import hashlib
import json
import uuid
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from typing import Any

from gpu_platform.drivers import AL2023_DRIVERS
from gpu_platform.offline.stand_ins import CREATED_CLUSTERS, LookupFailed

STAND_IN_ACCOUNT = "123456789012"
STAND_IN_KUBERNETES_VERSION = "1.35"
STAND_IN_DEPLOY_ROLE = "gpu-platform-deploy"
STAND_IN_CA = base64.b64encode(
    b"-----BEGIN CERTIFICATE-----\nstand-in, not a certificate\n-----END CERTIFICATE-----\n"
).decode()

_EC2_DATA = resources.files("gpu_platform.offline.stand_ins.ec2_data")


class UnknownInstanceType(LookupError):
    """What EC2 answers for an instance type it does not have (`InvalidInstanceType`)."""


# --- EC2's own data, derived from moto's copy (ec2_data/derive.py) ----------------------------


@cache
def ec2_instance_types() -> Mapping[str, Mapping[str, Any]]:
    """`DescribeInstanceTypes` entries by instance type name (the fields the stand-ins read)."""
    return json.loads(_EC2_DATA.joinpath("instance_types.json").read_text())["instanceTypes"]


@cache
def ec2_zone_offerings(region: str) -> tuple[tuple[str, str], ...]:
    """`(instance type, zone)` for every offering in the region's zones."""
    groups = _zone_offerings().get(region, {})
    return tuple(
        (name, zone) for zones, names in groups.items() for zone in zones.split() for name in names
    )


@cache
def _zone_offerings() -> Mapping[str, Mapping[str, list[str]]]:
    return json.loads(_EC2_DATA.joinpath("zone_offerings.json").read_text())


def region_zones(region: str) -> list[str]:
    return sorted({zone for _, zone in ec2_zone_offerings(region)}) or [f"{region}a"]


# --- The stand-in network --------------------------------------------------------------------


def _ec2_id(kind: str, *parts: str) -> str:
    """An EC2 id (`subnet-`, `rtb-`... and 17 hex digits), stable for `parts`."""
    return f"{kind}-" + hashlib.sha256("/".join(parts).encode()).hexdigest()[:17]


def _subnet_id(*parts: str) -> str:
    return _ec2_id("subnet", *parts)


def cluster_subnets(region: str) -> dict[str, tuple[str, bool]]:
    """Subnet id -> (zone, public): a private subnet per zone, one public subnet, which routes
    to the internet gateway and assigns public IPs."""
    zones = region_zones(region)
    subnets = {_subnet_id(region, zone, "private"): (zone, False) for zone in zones}
    subnets[_subnet_id(region, zones[0], "public")] = (zones[0], True)
    return subnets


def route_tables(region: str) -> list[dict[str, Any]]:
    """The VPC's route tables, as `ec2.get_route_table` gives each: the public subnet's, which
    sends 0.0.0.0/0 to the internet gateway; one for each private subnet but the first zone's,
    which sends it to a NAT gateway in its zone; and the main table, which sends it to the NAT
    gateway of the first zone, for that zone's private subnet and the subnets a stack names
    itself, none of which has a table of its own."""
    first, *others = region_zones(region)
    return [
        _route_table(region, "main", [], "natGatewayId", _ec2_id("nat", region, first)),
        _route_table(
            region,
            "public",
            [_subnet_id(region, first, "public")],
            "gatewayId",
            _ec2_id("igw", region, "internet"),
        ),
        *(
            _route_table(
                region,
                zone,
                [_subnet_id(region, zone, "private")],
                "natGatewayId",
                _ec2_id("nat", region, zone),
            )
            for zone in others
        ),
    ]


# The fields of a route as `ec2.get_route_table` gives it: its destination, and its target in the
# field of the target's kind; the provider leaves the others empty.
_ROUTE_FIELDS = (
    "cidrBlock",
    "ipv6CidrBlock",
    "destinationPrefixListId",
    "carrierGatewayId",
    "coreNetworkArn",
    "egressOnlyGatewayId",
    "gatewayId",
    "instanceId",
    "localGatewayId",
    "natGatewayId",
    "networkInterfaceId",
    "odbNetworkArn",
    "transitGatewayId",
    "vpcEndpointId",
    "vpcPeeringConnectionId",
)


def _route_table(
    region: str, name: str, subnets: list[str], target_field: str, target: str
) -> dict[str, Any]:
    """A table sending 0.0.0.0/0 to `target`, associated with `subnets`, or the VPC's main table
    (`name` `main`), whose one association says so and names no subnet."""
    table_id = _ec2_id("rtb", region, name, "routes")
    associated = [("", True)] if name == "main" else [(subnet, False) for subnet in subnets]
    return {
        "routeTableId": table_id,
        "vpcId": _vpc_id(region),
        "ownerId": STAND_IN_ACCOUNT,
        "arn": f"arn:aws:ec2:{region}:{STAND_IN_ACCOUNT}:route-table/{table_id}",
        "routes": [
            {**dict.fromkeys(_ROUTE_FIELDS, ""), "cidrBlock": "0.0.0.0/0", target_field: target}
        ],
        "associations": [
            {
                "routeTableAssociationId": _ec2_id("rtbassoc", table_id, subnet),
                "routeTableId": table_id,
                "subnetId": subnet,
                "gatewayId": "",
                "main": main,
            }
            for subnet, main in associated
        ],
        "tags": {},
    }


def _vpc_id(region: str) -> str:
    return _ec2_id("vpc", region)


# --- Invokes ---------------------------------------------------------------------------------


def get_cluster(args: dict[str, Any]) -> dict[str, Any]:
    """Any cluster but one the program creates, which EKS does not find before it exists: its
    `ResourceNotFoundException` in terraform-provider-aws's data source's words
    (internal/service/eks/cluster_data_source.go, "reading EKS Cluster (%s): %s")."""
    name = args["name"]
    if name in CREATED_CLUSTERS:
        raise LookupFailed(
            f"reading EKS Cluster ({name}): ResourceNotFoundException: No cluster found for"
            f" name: {name}."
        )
    return _described(args)


def _described(args: dict[str, Any]) -> dict[str, Any]:
    name = args["name"]
    region = args.get("region") or "us-east-1"
    digest = hashlib.sha256(f"{region}/{name}".encode()).hexdigest()
    return {
        "id": name,
        "name": name,
        "arn": f"arn:aws:eks:{region}:{STAND_IN_ACCOUNT}:cluster/{name}",
        "endpoint": f"https://{digest[:32].upper()}.gr7.{region}.eks.amazonaws.com",
        "certificateAuthorities": [{"data": STAND_IN_CA}],
        "version": STAND_IN_KUBERNETES_VERSION,
        "platformVersion": "eks.12",
        "status": "ACTIVE",
        "roleArn": f"arn:aws:iam::{STAND_IN_ACCOUNT}:role/{name}-cluster",
        "vpcConfig": {
            "vpcId": f"vpc-{digest[32:49]}",
            "subnetIds": list(cluster_subnets(region)),
            "securityGroupIds": [],
            "clusterSecurityGroupId": f"sg-{digest[49:64]}",
            "endpointPrivateAccess": True,
            "endpointPublicAccess": False,
            "publicAccessCidrs": [],
        },
        # EKS Auto Mode's compute on, with the node role its built-in node pools get: what a
        # stack of `provisioner: eks-auto-mode` needs; the others read nothing of it.
        "computeConfigs": [
            {
                "enabled": True,
                "nodePools": ["general-purpose", "system"],
                "nodeRoleArn": f"arn:aws:iam::{STAND_IN_ACCOUNT}:role/{name}-auto-mode-node",
            }
        ],
        "tags": {},
    }


def get_caller_identity(args: dict[str, Any]) -> dict[str, Any]:
    """The deployer: a session of an assumed role, as `pulumi up` in CI runs."""
    return {
        "accountId": STAND_IN_ACCOUNT,
        "arn": f"arn:aws:sts::{STAND_IN_ACCOUNT}:assumed-role/{STAND_IN_DEPLOY_ROLE}/deploy",
        "userId": "AROASTANDIN:deploy",
        "id": STAND_IN_ACCOUNT,
    }


def get_session_context(args: dict[str, Any]) -> dict[str, Any]:
    return {
        "arn": args["arn"],
        "issuerArn": f"arn:aws:iam::{STAND_IN_ACCOUNT}:role/{STAND_IN_DEPLOY_ROLE}",
        "issuerName": STAND_IN_DEPLOY_ROLE,
        "issuerId": "AROASTANDIN",
        "sessionName": "deploy",
        "id": args["arn"],
    }


def get_partition(args: dict[str, Any]) -> dict[str, Any]:
    return {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws"}


def get_clusters(args: dict[str, Any]) -> dict[str, Any]:
    """No cluster of a `cluster.create` stack exists yet: the plan is the first `pulumi up`'s."""
    return {"names": [], "id": args.get("region") or "us-east-1"}


def get_availability_zones(args: dict[str, Any]) -> dict[str, Any]:
    region = args.get("region") or "us-east-1"
    zones = region_zones(region)
    return {"names": zones, "zoneIds": [f"{region}-az{i + 1}" for i in range(len(zones))]}


def get_subnet(args: dict[str, Any]) -> dict[str, Any]:
    subnet_id = args["id"]
    region = args.get("region") or "us-east-1"
    known = cluster_subnets(region)
    if subnet_id in known:
        zone, public = known[subnet_id]
    else:
        # A subnet the stack names itself: some zone of the region, private.
        zones = region_zones(region)
        zone, public = (
            zones[int(hashlib.sha256(subnet_id.encode()).hexdigest(), 16) % len(zones)],
            False,
        )
    return {
        "id": subnet_id,
        "availabilityZone": zone,
        "mapPublicIpOnLaunch": public,
        "region": region,
        "vpcId": _vpc_id(region),
    }


def get_route_tables(args: dict[str, Any]) -> dict[str, Any]:
    region = args.get("region") or "us-east-1"
    return {
        "id": region,
        "ids": [t["routeTableId"] for t in _route_tables_matching(args, region)],
        "filters": args.get("filters"),
        "region": region,
        "tags": {},
        "vpcId": args.get("vpcId"),
    }


def get_route_table(args: dict[str, Any]) -> dict[str, Any]:
    region = args.get("region") or "us-east-1"
    found = _route_tables_matching(args, region)
    # The provider's data source fails unless exactly one table matches.
    if len(found) != 1:
        raise LookupError(f"{len(found)} route tables match {args}: the lookup needs one")
    (table,) = found
    return {
        **table,
        "id": table["routeTableId"],
        "filters": args.get("filters"),
        "gatewayId": args.get("gatewayId", ""),
        "region": region,
        "subnetId": args.get("subnetId", ""),
    }


# The lookups' arguments that filter, as the `DescribeRouteTables` filter each stands for.
_ROUTE_TABLE_ARGUMENTS = {
    "vpcId": "vpc-id",
    "routeTableId": "route-table-id",
    "subnetId": "association.subnet-id",
}


def _route_tables_matching(args: dict[str, Any], region: str) -> list[dict[str, Any]]:
    """The tables every filter matches, a filter any of its values (as `DescribeRouteTables`)."""
    wanted = [(f["name"], set(f["values"])) for f in args.get("filters") or []]
    wanted += [(name, {args[key]}) for key, name in _ROUTE_TABLE_ARGUMENTS.items() if args.get(key)]
    return [
        table
        for table in route_tables(region)
        if all(_filtered_by(table, name) & values for name, values in wanted)
    ]


def _filtered_by(table: dict[str, Any], name: str) -> set[str]:
    associations = table["associations"]
    values = {
        "vpc-id": {table["vpcId"]},
        "route-table-id": {table["routeTableId"]},
        "association.subnet-id": {a["subnetId"] for a in associations if a["subnetId"]},
        "association.main": {str(a["main"]).lower() for a in associations},
    }
    if name not in values:
        raise ValueError(f"the stand-in route tables are not filtered by {name}")
    return values[name]


def get_instance_type(args: dict[str, Any]) -> dict[str, Any]:
    name = args["instanceType"]
    described = ec2_instance_types().get(name)
    if described is None:
        raise UnknownInstanceType(f"InvalidInstanceType: {name} does not exist")
    gpu_info = described.get("GpuInfo") or {}
    storage = described.get("InstanceStorageInfo")
    efa = (described.get("NetworkInfo") or {}).get("EfaInfo")
    return {
        "efaSupported": efa is not None,
        "efaMaximumInterfaces": efa["MaximumEfaInterfaces"] if efa else 0,
        "id": name,
        "instanceType": name,
        "defaultVcpus": described["VCpuInfo"]["DefaultVCpus"],
        "memorySize": described["MemoryInfo"]["SizeInMiB"],
        "supportedArchitectures": described["ProcessorInfo"]["SupportedArchitectures"],
        "gpuses": [
            {
                "count": gpu["Count"],
                "manufacturer": gpu["Manufacturer"],
                "memorySize": gpu["MemoryInfo"]["SizeInMiB"],
                "name": gpu["Name"],
            }
            for gpu in gpu_info.get("Gpus", [])
        ],
        "totalGpuMemory": gpu_info.get("TotalGpuMemoryInMiB", 0),
        "instanceStorageSupported": storage is not None,
        "totalInstanceStorage": storage["TotalSizeInGB"] if storage else 0,
        "instanceDisks": [
            {"count": disk["Count"], "size": disk["SizeInGB"], "type": disk["Type"]}
            for disk in (storage or {}).get("Disks", [])
        ],
    }


def get_instance_type_offerings(args: dict[str, Any]) -> dict[str, Any]:
    region = args.get("region") or "us-east-1"
    filters = {f["name"]: set(f["values"]) for f in args.get("filters") or []}
    wanted_types = filters.get("instance-type")
    wanted_zones = filters.get("location")
    found = [
        (name, zone)
        for name, zone in ec2_zone_offerings(region)
        if (wanted_types is None or name in wanted_types)
        and (wanted_zones is None or zone in wanted_zones)
    ]
    return {
        "id": region,
        "instanceTypes": [name for name, _ in found],
        "locations": [zone for _, zone in found],
        "locationTypes": ["availability-zone"] * len(found),
    }


LIVE_NODE_GROUPS: dict[str, dict[str, int]] = {}
"""Node group name -> its `scalingConfig` (`minSize`, `maxSize`, `desiredSize`): the node groups
the offline plan finds running. None, as for a stack not yet deployed; tests add some."""


def get_parameter(args: dict[str, Any]) -> dict[str, Any]:
    """EKS's public parameter of the newest AL2023 release for a Kubernetes version
    (`/aws/service/eks/optimized-ami/<version>/amazon-linux-2023/<arch>/standard/recommended/
    release_version`): the newest release of that version in the driver table."""
    name = args["name"]
    version = name.split("/")[5]
    release = next(r for r in AL2023_DRIVERS if r.startswith(f"{version}."))
    return {
        "id": name,
        "name": name,
        "type": "String",
        "value": release,
        "version": 1,
        "arn": f"arn:aws:ssm:{args.get('region', 'us-east-1')}::parameter{name}",
        "insecureValue": release,
        "withDecryption": True,
    }


def get_node_groups(args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": args["clusterName"],
        "clusterName": args["clusterName"],
        "names": sorted(LIVE_NODE_GROUPS),
    }


def get_node_group(args: dict[str, Any]) -> dict[str, Any]:
    name = args["nodeGroupName"]
    return {
        "id": f"{args['clusterName']}:{name}",
        "clusterName": args["clusterName"],
        "nodeGroupName": name,
        "scalingConfigs": [LIVE_NODE_GROUPS[name]],
    }


INVOKES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "aws:ssm/getParameter:getParameter": get_parameter,
    "aws:eks/getNodeGroups:getNodeGroups": get_node_groups,
    "aws:eks/getNodeGroup:getNodeGroup": get_node_group,
    "aws:eks/getCluster:getCluster": get_cluster,
    "aws:eks/getClusters:getClusters": get_clusters,
    "aws:index/getCallerIdentity:getCallerIdentity": get_caller_identity,
    "aws:index/getPartition:getPartition": get_partition,
    "aws:iam/getSessionContext:getSessionContext": get_session_context,
    "aws:index/getAvailabilityZones:getAvailabilityZones": get_availability_zones,
    "aws:ec2/getSubnet:getSubnet": get_subnet,
    "aws:ec2/getRouteTables:getRouteTables": get_route_tables,
    "aws:ec2/getRouteTable:getRouteTable": get_route_table,
    "aws:ec2/getInstanceType:getInstanceType": get_instance_type,
    "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings": get_instance_type_offerings,
}


# --- Computed outputs of created resources ---------------------------------------------------


def _prefixed_unique_name(prefix: str, name: str) -> str:
    """A name made from `prefix` the way the AWS provider makes one (Terraform's
    `PrefixedUniqueId`: 18 digits of the time, to the ten-thousandth of a second, and a counter
    in 8 hex digits), stable for `name`."""
    digest = hashlib.sha256(name.encode()).hexdigest()
    return f"{prefix}{int(digest[:16], 16) % 10**18:018d}{int(digest[16:24], 16) % 2**32:08x}"


def _node_group(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    group = inputs.get("nodeGroupName") or _prefixed_unique_name(
        inputs.get("nodeGroupNamePrefix", ""), name
    )
    # EKS names a managed node group's Auto Scaling group `eks-<node group>-<uuid>`.
    asg = f"eks-{group}-{uuid.uuid5(uuid.NAMESPACE_URL, group)}"
    return {
        "nodeGroupName": group,
        "arn": f"arn:aws:eks:{inputs.get('region', 'us-east-1')}:{STAND_IN_ACCOUNT}:nodegroup/"
        f"{inputs.get('clusterName')}/{group}/{uuid.uuid5(uuid.NAMESPACE_DNS, group)}",
        "status": "ACTIVE",
        "resources": [{"autoscalingGroups": [{"name": asg}], "remoteAccessSecurityGroupId": ""}],
    }


def _launch_template(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "latestVersion": 1,
        "defaultVersion": 1,
    }


def _role(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A role's ARN and name: the name the program gives it, else the resource's name."""
    role = inputs.get("name") or name
    return {"arn": f"arn:aws:iam::{STAND_IN_ACCOUNT}:role/{role}", "name": role}


def _pod_identity_association(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    association = "a-" + hashlib.sha256(name.encode()).hexdigest()[:17]
    return {"associationId": association, "associationArn": f"arn:aws:eks::{association}"}


def _queue(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An SQS queue's ARN and URL (which is also its id), from the name the program gives it."""
    region, queue = inputs.get("region", "us-east-1"), inputs.get("name", name)
    return {
        "arn": f"arn:aws:sqs:{region}:{STAND_IN_ACCOUNT}:{queue}",
        "url": f"https://sqs.{region}.amazonaws.com/{STAND_IN_ACCOUNT}/{queue}",
    }


def _auto_name(name: str, inputs: dict[str, Any]) -> str:
    """The name the program gives, else the one Pulumi makes (`<resource name>-` and 7 random
    hex digits; stable for the resource's name here)."""
    return inputs.get("name") or f"{name}-{hashlib.sha256(name.encode()).hexdigest()[:7]}"


def _event_rule(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An EventBridge rule on the default bus."""
    rule = _auto_name(name, inputs)
    region = inputs.get("region", "us-east-1")
    return {"name": rule, "arn": f"arn:aws:events:{region}:{STAND_IN_ACCOUNT}:rule/{rule}"}


def _cluster(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A created cluster's endpoint, CA and security group: those of the looked-up stand-in."""
    found = _described({"name": inputs.get("name", name), "region": inputs.get("region")})
    vpc_config = {**inputs.get("vpcConfig", {})}
    vpc_config["clusterSecurityGroupId"] = found["vpcConfig"]["clusterSecurityGroupId"]
    vpc_config["vpcId"] = found["vpcConfig"]["vpcId"]
    return {
        "arn": found["arn"],
        "endpoint": found["endpoint"],
        "certificateAuthority": {"data": STAND_IN_CA},
        "status": "ACTIVE",
        "vpcConfig": vpc_config,
    }


def _kms_key(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    key_id = str(uuid.uuid5(uuid.NAMESPACE_URL, name))
    region = inputs.get("region", "us-east-1")
    return {"keyId": key_id, "arn": f"arn:aws:kms:{region}:{STAND_IN_ACCOUNT}:key/{key_id}"}


OUTPUTS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {
    "aws:eks/cluster:Cluster": _cluster,
    "aws:kms/key:Key": _kms_key,
    "aws:eks/nodeGroup:NodeGroup": _node_group,
    "aws:ec2/launchTemplate:LaunchTemplate": _launch_template,
    "aws:iam/role:Role": _role,
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": _pod_identity_association,
    "aws:sqs/queue:Queue": _queue,
    "aws:cloudwatch/eventRule:EventRule": _event_rule,
    # Karpenter's EC2NodeClass takes a security group and subnets by ids of EC2's shape (`sg-...`,
    # `subnet-...`): its CRD's patterns refuse any other.
    "aws:ec2/securityGroup:SecurityGroup": lambda name, inputs: {"id": _ec2_id("sg", name)},
    "aws:ec2/subnet:Subnet": lambda name, inputs: {"id": _ec2_id("subnet", name)},
    "aws:ec2/placementGroup:PlacementGroup": lambda name, inputs: {
        "name": _auto_name(name, inputs)
    },
}

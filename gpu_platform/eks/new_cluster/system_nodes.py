"""The system node group of a cluster the platform creates: small, on-demand, in the private
subnets of every zone, where what is not a GPU workload runs (CoreDNS, the autoscaler or
Karpenter, the GPU Operator's controllers, Prometheus).

No taint: all of those land there without tolerations, while the GPU pools' own
`nvidia.com/gpu` taint keeps them off the GPUs. Nodes take IMDSv2 only, with a hop limit of 1, so
that no pod reaches the node role's credentials (EKS best practices guide, "Restrict access to
the instance profile assigned to the worker node"), and an encrypted gp3 root volume.

The group follows EKS's newest AL2023 release for the cluster's version unless
`systemNodes.amiReleaseVersion` pins one: a managed node group takes a new AMI only when asked
(CreateNodegroup / UpdateNodegroupVersion `releaseVersion`), so without it these long-lived nodes
would keep their first AMI's kernel and kubelet patches for the life of the minor version. The
release comes from the public SSM parameter EKS publishes per version and AMI type (EKS user
guide, retrieve-ami-id; terraform-aws-eks `use_latest_ami_release_version`), so a `pulumi
preview` shows the rolling update a new release brings. EKS's node auto repair replaces a node
whose kubelet stops reporting, as on the GPU node groups.
"""

from collections.abc import Mapping, Sequence

import pulumi
from pulumi_aws import ec2, eks, ssm

from gpu_platform.config.cluster_create import SYSTEM_NODE_GROUP, EksSystemNodes
from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.node_group import imdsv2_only, node_role
from gpu_platform.eks.node_group_names import node_group_name_prefix
from gpu_platform.instance import lookup_provider
from gpu_platform.rollout_timeouts import eks_update_timeout

SYSTEM_LABEL = "gpu-platform.io/system"
# The AMI types of the EKS-optimized AL2023 images without GPU drivers, by architecture
# (botocore's EKS model, AMITypes).
AMI_TYPES = {"x86_64": "AL2023_x86_64_STANDARD", "arm64": "AL2023_ARM_64_STANDARD"}


def release_parameter(kubernetes_version: str, architecture: str) -> str:
    """The SSM public parameter holding the newest AL2023 standard release for a version."""
    return (
        f"/aws/service/eks/optimized-ami/{kubernetes_version}/amazon-linux-2023/{architecture}"
        "/standard/recommended/release_version"
    )


ROOT_DEVICE = "/dev/xvda"
# One node at a time, so that the controllers on the others keep running.
MAX_UNAVAILABLE = 1


class EksSystemNodeGroup(pulumi.ComponentResource):
    node_group: eks.NodeGroup

    def __init__(
        self,
        name: str,
        cluster: EksCluster,
        cluster_name: pulumi.Input[str],
        spec: EksSystemNodes,
        architecture: str,
        subnet_ids: Sequence[pulumi.Input[str]],
        cni_policy_on_node_role: bool,
        tags: Mapping[str, str],
        after: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpu-platform:eks:SystemNodeGroup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role, attachments = node_role(
            f"{name}-role",
            purpose="system-nodes",
            attachment_prefix=name,
            description=f"System nodes of EKS cluster {cluster.name}",
            cluster=cluster,
            cni_policy_on_node_role=cni_policy_on_node_role,
            opts=child,
            tags=tags,
        )
        template = ec2.LaunchTemplate(
            f"{name}-launch-template",
            description=f"System nodes of EKS cluster {cluster.name}",
            metadata_options=imdsv2_only(hop_limit=1),
            block_device_mappings=[
                ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=ROOT_DEVICE,
                    ebs=ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_type="gp3",
                        volume_size=spec.disk_size_gib,
                        encrypted="true",
                        delete_on_termination="true",
                    ),
                )
            ],
            tag_specifications=[
                ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=dict(tags))
                for kind in ("instance", "volume")
            ],
            tags=dict(tags),
            region=cluster.region,
            opts=child,
        )
        self.node_group = eks.NodeGroup(
            f"{name}-nodes",
            cluster_name=cluster_name,
            node_group_name_prefix=node_group_name_prefix(SYSTEM_NODE_GROUP),
            node_role_arn=role.arn,
            subnet_ids=list(subnet_ids),
            ami_type=AMI_TYPES[architecture],
            version=cluster.version,
            # `insecure_value`: the provider marks `value` secret whatever the parameter, and a
            # public release number shown as [secret] would hide from `pulumi preview` which
            # release the nodes move to.
            release_version=spec.ami_release_version
            or ssm.get_parameter_output(
                name=release_parameter(cluster.version, architecture),
                region=cluster.region,
                opts=pulumi.InvokeOutputOptions(provider=lookup_provider("aws")),
            ).insecure_value,
            node_repair_config=eks.NodeGroupNodeRepairConfigArgs(enabled=True),
            instance_types=list(spec.instance_types),
            capacity_type="ON_DEMAND",
            scaling_config=eks.NodeGroupScalingConfigArgs(
                min_size=spec.min, desired_size=spec.min, max_size=spec.max
            ),
            update_config=eks.NodeGroupUpdateConfigArgs(max_unavailable=MAX_UNAVAILABLE),
            labels={SYSTEM_LABEL: "true"},
            launch_template=eks.NodeGroupLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)
            ),
            tags=dict(tags),
            region=cluster.region,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*attachments, *after],
                # The cluster autoscaler sizes the group between min and max (EKS tags its Auto
                # Scaling group for discovery).
                ignore_changes=["scalingConfig.desiredSize"],
                # A new AMI release rolls every system node, one at a time.
                custom_timeouts=eks_update_timeout(spec.max, MAX_UNAVAILABLE, None),
            ),
        )
        self.register_outputs({"node_group": self.node_group.node_group_name})

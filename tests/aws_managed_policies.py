"""The AWS managed policies the stack attaches to the roles it creates, as AWS publishes them
(their default versions, AmazonEKSWorkerNodePolicy v3, AmazonEKSWorkerNodeMinimalPolicy v1,
AmazonEC2ContainerRegistryPullOnly v1, AmazonEKS_CNI_Policy v5; IAM > Policies, or `aws iam
get-policy-version`). The tests need their statements to check that the permissions boundary
leaves the roles what these grant."""

from typing import Any

MANAGED_POLICIES: dict[str, dict[str, Any]] = {
    "AmazonEKSWorkerNodePolicy": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "WorkerNodePermissions",
                "Effect": "Allow",
                "Action": [
                    "ec2:DescribeInstances",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeRouteTables",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeVolumes",
                    "ec2:DescribeVolumesModifications",
                    "ec2:DescribeVpcs",
                    "eks:DescribeCluster",
                    "eks-auth:AssumeRoleForPodIdentity",
                ],
                "Resource": "*",
            }
        ],
    },
    # EKS Auto Mode's node role's (AWS Managed Policy reference,
    # AmazonEKSWorkerNodeMinimalPolicy, v1).
    "AmazonEKSWorkerNodeMinimalPolicy": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "WorkerNodePermissions",
                "Effect": "Allow",
                "Action": ["eks-auth:AssumeRoleForPodIdentity"],
                "Resource": "*",
            }
        ],
    },
    "AmazonEC2ContainerRegistryPullOnly": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "ecr:GetAuthorizationToken",
                    "ecr:BatchGetImage",
                    "ecr:GetDownloadUrlForLayer",
                    "ecr:BatchImportUpstreamImage",
                ],
                "Resource": "*",
            }
        ],
    },
    "AmazonEKS_CNI_Policy": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AmazonEKSCNIPolicy",
                "Effect": "Allow",
                "Action": [
                    "ec2:AssignPrivateIpAddresses",
                    "ec2:AttachNetworkInterface",
                    "ec2:CreateNetworkInterface",
                    "ec2:DeleteNetworkInterface",
                    "ec2:DescribeInstances",
                    "ec2:DescribeTags",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeSubnets",
                    "ec2:DetachNetworkInterface",
                    "ec2:ModifyNetworkInterfaceAttribute",
                    "ec2:UnassignPrivateIpAddresses",
                ],
                "Resource": "*",
            },
            {
                "Sid": "AmazonEKSCNIPolicyENITag",
                "Effect": "Allow",
                "Action": ["ec2:CreateTags"],
                "Resource": ["arn:aws:ec2:*:*:network-interface/*"],
            },
        ],
    },
}

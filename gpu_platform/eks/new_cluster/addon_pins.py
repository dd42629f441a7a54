"""The versions the platform pins the core EKS add-ons of a cluster it creates to, for each
Kubernetes minor (addon_versions.json, written by derive.py from EKS's DescribeAddonVersions).
Read by the program (`addons.py`) and by `gpu-platform preflight`, which checks each pin against
the region."""

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path

ADDON_VERSIONS_FILE = Path(__file__).with_name("addon_versions.json")
BEFORE_NODES = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")
"""What nodes need to become Ready: created before the system node group."""
AFTER_NODES = ("coredns", "aws-ebs-csi-driver")
"""Deployments, ACTIVE only once their pods run: created after it."""
CORE_ADDONS = (*BEFORE_NODES, *AFTER_NODES)


@cache
def addon_versions() -> Mapping[str, Mapping[str, str]]:
    """Kubernetes minor -> add-on -> version."""
    versions: Mapping[str, Mapping[str, str]] = json.loads(ADDON_VERSIONS_FILE.read_text())[
        "versions"
    ]
    return versions

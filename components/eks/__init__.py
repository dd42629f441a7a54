"""EKS: attach to an existing cluster and create its GPU node groups."""

from components.eks.cloud import EksCloud

__all__ = ["EksCloud"]

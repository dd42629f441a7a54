"""GKE: attach to an existing Standard cluster and create its GPU node pools."""

from components.gke.cloud import GkeCloud

__all__ = ["GkeCloud"]

"""GKE: attach to an existing cluster and create its GPU node groups."""

from components.gke.cloud import GkeCloud

__all__ = ["GkeCloud"]

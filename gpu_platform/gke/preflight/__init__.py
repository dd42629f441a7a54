"""The GKE pre-flight checks."""

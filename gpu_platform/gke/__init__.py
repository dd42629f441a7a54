"""GKE: attach to an existing Standard cluster and create its GPU node pools."""

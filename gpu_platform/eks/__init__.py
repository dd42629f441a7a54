"""EKS: attach to an existing cluster and create its GPU node groups."""

"""Pre-flight checks that are the same for both clouds: findings and the image
registries; each cloud's own checks are in `gpu_platform.eks.preflight` and
`gpu_platform.gke.preflight`."""

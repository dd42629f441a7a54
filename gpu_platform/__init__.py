"""Reusable Pulumi components for GPU node pools on EKS and GKE and their Kubernetes side."""

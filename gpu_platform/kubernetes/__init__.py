"""The Kubernetes half of the GPU platform, the same on every cloud."""

"""The EKS pre-flight checks."""

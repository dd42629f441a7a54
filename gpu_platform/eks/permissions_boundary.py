"""The permissions boundary of the roles the platform creates on AWS (`gpu_platform.eks.iam_roles`),
by name, for what must not load Pulumi to know it (`gpu-platform preflight`)."""

PERMISSIONS_BOUNDARY = "gpu-platform-permissions-boundary"
"""The customer managed policy every role the stack creates carries as its boundary."""

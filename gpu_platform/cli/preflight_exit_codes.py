"""How `gpu-platform preflight` exits, whichever cloud's checks ran: 0 when nothing blocks the
deployment."""

EXIT_BLOCKED = 1
"""A finding blocks the deployment."""
EXIT_BAD_STACK = 2
"""The stack file cannot be read or its configuration is invalid."""
EXIT_CANNOT_CHECK = 4
"""No usable credentials, no way to the cloud, a permission the check needs is missing, or the
cloud did not answer by the deadline."""

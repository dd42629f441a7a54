"""The `gpu-platform` command line: the offline plan, the pre-flight and fit checks."""

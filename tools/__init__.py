"""Command-line tools around the program: the offline plan, the pre-flight and fit checks."""

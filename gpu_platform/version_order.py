"""How release versions compare, everywhere the platform compares them: by their numbers, not as
text, so that 1.33.13 comes after 1.33.9 and 595.100.01 after 595.91.07.

One key for every kind of version it meets: Kubernetes and GKE versions (`1.34.1-gke.1829001`),
EKS AMI releases (`1.35.6-20260714`), Bottlerocket releases (`1.53`), NVIDIA drivers
(`595.91.07`), chart versions (`v26.7.0`) and CUDA releases (`12.4`).
"""

import re


def version_key(version: str) -> tuple[tuple[int, ...], tuple[int | str, ...]]:
    """The numbers of the version, then those (and words) of its build after a `-`:
    `1.35.6-20260714` is ((1, 35, 6), (20260714,)), `v26.7.0` ((26, 7, 0), ())."""
    numbers, _, build = version.removeprefix("v").partition("-")
    return (
        tuple(int(part) for part in numbers.split(".")),
        tuple(int(p) if p.isdigit() else p for p in re.split(r"[.-]", build) if p),
    )

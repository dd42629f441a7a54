"""The pods an EKS-optimized AMI's kubelet admits on each GPU instance type, as nodeadm computes
them (`max_pods.json`, written by `derive.py` beside it)."""

import json
from collections.abc import Mapping
from pathlib import Path

MAX_PODS: Mapping[str, int] = json.loads(Path(__file__).with_name("max_pods.json").read_text())
"""Instance type -> the kubelet's `maxPods` on the AL2023 AMIs."""

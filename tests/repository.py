"""This repository as a Pulumi project: where it is, its stacks and its policy pack."""

from pathlib import Path

from gpu_platform.project import Project

ROOT = Path(__file__).resolve().parent.parent
PROJECT = Project.find(ROOT)
STACKS = PROJECT.stacks()
POLICY_PACK = ROOT / "gpu_platform" / "policy_pack"

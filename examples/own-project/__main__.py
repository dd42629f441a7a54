"""The ML teams' GPU platform: gpu-platform's one component, configured from the stack."""

import pulumi
from components.teams import OWNER

from gpu_platform import GpuPlatform, GpuPlatformArgs

platform = GpuPlatform("gpu-platform", GpuPlatformArgs.from_config())
for name, value in platform.stack_outputs.items():
    pulumi.export(name, value)
pulumi.export("owner", OWNER)

"""GPU platform: GPU node pools, the NVIDIA GPU Operator, monitoring and tenant namespaces.

Composition only: the platform is one component (`gpu_platform.platform.GpuPlatform`) built
from the stack's `gpu-platform:` config, whose every default lives in the config model.
"""

import pulumi

from gpu_platform.platform import GpuPlatform, GpuPlatformArgs

# This project's stacks were created when the program declared the parts at the stack's root.
platform = GpuPlatform("gpu-platform", GpuPlatformArgs.from_config(moved_from_stack_root=True))
for name, value in platform.stack_outputs.items():
    pulumi.export(name, value)

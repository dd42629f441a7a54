"""The package's provider: what Pulumi runs for `PulumiPlugin.yaml` (`runtime: python`).

The engine starts it with its own address as the argument; it serves the provider's gRPC
interface (GetSchema, Construct) and prints the port it listens on.
"""

from importlib.metadata import version

from pulumi.provider.experimental import component_provider_host

from gpu_platform.instance import claim_per_process
from gpu_platform.package.component import GpuPlatform

if __name__ == "__main__":
    # One process serves one deployment's Constructs, each over a connection of its own.
    claim_per_process()
    component_provider_host([GpuPlatform], name="gpu-platform", version=version("gpu-platform"))

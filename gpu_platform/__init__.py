"""Reusable Pulumi components for GPU node pools on EKS and GKE and their Kubernetes side.

```python
from gpu_platform import GpuPlatform, GpuPlatformArgs
```

Every public name of the component (`gpu_platform.platform`, and the facts of a cluster the
program creates, `gpu_platform.cluster_facts`) and of the config model (`gpu_platform.config`)
is importable from here. Each is imported when first asked for: the
command line's modules live in this package too, and a command that only reads stack files
(`preflight`) loads neither the Pulumi SDK nor a cloud's.
"""

import importlib
import importlib.util
from typing import Any

_PLATFORM_NAMES = (
    "GpuPlatform",
    "GpuPlatformArgs",
    "PlatformConfigError",
    "PlatformLockError",
    "PlatformMissingLockEntry",
)
_CLUSTER_FACTS_NAMES = ("EksClusterFacts", "GkeClusterFacts")


def _config_names() -> list[str]:
    return list(importlib.import_module("gpu_platform.config").__all__)


def __getattr__(name: str) -> Any:
    # `from gpu_platform import yaml_documents` asks the package for the submodule before
    # importing it (importlib's _handle_fromlist): answered from the config model, it would
    # import `gpu_platform.config`, which imports the lock, while a module importing it is the
    # lock itself, half initialised. A submodule's name is left to the import system.
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _PLATFORM_NAMES:
        return getattr(importlib.import_module("gpu_platform.platform"), name)
    if name in _CLUSTER_FACTS_NAMES:
        return getattr(importlib.import_module("gpu_platform.cluster_facts"), name)
    if not name.startswith("_") and name in _config_names():
        return getattr(importlib.import_module("gpu_platform.config"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_PLATFORM_NAMES, *_CLUSTER_FACTS_NAMES, *_config_names()})

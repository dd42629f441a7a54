"""The driver image a stack's operator overrides name, against the policy config's list of them.

On GKE Ubuntu each pool's NVIDIADriver runs the image `operator.overrides.driver.repository` and
`image` name (`gpu_platform.kubernetes.nvidia_driver`), and the policy pack's
`gpu-operator-resources` refuses an NVIDIADriver running an image neither NVIDIA's nor listed in
its `driverImages`. The stack's config cannot be checked against that list when it is loaded:
the program does not get the policy config the engine runs the pack with (a file given to
`pulumi preview --policy-pack-config`, or an organisation's policy group). The offline plan does
read one, and names both keys where they disagree.
"""

from collections.abc import Mapping
from typing import Any

from gpu_platform.kubernetes.nvidia_driver import API_VERSION, DRIVER_IMAGE, DRIVER_REPOSITORY, KIND
from gpu_platform.offline.program import Plan

NVIDIA_DRIVER = f"kubernetes:{API_VERSION}:{KIND}"
POLICY = "gpu-operator-resources"
SETTING = "driverImages"


def undeclared_driver_images(
    plan: Plan, policy_config: Mapping[str, Any] | None, where: str
) -> list[str]:
    """A note for each driver image the plan's NVIDIADrivers run that is not NVIDIA's and that
    `policy_config` (read from `where`) does not list, unless it disables the policy."""
    entry = (policy_config or {}).get(POLICY, {})
    if not isinstance(entry, Mapping):
        entry = {"enforcementLevel": entry}
    if entry.get("enforcementLevel") == "disabled":
        return []
    declared = {f"{DRIVER_REPOSITORY}/{DRIVER_IMAGE}", *entry.get(SETTING, [])}
    images = {
        f"{spec.get('repository')}/{spec.get('image')}"
        for driver in plan.of_type(NVIDIA_DRIVER)
        if isinstance(spec := driver.inputs.get("spec"), Mapping)
    }
    return [
        f'operator.overrides.driver.repository and image name the driver image "{image}", '
        f"which {where} does not list in {POLICY}' {SETTING}: the policy pack refuses every "
        f'pool\'s NVIDIADriver that runs it. Add "{image}" to that list in the same change as '
        "the setting (docs/upgrades.md)."
        for image in sorted(images - declared)
    ]

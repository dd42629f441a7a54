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
from gpu_platform.offline.analyzer import PolicyInfo, reconcile_config
from gpu_platform.offline.program import Plan

NVIDIA_DRIVER = f"kubernetes:{API_VERSION}:{KIND}"
POLICY = "gpu-operator-resources"
SETTING = "driverImages"
# The policy as the pack declares it (gpu_platform/policy_pack/gpu_operator_resources.py), as
# far as its level and this setting go.
_POLICY = PolicyInfo(POLICY, "", "mandatory", {SETTING: {"default": []}}, stack_policy=False)


def undeclared_driver_images(
    plan: Plan, policy_config: Mapping[str, Any] | None, where: str
) -> list[str]:
    """A note for each driver image the plan's NVIDIADrivers run that is not NVIDIA's and that
    `policy_config` (read from `where`) does not list, unless it disables the policy: its level
    and list as the engine reconciles them, `all` included."""
    given = {k: v for k, v in (policy_config or {}).items() if k in ("all", POLICY)}
    level, settings = reconcile_config([_POLICY], given, strict=False)[POLICY]
    if level == "disabled":
        return []
    verdict = "warns of" if level == "advisory" else "refuses"
    declared = {f"{DRIVER_REPOSITORY}/{DRIVER_IMAGE}", *settings[SETTING]}
    images = {
        f"{spec.get('repository')}/{spec.get('image')}"
        for driver in plan.of_type(NVIDIA_DRIVER)
        if isinstance(spec := driver.inputs.get("spec"), Mapping)
    }
    return [
        f'operator.overrides.driver.repository and image name the driver image "{image}", '
        f"which {where} does not list in {POLICY}' {SETTING}: the policy pack {verdict} every "
        f'pool\'s NVIDIADriver that runs it. Add "{image}" to that list in the same change as '
        "the setting (docs/upgrades.md)."
        for image in sorted(images - declared)
    ]

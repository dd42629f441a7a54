"""An EFA pool's EC2NodeClass `networkInterfaces`: kept apart from `node_pool` so that
preflight, which compares them with a live EC2NodeClass's, loads no Pulumi SDK."""

from typing import Any


def efa_network_interfaces(interfaces: int) -> list[dict[str, Any]]:
    """An EFA pool's interfaces: the primary, an ordinary (ENA) `interface` on card 0, and one
    `efa-only` device on each of the `interfaces` network cards, as the EC2NodeClass CRD allows
    them (a primary `interface` at card 0 device 0, at most one EFA per card; no `efa` type).

    Listed, they are what every node of the pool gets: Karpenter launches exactly these
    (`generateNetworkInterfaces`, pkg/providers/launchtemplate/launchtemplate.go at v1.14.1),
    advertises one `vpc.amazonaws.com/efa` per `efa-only` entry (`efas`,
    pkg/providers/instancetype/types.go) and leaves out instance types with fewer cards
    (pkg/providers/instancetype/compatibility). Unlisted, a node would get EFA only when the pod
    it was launched for asks for `vpc.amazonaws.com/efa` (`getEFACountForInstance`,
    pkg/providers/instance/instance.go), and an ordinary interface otherwise, on which NCCL
    falls back to TCP sockets for every later job."""
    primary = {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    # AWS's layout for instances of several network cards (EC2 user guide, "Maximize network
    # bandwidth on Amazon EC2 instances with multiple network cards"): an ENA primary, an
    # `efa-only` beside it at card 0 device 1, and an `efa-only` at device 0 of every further
    # card. The CRD's rules admit it (a primary `interface` at card 0 device 0, unique
    # card/device pairs, one `efa-only` per card; pkg/apis/v1/ec2nodeclass.go at v1.14.1), as
    # does the compatibility filter (a device index below the card's `MaximumNetworkInterfaces`,
    # pkg/providers/instancetype/compatibility/compatibility.go). The node group's launch
    # template differs: it has no ENA primary, its card 0 device 0 is an `efa` interface
    # (`gpu_platform.eks.efa`).
    efa_only = [
        {"networkCardIndex": card, "deviceIndex": 0 if card else 1, "interfaceType": "efa-only"}
        for card in range(interfaces)
    ]
    return [primary, *efa_only]

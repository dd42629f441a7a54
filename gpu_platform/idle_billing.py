"""How long a pool's GPU node keeps billing after its last pod ends, and what it bills before
its first: `idle_billing`, from the settings of whatever removes the pool's empty nodes.

Each provisioner has its own terms, each a delay with the upstream source that sets it:

- the cluster autoscaler (EKS managed node groups) finds a node unneeded on one of its loops
  (`--scan-interval`), removes it once it has been unneeded for the group's
  `--scale-down-unneeded-time` (the platform's per-group tag), on a loop again, tainting it and
  deleting it `--node-delete-delay-after-taint` later; and not while the whole cluster is in a
  cooldown, until `--scale-down-delay-after-add` after its last scale-up of any node group or
  `--scale-down-delay-after-failure` after its last failed scale-down. Those cooldowns are
  shown apart (`deferred_by`): they run from events of the cluster's, not of the node's, so in a
  cluster that keeps scaling up they put off the node's removal without bound;
- Karpenter marks an empty node consolidatable `consolidateAfter` after its last pod event, finds
  it on its disruption loop and waits out a validation delay before it deletes it, as many at
  once as the pool's budget for empty nodes allows; EKS Auto Mode's Karpenter honours the same
  NodePool settings, and its loop and validation delay are assumed to be Karpenter's, as AWS
  publishes neither them nor its Karpenter version;
- GKE's own cluster autoscaler checks its nodes every 10 seconds, marks an underutilized one
  for removal and removes it if it is still underutilized 10 minutes later (GKE's "Troubleshoot
  cluster autoscaler not scaling down", for the `balanced` profile): a figure for `balanced`,
  which the clusters the platform creates keep (it never sets `autoscaling_profile`) and which
  an attached cluster's profile, not read offline, is assumed to be; GKE publishes no number
  for `optimize-utilization`. The one setting GKE offers to shorten it, a ComputeClass's
  `autoscalingPolicy.consolidationDelayMinutes`, is not used: binding a node pool that is not
  auto-created takes the `cloud.google.com/compute-class` node label and a `NoSchedule` taint of
  that key, which GKE lets pass only pods that select the class with a nodeSelector
  ("Configure manually-created node pools for ComputeClass use" and "Request ComputeClasses in
  workloads", cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes):
  every tenant pod that selects the pool by its own labels would stay pending
  (docs/idle-billing.md).

A new node's validation (`gpu_platform.kubernetes.node_validation`) bills too, but before the
node's first pod, not after its last: it is shown apart and never added to the idle figure.
The instance's own shutdown after the provisioner deletes it is left out: no setting of the
platform's changes it.
"""

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from gpu_platform.config import StackConfig
from gpu_platform.kubernetes.node_validation.duration import worst_case_seconds
from gpu_platform.node_identity import ResolvedPool

MOST_IDLE_SECONDS = 600
"""The idle figure the defaults keep on-demand and spot pools within, and past which a setting
is warned of: ten minutes."""
WARNED_CAPACITIES = ("on-demand", "spot")
"""Capacities whose idle node bills for nothing: reserved capacity and Capacity Blocks bill
whether a node runs on them or not."""

# Cluster autoscaler, the same at every pinned release (kubernetes/autoscaler
# cluster-autoscaler-1.33.6 to cluster-autoscaler-1.36.1), each left at its default:
# `DefaultScanInterval` and `DefaultScaleDownDelayAfterFailure` in cluster-autoscaler/config/
# const.go, and `--node-delete-delay-after-taint` in config/flags/flags.go, which an empty node
# waits out after its `ToBeDeletedByClusterAutoscaler` taint (`startDeletion`, then
# `deleteNodesAsync`, core/scaledown/actuation/actuator.go).
AUTOSCALER_SCAN_SECONDS = 10
AUTOSCALER_DELETE_DELAY_AFTER_TAINT_SECONDS = 5
AUTOSCALER_SCALE_DOWN_DELAY_AFTER_FAILURE_MINUTES = 3
AUTOSCALER_SCALE_DOWN_DELAY_AFTER_ADD_MINUTES = 10
"""`--scale-down-delay-after-add`'s default (cluster-autoscaler/config/flags/flags.go), the
longest the platform sets it to."""

# Karpenter v1.14.1 (kubernetes-sigs/karpenter): `pollingPeriod` in
# pkg/controllers/disruption/controller.go and `commandValidationDelay` in
# pkg/controllers/disruption/consolidation.go, which emptiness waits out (emptiness.go).
KARPENTER_POLL_SECONDS = 10
KARPENTER_VALIDATION_SECONDS = 15

# GKE's "Troubleshoot cluster autoscaler not scaling down", "Understand when cluster autoscaler
# scales down your nodes": "Every 10 seconds cluster autoscaler checks the utilization factor",
# and "If the node is still underutilized after 10 minutes, cluster autoscaler should remove the
# node", both for the balanced profile.
GKE_SCALE_DOWN_DOCS = (
    "https://cloud.google.com/kubernetes-engine/docs/troubleshooting/cluster-autoscaler-scale-down"
)
GKE_CHECK_SECONDS = 10
GKE_UNDERUTILIZED_SECONDS = 600


@dataclass(frozen=True)
class Delay:
    """One term of a figure: what waits, how long (None: no published bound), and the upstream
    source of the delay."""

    term: str
    seconds: int | None
    source: str


@dataclass(frozen=True)
class IdleBilling:
    """What a pool's node bills without work: after its last pod, and before its first."""

    pool: str
    capacity: str
    provisioner: str
    """`cluster-autoscaler`, `karpenter` or `gke`: what removes the pool's empty nodes."""
    setting: str
    """The config key, as users spell it, that decides the figure most; on GKE, the cluster's
    autoscaling profile, which no key of the platform's sets and the figure takes to be
    balanced."""
    after_last_pod: tuple[Delay, ...]
    before_first_pod: tuple[Delay, ...]
    deferred_by: tuple[Delay, ...] = ()
    """Cooldowns of the whole cluster's that hold every removal until their delay after an event
    of any node group's (a scale-up, a failed scale-down): the node goes at the later of the
    idle figure and the end of the last of them, so they are a bound only on a cluster that
    does not keep scaling."""

    @property
    def idle_seconds(self) -> int | None:
        """The longest a node bills after its last pod ends; None where a term has no bound."""
        seconds = [delay.seconds for delay in self.after_last_pod]
        return None if None in seconds else sum(s for s in seconds if s is not None)


def scale_down_delay_after_add_minutes(gpu_node_idle_minutes: int) -> int:
    """The `--scale-down-delay-after-add` the platform gives the autoscaler: the upstream default,
    shortened to the GPU nodes' unneeded time so that the cooldown never outlasts it. The
    cooldown is the cluster's (`isScaleDownInCooldown`, core/static_autoscaler.go), while a
    node's unneeded time runs through it (`UpdateClusterState` comes first there), so a node
    whose last pod ends just after a scale-up goes once the longer of the two has passed.

    The cooldown stays the cluster's (`--scale-down-delay-type-local` is left false): made per
    node group, `ScaleDownCandidatesDelayProcessor` drops the group's nodes from the candidates
    before `UpdateClusterState`, whose `unneeded.Nodes.Update` forgets how long a dropped node
    has been unneeded (processors/scaledowncandidates/, core/scaledown/unneeded/nodes.go), so a
    scale-up of the node's own group would put its removal off to the cooldown and then the
    whole unneeded time after it, over ten minutes at the defaults."""
    return min(gpu_node_idle_minutes, AUTOSCALER_SCALE_DOWN_DELAY_AFTER_ADD_MINUTES)


def idle_billing(config: StackConfig, pool: ResolvedPool) -> IdleBilling:
    """The pool's figures, from the stack's settings for its provisioner."""
    spec = pool.spec
    deferred: tuple[Delay, ...] = ()
    if config.cloud == "gcp":
        provisioner, setting, after = "gke", GKE_SETTING, _gke_terms()
    elif config.uses_node_pools:
        provisioner, (setting, after) = config.provisioner, _karpenter_terms(config, pool)
    else:
        provisioner, setting = "cluster-autoscaler", "autoscaler.gpuNodeIdleMinutes"
        after = _autoscaler_terms(config.autoscaler.gpu_node_idle_minutes)
        deferred = _autoscaler_cooldowns(config.autoscaler.gpu_node_idle_minutes)
    validation = worst_case_seconds(spec.validation, pool.gpu.count)
    before = (
        (
            Delay(
                f"a new node's validation, at its tools' timeouts (pools[{pool.index}].validation)",
                validation,
                "gpu_platform/kubernetes/node_validation/duration.py",
            ),
        )
        if validation
        else ()
    )
    return IdleBilling(spec.name, spec.capacity, provisioner, setting, after, before, deferred)


def _autoscaler_terms(idle_minutes: int) -> tuple[Delay, ...]:
    source = "kubernetes/autoscaler cluster-autoscaler-1.33.6 to 1.36.1"
    return (
        Delay(
            "--scan-interval: the loop that first finds the node unneeded",
            AUTOSCALER_SCAN_SECONDS,
            f"{source}, cluster-autoscaler/config/const.go DefaultScanInterval",
        ),
        Delay(
            "--scale-down-unneeded-time, per node group (autoscaler.gpuNodeIdleMinutes)",
            idle_minutes * 60,
            f"{source}, cluster-autoscaler/cloudprovider/aws/aws_manager.go GetOptions",
        ),
        Delay(
            "--scan-interval: the loop that removes it once unneeded long enough",
            AUTOSCALER_SCAN_SECONDS,
            f"{source}, cluster-autoscaler/core/static_autoscaler.go RunOnce",
        ),
        Delay(
            "--node-delete-delay-after-taint: from its deletion taint to its deletion",
            AUTOSCALER_DELETE_DELAY_AFTER_TAINT_SECONDS,
            f"{source}, cluster-autoscaler/core/scaledown/actuation/actuator.go startDeletion",
        ),
    )


def _autoscaler_cooldowns(idle_minutes: int) -> tuple[Delay, ...]:
    source = (
        "kubernetes/autoscaler cluster-autoscaler-1.33.6 to 1.36.1,"
        " cluster-autoscaler/core/static_autoscaler.go isScaleDownInCooldown"
    )
    cooldown = scale_down_delay_after_add_minutes(idle_minutes)
    failure = AUTOSCALER_SCALE_DOWN_DELAY_AFTER_FAILURE_MINUTES
    return (
        Delay(
            f"--scale-down-delay-after-add: until {cooldown}m after the cluster's last scale-up,"
            " of any node group",
            cooldown * 60,
            source,
        ),
        Delay(
            f"--scale-down-delay-after-failure: until {failure}m after the cluster's last"
            " failed scale-down",
            failure * 60,
            source,
        ),
    )


# EKS Auto Mode's Karpenter: AWS publishes the NodePool's disruption settings it honours
# (create-node-pool.adoc, "Disruption") and that it consolidates "periodically"
# (auto-cost-control.adoc), not which Karpenter it runs: its loop and validation delay are taken
# to be v1.14.1's.
AUTO_MODE_DISRUPTION_DOCS = (
    "awsdocs/amazon-eks-user-guide latest/ug/automode/create-node-pool.adoc, Disruption"
)
AUTO_MODE_ASSUMED = (
    " (assumed equal to Karpenter v1.14.1's: AWS publishes no Karpenter version for EKS Auto Mode)"
)


def _karpenter_terms(config: StackConfig, pool: ResolvedPool) -> tuple[str, tuple[Delay, ...]]:
    # Imported here: an autoscaler or GKE stack loads nothing of Karpenter's side.
    from gpu_platform.eks.karpenter.node_pool import consolidate_after_minutes

    source = "kubernetes-sigs/karpenter v1.14.1"
    auto_mode = config.uses_auto_mode
    assumed = AUTO_MODE_ASSUMED if auto_mode else ""
    # On Auto Mode the NodePool's own knobs are AWS's documented ones.
    knob_source = f"{AUTO_MODE_DISRUPTION_DOCS}; {source}" if auto_mode else source
    aws = pool.spec.aws
    own = aws.consolidate_after_minutes is not None
    setting = (
        f"pools[{pool.index}].aws.consolidateAfterMinutes"
        if own
        else "karpenter.consolidateAfterMinutes"
    )
    minutes = consolidate_after_minutes(pool.spec, config.karpenter.consolidate_after_minutes)
    budget = aws.empty_nodes_budget_percent
    return setting, (
        Delay(
            f"consolidateAfter after the last pod event ({setting}), consolidationPolicy WhenEmpty",
            None if minutes is None else minutes * 60,
            f"{knob_source}, pkg/controllers/nodeclaim/disruption/consolidation.go",
        ),
        Delay(
            "the disruption loop's polling period" + assumed,
            KARPENTER_POLL_SECONDS,
            f"{source}, pkg/controllers/disruption/controller.go pollingPeriod",
        ),
        Delay(
            "the emptiness command's validation delay" + assumed,
            KARPENTER_VALIDATION_SECONDS,
            f"{source}, pkg/controllers/disruption/consolidation.go commandValidationDelay",
        ),
        Delay(
            f"budget for empty nodes {budget}% (pools[{pool.index}].aws.emptyNodesBudgetPercent):"
            + (" every empty node at once" if budget == 100 else " more wait for later loops"),
            0,
            f"{knob_source}, pkg/apis/v1/nodepool.go GetAllowedDisruptions",
        ),
    )


GKE_SETTING = "the cluster's autoscaling profile, taken to be balanced"
GKE_PROFILE = (
    " (balanced profile: the platform creates clusters without autoscaling_profile and does not"
    " read an attached cluster's; GKE publishes no figure for optimize-utilization)"
)


def _gke_terms() -> tuple[Delay, ...]:
    return (
        Delay(
            "GKE's autoscaler check, every 10 seconds, that first finds the node underutilized"
            + GKE_PROFILE,
            GKE_CHECK_SECONDS,
            GKE_SCALE_DOWN_DOCS,
        ),
        Delay(
            "marked for removal, watched for 10 minutes to stay underutilized",
            GKE_UNDERUTILIZED_SECONDS,
            GKE_SCALE_DOWN_DOCS,
        ),
        Delay(
            "the check that removes it once underutilized 10 minutes",
            GKE_CHECK_SECONDS,
            GKE_SCALE_DOWN_DOCS,
        ),
    )


def idle_billing_output(figures: Iterable[IdleBilling]) -> dict[str, dict[str, Any]]:
    """The figures as the stack exports them (`idleBilling`): pool name -> its figures."""
    return {
        figure.pool: {
            "capacity": figure.capacity,
            "provisioner": figure.provisioner,
            "setting": figure.setting,
            "idleSeconds": figure.idle_seconds,
            "afterLastPod": [asdict(delay) for delay in figure.after_last_pod],
            "deferredBy": [asdict(delay) for delay in figure.deferred_by],
            "beforeFirstPod": [asdict(delay) for delay in figure.before_first_pod],
        }
        for figure in figures
    }


def idle_warnings(output: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A warning for each on-demand or spot pool whose node bills more than ten minutes after
    its last pod, or has no bound, naming the setting that makes it so (from the stack's
    `idleBilling` output)."""
    warnings = []
    for name, figure in output.items():
        seconds = figure["idleSeconds"]
        if figure["capacity"] not in WARNED_CAPACITIES:
            continue
        if seconds is not None and seconds <= MOST_IDLE_SECONDS:
            continue
        if figure["provisioner"] == "gke" and seconds is not None:
            warnings.append(
                f"pool {name} ({figure['capacity']}): an empty GPU node bills for"
                f" {minutes_text(seconds)} after its last pod ends, over"
                f" {MOST_IDLE_SECONDS // 60} minutes by GKE's published timing at"
                f" {figure['setting']}; only a ComputeClass's"
                " autoscalingPolicy.consolidationDelayMinutes shortens it, and binding the pool"
                " to one would taint it against every pod that does not select the class"
                " (docs/idle-billing.md#gke)"
            )
            continue
        shown = "until removed by hand" if seconds is None else f"for {minutes_text(seconds)}"
        warnings.append(
            f"pool {name} ({figure['capacity']}): an empty GPU node bills {shown} after its last"
            f" pod ends, over the {MOST_IDLE_SECONDS // 60} minutes the defaults keep to;"
            f" set by {figure['setting']}"
        )
    return warnings


def minutes_text(seconds: int) -> str:
    """`9m20s`; `9m` for whole minutes, `10s` under one."""
    minutes, rest = divmod(seconds, 60)
    if not minutes:
        return f"{rest}s"
    return f"{minutes}m{rest}s" if rest else f"{minutes}m"

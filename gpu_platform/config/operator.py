"""The NVIDIA GPU Operator release, and the GPU metrics, alerts and dashboards around it."""

from typing import Any

from pydantic import Field

from gpu_platform.config.fields import (
    DnsLabel,
    DriverVersion,
    HttpsUrl,
    HttpUrl,
    LabelKey,
    LabelValue,
    Model,
    OperatorChartVersion,
)
from gpu_platform.config.pools import GpuPoolSpec
from gpu_platform.versions import (
    GPU_OPERATOR_CHART,
    GPU_OPERATOR_DRIVER_VERSION,
    KUBE_PROMETHEUS_STACK_CHART,
)

GPU_ID_TYPE_ENV = "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"
"""How dcgm-exporter matches GPUs to pods (pkg/cmd/app.go `--kubernetes-gpu-id-type`), which the
platform sets for each of its exporters from the device plugin of their nodes."""
DRA_ENV = "KUBERNETES_ENABLE_DRA"
"""Whether dcgm-exporter attributes the GPUs of DRA claims to the pods claiming them (pkg/cmd/
app.go `--kubernetes-enable-dra`), which the platform turns on where a pool uses DRA."""


class OperatorSpec(Model):
    """The NVIDIA GPU Operator release."""

    chart_version: OperatorChartVersion = GPU_OPERATOR_CHART.version
    """The `gpu-operator` chart version. The values the platform sets are checked against the
    pinned version's keys only: another version is for trying an upgrade in one environment,
    whose policy config declares the release (`platform-release-rollback`'s
    `platformReleases`: docs/upgrades.md). Not beside a DRA pool, whose premises were read at the
    pinned version (docs/dra.md)."""
    repository: HttpsUrl = GPU_OPERATOR_CHART.repository
    """The Helm repository serving the chart, for a mirror of NVIDIA's; the stack's policy
    config declares the mirrored release (`platform-release-rollback`'s `platformReleases`:
    docs/upgrades.md)."""
    namespace: DnsLabel = "gpu-operator"
    """The operator's own namespace, which the platform runs as Pod Security `privileged`: the
    drivers, toolkit and device plugin need the host. The only other is node-exporter's, where
    the platform installs the Prometheus stack."""
    timeout_seconds: int | None = Field(default=None, ge=300, le=3600)
    """How long Helm waits for the release to be ready (its CRD upgrade Job, the operator, and
    node-feature-discovery's worker on every node), and then for a rollback of a failed
    upgrade as long again. Unset: 900 s and 5 s more for each node the GPU pools can have
    together at their `max`, at most 3600 s. The drivers, toolkit and device plugin the
    operator starts are not waited for."""
    critical_pod_quota: int = Field(default=1000, ge=100, le=100000)
    """GKE only: how many `system-node-critical`/`system-cluster-critical` pods the operator's
    namespace may hold. GKE admits them outside kube-system only under a quota, and the chart's
    node-feature-discovery worker runs on every node of the cluster, GPU or not, beside about
    eight operator pods on each GPU node: keep it above all of those together."""
    driver_version: DriverVersion = GPU_OPERATOR_DRIVER_VERSION
    """GKE Ubuntu: the NVIDIA driver the operator builds on the nodes of every pool that sets
    no `gcp.driverVersion`, pinned so that a chart upgrade does not move it. A new one rolls out
    through the operator's upgrade controller, pool by pool within
    `driverUpgradeMaxUnavailablePercent`."""
    driver_upgrade_max_unavailable_percent: int = Field(default=25, ge=1, le=100)
    """GKE Ubuntu: the most nodes of a pool the operator takes out of service at once to load a
    new driver (at most one node of a pool at a time is upgraded, whatever the share)."""
    driver_upgrade_job_wait_minutes: int = Field(default=1440, ge=0, le=10080)
    """GKE Ubuntu: how long the operator waits for the Jobs' pods on a node to finish before it
    deletes the GPU pods left and loads the new driver there; 0 waits for ever (not with a
    `canaryOf` pool, whose gate waits for the new driver on a canary node)."""
    overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Chart values per top-level component (`dcgmExporter`, `driver`, ...), deep-merged over
    the platform's own values last: maps key by key, lists replaced whole, except
    `dcgmExporter.env`, merged by `name` into the platform's (an entry of a name the platform
    sets takes its place). Its entries need a `name`, and none may be
    `DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE`, which the platform sets from each exporter's device
    plugin. Component names are checked against the chart's. An operand's image is its
    `repository`, `image` (a name, with no tag, digest or port) and `version` together, or
    `image` alone as the whole reference (`registry/name:tag[@sha256:digest]`) with
    `repository: ""` and `version: ""` set too, as the operator reads them; `validator`'s and
    `nodeStatusExporter`'s only the first, as the chart renders their empty `version` as its
    own. The ClusterPolicy is the chart's custom resource:
    `clusterPolicy.deployCR` other than true and `gpuCluster.deployCR` other than false are
    refused (docs/dra.md). With pools GKE shares, `dcgm.enabled`, `cdi.nriPluginEnabled` and
    `dcgmExporter.hpcJobMapping.enabled` are refused, which the exporter on those nodes cannot
    follow (docs/gpu-sharing.md); with DRA pools, `devicePlugin.enabled` other than false, a
    `dcgmExporter.env` entry `KUBERNETES_ENABLE_DRA`, a `dcgmExporter.args` flag
    `--kubernetes-enable-dra` and an exporter image older than the pinned chart's
    (docs/dra.md). `namespaceOverride`
    and `extraObjects`, `extraManifests` or `extraResources` are refused at any depth: they
    would make the release one the policy pack takes for the stack's own (docs/concepts.md,
    "Helm releases"). The pack judges no other value set here, but on GKE Ubuntu
    `driver.repository` and `driver.image`: every pool's NVIDIADriver runs the image they name,
    which the stack's policy config lists as `<repository>/<image>` in
    `gpu-operator-resources`' `driverImages` (a mirror of NVIDIA's driver), or the pack refuses
    those NVIDIADrivers; `gpu-platform plan` says so by key (docs/upgrades.md, "A mirror of the
    driver on GKE Ubuntu")."""


class MonitoringSpec(Model):
    """GPU metrics, alerts and dashboards."""

    namespace: DnsLabel = "monitoring"
    """Where the GPU alert rules and dashboard go, and the Prometheus stack when installed; not
    the operator's namespace. The platform creates it only with `installPrometheusStack`;
    otherwise it must already exist and be one the cluster's Prometheus reads rules from and its
    Grafana reads dashboards from."""
    install_prometheus_stack: bool = False
    """Install a pinned kube-prometheus-stack; leave off where the cluster already runs the
    Prometheus Operator. Required with `cluster.create`: a created cluster has none. Its
    namespace enforces Pod Security `baseline`; its node-exporter, which needs the host, runs in
    `<namespace>-node-exporter`, `privileged`."""
    service_monitor_labels: dict[LabelKey, LabelValue] = Field(
        default_factory=lambda: {"release": KUBE_PROMETHEUS_STACK_CHART.name}
    )
    """Labels the cluster's Prometheus selects ServiceMonitors and PrometheusRules by. With
    `installPrometheusStack` they must include `release: kube-prometheus-stack`, the installed
    stack's selector."""
    idle_gpu_minutes: int = Field(default=30, ge=5, le=1440)
    """How long a GPU held by a pod may stay idle before the alert fires."""
    idle_gpu_utilization_percent: int = Field(default=5, ge=1, le=50)
    """GPU utilisation, in percent, below which a GPU held by a pod counts as idle."""
    framebuffer_full_percent: int = Field(default=90, ge=50, le=99)
    """GPU memory use, in percent of used plus free, above which a pod's GPU counts as nearly
    full."""
    team_label: LabelKey = "team"
    """The namespace label whose value names the team a namespace belongs to: GPU-hours are
    recorded per namespace and per team, and `teamIdleGpuPercent` judges each team
    (docs/gpu-hours.md). kube-state-metrics must export it on `kube_namespace_labels`, and the
    pool label `gpu-platform.io/pool` on `kube_node_labels`: the installed Prometheus stack's
    does; another must allow both (`--metric-labels-allowlist`)."""
    team_idle_gpu_percent: int = Field(default=50, ge=1, le=99)
    """The share, in percent, of the GPU-hours a team's namespaces held in the last hour that
    did no work, above which (for an hour) the team's idle alert fires. 50 keeps a job's start
    quiet unless its GPUs idle for more than half of its first hour."""
    google_managed_prometheus: bool = False
    """GKE only: also have Google Cloud Managed Service for Prometheus scrape the DCGM exporters
    (the operator's, and on nodes whose GPUs GKE shares the platform's), under the job
    `nvidia-dcgm-exporter` the rules select, and evaluate the recording rules
    (ClusterRules), which a query frontend as `prometheusUrl` then answers from. Its GPU series
    keep the `pod`, `namespace` and `container` of the workload holding each GPU, as on
    Prometheus (not `exported_pod`). The alert rules and the dashboard remain Prometheus
    Operator and Grafana objects, so the cluster still needs the Prometheus Operator's CRDs (or
    `installPrometheusStack`). On a cluster the platform creates, it also turns on GKE's managed
    collection, which installs the Managed Service's CRDs."""
    prometheus_url: HttpUrl | None = None
    """Where the enforcer of `namespaces[].gpuIdleMinutes` queries Prometheus's HTTP API, with
    no credentials: a Service of the cluster's Prometheus, such as
    `http://prometheus-operated.monitoring.svc:9090` (the Prometheus Operator's), or a query
    frontend of a managed one. By default, the Prometheus of `installPrometheusStack`."""

    @property
    def query_url(self) -> str | None:
        """The Prometheus the platform's own jobs query: `prometheusUrl`, else the installed
        stack's, else None (none known)."""
        if self.prometheus_url is not None:
            return self.prometheus_url
        if not self.install_prometheus_stack:
            return None
        # The stack's release is named after its chart, and so its Prometheus Service; 9090 is
        # the chart's `prometheus.service.port`.
        release = KUBE_PROMETHEUS_STACK_CHART.name
        return f"http://{release}-prometheus.{self.namespace}.svc:9090"

    @property
    def node_exporter_namespace(self) -> str:
        """Where the installed stack's node-exporter runs: a namespace of its own, the only one
        of the stack that is `privileged`."""
        return f"{self.namespace}-node-exporter"


# The operator's driver settings: they only act where it builds the driver (GKE Ubuntu).
OPERATOR_DRIVER_OPTIONS = (
    "driver_version",
    "driver_upgrade_max_unavailable_percent",
    "driver_upgrade_job_wait_minutes",
)


def pool_driver_version(operator: OperatorSpec, pool: GpuPoolSpec) -> str:
    """The NVIDIA driver the GPU Operator builds on a GKE Ubuntu pool's nodes."""
    return pool.gcp.driver_version or operator.driver_version

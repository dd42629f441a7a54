"""The labels and resource names by which a queued namespace and its GPU pods are known, shared
by what the program declares and by what `gpu-platform preflight` reads in the cluster: plain
constants, so that preflight loads no Pulumi SDK."""

NVIDIA_RESOURCE_PREFIX = "nvidia.com/"
"""Every resource NVIDIA's device plugin and DRA driver advertise starts with it."""
PODSET_LABEL = "kueue.x-k8s.io/podset"
"""The label Kueue puts on an admitted job's pod template (`PodSetLabel`,
pkg/constants/constants.go at v0.19.2)."""
QUEUED_NAMESPACE_LABEL = "gpu-platform.io/queue"
"""On a tenant namespace whose jobs go through its queue: the LocalQueue's name. Kueue's
webhooks act on the namespaces that carry it, and the policy pack holds their GPU jobs to it."""

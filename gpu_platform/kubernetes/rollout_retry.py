"""How late a Job's retry of a smoke test that waits for a node's new driver may start.

The smoke test's deadline allows for it (`tenant_namespace`), and so does Kueue's
`recoveryTimeout` for a queued namespace's smoke test (`kueue.manager_config`).
"""

# How late a pod that waits for a node's new driver may start after the node got it: GPU
# feature discovery relabels every 60 s (gpu-operator v26.7.0
# assets/gpu-feature-discovery/0500_daemonset.yaml), and the Job controller delays each new pod
# after failed ones, those its podFailurePolicy ignores included, by a backoff that doubles up
# to ten minutes (kubernetes pkg/controller/job: getNewFinishedPods counts every failed pod,
# MaxJobPodFailureBackOff, v1.33 to v1.35; kubernetes/kubernetes#130881).
RETRY_LAG_SECONDS = 60 + 600

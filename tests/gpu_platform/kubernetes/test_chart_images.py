"""The Prometheus stack's images, read from its charts' values."""

from gpu_platform.kubernetes.chart_images import image_repositories


def test_every_image_map_of_the_values_is_read() -> None:
    # kube-prometheus-stack 88.5.3 values.yaml (prometheus-community/helm-charts): an image is a
    # map of `registry`, `repository`, `tag` and `sha`, at any depth.
    values = {
        "prometheusOperator": {
            "admissionWebhooks": {
                "patch": {
                    "image": {
                        "registry": "ghcr.io",
                        "repository": "jkroepke/kube-webhook-certgen",
                        "tag": "1.8.7",
                        "sha": "",
                    }
                }
            },
            "image": {
                "registry": "quay.io",
                "repository": "prometheus-operator/prometheus-operator",
            },
        },
        "global": {"imageRegistry": ""},
        "extraContainers": [{"image": {"registry": "docker.io", "repository": "busybox"}}],
    }

    assert sorted(image_repositories(values)) == [
        "docker.io/busybox",
        "ghcr.io/jkroepke/kube-webhook-certgen",
        "quay.io/prometheus-operator/prometheus-operator",
    ]

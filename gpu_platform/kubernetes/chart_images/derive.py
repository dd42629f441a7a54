"""Write the images of kube-prometheus-stack and its subcharts to `kube-prometheus-stack.txt`.

    git show kube-prometheus-stack-88.5.3:charts/kube-prometheus-stack/values.yaml > kps.yaml
    git show kube-state-metrics-8.4.0:charts/kube-state-metrics/values.yaml > ksm.yaml
    git show prometheus-node-exporter-4.56.1:charts/prometheus-node-exporter/values.yaml > ne.yaml
    # in a clone of grafana-community/helm-charts:
    git show grafana-12.11.1:charts/grafana/values.yaml > grafana.yaml
    uv run python -m gpu_platform.kubernetes.chart_images.derive \
        "kube-prometheus-stack 88.5.3 ..." kps.yaml ksm.yaml ne.yaml grafana.yaml

(in a clone of prometheus-community/helm-charts; the subcharts' versions are the `dependencies`
of kube-prometheus-stack's Chart.yaml at its tag). Run it whenever KUBE_PROMETHEUS_STACK_CHART
moves, and commit the file it writes.
"""

from pathlib import Path
from typing import Annotated

import typer
import yaml

from gpu_platform.kubernetes.chart_files import write_derived
from gpu_platform.kubernetes.chart_images import PROMETHEUS_STACK_IMAGES_FILE, image_repositories


def main(
    read: Annotated[str, typer.Argument(help="The charts and versions read, for the header")],
    values: Annotated[list[Path], typer.Argument(exists=True, dir_okay=False, help="values.yaml")],
) -> None:
    """Write every image the values files name beside this script."""
    images = sorted(
        {i for path in values for i in image_repositories(yaml.safe_load(path.read_text()))}
    )
    text = "\n".join([f"# {read}", *images]) + "\n"
    write_derived(PROMETHEUS_STACK_IMAGES_FILE, text, f"{len(images)} images")


if __name__ == "__main__":
    typer.run(main)

"""Which of a chart's values its templates render whole, as the derivation reads templates."""

from pathlib import Path

from gpu_platform.policy_pack.derive_yaml_values import derive

# Shapes from gpu-operator v26.7.0: templates/clusterpolicy.yaml (`env: {{ toYaml
# .Values.driver.env | nindent 6 }}`, `repository: {{ .Values.driver.repository }}`,
# `priorityClassName: {{ .Values.daemonsets.priorityClassName }}`), templates/gpucluster.yaml
# (`daemonsets: {{ toYaml .Values.daemonsets | nindent 4 }}`), templates/operator.yaml (`with`
# then `toYaml .`, `range .Values.operator.imagePullSecrets` then `- name: {{ . }}`),
# templates/dcgm_exporter_config.yaml (a block scalar), and node-feature-discovery's
# templates/nfd-worker-conf.yaml (`.Values.worker.config | toYaml`).
TEMPLATES = {
    "templates/clusterpolicy.yaml": """
spec:
  daemonsets:
    {{- if .Values.daemonsets.priorityClassName }}
    priorityClassName: {{ .Values.daemonsets.priorityClassName }}
    {{- end }}
  driver:
    repository: {{ .Values.driver.repository }}
    env: {{ toYaml .Values.driver.env | nindent 6 }}
""",
    "templates/gpucluster.yaml": "  daemonsets: {{ toYaml .Values.daemonsets | nindent 4 }}\n",
    "templates/operator.yaml": """
      {{- with .Values.operator.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      imagePullSecrets:
      {{- range .Values.operator.imagePullSecrets }}
        - name: {{ . }}
      {{- end }}
""",
    "templates/dcgm_exporter_config.yaml": """
data:
  dcgm-metrics.csv: |
{{- .Values.dcgmExporter.config.data | nindent 4 }}
""",
    "charts/node-feature-discovery/templates/nfd-worker-conf.yaml": """
data:
  nfd-worker.conf: |-
    {{- .Values.worker.config | toYaml | nindent 4 }}
""",
}


def test_only_values_rendered_whole_and_never_written_as_they_are(tmp_path: Path) -> None:
    for name, text in TEMPLATES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    assert derive(tmp_path) == [
        "dcgmExporter.config.data",
        "driver.env",
        "node-feature-discovery.worker.config",
        "operator.tolerations",
    ]

"""`GpuPlatform` as a Pulumi component package, for programs in every Pulumi language.

This directory is the plugin `pulumi package add` names: its `PulumiPlugin.yaml` has Pulumi
run its `__main__.py`, which hosts
`gpu_platform.package.component.GpuPlatform` with the Python SDK's component provider host: the
host infers the package's schema from the component's annotations, and SDKs for TypeScript, Go,
.NET, Java and YAML are generated from that schema (`pulumi package add`).

- `inputs`: the component's inputs as the schema shows them, generated from the config model
  by `inputs_generator` (the host reads only plain annotated classes, not pydantic models);
- `component`: the component the host constructs, which turns those inputs back into the stack
  file's keys and validates them as `GpuPlatformArgs.from_settings` does.
"""

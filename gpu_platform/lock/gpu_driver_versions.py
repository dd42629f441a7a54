"""COS's `gpu_driver_versions.textproto`: which NVIDIA drivers a COS build offers per GPU type,
and which of them its labels name.

Each COS build publishes the list at
`https://storage.googleapis.com/cos-tools/<build>/lakitu/gpu_driver_versions.textproto` (its
release note links it, "GPU Drivers: See List"), in the protobuf text format of
`GPUDriverVersionInfoList` (cos/tools `src/pkg/gpuconfig/proto/gpu_driver_versions.proto`, as
google/gvisor copies it to `test/gpu/gpu_driver_versions.proto`):

    message DriverVersion { string label = 1; string version = 2; }
    message GPUDevice { string gpu_type = 1; }
    message GPUDriverVersionInfo {
      GPUDevice gpu_device = 1;
      repeated DriverVersion supported_driver_versions = 2;
    }
    message GPUDriverVersionInfoList { repeated GPUDriverVersionInfo gpu_driver_version_info = 1; }

The file is read with protobuf's own text-format parser (the `protobuf` package, which the
Pulumi SDK already depends on), over that schema built here rather than compiled: the text format
has comments, two spellings of a nested message and of a repeated field, and string escapes,
which a parser of our own would have to get right too. Fields the schema does not know (the
proto reserves room for "more metadata about the driver version") are skipped, as a reader
compiled from an older copy of the schema skips them.
"""

from collections.abc import Mapping
from functools import cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

DEFAULT_LABEL = "DEFAULT"
"""The label of the driver `cos-gpu-installer` installs when given no version, which Google's
GKE installer DaemonSet does not give (the LATEST label names the newest)."""

_PACKAGE = "cos_gpu"
_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_MESSAGE = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
_OPTIONAL = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
_REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
# message -> its fields: (name, number, label, message type or None for a string)
_SCHEMA: Mapping[str, tuple[tuple[str, int, int, str | None], ...]] = {
    "DriverVersion": (("label", 1, _OPTIONAL, None), ("version", 2, _OPTIONAL, None)),
    "GPUDevice": (("gpu_type", 1, _OPTIONAL, None),),
    "GPUDriverVersionInfo": (
        ("gpu_device", 1, _OPTIONAL, "GPUDevice"),
        ("supported_driver_versions", 2, _REPEATED, "DriverVersion"),
    ),
    "GPUDriverVersionInfoList": (
        ("gpu_driver_version_info", 1, _REPEATED, "GPUDriverVersionInfo"),
    ),
}


class UnreadableList(ValueError):
    """A file that is not a `GPUDriverVersionInfoList` in the text format."""


@cache
def _list_class() -> Any:
    schema = descriptor_pb2.FileDescriptorProto(
        name="gpu_driver_versions.proto", package=_PACKAGE, syntax="proto3"
    )
    for message_name, fields in _SCHEMA.items():
        message = schema.message_type.add(name=message_name)
        for name, number, label, message_type in fields:
            field = message.field.add(name=name, number=number, label=label, type=_STRING)
            if message_type is not None:
                field.type = _MESSAGE
                field.type_name = f".{_PACKAGE}.{message_type}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(schema)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"{_PACKAGE}.GPUDriverVersionInfoList")
    )


def labelled_drivers(text: str) -> dict[str, dict[str, str]]:
    """GPU type (`NVIDIA_L4`) -> label (`DEFAULT`, `LATEST`) -> driver version, as the file
    gives them; a version without a label is not listed (it is installed only by its number).
    UnreadableList where the text is not the format."""
    listed = _list_class()()
    try:
        text_format.Parse(text, listed, allow_unknown_field=True)
    except text_format.ParseError as error:
        raise UnreadableList(str(error)) from None
    drivers: dict[str, dict[str, str]] = {}
    for info in listed.gpu_driver_version_info:
        labels = drivers.setdefault(info.gpu_device.gpu_type, {})
        for driver in info.supported_driver_versions:
            if driver.label:
                labels[driver.label.upper()] = driver.version
    return drivers

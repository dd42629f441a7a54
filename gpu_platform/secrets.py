"""Values taken from config keys set as secrets stay secret in every resource input they reach.

Pulumi stores a resource's inputs in the stack's state and shows them in previews, in clear
text unless they are secret outputs; it marks a config key secret as a whole when any part of
its value is (`pulumi config set --secret --path`). So a component that puts a value from such a
key into a resource input wraps it with `secret_if`.
"""

from typing import TypeVar

import pulumi

T = TypeVar("T")


def secret_if(secret: bool, value: T) -> "T | pulumi.Output[T]":
    """`value` as a secret output when `secret`, else as it is."""
    return pulumi.Output.secret(value) if secret else value

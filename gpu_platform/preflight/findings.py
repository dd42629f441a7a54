"""What `gpu-platform preflight` reports: one finding per thing it checked."""

from dataclasses import dataclass
from typing import Literal

Severity = Literal["blocking", "warning", "ok"]


@dataclass(frozen=True)
class Finding:
    severity: Severity
    subject: str
    message: str
    action: str
    """What to do about it; for an `ok` finding, nothing."""

    @property
    def blocking(self) -> bool:
        return self.severity == "blocking"

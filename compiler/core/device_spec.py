"""Device names: parsing, printing and matching them (TensorFlow's DeviceSpec).

A device name has up to five parts, each optional in a request:
`/job:<name>/replica:<int>/task:<int>/device:<TYPE>:<index>`.  The short spellings
TensorFlow accepts are accepted too: `/cpu:0`, `/gpu:1`, `/device:GPU:*`, `CPU:0`,
`/job:worker/task:1` (no device part), and a lower-case type is upper-cased.  `*` as the
index (or a missing index) means any device of the type.

`DeviceSpec.parse(text)` gives a spec whose missing parts are None; `spec.matches(full)`
says whether a fully named device satisfies it; `merge(outer, inner)` combines nested
`with tf.device(...)` scopes the way TensorFlow does (inner parts win, missing inner parts
are inherited).  Parsing errors are ValueErrors quoting the name and the accepted forms.
"""

from __future__ import annotations

import dataclasses
import re

_PART = re.compile(r"^(job|replica|task|device|cpu|gpu|CPU|GPU)(?::(.*))?$")
_ACCEPTED = ("accepted forms: '/job:<name>/replica:<n>/task:<n>/device:<TYPE>:<n or *>', "
             "'/cpu:0', '/gpu:1', '/device:CPU:*'")


@dataclasses.dataclass(frozen=True)
class DeviceSpec:
    """A full or partial device name (module docstring).  None: the part is unspecified."""

    job: str | None = None
    replica: int | None = None
    task: int | None = None
    device_type: str | None = None
    device_index: int | None = None

    @classmethod
    def parse(cls, text) -> "DeviceSpec":
        """A DeviceSpec from a name such as '/job:worker/task:1/device:CPU:0' or '/gpu:0'."""
        if isinstance(text, DeviceSpec):
            return text
        if text is None:
            return cls()
        if not isinstance(text, str):
            raise TypeError(f"A device name must be a string, got {type(text).__name__} "
                            f"{text!r}.")
        fields: dict = {}
        stripped = text.strip()
        if not stripped:
            return cls()
        if not stripped.startswith("/"):
            stripped = "/" + stripped
        for part in stripped.split("/")[1:]:
            if not part:
                continue
            m = _PART.match(part)
            if m is None:
                raise ValueError(f"Unknown part {part!r} in device name {text!r}; {_ACCEPTED}.")
            kind, value = m.group(1), m.group(2)
            try:
                if kind == "job":
                    fields["job"] = value or None
                elif kind in ("replica", "task"):
                    fields[kind] = int(value)
                elif kind == "device":
                    dtype, _, index = (value or "").partition(":")
                    fields["device_type"] = dtype.upper() or None
                    fields["device_index"] = _index(index)
                else:                       # cpu:0 / gpu:1 / CPU:0
                    fields["device_type"] = kind.upper()
                    fields["device_index"] = _index(value or "")
            except ValueError:
                raise ValueError(f"Bad {kind} in device name {text!r}; {_ACCEPTED}.") from None
        return cls(**fields)

    @property
    def is_empty(self) -> bool:
        return all(v is None for v in dataclasses.astuple(self))

    def to_string(self) -> str:
        """The canonical name: '/job:j/replica:r/task:t/device:TYPE:i' with the parts set."""
        parts = []
        if self.job is not None:
            parts.append(f"/job:{self.job}")
        if self.replica is not None:
            parts.append(f"/replica:{self.replica}")
        if self.task is not None:
            parts.append(f"/task:{self.task}")
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            parts.append(f"/device:{self.device_type}:{index}")
        return "".join(parts)

    def __str__(self):
        return self.to_string()

    def matches(self, full: "DeviceSpec") -> bool:
        """Whether the device named by `full` satisfies every part this spec sets."""
        return all(mine is None or mine == theirs
                   for mine, theirs in zip(dataclasses.astuple(self),
                                           dataclasses.astuple(full)))

    def merged_with(self, inner: "DeviceSpec") -> "DeviceSpec":
        """`inner` with the parts it leaves unset taken from this (outer) spec."""
        return DeviceSpec(*(i if i is not None else o
                            for o, i in zip(dataclasses.astuple(self),
                                            dataclasses.astuple(inner))))

    def without_index(self) -> "DeviceSpec":
        return dataclasses.replace(self, device_index=None)


def _index(text: str) -> int | None:
    text = text.strip()
    if text in ("", "*"):
        return None
    return int(text)


def canonical(text) -> str:
    """A device name in canonical form ('' for an empty one)."""
    return DeviceSpec.parse(text).to_string()

"""One exception tree for linkscope.

``UserError`` and its subclasses are problems with the user's input or machine: the CLI prints
them as one line (plus a hint) and exits 1, without a traceback (``--debug`` shows it).
Anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

__all__ = [
    "BackendUnavailable",
    "ConfigError",
    "KernelCompileError",
    "LinkscopeError",
    "MeasurementError",
    "SchemaError",
    "TopologyError",
    "UserError",
]


class LinkscopeError(Exception):
    """Base of every error linkscope raises on purpose."""


class UserError(LinkscopeError):
    """Bad input or an unusable machine: reported as one line, exit code 1.

    ``hint`` is an optional second sentence telling the user what to do.
    """

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def one_line(self) -> str:
        text = str(self)
        return f"{text} ({self.hint})" if self.hint else text


class ConfigError(UserError):
    """An option or option combination that cannot work."""


class TopologyError(UserError):
    """A topology that is malformed, inconsistent, or names a device that does not exist."""


class SchemaError(UserError):
    """A file that is not valid JSON of the expected kind or schema version.

    ``path`` is the JSON path of the offending value where known (``$.devices[3].kind``).
    """

    def __init__(self, message: str, path: str | None = None, hint: str | None = None) -> None:
        super().__init__(f"{message} at {path}" if path else message, hint)
        self.path = path


class BackendUnavailable(UserError):
    """A backend (NVML, CuPy, ROCm, MPI, NCCL) that is not installed or cannot be used here."""


class MeasurementError(LinkscopeError):
    """A measurement that failed at run time (CUDA error, data check failure)."""


class KernelCompileError(LinkscopeError):
    """NVRTC/hipRTC refused a kernel; keeps the source, options and log for ``--debug``."""

    def __init__(self, message: str, source: str = "", options: tuple[str, ...] = (), log: str = "") -> None:
        super().__init__(message)
        self.source = source
        self.options = options
        self.log = log

    def dump(self) -> str:
        numbered = "\n".join(f"{i + 1:4d}  {line}" for i, line in enumerate(self.source.splitlines()))
        return f"{self}\noptions: {' '.join(self.options)}\nlog:\n{self.log}\nsource:\n{numbered}"

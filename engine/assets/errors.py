"""The one exception type a bad asset raises.

Every problem found while reading a glTF file is reported as :class:`AssetError`. Its message starts
with a JSON-pointer-like path naming the offending part (``accessors[3].count``), so the command line
can print one line ``error: ...`` and users know where to look.
"""
from __future__ import annotations


class AssetError(Exception):
    """A glTF asset is malformed, unsafe or uses an unsupported required feature.

    Attributes:
        where: the offending part, e.g. ``"accessors[3].count"`` or ``"GLB header"``.
        reason: what is wrong with it.
        unsupported: True when the file may be valid glTF but uses a feature this engine refuses
            (Draco, required extensions we do not implement), False for a broken file.
    """

    def __init__(self, where: str, reason: str, *, unsupported: bool = False) -> None:
        self.where = where
        self.reason = reason
        self.unsupported = unsupported
        super().__init__(f"{where}: {reason}")


class AssetWarning(UserWarning):
    """A repairable problem (weights renormalised, non-unit quaternion normalised, ...)."""

"""Errors raised by the format layer.

Every error names the file (or table) and what is wrong in one line, because users see these messages in
the driver log of a long-running stream and must be able to act on them without a traceback.
"""


class HoodieError(Exception):
    """Base class of all errors about a Hudi table's content."""


class UnsupportedTableError(HoodieError):
    """The table uses a feature this reader does not implement (e.g. Lance base files, table version < 6)."""


class CorruptFileError(HoodieError):
    """A file of the table cannot be decoded (bad magic, impossible size, undecodable metadata)."""


class InvalidTableContentError(HoodieError):
    """Untrusted table content failed validation (a path escaping the table, a negative size, ...)."""

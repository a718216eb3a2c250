"""Every error hudi-streaming raises on purpose, in one place.

Each error says in one line which file, table, instant or option it is about and what is wrong, because users
read these in the driver log of a long-running stream (or on a terminal) and must be able to act on them
without a traceback. Catch :class:`HudiStreamingError` to catch them all; anything else escaping the package
is a bug.
"""


class HudiStreamingError(Exception):
    """Base class of every error of this package."""


class OptionError(HudiStreamingError):
    """An invalid source option, API argument or command-line argument."""


class NotFoundError(HudiStreamingError):
    """A table, file or state location the user named does not exist."""


class UnsupportedTableError(HudiStreamingError):
    """The table uses a feature this reader does not implement (e.g. Lance base files, table version < 6)."""


class CorruptFileError(HudiStreamingError):
    """A file of the table cannot be decoded (bad magic, impossible size, undecodable metadata)."""


class InvalidTableContentError(HudiStreamingError):
    """Untrusted table content failed validation (a path escaping the table, a negative size, ...)."""


class SchemaChangeError(HudiStreamingError):
    """An instant's schema differs from the stream's in a way the stream cannot deliver."""


class DeleteError(HudiStreamingError):
    """A delete reached a stream that neither delivers deletes (``emitDeletes``) nor ignores them
    (``ignoreDeletes``)."""


class DataLossError(HudiStreamingError):
    """The range the stream must read next is no longer readable (cleaned files, missing metadata)."""


class StateError(HudiStreamingError):
    """The state location holds something that cannot be trusted (torn, foreign, or inconsistent)."""


class StoreError(HudiStreamingError):
    """The storage under a table or a state location failed: an object store that stayed unreachable or failing
    for longer than ``retry_deadline_seconds``, refused access, or returned less than an object holds; a local
    file system that is full, read-only, or whose folder is gone. Nothing is lost: a restart after the fault
    is gone resumes from the last state written."""

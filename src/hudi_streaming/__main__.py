"""``python -m hudi_streaming``: the ``hudi-streaming`` command-line tool."""
import sys

from .cli import main

sys.exit(main())

"""``hudi_streaming.cli.local_spark`` is imported by Spark drivers (the demo's, the tests', the benchmarks'):
importing it loads neither the command line's format layer nor Arrow, so such a driver stays as small as
PySpark's own (``bench/bench_vs_hudi.py`` measures its memory beside Apache Hudi's)."""
from __future__ import annotations

import json
import subprocess
import sys


def test_importing_local_spark_loads_no_arrow_and_no_format_layer():
    out = subprocess.run([sys.executable, "-c", "import json, sys; import hudi_streaming.cli.local_spark; "
                          "print(json.dumps(sorted(sys.modules)))"], capture_output=True, text=True, check=True)
    modules = json.loads(out.stdout)
    assert "hudi_streaming.cli.local_spark" in modules
    assert [m for m in modules if m.split(".")[0] in ("pyarrow", "numpy", "polars", "pyspark")] == []
    assert [m for m in modules if m.startswith(("hudi_streaming.hoodie", "hudi_streaming.cli.commands"))] == []


def test_the_command_line_entry_point_still_resolves():
    from hudi_streaming.cli import main
    from hudi_streaming.cli.commands import main as commands_main

    assert main is commands_main

"""The driver-side monitor: turns newly completed instants into splits (Hudi's StreamReadMonitoringFunction)."""
from .monitor import Cursor, Plan, StreamMonitor
from .split import LogRef, Split

__all__ = ["Cursor", "Plan", "StreamMonitor", "Split", "LogRef"]

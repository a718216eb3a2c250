"""The driver-side monitor: turns newly completed instants into splits (Hudi's StreamReadMonitoringFunction)."""
from .monitor import Cursor, Plan, StreamMonitor

__all__ = ["Cursor", "Plan", "StreamMonitor"]

"""Helpers the test suites share, each written once: loopback ports and waits (``waits``), the local S3 server and the
fault proxy in front of it (``s3_server``, ``s3_fault_proxy``), Spark's micro-batch loop without Spark
(``stream_sim``; with restarts and Spark's checkpoint, ``sim_query``), a stream's deliveries checked against the
table (``verify``) and a timeline revealed step by step (``reveal``), comparisons with the gold outputs and hudi-rs
(``gold``, ``hudi_rs``), planning rounds (``planning``), small tables more than one module reads (``tables``) and the
Python workers' roles (``worker_roles``). Imported as ``support.<module>``: ``tests/`` is on the path (its
``conftest.py``)."""

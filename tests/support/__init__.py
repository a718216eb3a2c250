"""Helpers the test suites share, each written once: loopback ports and waiting for a condition with the logs
that explain a timeout. (Servers and proxies the tests start live beside them: ``s3_server``,
``s3_fault_proxy``.)"""

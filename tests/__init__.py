"""The test suite: one folder per package it tests (protocol/, server/, client_cli/, ...)."""

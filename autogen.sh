#!/bin/sh
# Generate configure and Makefile.in (never committed).
set -e
cd "$(dirname "$0")"
autoreconf -fi

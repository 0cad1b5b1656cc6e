#!/bin/bash
# Hidden tests: run against /app with the project's interpreter; JUnit XML for the verifier.
mkdir -p /logs/verifier
cd /app
PYTHONPATH=/app/src python3 -m pytest -q -rA --tb=short -p no:cacheprovider --rootdir=/tests \
  --junitxml=/logs/verifier/junit.xml /tests

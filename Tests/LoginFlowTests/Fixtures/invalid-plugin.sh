#!/bin/sh
# Answers with text that is not JSON.
cat >/dev/null
echo "this is not json"

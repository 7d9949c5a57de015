#!/bin/sh
# Fails with a non-zero status after a line on stderr.
cat >/dev/null
echo "something broke" >&2
exit 3

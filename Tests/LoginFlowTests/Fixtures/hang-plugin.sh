#!/bin/sh
# Never answers: starts a grandchild (in the plugin's process group), records its pid, ignores SIGTERM and sleeps.
trap '' TERM
sleep 300 &
echo $! > "$PID_FILE"
echo "started grandchild" >&2
sleep 300

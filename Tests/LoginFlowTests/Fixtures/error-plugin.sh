#!/bin/sh
# Reports a failure the protocol's way.
cat >/dev/null
echo '{"error": "captcha required"}'

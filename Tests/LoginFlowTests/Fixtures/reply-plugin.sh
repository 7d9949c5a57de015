#!/bin/sh
# Test plugin: reads its input, then answers with the text in $REPLY as it is.
cat > /dev/null
printf '%s' "$REPLY"

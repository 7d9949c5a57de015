#!/bin/sh
# Exits at once without reading its (large) input.
echo '{"vars": {"done": "yes"}}'

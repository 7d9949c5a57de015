#!/bin/sh
# A command notifier for the tests: appends the event it gets on standard input, and the variables it gets,
# to the file named by its first argument.
out="$1"
{
  cat
  printf 'env: %s|%s|%s\n' "$SESSIONKEEPER_EVENT" "$SESSIONKEEPER_SITE" "$SESSIONKEEPER_TITLE"
  printf 'leaked: %s\n' "${SECRET_ONLY_FOR_THE_DAEMON:-none}"
} >> "$out"

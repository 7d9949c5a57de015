#!/bin/sh
# SessionKeeper step plugin in plain POSIX shell: the plugin protocol at its simplest (docs/PLUGINS.md).
#
# It puts an API key into a header that every following request of the flow carries. The key comes in
# through the environment, which the step sets from a credential:
#
#   - name: api key
#     plugin: api-key-header.sh
#     env: {API_KEY: "{{ credentials.api_key }}", HEADER_NAME: X-API-Key}
#
# Protocol: SessionKeeper writes one JSON object on stdin and reads one JSON object from stdout. This
# plugin needs nothing from the request, so it reads stdin and ignores it; it answers
#   {"protocol": 1, "headers": {"X-API-Key": "..."}}
# or, when something is wrong, {"protocol": 1, "error": "one sentence"} (the step then fails with it).
# Messages for the log go to stderr, and never with the key in them.
set -eu

cat > /dev/null

answer_error() {
    printf '{"protocol": 1, "error": "%s"}\n' "$1"
    exit 0
}

header=${HEADER_NAME:-X-API-Key}
key=${API_KEY:-}

[ -n "$key" ] || answer_error "API_KEY is empty or unset (set it under the step's env:)"
# A header name is an RFC 9110 token; a value must not hold control characters (no CR, LF or tab).
case $header in
    *[!A-Za-z0-9!#\$%\&\'*+.^_\`\|~-]*) answer_error "HEADER_NAME is not a valid header name" ;;
esac
case $key in
    *[[:cntrl:]]*) answer_error "API_KEY holds a control character" ;;
esac

# JSON string escaping: a backslash and a double quote are the only characters left to escape.
escaped=$(printf '%s' "$key" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')

echo "api-key-header.sh: adding header $header" >&2
printf '{"protocol": 1, "headers": {"%s": "%s"}}\n' "$header" "$escaped"

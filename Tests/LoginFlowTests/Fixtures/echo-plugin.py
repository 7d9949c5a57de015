#!/usr/bin/python3
# A well-behaved plugin: reads SPEC section 5's input, logs to stderr, answers with every output key.
import json
import sys

request = json.load(sys.stdin)
secret = request["with"].get("code", "")
print("starting for site %s step %s" % (request["site"], request["step"]), file=sys.stderr)
print("using code %s" % secret, file=sys.stderr)
last = request.get("last_response") or {}
answer = {
    "vars": {
        "greeting": "hello " + request["with"].get("name", "?"),
        "cookie_names": ",".join(sorted(c["name"] for c in request["cookies"])),
        "last_status": last.get("status"),
        "had_credentials": "credentials" in request,
        "password_seen": request.get("credentials", {}).get("password", ""),
    },
    "cookies": [{"name": "plugin_cookie", "value": "plugin-cookie-value", "domain": "app.example.com",
                 "host_only": True, "path": "/", "expires": "2099-01-01T00:00:00Z", "secure": True,
                 "http_only": True, "same_site": "lax"}],
    "set_cookie": ["from_line=line-cookie-value; Path=/; Max-Age=600"],
    "headers": {"X-Plugin-Token": "plugin-header-token"},
    "error": None,
}
json.dump(answer, sys.stdout)

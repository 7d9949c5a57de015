#!/usr/bin/python3
# Test plugin: answers with the protocol version, base URL and http settings it was given, and the names of stdin's keys.
import json
import sys

request = json.load(sys.stdin)
json.dump({"vars": {"protocol": request.get("protocol"), "base_url": request.get("base_url"),
                    "keys": ",".join(sorted(request)),
                    "http": json.dumps(request.get("http"), sort_keys=True)}}, sys.stdout)

#!/usr/bin/python3
# Reports the names of the environment variables it received, and the value of BAR.
import json
import os
import sys

sys.stdin.read()
json.dump({"vars": {"env": ",".join(sorted(os.environ)), "bar": os.environ.get("BAR", "")}}, sys.stdout)

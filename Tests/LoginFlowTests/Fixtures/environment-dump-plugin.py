#!/usr/bin/python3
# Answers with its whole environment, one NAME=value a line, as the variable "environment".
import json
import os
import sys

sys.stdin.read()
json.dump({"vars": {"environment": "\n".join(f"{name}={value}" for name, value in sorted(os.environ.items()))}}, sys.stdout)

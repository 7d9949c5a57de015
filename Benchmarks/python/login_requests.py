#!/usr/bin/env python3
"""The demo site's 3-request login (GET /login, POST /login, GET /api/me) with `requests`, one thread per
concurrent login and one Session per login. Prints one line of JSON: logins, wall seconds, CPU seconds.

usage: login_requests.py BASE_URL LOGINS CONCURRENCY [USER PASSWORD]
"""
import json
import re
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import requests

CSRF = re.compile(r'<input[^>]*name="csrf"[^>]*>')
VALUE = re.compile(r'value="([^"]*)"')


def login(base: str, user: str, password: str) -> bool:
    with requests.Session() as session:
        page = session.get(f"{base}/login")
        tag = CSRF.search(page.text)
        if page.status_code != 200 or not tag:
            return False
        token = VALUE.search(tag.group(0)).group(1)
        answer = session.post(f"{base}/login", data={"username": user, "password": password, "csrf": token},
                              allow_redirects=False)
        if answer.status_code != 303:
            return False
        return session.get(f"{base}/api/me").status_code == 200


def main() -> int:
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    base, logins, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    user = sys.argv[4] if len(sys.argv) > 4 else "alice"
    password = sys.argv[5] if len(sys.argv) > 5 else "wonderland"
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda _: login(base, user, password), range(logins)))
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"client": "python-requests", "logins": logins, "failures": results.count(False),
                      "wall_s": round(wall, 4), "cpu_s": round(usage.ru_utime + usage.ru_stime, 4)}))
    return 1 if False in results else 0


if __name__ == "__main__":
    sys.exit(main())

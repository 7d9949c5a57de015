"""What `sessionkeeper.Session.get` adds to a request (issue 31): the same GET of the demo site's /api/me, over
a kept connection, by a plain `requests.Session` with a fixed Cookie header and User-Agent (the anchor: what a
script that pasted the header would do) and by `sessionkeeper.Session("demo")`, which asks the daemon for the
cookies of the URL and the site's User-Agent and rule before each request. Both run in one process against the
same release demo site and daemon, in alternating blocks so that drift of the machine falls on both alike; each
request is timed on its own. Also timed alone: the client's two exchanges with the daemon (the site's description
is read again only when the cookies change or after a second), and the cookie exchange on a new connection each
time, as it would cost without the kept connections.

Run by Benchmarks/run-python-client in the client's virtualenv; nothing printed holds a cookie value."""

import os
import statistics
import sys
import time

import requests

import sessionkeeper
from demo_daemon import DemoDaemon, build_release

BLOCKS = int(os.environ.get("BLOCKS", "10"))
PER_BLOCK = int(os.environ.get("PER_BLOCK", "500"))
WARMUP = 300


def timed(call, count):
    """`count` calls of `call`, each timed in microseconds."""
    samples = []
    for _ in range(count):
        start = time.perf_counter_ns()
        call()
        samples.append((time.perf_counter_ns() - start) / 1000)
    return samples


def p99(samples):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main():
    binaries = os.environ.get("BENCH_BIN") or build_release("sessionkeeper", "demo-site")
    with DemoDaemon(binaries) as world:
        url = f"http://127.0.0.1:{world.port}/api/me"
        client = sessionkeeper.Client(world.sock)
        header = client.cookies("demo", url)
        agent = client.site("demo").user_agent

        plain = requests.Session()
        plain.headers.update({"Cookie": header, "User-Agent": agent})
        kept = sessionkeeper.Session("demo", socket=world.sock)

        def plain_get():
            if plain.get(url).status_code != 200:
                raise SystemExit("the plain GET did not answer 200")

        def kept_get():
            if kept.get(url).status_code != 200:
                raise SystemExit("the sessionkeeper GET did not answer 200")

        variants = {
            "requests, fixed Cookie header": plain_get,
            "sessionkeeper.Session": kept_get,
            "  daemon: cookies for the URL": lambda: client.cookies("demo", url),
            "  daemon: the site (User-Agent, rule)": lambda: client.site("demo"),
            "  daemon: cookies, a new connection each": lambda: (client.cookies("demo", url), client.close()),
        }
        for call in variants.values():
            timed(call, WARMUP)
        samples = {name: [] for name in variants}
        block_medians = {name: [] for name in variants}
        for block in range(BLOCKS):
            names = list(variants) if block % 2 == 0 else list(reversed(variants))
            for name in names:
                block_samples = timed(variants[name], PER_BLOCK)
                samples[name] += block_samples
                block_medians[name].append(statistics.median(block_samples))

    count = BLOCKS * PER_BLOCK
    print(f"{count} requests per line ({BLOCKS} alternating blocks of {PER_BLOCK}), microseconds per request")
    print(f"{'':40} {'median':>8} {'p99':>8} {'mean':>8}")
    for name, values in samples.items():
        print(f"{name:40} {statistics.median(values):8.0f} {p99(values):8.0f} {statistics.fmean(values):8.0f}")
    base, kept_values = samples["requests, fixed Cookie header"], samples["sessionkeeper.Session"]
    added = statistics.median(kept_values) - statistics.median(base)
    per_block = [k - b for k, b in zip(block_medians["sessionkeeper.Session"], block_medians["requests, fixed Cookie header"])]
    print(f"added by sessionkeeper.Session: median {added:.0f} us (block medians {min(per_block):.0f} to "
          f"{max(per_block):.0f} us), p99 {p99(kept_values) - p99(base):.0f} us; goal: under 500 us at the median")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Writes a browser's cookie database as the browser does, for the browser import tests.

Usage: make_cookie_database.py SPEC.json [--hold]

SPEC.json: {"browser": "firefox" | "chromium", "path": "/…/cookies.sqlite", "wal": true|false,
            "user_version": 16 (Firefox's schema version), "meta_version": 24 (Chromium's),
            "rows": [{column: value, …}], "uncommitted": [{…}]}
Columns left out get the browser's defaults; in Chromium rows, "encrypted_value_hex" gives the blob.

With --hold the connection stays open as a running browser's does: exclusive locking mode, the committed
rows still in the write-ahead log when "wal" is set (no checkpoint), and the "uncommitted" rows inserted in
an open transaction. It prints "ready" and waits to be killed.
"""
import json
import signal
import sqlite3
import sys
import time

signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
spec = json.load(open(sys.argv[1]))
hold = "--hold" in sys.argv[2:]

FIREFOX_SCHEMA = """CREATE TABLE moz_cookies (id INTEGER PRIMARY KEY, originAttributes TEXT NOT NULL DEFAULT '',
  name TEXT, value TEXT, host TEXT, path TEXT, expiry INTEGER, lastAccessed INTEGER, creationTime INTEGER,
  isSecure INTEGER, isHttpOnly INTEGER, inBrowserElement INTEGER DEFAULT 0, sameSite INTEGER DEFAULT 0,
  schemeMap INTEGER DEFAULT 0, isPartitionedAttributeSet INTEGER DEFAULT 0,
  CONSTRAINT moz_uniqueid UNIQUE (name, host, path, originAttributes))"""
FIREFOX_DEFAULTS = {"originAttributes": "", "value": "", "path": "/", "expiry": 0, "lastAccessed": 0,
                    "creationTime": 0, "isSecure": 0, "isHttpOnly": 0, "sameSite": 256}

CHROMIUM_SCHEMA = [
    "CREATE TABLE meta(key LONGVARCHAR NOT NULL UNIQUE PRIMARY KEY, value LONGVARCHAR)",
    """CREATE TABLE cookies(creation_utc INTEGER NOT NULL, host_key TEXT NOT NULL, top_frame_site_key TEXT NOT NULL,
      name TEXT NOT NULL, value TEXT NOT NULL, encrypted_value BLOB NOT NULL, path TEXT NOT NULL,
      expires_utc INTEGER NOT NULL, is_secure INTEGER NOT NULL, is_httponly INTEGER NOT NULL,
      last_access_utc INTEGER NOT NULL, has_expires INTEGER NOT NULL, is_persistent INTEGER NOT NULL,
      priority INTEGER NOT NULL, samesite INTEGER NOT NULL, source_scheme INTEGER NOT NULL,
      source_port INTEGER NOT NULL, last_update_utc INTEGER NOT NULL, source_type INTEGER NOT NULL,
      has_cross_site_ancestor INTEGER NOT NULL, UNIQUE (host_key, top_frame_site_key, name, path, source_scheme, source_port))""",
]
CHROMIUM_DEFAULTS = {"creation_utc": 0, "top_frame_site_key": "", "value": "", "encrypted_value": b"", "path": "/",
                     "expires_utc": 0, "is_secure": 0, "is_httponly": 0, "last_access_utc": 0, "has_expires": 1,
                     "is_persistent": 1, "priority": 1, "samesite": -1, "source_scheme": 2, "source_port": 443,
                     "last_update_utc": 0, "source_type": 0, "has_cross_site_ancestor": 0}


def insert(connection, table, defaults, row):
    values = dict(defaults)
    for key, value in row.items():
        if key.endswith("_hex"):
            values[key[:-4]] = bytes.fromhex(value)
        else:
            values[key] = value
    columns = list(values)
    connection.execute(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
        [values[column] for column in columns])


connection = sqlite3.connect(spec["path"], isolation_level=None)
if spec.get("wal"):
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA wal_autocheckpoint=0")
if hold:
    connection.execute("PRAGMA locking_mode=EXCLUSIVE")
if spec["browser"] == "firefox":
    table, defaults = "moz_cookies", FIREFOX_DEFAULTS
    connection.execute(FIREFOX_SCHEMA)
    connection.execute(f"PRAGMA user_version = {int(spec.get('user_version', 16))}")
else:
    table, defaults = "cookies", CHROMIUM_DEFAULTS
    for statement in CHROMIUM_SCHEMA:
        connection.execute(statement)
    connection.execute("INSERT INTO meta VALUES ('version', ?)", (str(spec.get("meta_version", 24)),))
connection.execute("BEGIN")
for row in spec.get("rows", []):
    insert(connection, table, defaults, row)
connection.execute("COMMIT")

if not hold:
    connection.close()
    sys.exit(0)
connection.execute("BEGIN EXCLUSIVE")
for row in spec.get("uncommitted", []):
    insert(connection, table, defaults, row)
print("ready", flush=True)
while True:
    time.sleep(60)

"""Stands in for systemd's NOTIFY_SOCKET: binds a Unix datagram socket at argv[1], prints "ready", then
appends every datagram it receives to the file argv[2], each followed by a line "--"."""
import os
import signal
import socket
import sys

signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
path, log = sys.argv[1], sys.argv[2]
if os.path.exists(path):
    os.unlink(path)
listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
listener.bind(path)
print("ready", flush=True)
while True:
    datagram = listener.recv(65536)
    with open(log, "ab") as out:
        out.write(datagram + b"\n--\n")

"""A TCP listener on 127.0.0.1 that accepts connections and never answers: a notifier that hangs.

Prints its port on the first line, then holds every connection open until it is stopped.
"""
import socket

listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.bind(("127.0.0.1", 0))
listener.listen(16)
print(listener.getsockname()[1], flush=True)
held = []
while True:
    connection, _ = listener.accept()
    held.append(connection)

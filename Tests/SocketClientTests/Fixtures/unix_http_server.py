#!/usr/bin/env python3
"""An HTTP/1.1 server on a Unix socket for UnixSocketHTTPClient's tests.

Usage: unix_http_server.py SOCKET_PATH. It binds the socket, then answers by path:

  /length        200, Content-Length body "hello over a unix socket"
  /chunked       200, chunked body written in odd pieces (split inside size lines and data)
  /close         200, no Content-Length: the body runs to the end of the connection
  /large         200, a Content-Length body of 17 MiB (over the client's 16 MiB limit)
  /large-chunked 200, 17 MiB in 1 MiB chunks
  /slow          sends nothing for 10 seconds
  /garbage       a line that is not an HTTP status line
  /truncated     Content-Length 100, 10 bytes, then closes
  /continue      a 100 Continue, then 204
  /echo          200, the request line and headers it received, as the body
  /events        200 text/event-stream, chunked: a comment, three events (one with two data lines,
                 one split across chunks, CRLF line ends on one), then the end of the stream
  /events-idle   200 text/event-stream, a comment, then nothing for 30 seconds
  /events-error  404 with a JSON error body
  anything else  404
"""
import os
import signal
import socket
import socketserver
import sys
import time


class Handler(socketserver.StreamRequestHandler):
    def read_request(self):
        lines = []
        while True:
            line = self.rfile.readline(65537)
            if not line or line in (b"\r\n", b"\n"):
                break
            lines.append(line)
        return lines

    def send(self, data):
        self.wfile.write(data)
        self.wfile.flush()

    def chunk(self, data):
        self.send(b"%x\r\n%s\r\n" % (len(data), data))

    def handle(self):
        lines = self.read_request()
        if not lines:
            return
        path = lines[0].split(b" ")[1].decode().split("?")[0]
        if path == "/length":
            body = b"hello over a unix socket"
            self.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        elif path == "/chunked":
            self.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            pieces = [b"5\r", b"\nhel", b"lo\r\n", b"1", b"0;ext=1\r\n", b" chunked world!!", b"\r\n0\r\n", b"X-Trailer: 1\r\n", b"\r\n"]
            for piece in pieces:
                self.send(piece)
                time.sleep(0.01)
        elif path == "/close":
            self.send(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end")
        elif path == "/large":
            size = 17 << 20
            self.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
            try:
                self.send(b"x" * size)
            except OSError:
                pass
        elif path == "/large-chunked":
            self.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            try:
                for _ in range(17):
                    self.chunk(b"y" * (1 << 20))
                self.send(b"0\r\n\r\n")
            except OSError:
                pass
        elif path == "/slow":
            time.sleep(10)
        elif path == "/garbage":
            self.send(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
        elif path == "/truncated":
            self.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
        elif path == "/continue":
            self.send(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX-After: continue\r\n\r\n")
        elif path == "/echo":
            body = b"".join(lines)
            self.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        elif path == "/events":
            self.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            self.chunk(b": connected\n\n")
            self.chunk(b'id: 1\nevent: state\ndata: {"site":"demo","from":"logging-in","to":"valid"}\n\n')
            time.sleep(0.05)
            self.chunk(b"id: 2\nevent: cookies\ndata: first line\ndata: second line\n\n")
            self.chunk(b"id: 3\r\nevent: coo")
            time.sleep(0.05)
            self.chunk(b"kies\r\ndata:no space\r\n\r\n")
            self.send(b"0\r\n\r\n")
        elif path == "/events-idle":
            self.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            self.chunk(b": connected\n\n")
            time.sleep(30)
        elif path == "/events-error":
            body = b'{"error":{"code":"not_found","message":"no such route"}}'
            self.send(b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        else:
            self.send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main():
    # A test runner may start this with SIGTERM blocked; the test stops it with SIGTERM.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    path = sys.argv[1]
    if os.path.exists(path):
        os.unlink(path)
    with Server(path, Handler) as server:
        print("ready", flush=True)  # the test waits for this line
        server.serve_forever()


if __name__ == "__main__":
    main()

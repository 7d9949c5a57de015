"""A webhook receiver for the notification tests: serves HTTP on 127.0.0.1 (an ephemeral port, printed on the
first line) and appends each request to the file argv[1] as one JSON line: the time it arrived (seconds since
1970), the method, the path, the headers and the body as text.

Options:
  --answers 503,503,200   the status of each request in turn; after the list, 200
  --hang                  accept requests and never answer (a receiver that is down but listening)
"""
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
log_path = sys.argv[1]
answers = []
hang = False
arguments = sys.argv[2:]
while arguments:
    option = arguments.pop(0)
    if option == "--answers":
        answers = [int(code) for code in arguments.pop(0).split(",")]
    elif option == "--hang":
        hang = True
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        record = {
            "time": time.time(),
            "method": self.command,
            "path": self.path,
            "headers": [[name, value] for name, value in self.headers.items()],
            "body": body.decode("utf-8", errors="replace"),
        }
        with lock:
            with open(log_path, "a") as log:
                log.write(json.dumps(record) + "\n")
            status = answers.pop(0) if answers else 200
        if hang:
            time.sleep(3600)
        payload = b"{}"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()

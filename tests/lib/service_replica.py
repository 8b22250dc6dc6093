# A service replica for the services' tests and benchmark (tests/integration/bridge_service.sh,
# tests/bench/service_availability): an HTTP server on $SAFE_SERVICE_PORT serving /healthz and
# /metrics (queue_length, read from the file named by its argument at every request). It prints
# what it was given first.
import http.server
import os
import sys

port, replica, load = int(os.environ["SAFE_SERVICE_PORT"]), os.environ["SAFE_REPLICA"], sys.argv[1]
print(f"replica {replica} port {port} user {os.getuid()}", flush=True)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/healthz":
            body = b"ok\n"
        elif self.path == "/metrics":
            with open(load) as f:
                body = f"# TYPE queue_length gauge\nqueue_length {f.read().strip() or 0}\n".encode()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("0.0.0.0", port), Handler).serve_forever()

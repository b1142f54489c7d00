"""A Hub that fails as the real one does at scale: a proxy in front of the local Hub server that answers 429 with
`Retry-After`, or 503, to the requests its rule picks, and passes every other request through unchanged.
The real huggingface_hub client talks to it as to any Hub (HF_ENDPOINT)."""
import contextlib, http.client, http.server, threading, urllib.parse
from collections import Counter

HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authenticate", "proxy-authorization"}


def weight_file(path: str) -> bool:
    "A request for a checkpoint's weights (what a run downloads last and largest)."
    return "/resolve/" in path and path.split("?")[0].endswith((".safetensors", ".bin"))


class FlakyHub:
    """`rule(method, path, n)` -> None (pass through) or (status, headers): n counts the requests of this method and path
    so far, this one included. `asked` counts them; `failed` counts the answers the rule made."""
    def __init__(self, upstream: str, rule):
        self.upstream, self.rule = urllib.parse.urlsplit(upstream), rule
        self.asked, self.failed, self.lock = Counter(), Counter(), threading.Lock()

    def handler(self):
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def relay(self):
                with hub.lock:
                    hub.asked[(self.command, self.path)] += 1
                    n = hub.asked[(self.command, self.path)]
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if (answer := hub.rule(self.command, self.path, n)) is not None:
                    status, headers = answer
                    with hub.lock: hub.failed[status] += 1
                    self.send_response(status)
                    for k, v in {**headers, "Content-Length": "0"}.items(): self.send_header(k, v)
                    self.end_headers()
                    return
                conn = http.client.HTTPConnection(hub.upstream.hostname, hub.upstream.port, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body,
                                 headers={k: v for k, v in self.headers.items() if k.lower() not in HOP | {"host"}})
                    r = conn.getresponse()
                    data = r.read()
                    self.send_response(r.status)
                    for k, v in r.getheaders():
                        if k.lower() in HOP or (k.lower() == "content-length" and self.command != "HEAD"): continue   # HEAD: the size of what a GET sends
                        if k.lower() == "location": v = v.replace(f"{hub.upstream.scheme}://{hub.upstream.netloc}", hub.address)
                        self.send_header(k, v)
                    if self.command != "HEAD": self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD": self.wfile.write(data)
                finally: conn.close()

            do_GET = do_HEAD = do_POST = do_PUT = relay

            def log_message(self, *args): pass

        return Handler

    @contextlib.contextmanager
    def serving(self):
        "Serve on 127.0.0.1; yields the proxy's address, the endpoint to give HF_ENDPOINT."
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        server.daemon_threads = True
        self.address = f"http://127.0.0.1:{server.server_port}"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try: yield self.address
        finally: server.shutdown(); server.server_close()

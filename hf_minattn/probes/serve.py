"""`hf-minattn view MODEL_OR_PROBE_FOLDER`: serve the interactive attention view on localhost, and encode sentences
typed into it with the model.

- A probe folder (written by `hf-minattn probe`: report.html, probes.json): its report.html and files; typed
  sentences go to the model it probed (probes.json's provenance.model_path) or to `--model`.
- A model folder (save_pretrained: config.json, weights, tokenizer) or a Hub id (`--revision` picks a branch, tag or
  commit): a page with the view alone, on the probes' example sentences.

The standard library's http.server, a thread per connection (an idle or slow client does not hold up the others;
the model encodes one sentence at a time), on 127.0.0.1 by default. GET api/info says which model encodes and its
layers and heads; GET api/attention?sentence=... answers the sentence's entry in the view's schema
(attention_view.py), or HTTP 400 with {"error": message} for an empty sentence, one with no token but the special
ones, or one longer than the model reads; the page shows the message. On a loopback address, a request whose Host
header is not 127.0.0.1, localhost or [::1] is refused (403), and no file outside the folder is served, through a
symbolic link either (404).
"""

import ipaddress
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from markupsafe import Markup

from hf_minattn.checks import check_bounds
from hf_minattn.cli import OneLineArgumentParser
from hf_minattn.model_source import find_model, is_hub_id

from .attention_view import attention_shape, attention_view, check_sentence, view_assets, view_entry, view_json
from .heads import attention_examples

from .loading import load_encoder, max_length_for, resolve_device


class Encoder:
    """A model and its tokenizer, encoding one typed sentence at a time into the view's schema."""

    def __init__(self, model, tokenizer, name):
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.max_tokens = max_length_for(model, tokenizer)  # what attention_examples reads: the model's, <= 128
        self.lock = threading.Lock()  # requests come on several threads; one sentence is encoded at a time
        # The page lists a typed sentence's layers and heads from these, not from the probe's view: --model may
        # name a model of another size. Read from one encoding: the config may say otherwise (ConvBERT's heads).
        (example,), _ = attention_examples(model, tokenizer, ["a"], norm_weighting=False)
        self.num_layers, self.num_heads = attention_shape(example)

    def info(self) -> dict:
        return {"model": self.name, "max_tokens": self.max_tokens, "num_layers": self.num_layers,
                "num_heads": self.num_heads}

    def encode(self, sentence) -> dict:
        with self.lock:  # the tokenizer too: a fast tokenizer refuses to be used by two threads at once
            sentence = check_sentence(self.tokenizer, sentence, self.max_tokens)
            (example,), _ = attention_examples(self.model, self.tokenizer, [sentence])
        return view_entry(example)


class ViewHandler(SimpleHTTPRequestHandler):
    """Static files of the served folder, plus the two API routes when an encoder is loaded. The folder and the
    encoder are the server's (ViewServer.folder, .encoder), read per request: they are set once the model is loaded,
    after the port is taken."""

    timeout = 60  # seconds a connection may sit idle: a client that never sends frees its thread

    def __init__(self, request, client_address, server):
        self.encoder = server.encoder
        super().__init__(request, client_address, server, directory=server.folder)

    def do_GET(self):  # noqa: N802 (http.server's naming)
        if self._refused_host():
            return None
        url = urlsplit(self.path)
        if url.path == "/favicon.ico":  # asked for by every browser; the page has none, and a 404 is console noise
            self.send_response(204)
            self.end_headers()
            return None
        if url.path == "/" and self._is_probe_folder():  # the folder's page, not a listing of its files
            self.send_response(302)
            self.send_header("Location", "/report.html")
            self.end_headers()
            return None
        if not url.path.startswith("/api/"):
            return super().do_GET()
        if self.encoder is None:
            return self._json(404, {"error": "no model loaded: start hf-minattn view with --model to type sentences"})
        if url.path == "/api/info":
            return self._json(200, self.encoder.info())
        if url.path == "/api/attention":
            try:
                return self._json(200, self.encoder.encode(parse_qs(url.query).get("sentence", [""])[0]))
            except ValueError as error:
                return self._json(400, {"error": str(error)})
        return self._json(404, {"error": f"no such route {url.path!r}; the API has api/info and api/attention"})

    def do_HEAD(self):  # noqa: N802 (http.server's naming); serves files as GET does, so it is checked as GET is
        if not self._refused_host():
            super().do_HEAD()

    def _refused_host(self) -> bool:
        """Answer 403 (and True) when the server listens on a loopback address and the request's Host header names
        another host: a web page whose name was made to resolve to 127.0.0.1 (DNS rebinding) would otherwise read
        the folder and run the model, as a page of this origin. Bound beyond the machine on purpose (--host, with
        its warning), any name may reach it, and none is refused."""
        allowed = self.server.allowed_hosts
        host = self.headers.get("Host", "").strip().lower()
        name = host[:host.index("]") + 1] if host.startswith("[") and "]" in host else host.rsplit(":", 1)[0]
        if allowed is None or not name or name in allowed:  # no Host at all: an HTTP/1.0 client, not a browser page
            return False
        message = (f"Host {host!r} is not a name of this machine; open the view at "
                   f"http://127.0.0.1:{self.server.server_address[1]}/")
        data = json.dumps({"error": message}).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        return True

    def send_head(self):
        """The file (or listing) a path names, as SimpleHTTPRequestHandler finds it, unless it lies outside the served
        folder once symbolic links are followed: a link in the folder to a file elsewhere is not served (404)."""
        root = os.path.realpath(self.directory)
        target = os.path.realpath(self.translate_path(self.path))
        if os.path.commonpath([root, target]) != root:
            self.send_error(404, "File not found")
            return None
        return super().send_head()

    def _is_probe_folder(self) -> bool:
        """A probe folder (report.html, no index.html of its own): its root answers with the report."""
        return (os.path.isfile(os.path.join(self.directory, "report.html"))
                and not os.path.isfile(os.path.join(self.directory, "index.html")))

    def _json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):  # silent: a line per request (a page asks for several) would bury the URL
        pass


class ViewServer(ThreadingHTTPServer):
    """A thread per connection, daemon threads (ThreadingHTTPServer's: stopping does not wait for an idle client).
    `folder` and `encoder` are what ViewHandler serves; `allowed_hosts` the Host header names it answers (None:
    any, when bound beyond this machine)."""

    folder, encoder = None, None

    def __init__(self, address, handler=ViewHandler):
        super().__init__(address, handler)
        host = address[0]
        self.allowed_hosts = {"127.0.0.1", "localhost", "[::1]", host.lower()} if is_loopback(host) else None

    def handle_error(self, request, client_address):
        # a browser that closes a tab or stops a load mid-answer hangs up: nothing went wrong here, print nothing
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def make_server(host, port, folder=None, encoder=None):
    """The view's server on (host, port), bound but not yet serving: `folder`'s files and, with an Encoder, its API
    (both may be set later, as view_main does once the model is loaded). A ValueError, naming --host and --port,
    when it cannot listen there."""
    try:
        server = ViewServer((host, port))
    except OSError as error:  # the address is not this machine's, or the port is taken
        raise ValueError(f"--host {host} --port {port}: cannot serve there ({error.strerror or error}); expected an "
                         "address of this machine and a free port (--port 0 picks one)") from None
    server.folder, server.encoder = folder, encoder
    return server


def is_loopback(host) -> bool:
    """Whether `host` reaches this machine only: "localhost" or a loopback address (127.x, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name, which may name any of this machine's addresses
        return False


def _model_of_probe(folder):
    """The model folder a probe folder probed (provenance.model_path, absolute since probes.json recorded it so), if it
    still holds a model; a note line when it does not, or when an older probes.json names it relative to the folder
    `hf-minattn probe` ran in (it is then read relative to the current folder, as before)."""
    probes = os.path.join(folder, "probes.json")
    try:
        with open(probes, encoding="utf-8") as f:
            path = json.load(f).get("provenance", {}).get("model_path")
    except (OSError, ValueError, AttributeError) as error:
        why = "is missing" if isinstance(error, FileNotFoundError) else f"cannot be read ({error})"
        print(f"[view] note: {probes} {why}, so the probed model is not known; typed sentences are not encoded "
              "unless --model names a model", flush=True)
        return None
    if not isinstance(path, str) or not path:
        return None
    if not os.path.isfile(os.path.join(path, "config.json")):
        relative = "" if os.path.isabs(path) else ", relative to the folder an older `hf-minattn probe` ran in"
        print(f"[view] note: the probed model {path!r} (probes.json's provenance.model_path{relative}) is missing or "
              "holds no config.json; typed sentences are not encoded unless --model names a model", flush=True)
        return None
    if not os.path.isabs(path):
        print(f"[view] note: probes.json names the probed model by a relative path, {path!r}: read as "
              f"{os.path.abspath(path)!r}, relative to the current folder (--model names another)", flush=True)
    return path


def check_view_path(path) -> None:
    """A FileNotFoundError unless `path` is a probe folder (report.html), a model folder (config.json) or a Hub id:
    checked before the port is taken and any model is loaded."""
    if not os.path.isdir(path) and not is_hub_id(path):
        raise FileNotFoundError(f"{path!r} is not a folder: pass a probe folder (report.html), a model folder "
                                "(config.json) or a Hub id")
    if os.path.isdir(path) and not os.path.isfile(os.path.join(path, "report.html")) and not os.path.isfile(
            os.path.join(path, "config.json")):
        raise FileNotFoundError(f"{path!r} has neither report.html (a probe folder) nor config.json (a model folder)")


def prepare(path, model=None, device="cpu", trust_remote_code=False, revision=None):
    """(folder to serve, Encoder or None, what is served) for a probe folder, a model folder or a Hub id; the model
    page is written into a temporary folder. `model` (a folder or a Hub id) encodes typed sentences instead of the
    probed model; `revision`: the branch, tag or commit of the Hub id that encodes."""
    check_view_path(path)
    is_probe = os.path.isfile(os.path.join(path, "report.html"))
    model_path = model or (_model_of_probe(path) if is_probe else path)
    if revision and not model_path:  # nothing loads, so the revision would be dropped without a word
        raise ValueError(f"--revision {revision}: {path} names no model that can be found (the note above), so no "
                         "revision applies; pass --model with the Hub id to load at that revision")
    encoder = None
    if model_path:
        source = find_model(model_path, revision, flag="--revision", what="--model" if model else "model path")
        loaded, tokenizer = load_encoder(source, trust_remote_code=trust_remote_code, device=device)
        name = source.label if source.is_hub else os.path.basename(os.path.normpath(model_path))
        encoder = Encoder(loaded, tokenizer, name)
    if is_probe:
        return path, encoder, "report.html"
    from .report.page import templates as _templates
    from .run import DEFAULT_EXAMPLES  # run.py imports every probe: only for a model folder

    view, _ = attention_view(encoder.model, encoder.tokenizer, DEFAULT_EXAMPLES, encoder.name)
    page = _templates().get_template("view.html.j2").render(data=Markup(view_json(view)), assets=view_assets(),
                                                            model=encoder.name)
    folder = tempfile.mkdtemp(prefix="hf-minattn-view-")
    try:
        with open(os.path.join(folder, "index.html"), "w", encoding="utf-8") as f:
            f.write(page)
    except BaseException:  # a full disk or Ctrl-C: the caller never learns of the folder, so it is removed here
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder, encoder, "index.html"


def view_parser():
    p = OneLineArgumentParser(prog="hf-minattn view", description=__doc__.split("\n\n")[0])
    p.add_argument("path", help="a folder written by `hf-minattn probe` (report.html) or by save_pretrained(), or a "
                   "Hub id ('org/name')")
    p.add_argument("--model", help="the model (a folder or a Hub id) that encodes typed sentences (default: the probed "
                   "one, or PATH)")
    p.add_argument("--revision", help="with a Hub id: the branch, tag or commit of the model to load (default: the "
                   "default branch)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (0: any free port; the URL is printed)")
    p.add_argument("--serve-for", type=float, default=None, metavar="SECONDS",
                   help="stop by itself after this many seconds (default: until Ctrl-C)")
    p.add_argument("--device", default="cpu", help="cpu, cuda, mps")
    p.add_argument("--trust-remote-code", action="store_true", help="run modeling code saved with the model")
    return p


def view_main(argv=None):
    args = view_parser().parse_args(argv)
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be in 0..65535, got {args.port}")
    # seconds: NaN or inf never stops, and threading.Timer fails in its own thread past TIMEOUT_MAX
    check_bounds(args, {"serve_for": (0, threading.TIMEOUT_MAX, False)}, separator="-")
    device = resolve_device(args.device)  # a device torch cannot use fails here, in one line, before any loading
    check_view_path(args.path)
    # the port is taken before the model is loaded (a Hub id downloads): a port in use is said at once, not after
    server = make_server(args.host, args.port)
    folder = None
    try:
        folder, server.encoder, page = prepare(args.path, args.model, device, args.trust_remote_code, args.revision)
        server.folder = folder
        _serve(args, server, page)
    except KeyboardInterrupt:  # Ctrl-C while the model loads: _serve handles it once serving
        print("[view] interrupted before serving; nothing was served", file=sys.stderr, flush=True)
        return 130  # the shell's status for a command ended by Ctrl-C (128 + SIGINT)
    finally:
        server.server_close()
        if folder is not None and folder != args.path:  # the model page's temporary folder
            shutil.rmtree(folder, ignore_errors=True)
    print("[view] stopped", flush=True)
    return 0


def _serve(args, server, page):
    """Serve until Ctrl-C, a kill (SIGTERM: from `kill` or a process manager) or --serve-for seconds."""
    folder, encoder = server.folder, server.encoder

    def stop(*_):  # on another thread: shutdown() waits for serve_forever's loop, which runs on this one
        threading.Thread(target=server.shutdown, daemon=True).start()

    on_main = threading.current_thread() is threading.main_thread()  # the only thread that may set a handler
    previous = signal.signal(signal.SIGTERM, stop) if on_main else None
    if args.serve_for is not None:
        timer = threading.Timer(args.serve_for, stop)
        timer.daemon = True  # Ctrl-C or a kill does not wait for it
        timer.start()
    url = f"http://{args.host}:{server.server_address[1]}/{page}"
    if not is_loopback(args.host):
        print(f"[view] warning: --host {args.host} is not a loopback address: anyone who can reach this machine on "
              f"port {server.server_address[1]} can read {folder} and run the model on their sentences (--host "
              "127.0.0.1 keeps it to this machine)", flush=True)
    typing = f"typed sentences encoded by {encoder.name}" if encoder else "no model to encode typed sentences (--model)"
    print(f"[view] serving {url} ({typing}); Ctrl-C stops", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
